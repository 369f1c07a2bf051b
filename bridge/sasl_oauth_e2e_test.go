package bridge_test

import (
	"context"
	"crypto"
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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/security/sasl"
)

// rsaSigner signs RS256 JWTs and publishes its JWKS.
type rsaSigner struct{ key *rsa.PrivateKey }

func newRSASigner(t *testing.T) *rsaSigner {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &rsaSigner{k}
}

func (s *rsaSigner) jwks() []byte {
	b := base64.RawURLEncoding
	return fmt.Appendf(nil, `{"keys":[{"kty":"RSA","kid":"k1","n":%q,"e":%q}]}`,
		b.EncodeToString(s.key.N.Bytes()), b.EncodeToString(big.NewInt(int64(s.key.E)).Bytes()))
}

func (s *rsaSigner) token(t *testing.T, claims map[string]any) string {
	b := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "k1"})
	c, _ := json.Marshal(claims)
	signed := b.EncodeToString(h) + "." + b.EncodeToString(c)
	d := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, d[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b.EncodeToString(sig)
}

// TestSASLOAuthBearer produces and consumes with franz-go's OAUTHBEARER
// client and an RS256 token; an expired token, a wrong audience and an
// unsecured ("alg":"none") token fail with SASL_AUTHENTICATION_FAILED; the
// session lifetime is bounded by the token's exp (KIP-368).
func TestSASLOAuthBearer(t *testing.T) {
	sg := newRSASigner(t)
	v, err := sasl.LoadOAuthValidator(sasl.OAuthConfig{JWKS: sg.jwks(), Issuer: "idp", Audience: []string{"kafka"}})
	if err != nil {
		t.Fatal(err)
	}
	gw := saslGateway(t, func(c *bridge.Config) {
		c.SASL.OAuth = v
		c.SASL.MaxReauth = time.Hour
	})
	now := time.Now().Unix()
	claims := func(sub string, exp int64, aud string) map[string]any {
		return map[string]any{"sub": sub, "iss": "idp", "aud": aud, "exp": exp, "iat": now}
	}
	mech := func(tok string) oauth.Auth { return oauth.Auth{Token: tok} }
	good := sg.token(t, claims("svc", now+300, "kafka"))
	if err := saslRoundTrip(t, gw.Addr, "oauth", mech(good).AsMechanism()); err != nil {
		t.Fatalf("good token: %v", err)
	}
	b := base64.RawURLEncoding
	none := b.EncodeToString([]byte(`{"alg":"none"}`)) + "." + b.EncodeToString([]byte(fmt.Sprintf(`{"sub":"svc","iss":"idp","aud":"kafka","exp":%d}`, now+300))) + "."
	for name, tok := range map[string]string{
		"expired":  sg.token(t, claims("svc", now-120, "kafka")),
		"audience": sg.token(t, claims("svc", now+300, "other")),
		"none":     none,
	} {
		if err := saslFails(t, gw.Addr, "bad-oauth", mech(tok).AsMechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	// A token that expires in 2 s: franz-go is told a lifetime of at most
	// that, and re-authenticates with a fresh token before it ends.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	calls := 0
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.DefaultProduceTopic("oauth-reauth"), kgo.AllowAutoTopicCreation(),
		kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			calls++
			return oauth.Auth{Token: sg.token(t, claims("svc", time.Now().Unix()+2, "kafka"))}, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // paces the produces over several token lifetimes
	}
	if calls < 2 {
		t.Errorf("%d token fetches: the session was not bounded by exp", calls)
	}
	if m := gw.Metrics(); !strings.Contains(m, `kiggy_sasl_authentications_total{mechanism="OAUTHBEARER",outcome="failure"} 3`) {
		t.Error("OAUTHBEARER failures not counted")
	}
}
