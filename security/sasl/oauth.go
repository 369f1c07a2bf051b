package sasl

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"
	"time"
)

// OAUTHBEARER (RFC 7628) with Kafka's KIP-255 framing: the client's one
// message is
//
//	gs2-header %x01 "auth=Bearer " token %x01 *(key "=" value %x01) %x01
//
// where token is a JWT (RFC 7519) signed with a key of the configured JWKS
// (RFC 7517). An invalid token is answered with an RFC 7628 section 3.2.2 error
// JSON; the client replies %x01 and the authentication then fails.

// OAuthConfig configures an OAuthValidator.
type OAuthConfig struct {
	// JWKSFile is the JSON Web Key Set whose keys may sign tokens.
	JWKSFile string
	// JWKS is the key set itself (instead of JWKSFile).
	JWKS []byte
	// Issuer, when set, is the iss a token must carry.
	Issuer string
	// Audience, when set, lists the audiences of which a token's aud must
	// hold one.
	Audience []string
	// SubClaim names the claim that is the principal; "" = "sub" (Kafka's
	// sasl.oauthbearer.sub.claim.name).
	SubClaim string
	// ClockSkew is the tolerance on exp, nbf and iat.
	ClockSkew time.Duration
	// Now returns the time; nil = time.Now (tests).
	Now func() time.Time
}

// OAuthValidator checks OAUTHBEARER tokens: a JWS signature (RS256, RS384,
// RS512, ES256, ES384; never "none") by a key of the set, exp (required)
// and nbf, iss and aud when configured, and a non-empty subject claim.
type OAuthValidator struct {
	cfg  OAuthConfig
	keys []jwk
}

type jwk struct {
	kid string
	alg string
	rsa *rsa.PublicKey
	ec  *ecdsa.PublicKey
}

// LoadOAuthValidator reads the key set and returns a validator.
func LoadOAuthValidator(cfg OAuthConfig) (*OAuthValidator, error) {
	raw := cfg.JWKS
	if raw == nil {
		var err error
		if raw, err = os.ReadFile(cfg.JWKSFile); err != nil {
			return nil, err
		}
	}
	var set struct {
		Keys []struct {
			Kty, Kid, Alg, Use, N, E, Crv, X, Y string
		} `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	v := &OAuthValidator{cfg: cfg}
	if v.cfg.SubClaim == "" {
		v.cfg.SubClaim = "sub"
	}
	if v.cfg.Now == nil {
		v.cfg.Now = time.Now
	}
	b := base64.RawURLEncoding
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		key := jwk{kid: k.Kid, alg: k.Alg}
		switch k.Kty {
		case "RSA":
			n, err1 := b.DecodeString(k.N)
			e, err2 := b.DecodeString(k.E)
			if err1 != nil || err2 != nil || len(n) < 256 || len(e) == 0 || len(e) > 4 {
				return nil, fmt.Errorf("JWKS key %d: bad RSA key (2048 bits at least)", i)
			}
			key.rsa = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		case "EC":
			var curve elliptic.Curve
			switch k.Crv {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			default:
				return nil, fmt.Errorf("JWKS key %d: curve %q not supported", i, k.Crv)
			}
			x, err1 := b.DecodeString(k.X)
			y, err2 := b.DecodeString(k.Y)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("JWKS key %d: bad EC key", i)
			}
			pt := append([]byte{4}, append(leftPad(x, (curve.Params().BitSize+7)/8), leftPad(y, (curve.Params().BitSize+7)/8)...)...)
			pk, err := ecdsa.ParseUncompressedPublicKey(curve, pt)
			if err != nil {
				return nil, fmt.Errorf("JWKS key %d: %w", i, err)
			}
			key.ec = pk
		default:
			continue
		}
		v.keys = append(v.keys, key)
	}
	if len(v.keys) == 0 {
		return nil, errors.New("JWKS: no RSA or EC signing key")
	}
	return v, nil
}

func leftPad(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	return append(make([]byte, n-len(b)), b...)
}

// Errors of token validation, reported to the client in the RFC 7628
// error JSON.
var (
	ErrTokenMalformed = errors.New("malformed token")
	ErrTokenAlg       = errors.New("token algorithm not accepted")
	ErrTokenKey       = errors.New("no key of the set matches the token")
	ErrTokenSignature = errors.New("token signature invalid")
	ErrTokenExpired   = errors.New("token expired")
	ErrTokenNotYet    = errors.New("token not valid yet")
	ErrTokenIssuer    = errors.New("token issuer not accepted")
	ErrTokenAudience  = errors.New("token audience not accepted")
	ErrTokenSubject   = errors.New("token has no subject")
)

// Validate checks a JWT and returns its principal name and expiry: its form
// and algorithm (parseJWT), its signature against the key set (verify), then
// its claims (checkClaims).
func (v *OAuthValidator) Validate(token string) (sub string, exp time.Time, err error) {
	t, err := parseJWT(token)
	if err != nil {
		return "", time.Time{}, err
	}
	if err := v.verify(&t); err != nil {
		return "", time.Time{}, err
	}
	return v.checkClaims(t.payload)
}

// jwt is a token split and decoded by parseJWT.
type jwt struct {
	alg, kid string
	hash     crypto.Hash
	ec       bool   // an ECDSA algorithm (else RSA PKCS #1 v1.5)
	signed   string // header.payload: what the signature covers
	payload  []byte
	sig      []byte
}

// parseJWT splits a compact JWS (RFC 7515 section 7.1) into its decoded parts and
// reads the header's algorithm and key id.
func parseJWT(token string) (jwt, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return jwt{}, ErrTokenMalformed
	}
	b := base64.RawURLEncoding
	hb, err1 := b.DecodeString(parts[0])
	pb, err2 := b.DecodeString(parts[1])
	sig, err3 := b.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return jwt{}, ErrTokenMalformed
	}
	var hdr struct {
		Alg, Kid string
		Crit     []string
	}
	if json.Unmarshal(hb, &hdr) != nil {
		return jwt{}, ErrTokenMalformed
	}
	if len(hdr.Crit) > 0 {
		// RFC 7515 section 4.1.11: critical extensions we do not know fail.
		return jwt{}, ErrTokenMalformed
	}
	t := jwt{alg: hdr.Alg, kid: hdr.Kid, signed: token[:len(parts[0])+1+len(parts[1])], payload: pb, sig: sig}
	switch hdr.Alg {
	case "RS256":
		t.hash = crypto.SHA256
	case "RS384":
		t.hash = crypto.SHA384
	case "RS512":
		t.hash = crypto.SHA512
	case "ES256":
		t.hash, t.ec = crypto.SHA256, true
	case "ES384":
		t.hash, t.ec = crypto.SHA384, true
	default: // "none" (an unsecured JWT) and everything else
		return jwt{}, ErrTokenAlg
	}
	return t, nil
}

// digest is the hash of what t's signature covers.
func (t *jwt) digest() []byte {
	switch t.hash {
	case crypto.SHA256:
		d := sha256.Sum256([]byte(t.signed))
		return d[:]
	case crypto.SHA384:
		d := sha512.Sum384([]byte(t.signed))
		return d[:]
	default:
		d := sha512.Sum512([]byte(t.signed))
		return d[:]
	}
}

// verify checks t's signature with the keys of the set its key id and
// algorithm allow: ErrTokenKey when none does, ErrTokenSignature when none
// verifies it.
func (v *OAuthValidator) verify(t *jwt) error {
	digest := t.digest()
	found := false
	for _, k := range v.keys {
		if t.kid != "" && k.kid != t.kid || k.alg != "" && k.alg != t.alg {
			continue
		}
		ok := false
		switch {
		case !t.ec && k.rsa != nil:
			found = true
			ok = rsa.VerifyPKCS1v15(k.rsa, t.hash, digest, t.sig) == nil
		case t.ec && k.ec != nil:
			found = true
			n := (k.ec.Curve.Params().BitSize + 7) / 8
			if len(t.sig) == 2*n {
				r, s := new(big.Int).SetBytes(t.sig[:n]), new(big.Int).SetBytes(t.sig[n:])
				ok = ecdsa.Verify(k.ec, digest, r, s)
			}
		}
		if ok {
			return nil
		}
	}
	if !found {
		return ErrTokenKey
	}
	return ErrTokenSignature
}

// checkClaims checks a verified token's claims (RFC 7519 section 4.1: exp, which
// Kafka requires, nbf and iat within the clock skew, then the issuer and
// audience the configuration asks for) and returns its subject and expiry.
func (v *OAuthValidator) checkClaims(payload []byte) (sub string, exp time.Time, err error) {
	var claims map[string]any
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if dec.Decode(&claims) != nil {
		return "", time.Time{}, ErrTokenMalformed
	}
	now := v.cfg.Now()
	skew := v.cfg.ClockSkew
	expS, ok := numClaim(claims, "exp")
	if !ok {
		return "", time.Time{}, ErrTokenMalformed // Kafka requires exp
	}
	exp = time.UnixMilli(int64(expS * 1000))
	if !now.Before(exp.Add(skew)) {
		return "", time.Time{}, ErrTokenExpired
	}
	if nbf, ok := numClaim(claims, "nbf"); ok && now.Add(skew).Before(time.UnixMilli(int64(nbf*1000))) {
		return "", time.Time{}, ErrTokenNotYet
	}
	if iat, ok := numClaim(claims, "iat"); ok && now.Add(skew).Before(time.UnixMilli(int64(iat*1000))) {
		return "", time.Time{}, ErrTokenNotYet
	}
	if v.cfg.Issuer != "" {
		if iss, _ := claims["iss"].(string); iss != v.cfg.Issuer {
			return "", time.Time{}, ErrTokenIssuer
		}
	}
	if len(v.cfg.Audience) > 0 && !v.audienceAccepted(claims["aud"]) {
		return "", time.Time{}, ErrTokenAudience
	}
	sub, _ = claims[v.cfg.SubClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return "", time.Time{}, ErrTokenSubject
	}
	return sub, exp, nil
}

// audienceAccepted reports whether the aud claim (a string or an array of
// them, RFC 7519 section 4.1.3) names an audience the configuration accepts.
func (v *OAuthValidator) audienceAccepted(aud any) bool {
	var auds []string
	switch a := aud.(type) {
	case string:
		auds = []string{a}
	case []any:
		for _, x := range a {
			if s, ok := x.(string); ok {
				auds = append(auds, s)
			}
		}
	}
	return slices.ContainsFunc(auds, func(a string) bool { return slices.Contains(v.cfg.Audience, a) })
}

func numClaim(c map[string]any, name string) (float64, bool) {
	n, ok := c[name].(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// ErrOAuthMalformed: the client message is not KIP-255's framing.
var ErrOAuthMalformed = errors.New("sasl: malformed OAUTHBEARER message")

// OAuthMessage is a parsed OAUTHBEARER client message.
type OAuthMessage struct {
	// Authzid is the GS2 header's authorization id ("a="), or "".
	Authzid string
	// Token is the bearer token.
	Token string
	// Extensions are the key=value pairs after auth (KIP-342).
	Extensions map[string]string
}

// ParseOAuthMessage parses the client's first message (RFC 7628 section 3.1 and
// Kafka's OAuthBearerClientInitialResponse):
//
//	gs2-header kvsep "auth=Bearer " token kvsep *(key "=" value kvsep) kvsep
//
// with gs2-header "n," or "y," then an optional "a=authzid", then ",";
// kvsep is %x01; keys are ALPHA, "auth" only once.
func ParseOAuthMessage(msg []byte) (OAuthMessage, error) {
	var m OAuthMessage
	s := string(msg)
	var flag string
	var ok bool
	if flag, s, ok = strings.Cut(s, ","); !ok || (flag != "n" && flag != "y") {
		return m, ErrOAuthMalformed
	}
	az, rest, ok := strings.Cut(s, ",")
	if !ok {
		return m, ErrOAuthMalformed
	}
	if az != "" {
		v, ok := strings.CutPrefix(az, "a=")
		// saslname: '=' only in the escapes =2C and =3D (RFC 5801 section 4).
		if !ok || v == "" || strings.Contains(strings.ReplaceAll(strings.ReplaceAll(v, "=2C", ""), "=3D", ""), "=") {
			return m, ErrOAuthMalformed
		}
		m.Authzid = strings.ReplaceAll(strings.ReplaceAll(v, "=2C", ","), "=3D", "=")
	}
	if !strings.HasPrefix(rest, "\x01") || !strings.HasSuffix(rest, "\x01\x01") || len(rest) < 3 {
		return m, ErrOAuthMalformed
	}
	for kv := range strings.SplitSeq(rest[1:len(rest)-2], "\x01") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || !alpha(k) {
			return m, ErrOAuthMalformed
		}
		if k == "auth" {
			tok, ok := strings.CutPrefix(v, "Bearer ")
			if !ok || m.Token != "" || tok == "" || strings.ContainsAny(tok, " \x01") {
				return m, ErrOAuthMalformed
			}
			m.Token = tok
			continue
		}
		if m.Extensions == nil {
			m.Extensions = map[string]string{}
		}
		m.Extensions[k] = v
	}
	if m.Token == "" {
		return m, ErrOAuthMalformed
	}
	return m, nil
}

func alpha(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

type oauthSession struct {
	v      *OAuthValidator
	user   string
	exp    time.Time
	step   int
	failed error
}

func (s *oauthSession) Step(_ context.Context, msg []byte) ([]byte, bool, error) {
	s.step++
	if s.failed != nil {
		// The client's %x01 after our error JSON (RFC 7628 section 3.2.3).
		return nil, false, s.failed
	}
	if s.step > 1 {
		return nil, false, ErrAuthFailed
	}
	m, err := ParseOAuthMessage(msg)
	if err != nil {
		return nil, false, err
	}
	sub, exp, err := s.v.Validate(m.Token)
	if err == nil && m.Authzid != "" && m.Authzid != sub {
		err = errors.New("authorization id differs from the token's principal")
	}
	if err != nil {
		s.failed = fmt.Errorf("invalid token: %w", err)
		// RFC 7628 section 3.2.2: the server's error is a JSON object.
		return []byte(`{"status":"invalid_token"}`), false, nil
	}
	s.user, s.exp = sub, exp
	return nil, true, nil
}

func (s *oauthSession) User() string      { return s.user }
func (s *oauthSession) Expiry() time.Time { return s.exp }
