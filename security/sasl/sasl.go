// Package sasl is the server side of the SASL mechanisms kiggy offers on a
// SASL listener: PLAIN (RFC 4616), SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802,
// RFC 7677, package security/scram) and OAUTHBEARER (RFC 7628 with Kafka's
// KIP-255 framing). The gateway (bridge/sasl.go) carries the messages in
// SaslAuthenticate requests; docs/design/security.md §7 says how.
package sasl

import (
	"context"
	"errors"
	"time"

	"github.com/kiggy-io/kiggy/security/scram"
)

// Mechanism names, as clients send them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
)

// ErrAuthFailed is the error of a failed authentication whose cause the
// client is not told (a wrong password, an unknown user).
var ErrAuthFailed = errors.New("sasl: authentication failed")

// Session is one authentication exchange.
type Session interface {
	// Step consumes the client's next message and returns the server's
	// reply. done is true once the client is authenticated; then User and
	// Lifetime are set. An error fails the authentication.
	Step(ctx context.Context, msg []byte) (reply []byte, done bool, err error)
	// User is the authenticated user name (after done).
	User() string
	// Expiry is when the credential the client authenticated with stops
	// being valid (an OAUTHBEARER token's exp); zero = never.
	Expiry() time.Time
}

// PlainVerifier checks a PLAIN user name and password.
type PlainVerifier interface {
	// VerifyPlain reports whether password is user's.
	VerifyPlain(ctx context.Context, user, password string) (bool, error)
}

// ScramStore finds stored SCRAM credentials.
type ScramStore interface {
	// ScramCredential returns user's credential for m; ok false when the
	// user has none.
	ScramCredential(ctx context.Context, m scram.Mechanism, user string) (c scram.Credential, ok bool, err error)
}

// Server holds what the mechanisms check credentials against. A nil field
// turns its mechanism off.
type Server struct {
	// Plain verifies PLAIN passwords.
	Plain PlainVerifier
	// Scram finds SCRAM credentials (both SCRAM mechanisms).
	Scram ScramStore
	// OAuth validates OAUTHBEARER tokens.
	OAuth *OAuthValidator
}

// Mechanisms lists the enabled mechanisms, in the order SaslHandshake
// answers them.
func (s *Server) Mechanisms() []string {
	var ms []string
	if s.Plain != nil {
		ms = append(ms, Plain)
	}
	if s.Scram != nil {
		ms = append(ms, ScramSHA256, ScramSHA512)
	}
	if s.OAuth != nil {
		ms = append(ms, OAuthBearer)
	}
	return ms
}

// Start begins an exchange of mechanism name; ok is false when it is not
// enabled.
func (s *Server) Start(name string) (Session, bool) {
	switch name {
	case Plain:
		if s.Plain != nil {
			return &plainSession{v: s.Plain}, true
		}
	case ScramSHA256, ScramSHA512:
		if s.Scram != nil {
			return newScramSession(s.Scram, scram.ParseMechanism(name)), true
		}
	case OAuthBearer:
		if s.OAuth != nil {
			return &oauthSession{v: s.OAuth}, true
		}
	}
	return nil, false
}

// scramSession adapts scram.Server to Session.
type scramSession struct {
	srv *scram.Server
	ctx context.Context
}

func newScramSession(st ScramStore, m scram.Mechanism) *scramSession {
	s := &scramSession{}
	s.srv = scram.NewServer(m, func(user string) (scram.Credential, bool, error) {
		return st.ScramCredential(s.ctx, m, user)
	})
	return s
}

func (s *scramSession) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	s.ctx = ctx
	return s.srv.Step(msg)
}

func (s *scramSession) User() string      { return s.srv.User() }
func (s *scramSession) Expiry() time.Time { return time.Time{} }
