package iggytest

import (
	"crypto/rand"
	"encoding/base64"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// A personal access token minted by CreatePersonalAccessToken.
type pat struct {
	secret  string
	expires uint64 // Unix µs; 0 = never
}

// createPAT serves CreatePersonalAccessToken (code 42, operation 146):
// `[name u8 len][name][expiry u64 µs]` (0 = the server's default, never
// here; u64::MAX = never), answered `[token u8 len][token]`: 50 random
// bytes in base64, as the server mints them. Callers hold s.mu.
func (s *Server) createPAT(r *proto.Reader, now uint64) ([]byte, uint32) {
	name := r.Name()
	expiry := r.U64()
	if r.Complete() != nil || len(name) == 0 {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if _, ok := s.pats[string(name)]; ok {
		return failResult(proto.CodePATAlreadyExists)
	}
	var raw [50]byte
	_, _ = rand.Read(raw[:])
	t := pat{secret: base64.StdEncoding.EncodeToString(raw[:])}
	if expiry != 0 && expiry != ^uint64(0) {
		t.expires = now + expiry
	}
	if s.pats == nil {
		s.pats = map[string]pat{}
	}
	s.pats[string(name)] = t
	return proto.AppendName(proto.AppendResultOK(nil), t.secret), 0
}

// deletePAT serves DeletePersonalAccessToken (code 43, operation 147).
// Callers hold s.mu.
func (s *Server) deletePAT(r *proto.Reader) ([]byte, uint32) {
	name := r.Name()
	if r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if _, ok := s.pats[string(name)]; !ok {
		return failResult(proto.CodeResourceNotFound)
	}
	delete(s.pats, string(name))
	return proto.AppendResultOK(nil), 0
}

// validToken reports whether tok is a configured token or a minted one
// that has not expired. Callers hold s.mu.
func (s *Server) validToken(tok string) bool {
	if tok == "" {
		return false
	}
	for _, t := range s.cfg.Tokens {
		if t == tok {
			return true
		}
	}
	now := s.nowMicros()
	for _, t := range s.pats {
		if t.secret == tok && (t.expires == 0 || now < t.expires) {
			return true
		}
	}
	return false
}

// Tokens returns the names of the personal access tokens minted and not
// deleted.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for n := range s.pats {
		names = append(names, n)
	}
	return names
}

// DropTokens deletes every minted token, as a server that lost its state
// or an administrator would.
func (s *Server) DropTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.pats)
}

// Logins returns how many logins the server accepted with a password and
// with a token.
func (s *Server) Logins() (password, token int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passwordLogins, s.tokenLogins
}
