package iggy

// Logins take turns. iggy-server checks a password login against its
// Argon2 hash, about 18 ms of its CPU each on the benchmark machine, and it
// answers logins that arrive together together: four at once took 108 ms
// each, thirty-two 600 ms each (docs/IGGY.md, "Sessions"). After a restart
// every session of the pool needs one, and a request on a session that
// must log in waited for all of them. So the sessions of the primary's pool
// log in one at a time, and a request whose session must log in waits for
// its turn or for a session another request gives back connected,
// whichever comes first: the first requests after a restart are served one
// login after the server is back, and the pool fills in the background of
// the requests it serves. A waiter whose turn comes after a login failed
// while it waited (the server still down) fails as that one did, without a
// dial of its own, as if it had tried at the same moment.

import (
	"context"
	"time"
)

// loginFailure is the last failed login of the primary's pool.
type loginFailure struct {
	at  int64 // Unix ns
	err error
}

// awaitLogin is acquire's wait for a session that must log in first (s,
// taken from the pool, disconnected): it returns s with the login turn held
// (the caller gives it back with endLogin once s has tried), or a connected
// session another request released meanwhile (s back in the pool, no turn
// held).
func (c *Client) awaitLogin(ctx context.Context, s *session) (*session, bool, error) {
	select {
	case c.loginTurn <- struct{}{}:
		return s, true, nil
	default:
	}
	c.metrics.loginWaits.Add(1)
	since := time.Now().UnixNano()
	select {
	case c.loginTurn <- struct{}{}:
		if f := c.lastLoginFailure.Load(); f != nil && f.at > since {
			c.endLogin()
			return nil, false, f.err
		}
		return s, true, nil
	case o := <-c.handoff:
		c.idle <- s
		return o, false, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case <-c.done:
		return nil, false, ErrClosed
	}
}

// endLogin gives the login turn back.
func (c *Client) endLogin() { <-c.loginTurn }

// loginFailed records a failed login of the primary's pool, unless it
// failed because its caller's time ran out.
func (c *Client) loginFailed(ctx context.Context, err error) {
	if ctx.Err() == nil {
		c.lastLoginFailure.Store(&loginFailure{at: time.Now().UnixNano(), err: err})
	}
}

// putIdle puts s back into the pool, or hands it to a request waiting for
// its login turn when s is connected.
func (c *Client) putIdle(s *session) {
	if s.conn != nil {
		select {
		case c.handoff <- s:
			return
		default:
		}
	}
	c.idle <- s
}
