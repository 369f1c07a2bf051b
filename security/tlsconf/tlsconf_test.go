package tlsconf

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testcerts"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/kiggy-io/kiggy/security"
)

func TestSubjectDN(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	email := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	cases := []struct {
		subject pkix.Name
		want    string
	}{
		{pkix.Name{CommonName: "alice"}, "CN=alice"},
		// Go writes C, O, OU, L, ST, ... CN in that order; RFC 2253 form
		// reverses the sequence.
		{pkix.Name{CommonName: "alice", Organization: []string{"kiggy"}, OrganizationalUnit: []string{"eng"}, Country: []string{"DE"}},
			"CN=alice,OU=eng,O=kiggy,C=DE"},
		{pkix.Name{CommonName: `a,b+c"d\e<f>g;h=i#j`}, `CN=a\,b\+c\"d\\e\<f\>g\;h\=i\#j`},
		{pkix.Name{CommonName: " padded "}, `CN=\ padded\ `},
		{pkix.Name{CommonName: "bob", ExtraNames: []pkix.AttributeTypeAndValue{{Type: email, Value: "bob@example.com"}}},
			// emailAddress has no RFC 2253 keyword: OID=#hex of the DER value
			// (Go writes it as a UTF8String).
			"1.2.840.113549.1.9.1=#0c0f626f62406578616d706c652e636f6d,CN=bob"},
		{pkix.Name{SerialNumber: "42", CommonName: "x"}, "2.5.4.5=#13023432,CN=x"},
	}
	for i, c := range cases {
		p := ca.Client(t, dir, "c", c.subject)
		got, err := SubjectDN(p.Cert)
		if err != nil || got != c.want {
			t.Errorf("case %d: SubjectDN = %q, %v; want %q", i, got, err, c.want)
		}
	}
	if _, err := formatDN([]byte{0x30, 0x05, 1}); err == nil {
		t.Error("a truncated subject was formatted")
	}
}

func TestRules(t *testing.T) {
	const dn = "CN=Alice,OU=Eng,O=Kiggy,C=DE"
	cases := []struct {
		rules, want string
		err         bool
	}{
		{"", dn, false},
		{"DEFAULT", dn, false},
		{`RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/`, "Alice@Eng", false},
		{`RULE:^CN=(.*?),.*$/$1/L`, "alice", false},
		{`RULE:^CN=(.*?),.*$/$1/U`, "ALICE", false},
		{`RULE:^CN=Bob,.*$/bob/, RULE:^CN=(.*?),.*$/u-$1/`, "u-Alice", false},
		{`RULE:^CN=Bob,.*$/bob/,DEFAULT`, dn, false},
		{`RULE:^CN=Bob,.*$/bob/`, "", true},             // no rule applies
		{`RULE:^CN=(.*?),.*$/$1$3/`, "Alice$3", false},  // past the last group: literal
		{`RULE:^CN=(.*?),.*$/$12/`, "Alice2", false},    // longest group number that exists
		{`RULE:^CN=(.*?),.*$/a\/b\$1/`, "a/b$1", false}, // escapes
		{`RULE:^CN=(A.*?),(OU=[^,]*),.*$/$1 $2/`, "Alice OU=Eng", false},
		{`RULE:CN=Alice/x/`, "", true}, // not a whole-DN match
	}
	for _, c := range cases {
		m, err := ParseRules(c.rules)
		if err != nil {
			t.Errorf("ParseRules(%q): %v", c.rules, err)
			continue
		}
		got, err := m.Name(dn)
		if c.err {
			if !errors.Is(err, ErrNoMatchingRule) {
				t.Errorf("%q: Name = %q, %v; want ErrNoMatchingRule", c.rules, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: Name = %q, %v; want %q", c.rules, got, err, c.want)
		}
	}
	for _, bad := range []string{"RULE:abc", "RULE:a/b", "BOGUS", "RULE:(?=x)/y/", "RULE:a/b/X", "DEFAULTX", `RULE:a/$x/`} {
		if _, err := ParseRules(bad); err == nil {
			t.Errorf("ParseRules(%q) accepted", bad)
		}
	}
}

func FuzzParseRules(f *testing.F) {
	for _, s := range []string{"DEFAULT", `RULE:^CN=(.*?),.*$/$1/L,DEFAULT`, `RULE:a\/b/c\$d/U`, ",,", "RULE:/ /"} {
		f.Add(s, "CN=a,O=b")
	}
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := ParseRules(rules)
		if err != nil {
			return
		}
		_, _ = m.Name(dn)
	})
}

func FuzzFormatDN(f *testing.F) {
	f.Add([]byte{0x30, 0x00})
	f.Add([]byte{0x30, 0x0e, 0x31, 0x0c, 0x30, 0x0a, 0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, 0x03, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = formatDN(raw)
	})
}

func TestParse(t *testing.T) {
	for s, want := range map[string]uint16{"TLSv1.2": tls.VersionTLS12, "tlsv1.3": tls.VersionTLS13, "1.3": tls.VersionTLS13} {
		if v, err := ParseMinVersion(s); err != nil || v != want {
			t.Errorf("ParseMinVersion(%q) = %x, %v", s, v, err)
		}
	}
	for _, s := range []string{"TLSv1.1", "SSLv3", ""} {
		if _, err := ParseMinVersion(s); err == nil {
			t.Errorf("ParseMinVersion(%q) accepted", s)
		}
	}
	for s, want := range map[string]ClientAuth{"none": ClientAuthNone, "REQUESTED": ClientAuthRequested, "required": ClientAuthRequired} {
		if a, err := ParseClientAuth(s); err != nil || a != want {
			t.Errorf("ParseClientAuth(%q) = %v, %v", s, a, err)
		}
	}
	if _, err := ParseClientAuth("optional"); err == nil {
		t.Error("ParseClientAuth(optional) accepted")
	}
}

// handshake runs one TLS handshake between a client config and s over a
// loopback connection and returns the server's view of it.
func handshake(t *testing.T, s *Server, cc *tls.Config) (*tls.ConnectionState, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		st  *tls.ConnectionState
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- res{err: err}
			return
		}
		defer c.Close()
		tc := tls.Server(c, s.TLSConfig())
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		err = tc.Handshake()
		st := tc.ConnectionState()
		ch <- res{&st, err}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cc)
	if err == nil {
		// TLS 1.3 reports a refused client certificate at the first read.
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, io.EOF) {
			err = nil
		}
		c.Close()
	}
	r := <-ch
	if r.err != nil {
		return nil, r.err
	}
	return r.st, err
}

func TestClientAuthAndPrincipal(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	other := testcerts.NewCA(t, dir, "other")
	srvPair := ca.Server(t, dir, "server")
	alice := ca.Client(t, dir, "alice", pkix.Name{CommonName: "alice", Organization: []string{"kiggy"}})
	mallory := other.Client(t, dir, "mallory", pkix.Name{CommonName: "mallory"})
	nobody := ca.Client(t, dir, "nobody", pkix.Name{CommonName: "nobody", Organization: []string{"elsewhere"}})

	s, err := New(Config{CertFile: srvPair.CertFile, KeyFile: srvPair.KeyFile, CAFile: ca.File,
		ClientAuth: ClientAuthRequested, PrincipalRules: `RULE:^CN=(.*?),O=kiggy$/$1/L`})
	if err != nil {
		t.Fatal(err)
	}
	client := func(p *testcerts.Pair) *tls.Config {
		cc := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
		if p != nil {
			// Sent even when its CA is not among those the server names
			// (Go's client would otherwise send none).
			cc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &p.TLS, nil }
		}
		return cc
	}
	st, err := handshake(t, s, client(alice))
	if err != nil {
		t.Fatalf("alice: %v", err)
	}
	if p := s.Principal(st); p != security.User("alice") {
		t.Errorf("alice's principal = %v", p)
	}
	st, err = handshake(t, s, client(nil))
	if err != nil {
		t.Fatalf("no certificate, requested: %v", err)
	}
	if p := s.Principal(st); p != security.Anonymous {
		t.Errorf("principal without a certificate = %v", p)
	}
	if _, err := handshake(t, s, client(mallory)); err == nil {
		t.Error("a certificate of another CA was accepted")
	}
	if _, err := handshake(t, s, client(nobody)); err == nil || !strings.Contains(err.Error(), "no principal mapping rule") {
		t.Errorf("a certificate no rule maps: %v", err)
	}

	req, err := New(Config{CertFile: srvPair.CertFile, KeyFile: srvPair.KeyFile, CAFile: ca.File, ClientAuth: ClientAuthRequired, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, req, client(nil)); err == nil {
		t.Error("required: a client without a certificate was accepted")
	}
	st, err = handshake(t, req, client(alice))
	if err != nil || st.Version != tls.VersionTLS13 {
		t.Fatalf("required, alice: %v", err)
	}
	if p := req.Principal(st); p != security.User("CN=alice,O=kiggy") {
		t.Errorf("DEFAULT principal = %v", p)
	}
	old := client(alice)
	old.MaxVersion = tls.VersionTLS12
	if _, err := handshake(t, req, old); err == nil {
		t.Error("min version 1.3: a TLS 1.2 client was accepted")
	}

	if _, err := New(Config{CertFile: srvPair.CertFile, KeyFile: srvPair.KeyFile, ClientAuth: ClientAuthRequired}); err == nil {
		t.Error("client auth without a CA file accepted")
	}
	if _, err := New(Config{CertFile: srvPair.CertFile, KeyFile: alice.KeyFile}); err == nil {
		t.Error("a key that does not match the certificate accepted")
	}
	if _, err := New(Config{}); !errors.Is(err, ErrNoCertificate) {
		t.Errorf("no files: %v", err)
	}
}

func TestReload(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	first := ca.Server(t, dir, "server")
	s, err := New(Config{CertFile: first.CertFile, KeyFile: first.KeyFile, ReloadCheck: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		c, err := s.getCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.SerialNumber.String()
	}
	if serial() != first.Cert.SerialNumber.String() {
		t.Fatal("not the first certificate")
	}
	second := ca.Server(t, t.TempDir(), "server")
	// A half-written pair (new certificate, old key) keeps the old one.
	copyFile(t, second.CertFile, first.CertFile)
	if !testtools.Consistently(5*time.Millisecond, func() bool { return serial() == first.Cert.SerialNumber.String() }) {
		t.Fatal("a mismatched pair replaced the certificate")
	}
	copyFile(t, second.KeyFile, first.KeyFile)
	testtools.WaitFor(t, 5*time.Second, "the new certificate to load", func() bool { return serial() == second.Cert.SerialNumber.String() })
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
