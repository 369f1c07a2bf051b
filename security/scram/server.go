package scram

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"strings"
)

// Errors of an exchange. Every one fails the authentication; the gateway
// answers SASL_AUTHENTICATION_FAILED and closes (docs/design/security.md §7).
var (
	// ErrMalformed: a client message does not follow RFC 5802 section 7.
	ErrMalformed = errors.New("scram: malformed client message")
	// ErrChannelBinding: the client asked for channel binding ("p="), which
	// kiggy, like Kafka, does not offer.
	ErrChannelBinding = errors.New("scram: channel binding not supported")
	// ErrAuthzid: the client asked to act as another user (authzid ≠
	// username), which Kafka refuses.
	ErrAuthzid = errors.New("scram: authorization id differs from user name")
	// ErrTokenAuth: the client authenticates with a delegation token
	// (tokenauth=true, KIP-48), which kiggy does not issue.
	ErrTokenAuth = errors.New("scram: delegation tokens not supported")
	// ErrBadProof: the proof does not match the stored credential (wrong
	// password, or an unknown user).
	ErrBadProof = errors.New("scram: invalid credentials")
	// ErrDone: a message after the exchange ended.
	ErrDone = errors.New("scram: exchange already finished")
)

// Lookup finds the stored credential of user for the exchange's mechanism;
// ok false when the user has none.
type Lookup func(user string) (c Credential, ok bool, err error)

// ClientFirst is a parsed client-first-message (RFC 5802 section 7).
type ClientFirst struct {
	// GS2Header is "n,," or "y,," (with the authzid when given), sent back
	// base64-encoded in the client-final channel binding.
	GS2Header string
	// Authzid is the optional authorization id ("a="), unescaped.
	Authzid string
	// User is the user name ("n="), unescaped.
	User string
	// Nonce is the client nonce ("r=").
	Nonce string
	// Extensions are Kafka's SCRAM extensions (key=value after the nonce).
	Extensions map[string]string
	// Bare is client-first-message-bare, part of AuthMessage.
	Bare string
}

// ParseClientFirst parses a client-first-message:
//
//	gs2-header = gs2-cbind-flag "," [ authzid ] ","
//	client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions]
func ParseClientFirst(msg []byte) (ClientFirst, error) {
	s := string(msg)
	var cf ClientFirst
	flag, rest, ok := strings.Cut(s, ",")
	if !ok {
		return cf, ErrMalformed
	}
	switch {
	case flag == "n", flag == "y":
	case strings.HasPrefix(flag, "p="):
		return cf, ErrChannelBinding
	default:
		return cf, ErrMalformed
	}
	az, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return cf, ErrMalformed
	}
	if az != "" {
		v, ok := strings.CutPrefix(az, "a=")
		if !ok {
			return cf, ErrMalformed
		}
		if cf.Authzid, ok = unescapeName(v); !ok || cf.Authzid == "" {
			return cf, ErrMalformed
		}
	}
	cf.GS2Header = s[:len(s)-len(bare)]
	cf.Bare = bare
	attrs := strings.Split(bare, ",")
	// "m" is reserved for future mandatory extensions: "If a server sees it,
	// it MUST fail the authentication" (RFC 5802 section 5.1).
	if len(attrs) < 2 || strings.HasPrefix(attrs[0], "m=") {
		return cf, ErrMalformed
	}
	n, ok := strings.CutPrefix(attrs[0], "n=")
	if !ok {
		return cf, ErrMalformed
	}
	if cf.User, ok = unescapeName(n); !ok || cf.User == "" {
		return cf, ErrMalformed
	}
	if cf.Nonce, ok = strings.CutPrefix(attrs[1], "r="); !ok || !printable(cf.Nonce) {
		return cf, ErrMalformed
	}
	for _, a := range attrs[2:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok || !extKey(k) {
			return cf, ErrMalformed
		}
		if cf.Extensions == nil {
			cf.Extensions = map[string]string{}
		}
		cf.Extensions[k] = v
	}
	return cf, nil
}

// ClientFinal is a parsed client-final-message (RFC 5802 section 7).
type ClientFinal struct {
	// ChannelBinding is the base64 "c=" value.
	ChannelBinding string
	// Nonce is the combined nonce ("r=").
	Nonce string
	// Proof is the base64-decoded ClientProof ("p=").
	Proof []byte
	// WithoutProof is client-final-message-without-proof, part of
	// AuthMessage.
	WithoutProof string
}

// ParseClientFinal parses a client-final-message:
//
//	client-final-message = channel-binding "," nonce ["," extensions] "," proof
func ParseClientFinal(msg []byte) (ClientFinal, error) {
	s := string(msg)
	var cf ClientFinal
	i := strings.LastIndex(s, ",p=")
	if i < 0 {
		return cf, ErrMalformed
	}
	cf.WithoutProof = s[:i]
	proof, err := b64.DecodeString(s[i+3:])
	if err != nil || len(proof) == 0 {
		return cf, ErrMalformed
	}
	cf.Proof = proof
	attrs := strings.Split(cf.WithoutProof, ",")
	if len(attrs) < 2 {
		return cf, ErrMalformed
	}
	var ok bool
	if cf.ChannelBinding, ok = strings.CutPrefix(attrs[0], "c="); !ok {
		return cf, ErrMalformed
	}
	if cf.Nonce, ok = strings.CutPrefix(attrs[1], "r="); !ok || !printable(cf.Nonce) {
		return cf, ErrMalformed
	}
	for _, a := range attrs[2:] {
		if k, _, ok := strings.Cut(a, "="); !ok || !extKey(k) {
			return cf, ErrMalformed
		}
	}
	return cf, nil
}

// unescapeName decodes saslname: "=2C" is ',' and "=3D" is '='; any other
// '=' is invalid (RFC 5802 section 5.1).
func unescapeName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, !strings.Contains(s, ",")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' {
			b.WriteByte(c)
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// printable: the nonce's characters, %x21-7E except ',' (RFC 5802 section 7).
func printable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// extKey: an extension name, alphanumeric (Kafka's ScramExtensions).
func extKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// fakeKey salts the fake credentials of unknown users, so that the answer
// to a user that does not exist looks like one that does, and stays the
// same for a name across attempts.
var fakeKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// Server is the server side of one SCRAM exchange: two client messages,
// two server messages.
type Server struct {
	mech   Mechanism
	lookup Lookup
	step   int
	first  ClientFirst
	sfirst string
	nonce  string
	cred   Credential
	known  bool
}

// NewServer starts an exchange for m, finding credentials with lookup.
func NewServer(m Mechanism, lookup Lookup) *Server { return &Server{mech: m, lookup: lookup} }

// User is the user name the client gave (known after the first message).
func (s *Server) User() string { return s.first.User }

// Step consumes the client's next message and returns the server's reply;
// done is true when the client is authenticated. Any error fails the
// exchange.
func (s *Server) Step(msg []byte) (reply []byte, done bool, err error) {
	s.step++
	switch s.step {
	case 1:
		return s.serverFirst(msg)
	case 2:
		return s.serverFinal(msg)
	}
	return nil, false, ErrDone
}

func (s *Server) serverFirst(msg []byte) ([]byte, bool, error) {
	cf, err := ParseClientFirst(msg)
	if err != nil {
		return nil, false, err
	}
	s.first = cf
	if cf.Authzid != "" && cf.Authzid != cf.User {
		return nil, false, ErrAuthzid
	}
	if cf.Extensions["tokenauth"] == "true" {
		return nil, false, ErrTokenAuth
	}
	cred, ok, err := s.lookup(cf.User)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		// Answer as for a real user; the proof cannot match (RFC 5802 section 9:
		// "the server SHOULD NOT reveal whether a user exists").
		h := hmac.New(sha256.New, fakeKey)
		h.Write([]byte(s.mech.Name() + "\x00" + cf.User))
		cred = Credential{Salt: h.Sum(nil), Iterations: MinIterations}
	}
	s.cred, s.known = cred, ok
	sn := make([]byte, 24)
	rand.Read(sn)
	s.nonce = cf.Nonce + b64.EncodeToString(sn)
	s.sfirst = "r=" + s.nonce + ",s=" + b64.EncodeToString(cred.Salt) + ",i=" + itoa(cred.Iterations)
	return []byte(s.sfirst), false, nil
}

func (s *Server) serverFinal(msg []byte) ([]byte, bool, error) {
	cf, err := ParseClientFinal(msg)
	if err != nil {
		return nil, false, err
	}
	// The nonce is echoed as sent (RFC 5802 section 5.1: "it MUST be the
	// same as the one sent in the server-first-message"). Kafka 4.4 checks
	// the same; librdkafka 2.0.2, which repeats the client nonce in front,
	// is refused by both (docs/COMPATIBILITY.md).
	if cf.ChannelBinding != b64.EncodeToString([]byte(s.first.GS2Header)) || cf.Nonce != s.nonce {
		return nil, false, ErrMalformed
	}
	if !s.known || len(cf.Proof) != s.mech.Size() {
		return nil, false, ErrBadProof
	}
	authMsg := s.first.Bare + "," + s.sfirst + "," + cf.WithoutProof
	// ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage); the client
	// is who it says when H(ClientKey) = StoredKey (RFC 5802 section 3).
	sig := s.mech.hmac(s.cred.StoredKey, authMsg)
	key := make([]byte, len(sig))
	for i := range sig {
		key[i] = cf.Proof[i] ^ sig[i]
	}
	if !hmac.Equal(s.mech.digest(key), s.cred.StoredKey) {
		return nil, false, ErrBadProof
	}
	ssig := s.mech.hmac(s.cred.ServerKey, authMsg)
	return []byte("v=" + b64.EncodeToString(ssig)), true, nil
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}
