package iggy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// Session tokens (docs/IGGY.md, "Sessions"). iggy-server checks a password
// login against the user's Argon2 hash, about 18 ms of its CPU on the
// machines kiggy is measured on, and a token login against the SHA-256 of
// the token: a pool of 32 sessions that logs in with the password costs the
// server 0.6 s of CPU at every start of kiggy and every restart of the
// server. So a client given a username and password logs its first session
// in with them and then mints a personal access token for the rest
// (CreatePersonalAccessToken, code 42, operation 146: `[name u8 len][name]
// [expiry u64 µs]`, answered `[token u8 len][token]`); every later login
// uses the token, and falls back to the password when the server refuses it
// (a server that lost its state, a token deleted by hand). The token
// expires after sessionTokenLifetime, so one left behind by a crashed kiggy
// is gone by then; a live client mints its successor at half of it and
// deletes the one before, and deletes its own on Close.

// sessionTokenLifetime is a minted token's expiry (Config.tokenLifetime in
// tests).
const sessionTokenLifetime = time.Hour

// sessionTokenRetry is how long a client waits after a failed mint (or a
// token the server refused) before it mints again.
const sessionTokenRetry = time.Minute

// sessionToken is a minted personal access token.
type sessionToken struct {
	name   string
	secret string
	renew  time.Time // mint the successor after this
}

// sessionTokens is a client's current token, shared with the client of its
// system stream, which logs in with it too but never mints.
type sessionTokens struct {
	cur      atomic.Pointer[sessionToken]
	nextMint atomic.Int64  // Unix ns before which no mint is tried
	refused  atomic.Uint64 // token logins refused, then made with the password
}

// loginToken returns the token a new login should present, or nil for the
// password.
func (c *Client) loginToken() *sessionToken {
	if c.tokens == nil {
		return nil
	}
	return c.tokens.cur.Load()
}

// tokenRefused drops t after the server refused a login with it; the next
// logins use the password until a new token is minted.
func (c *Client) tokenRefused(t *sessionToken) {
	c.tokens.refused.Add(1)
	if c.tokens.cur.CompareAndSwap(t, nil) {
		// The keep-alive loop mints a new one in its next round.
		c.tokens.nextMint.Store(0)
		c.log.Info("iggy: the server refused kiggy's session token (it lost it, or it was deleted); logging in with the password", "token", t.name)
	}
}

// maybeMintToken mints a session token on s when the client has none or
// its current one is due for renewal, and deletes the one it replaces. A
// failure is logged and retried after sessionTokenRetry; logins use the
// password meanwhile.
func (c *Client) maybeMintToken(ctx context.Context, s *session) {
	if c.tokens == nil || c.cfg.system {
		return
	}
	old := c.tokens.cur.Load()
	now := time.Now()
	if old != nil && now.Before(old.renew) || now.UnixNano() < c.tokens.nextMint.Load() {
		return
	}
	t, err := mintToken(ctx, s, c.cfg.tokenLifetime)
	if err != nil {
		c.tokens.nextMint.Store(now.Add(sessionTokenRetry).UnixNano())
		c.log.Info("iggy: could not create a session token; sessions log in with the password", "err", err)
		return
	}
	if !c.tokens.cur.CompareAndSwap(old, t) {
		// Refused meanwhile: t is new and valid all the same.
		c.tokens.cur.Store(t)
	}
	if old != nil {
		if err := deleteToken(ctx, s, old.name); err != nil {
			c.log.Debug("iggy: could not delete the previous session token (it expires by itself)", "token", old.name, "err", err)
		}
	}
}

// mintToken creates a personal access token named kiggy-<random> that
// expires after lifetime.
func mintToken(ctx context.Context, s *session, lifetime time.Duration) (*sessionToken, error) {
	var id [8]byte
	_, _ = rand.Read(id[:])
	name := "kiggy-" + hex.EncodeToString(id[:])
	b := proto.AppendName(s.begin(), name)
	b = proto.AppendU64(b, uint64(lifetime/time.Microsecond))
	body, _, err := s.do(ctx, proto.CodeCreatePAT, b)
	if err != nil {
		return nil, err
	}
	r := proto.NewReader(body)
	secret := r.Name()
	if !r.Ok() || len(secret) == 0 {
		return nil, fmt.Errorf("%w: malformed CreatePersonalAccessToken reply", ErrProtocol)
	}
	return &sessionToken{name: name, secret: string(secret), renew: time.Now().Add(lifetime / 2)}, nil
}

// deleteToken deletes the personal access token name.
func deleteToken(ctx context.Context, s *session, name string) error {
	_, _, err := s.do(ctx, proto.CodeDeletePAT, proto.AppendName(s.begin(), name))
	return err
}

// deleteSessionToken deletes the client's token on Close, best effort: a
// token left behind expires by itself.
func (c *Client) deleteSessionToken() {
	if c.tokens == nil || c.cfg.system {
		return
	}
	t := c.tokens.cur.Swap(nil)
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.DialTimeout)
	defer cancel()
	var s *session
	select {
	case s = <-c.idle:
	case <-ctx.Done():
		return
	}
	defer func() { c.idle <- s }()
	if s.conn == nil {
		return // not connected: do not log in just to delete it
	}
	if err := deleteToken(ctx, s, t.name); err != nil {
		c.log.Debug("iggy: could not delete the session token (it expires by itself)", "token", t.name, "err", err)
	}
}

// tokenRefusal reports whether a failed token login was a refusal of the
// token itself (eviction reason 10 InvalidToken, or code 53), which the
// password may still pass.
func tokenRefusal(err error) bool {
	var ev *EvictionError
	if errors.As(err, &ev) {
		return ev.Reason == proto.EvictInvalidToken
	}
	return codeOf(err) == proto.CodeInvalidPAT
}
