package sasl

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"
)

// CachedPlain is a PlainVerifier in front of a slow or remote one (Iggy's
// users: a login per check, docs/design/security.md §7). It bounds how many
// checks run at once, and remembers successes for a while so that a client
// that reconnects does not cost another remote login. Only successes are
// remembered, under a salted hash of the user and password (never the
// password itself), so a wrong password is always checked again and a
// password changed at the source works at once; a password removed at the
// source still works here until its entry expires.
type CachedPlain struct {
	v   PlainVerifier
	ttl time.Duration
	sem chan struct{}

	salt [16]byte
	mu   sync.Mutex
	ok   map[[sha256.Size]byte]time.Time // → when the success expires
}

// maxCachedPlain bounds the remembered successes; past it, expired ones are
// dropped, and when none has expired, all of them.
const maxCachedPlain = 10_000

// NewCachedPlain returns v behind a cache of successes kept for ttl (0 =
// none kept) and at most concurrent checks at once (≥ 1).
func NewCachedPlain(v PlainVerifier, ttl time.Duration, concurrent int) *CachedPlain {
	c := &CachedPlain{v: v, ttl: ttl, sem: make(chan struct{}, max(concurrent, 1)), ok: map[[sha256.Size]byte]time.Time{}}
	_, _ = rand.Read(c.salt[:])
	return c
}

// VerifyPlain implements PlainVerifier.
func (c *CachedPlain) VerifyPlain(ctx context.Context, user, password string) (bool, error) {
	h := sha256.New()
	h.Write(c.salt[:])
	h.Write([]byte(user))
	h.Write([]byte{0}) // RFC 4616 forbids NUL in both, so the split is unambiguous
	h.Write([]byte(password))
	var key [sha256.Size]byte
	h.Sum(key[:0])
	now := time.Now()
	c.mu.Lock()
	exp, hit := c.ok[key]
	c.mu.Unlock()
	if hit && now.Before(exp) {
		return true, nil
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	ok, err := c.v.VerifyPlain(ctx, user, password)
	<-c.sem
	if ok && err == nil && c.ttl > 0 {
		c.mu.Lock()
		if len(c.ok) >= maxCachedPlain {
			for k, e := range c.ok {
				if !now.Before(e) {
					delete(c.ok, k)
				}
			}
			if len(c.ok) >= maxCachedPlain {
				clear(c.ok)
			}
		}
		c.ok[key] = now.Add(c.ttl)
		c.mu.Unlock()
	}
	return ok, err
}
