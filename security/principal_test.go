package security

import "testing"

func TestParsePrincipal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Principal
		ok   bool
	}{
		{"User:alice", User("alice"), true},
		{"User:CN=a,O=b:c", Principal{"User", "CN=a,O=b:c"}, true},
		{"Group:ops", Principal{"Group", "ops"}, true},
		{"alice", Principal{}, false},
		{":alice", Principal{}, false},
		{"User:", Principal{}, false},
	} {
		got, err := ParsePrincipal(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePrincipal(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if tc.ok && got.String() != tc.in {
			t.Errorf("%q: String() = %q", tc.in, got.String())
		}
	}
	if Anonymous.String() != "User:ANONYMOUS" || !(Principal{}).IsZero() || Anonymous.IsZero() {
		t.Error("Anonymous / IsZero")
	}
}

func TestParseProtocol(t *testing.T) {
	for _, p := range []Protocol{Plaintext, SSL, SASLPlaintext, SASLSSL} {
		got, err := ParseProtocol(p.String())
		if err != nil || got != p {
			t.Errorf("%v: %v %v", p, got, err)
		}
	}
	if p, err := ParseProtocol("sasl_ssl"); err != nil || p != SASLSSL || !p.TLS() || !p.SASL() {
		t.Errorf("sasl_ssl: %v %v", p, err)
	}
	if _, err := ParseProtocol("SSL_SASL"); err == nil {
		t.Error("SSL_SASL accepted")
	}
	if Plaintext.TLS() || Plaintext.SASL() || !SSL.TLS() || SSL.SASL() || !SASLPlaintext.SASL() {
		t.Error("TLS/SASL")
	}
}
