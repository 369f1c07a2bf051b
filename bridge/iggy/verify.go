package iggy

import (
	"context"
	"errors"
)

// VerifyLogin reports whether Iggy accepts username and password: it logs
// in on a connection of its own to the current primary (with the client's
// TLS settings) and closes it at once. It is how SASL PLAIN checks a Kafka
// client's credentials against Iggy's users (docs/design/security.md §7). A
// rejected login is an error wrapping ErrAuth; a server that cannot be
// reached, ErrUnreachable.
func (c *Client) VerifyLogin(ctx context.Context, username, password string) error {
	addr, _ := c.target()
	if addr == "" {
		return errors.Join(ErrUnreachable, errors.New("iggy: no primary known"))
	}
	// A throwaway client around one session: the pool, its metrics and its
	// read cache are not touched, and it has no session token (tokens.go),
	// so the login is made with the password given.
	v := &Client{cfg: c.cfg, log: c.log}
	v.cfg.Username, v.cfg.Password, v.cfg.Token, v.cfg.sharedTokens = username, password, "", nil
	s := newSession(v)
	defer s.close()
	return s.connectTo(ctx, addr)
}

// VerifyPlain checks a SASL PLAIN user name and password against Iggy's
// users (security/sasl.PlainVerifier): true when the login succeeds, false
// when Iggy rejects it, an error when Iggy cannot say.
func (c *Client) VerifyPlain(ctx context.Context, user, password string) (bool, error) {
	err := c.VerifyLogin(ctx, user, password)
	if errors.Is(err, ErrAuth) {
		return false, nil
	}
	return err == nil, err
}
