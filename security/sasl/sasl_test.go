package sasl

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestParsePlain(t *testing.T) {
	for _, tc := range []struct {
		in, az, u, p string
		ok           bool
	}{
		{"\x00alice\x00pw", "", "alice", "pw", true},
		{"alice\x00alice\x00pw", "alice", "alice", "pw", true},
		{"\x00alice\x00p\x00w", "", "", "", false},
		{"\x00\x00pw", "", "", "", false},
		{"\x00alice\x00", "", "", "", false},
		{"alice", "", "", "", false},
		{"\x00al\xffice\x00pw", "", "", "", false},
	} {
		az, u, p, err := ParsePlain([]byte(tc.in))
		if (err == nil) != tc.ok || az != tc.az || u != tc.u || p != tc.p {
			t.Errorf("%q: %q %q %q %v", tc.in, az, u, p, err)
		}
	}
}

func TestPlainUsers(t *testing.T) {
	pu, err := ParsePlainUsers(strings.NewReader("# users\nalice:secret\n\nbob:"+HashPassword("pw:x", 4096)+"\r\n"), "f")
	if err != nil || pu.Len() != 2 {
		t.Fatal(pu, err)
	}
	for _, tc := range []struct {
		u, p string
		ok   bool
	}{{"alice", "secret", true}, {"alice", "secre", false}, {"bob", "pw:x", true}, {"bob", "pw", false}, {"carol", "x", false}} {
		if ok, err := pu.VerifyPlain(context.Background(), tc.u, tc.p); ok != tc.ok || err != nil {
			t.Errorf("%s/%s: %v %v", tc.u, tc.p, ok, err)
		}
	}
	for _, bad := range []string{"nocolon\n", "a:x\na:y\n", ":pw\n", "a:$pbkdf2-sha256$x$y$z\n"} {
		if _, err := ParsePlainUsers(strings.NewReader(bad), "f"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	s := &Server{Plain: pu}
	sess, _ := s.Start(Plain)
	if _, done, err := sess.Step(context.Background(), []byte("bob\x00alice\x00secret")); done || !errors.Is(err, ErrPlainAuthzid) {
		t.Errorf("authzid: %v %v", done, err)
	}
}

// testKeys is an RSA and a P-256 key with their JWKS.
type testKeys struct {
	rsa  *rsa.PrivateKey
	ec   *ecdsa.PrivateKey
	jwks []byte
}

func newTestKeys(t testing.TB) *testKeys {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b := base64.RawURLEncoding
	ecb, _ := ek.PublicKey.Bytes()
	jwks := fmt.Sprintf(`{"keys":[{"kty":"RSA","kid":"r1","use":"sig","n":%q,"e":%q},{"kty":"EC","kid":"e1","crv":"P-256","x":%q,"y":%q}]}`,
		b.EncodeToString(rk.N.Bytes()), b.EncodeToString(big.NewInt(int64(rk.E)).Bytes()),
		b.EncodeToString(ecb[1:33]), b.EncodeToString(ecb[33:]))
	return &testKeys{rsa: rk, ec: ek, jwks: []byte(jwks)}
}

// Token signs claims with alg ("RS256", "ES256", "none") and kid.
func (k *testKeys) Token(t testing.TB, alg, kid string, claims map[string]any) string {
	b := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	signed := b.EncodeToString(h) + "." + b.EncodeToString(c)
	d := sha256.Sum256([]byte(signed))
	var sig []byte
	switch alg {
	case "RS256":
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k.rsa, crypto.SHA256, d[:]); err != nil {
			t.Fatal(err)
		}
	case "ES256":
		r, s, err := ecdsa.Sign(rand.Reader, k.ec, d[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	}
	return signed + "." + b.EncodeToString(sig)
}

func TestOAuthValidate(t *testing.T) {
	k := newTestKeys(t)
	now := time.Unix(1_800_000_000, 0)
	v, err := LoadOAuthValidator(OAuthConfig{JWKS: k.jwks, Issuer: "https://idp", Audience: []string{"kafka"}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	good := func() map[string]any {
		return map[string]any{"sub": "alice", "iss": "https://idp", "aud": []string{"x", "kafka"}, "exp": now.Unix() + 60, "iat": now.Unix()}
	}
	with := func(k string, val any) map[string]any {
		c := good()
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	for _, tc := range []struct {
		name string
		tok  string
		err  error
	}{
		{"rs256", k.Token(t, "RS256", "r1", good()), nil},
		{"es256", k.Token(t, "ES256", "e1", good()), nil},
		{"no kid", k.Token(t, "ES256", "", good()), nil},
		{"aud string", k.Token(t, "RS256", "r1", with("aud", "kafka")), nil},
		{"none", k.Token(t, "none", "", good()), ErrTokenAlg},
		{"wrong kid", k.Token(t, "RS256", "zz", good()), ErrTokenKey},
		{"rsa key, ec kid", k.Token(t, "RS256", "e1", good()), ErrTokenKey},
		{"expired", k.Token(t, "RS256", "r1", with("exp", now.Unix()-60)), ErrTokenExpired},
		{"no exp", k.Token(t, "RS256", "r1", with("exp", nil)), ErrTokenMalformed},
		{"nbf future", k.Token(t, "RS256", "r1", with("nbf", now.Unix()+600)), ErrTokenNotYet},
		{"issuer", k.Token(t, "RS256", "r1", with("iss", "evil")), ErrTokenIssuer},
		{"audience", k.Token(t, "RS256", "r1", with("aud", "other")), ErrTokenAudience},
		{"no sub", k.Token(t, "RS256", "r1", with("sub", nil)), ErrTokenSubject},
		{"garbage", "a.b.c", ErrTokenMalformed},
	} {
		sub, exp, err := v.Validate(tc.tok)
		if !errors.Is(err, tc.err) || err == nil && (sub != "alice" || exp.Unix() != now.Unix()+60) {
			t.Errorf("%s: %q %v %v", tc.name, sub, exp, err)
		}
	}
	// A tampered payload fails the signature.
	tok := k.Token(t, "RS256", "r1", good())
	parts := strings.Split(tok, ".")
	c, _ := json.Marshal(with("sub", "mallory"))
	if _, _, err := v.Validate(parts[0] + "." + base64.RawURLEncoding.EncodeToString(c) + "." + parts[2]); !errors.Is(err, ErrTokenSignature) {
		t.Errorf("tampered: %v", err)
	}
}

func TestParseOAuthMessage(t *testing.T) {
	for _, tc := range []struct {
		in    string
		az    string
		token string
		ok    bool
	}{
		{"n,,\x01auth=Bearer abc\x01\x01", "", "abc", true},
		{"n,a=alice,\x01auth=Bearer abc\x01ext=v\x01\x01", "alice", "abc", true},
		{"y,,\x01ext=1\x01auth=Bearer t\x01\x01", "", "t", true},
		{"n,,\x01auth=Bearer abc\x01", "", "", false},
		{"n,,\x01auth=Basic abc\x01\x01", "", "", false},
		{"n,,\x01auth=Bearer a\x01auth=Bearer b\x01\x01", "", "", false},
		{"n,,\x01k1=v\x01auth=Bearer a\x01\x01", "", "", false},
		{"p=x,,\x01auth=Bearer a\x01\x01", "", "", false},
		{"n,a=x=y,\x01auth=Bearer a\x01\x01", "", "", false},
		{"", "", "", false},
	} {
		m, err := ParseOAuthMessage([]byte(tc.in))
		if (err == nil) != tc.ok || tc.ok && (m.Authzid != tc.az || m.Token != tc.token) {
			t.Errorf("%q: %+v %v", tc.in, m, err)
		}
	}
}

func FuzzPlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00pw"))
	f.Add([]byte("a\x00b\x00c\x00"))
	pu, _ := ParsePlainUsers(strings.NewReader("alice:pw\n"), "f")
	f.Fuzz(func(t *testing.T, b []byte) {
		az, u, p, err := ParsePlain(b)
		if err == nil && (u == "" || p == "" || strings.ContainsRune(az+u+p, 0)) {
			t.Fatalf("%q: %q %q %q", b, az, u, p)
		}
		s := &plainSession{v: pu}
		if _, done, _ := s.Step(context.Background(), b); done && (u != "alice" || p != "pw") {
			t.Fatalf("%q authenticated", b)
		}
	})
}

func FuzzOAuthMessage(f *testing.F) {
	for _, s := range []string{"n,,\x01auth=Bearer abc\x01\x01", "n,a=x,\x01k=v\x01auth=Bearer a.b.c\x01\x01", "y,,\x01\x01"} {
		f.Add([]byte(s))
	}
	k := newTestKeys(f)
	v, err := LoadOAuthValidator(OAuthConfig{JWKS: k.jwks})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseOAuthMessage(b)
		if err == nil && m.Token == "" {
			t.Fatalf("%q: no token", b)
		}
		if err == nil {
			if _, _, err := v.Validate(m.Token); err == nil {
				t.Fatalf("%q: forged token accepted", b)
			}
		}
	})
}
