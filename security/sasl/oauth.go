package sasl

import (
	"context"
	"time"
)

// OAuthValidator checks OAUTHBEARER tokens.
type OAuthValidator struct{}

type oauthSession struct {
	v    *OAuthValidator
	user string
	exp  time.Time
}

func (s *oauthSession) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	return nil, false, ErrAuthFailed
}

func (s *oauthSession) User() string      { return s.user }
func (s *oauthSession) Expiry() time.Time { return s.exp }
