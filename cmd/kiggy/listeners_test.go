package main

import (
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/testing/testcerts"
	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/tlsconf"
)

func parseListenerArgs(args, env []string) (*options, error) {
	var o options
	s := newSettings("kiggy")
	registerOptions(s, &o)
	if err := s.parse(args, env); err != nil {
		return nil, err
	}
	return &o, resolveListeners(s, &o)
}

func TestListenerFlags(t *testing.T) {
	o, err := parseListenerArgs(nil, nil)
	if err != nil || len(o.lst.specs) != 1 || o.lst.specs[0] != (listenerSpec{"PLAINTEXT", security.Plaintext, "127.0.0.1:9092"}) {
		t.Fatalf("default: %+v, %v", o.lst.specs, err)
	}
	o, err = parseListenerArgs([]string{"--listen", "127.0.0.1:1234"}, nil)
	if err != nil || o.lst.specs[0].addr != "127.0.0.1:1234" {
		t.Fatalf("--listen: %+v, %v", o.lst.specs, err)
	}
	o, err = parseListenerArgs([]string{"--listeners", "PLAINTEXT://127.0.0.1:9092, sasl_ssl://0.0.0.0:9093,SSL://[::1]:9094"}, nil)
	want := []listenerSpec{{"PLAINTEXT", security.Plaintext, "127.0.0.1:9092"}, {"SASL_SSL", security.SASLSSL, "0.0.0.0:9093"}, {"SSL", security.SSL, "[::1]:9094"}}
	if err != nil || len(o.lst.specs) != 3 || o.lst.specs[0] != want[0] || o.lst.specs[1] != want[1] || o.lst.specs[2] != want[2] {
		t.Fatalf("--listeners: %+v, %v", o.lst.specs, err)
	}
	o, err = parseListenerArgs(nil, []string{"KIGGY_LISTENERS=INTERNAL://:9092,EXTERNAL://:9093",
		"KIGGY_LISTENER_SECURITY_PROTOCOL_MAP=INTERNAL:PLAINTEXT,EXTERNAL:SSL"})
	if err != nil || o.lst.specs[0] != (listenerSpec{"INTERNAL", security.Plaintext, ":9092"}) || o.lst.specs[1] != (listenerSpec{"EXTERNAL", security.SSL, ":9093"}) {
		t.Fatalf("named listeners: %+v, %v", o.lst.specs, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "127.0.0.1:9092", "--listeners", "PLAINTEXT://:1"}, "--listen is the one-listener shorthand"},
		{[]string{"--advertised-host", "h", "--listeners", "PLAINTEXT://:1"}, "--advertised-host is the one-listener shorthand"},
		{[]string{"--advertised-port", "5", "--listeners", "PLAINTEXT://:1"}, "--advertised-port"},
		{[]string{"--advertised-listeners", "PLAINTEXT://h:1"}, "needs --listeners"},
		{[]string{"--listener-security-protocol-map", "A:SSL"}, "needs --listeners"},
		{[]string{"--listeners", "INTERNAL://:1"}, "not a security protocol"},
		{[]string{"--listeners", "INTERNAL://:1,OTHER://:2", "--listener-security-protocol-map", "INTERNAL:SSL"}, "OTHER is not in"},
		{[]string{"--listeners", "A://:1", "--listener-security-protocol-map", "A:TLS"}, "protocol must be"},
		{[]string{"--listeners", "PLAINTEXT://:1,plaintext://:2"}, "given twice"},
		{[]string{"--listeners", "PLAINTEXT://:1,SSL://:1"}, "same port"},
		{[]string{"--listeners", "127.0.0.1:9092"}, "want NAME://host:port"},
		{[]string{"--listeners", "SSL://localhost"}, "missing port"},
		{[]string{"--listeners", "SSL://:99999"}, "not 0..65535"},
		{[]string{"--listeners", " , "}, "no listener"},
	} {
		_, err := parseListenerArgs(c.args, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.args, err, c.want)
		}
	}
}

func TestSetupListeners(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	srv := ca.Server(t, dir, "server")
	_ = ca.Client(t, dir, "c", pkix.Name{CommonName: "c"})
	lg := slog.New(slog.DiscardHandler)
	setup := func(args ...string) (*listenerSetup, error) {
		t.Helper()
		o, err := parseListenerArgs(args, nil)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return setupListeners(o, lg)
	}
	base := []string{"--listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}
	files := []string{"--ssl-cert-file", srv.CertFile, "--ssl-key-file", srv.KeyFile}
	if _, err := setup(base...); !errors.Is(err, tlsconf.ErrNoCertificate) {
		t.Errorf("SSL without certificate files: %v", err)
	}
	ls, err := setup(append(append(base, files...), "--advertised-listeners", "SSL://public.example:9093,PLAINTEXT://:0")...)
	if err != nil {
		t.Fatal(err)
	}
	var cfg bridge.Config
	ls.configure(&cfg)
	if cfg.Listeners["SSL"] != security.SSL || cfg.Listeners["PLAINTEXT"] != security.Plaintext || cfg.CertPrincipal == nil {
		t.Errorf("gateway config: %+v", cfg)
	}
	if cfg.AdvertisedListeners["SSL"] != (bridge.AdvertisedAddr{Host: "public.example", Port: 9093}) ||
		cfg.AdvertisedListeners["PLAINTEXT"] != (bridge.AdvertisedAddr{}) {
		t.Errorf("advertised: %+v", cfg.AdvertisedListeners)
	}
	o, _ := parseListenerArgs(append(base, files...), nil)
	lns, err := ls.listen(o)
	if err != nil || len(lns) != 2 || lns[0].Name != "PLAINTEXT" || lns[0].TLS != nil || lns[1].Name != "SSL" || lns[1].TLS == nil {
		t.Fatalf("listen: %+v, %v", lns, err)
	}
	for _, l := range lns {
		l.Close()
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(append(base, files...), "--advertised-listeners", "OTHER://h:1"), "OTHER is not a listener"},
		{append(append(base, files...), "--advertised-listeners", "SSL://0.0.0.0:1"), "not an address a client can connect to"},
		{append(append(base, files...), "--ssl-client-auth", "required"), "needs a CA file"},
		{append(append(base, files...), "--ssl-client-auth", "optional"), "--ssl-client-auth"},
		{append(append(base, files...), "--ssl-min-version", "TLSv1.1"), "--ssl-min-version"},
		{append(append(base, files...), "--ssl-principal-mapping-rules", "RULE:x"), "principal mapping rule"},
	} {
		if _, err := setup(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.args, err, c.want)
		}
	}
	// Plaintext listeners only: no TLS settings are needed or read.
	if ls, err := setup("--listeners", "PLAINTEXT://127.0.0.1:0", "--ssl-client-auth", "bogus"); err != nil || ls.tls != nil {
		t.Errorf("plaintext only: %v", err)
	}
}
