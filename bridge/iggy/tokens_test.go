package iggy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestSessionTokens (iggytest): a pool given a password logs one session in
// with it and the others with the token it mints; a token the server
// refuses (it lost it) sends the login back to the password and a new token
// is minted; the token is renewed before it expires and deleted on Close;
// with PasswordLogins every session uses the password and no token is made.
func TestSessionTokens(t *testing.T) {
	t.Run("pool", func(t *testing.T) {
		srv, addr := startServer(t, iggytest.Config{})
		c := openConnected(t, Config{Addr: addr, PoolSize: 8, PingInterval: 100 * time.Millisecond}, "t")
		pw, tok := srv.Logins()
		// The pool's 8 sessions, and the commit log's client, which logs in
		// with the same token.
		if pw != 1 || tok < 7 {
			t.Fatalf("logins: %d with the password, %d with a token; want 1 and at least 7", pw, tok)
		}
		minted := srv.Tokens()
		if len(minted) != 1 {
			t.Fatalf("tokens on the server: %v, want one", minted)
		}

		// The server loses the token (as one whose state was wiped would):
		// the next login falls back to the password, and the keep-alive
		// loop mints another.
		srv.DropTokens()
		srv.Stop()
		time.Sleep(staleCheckIdle) // down as long as a real server is at least
		if _, err := srv.Start(addr); err != nil {
			t.Fatal(err)
		}
		// Appends succeed; one may be refused before it is sent while a
		// session that tried to connect during the outage backs off
		// (store.ErrUnavailable, which Kafka retries).
		for i := 0; i < 3; {
			_, err := c.Append(ctx(t), "t", 0, batchOf(1, "after", 1))
			switch {
			case err == nil:
				i++
			case errors.Is(err, store.ErrUnavailable):
				time.Sleep(20 * time.Millisecond)
			default:
				t.Fatalf("append %d after the restart: %v", i, err)
			}
		}
		if n := c.tokens.refused.Load(); n < 1 {
			t.Fatalf("refused token logins: %d, want at least 1", n)
		}
		if !testtools.Eventually(5*time.Second, func() bool {
			names := srv.Tokens()
			return len(names) == 1 && names[0] != minted[0]
		}) {
			t.Fatalf("no new token minted after the refusal: %v", srv.Tokens())
		}
		pw0, tok0 := srv.Logins()
		srv.Stop()
		time.Sleep(staleCheckIdle)
		if _, err := srv.Start(addr); err != nil {
			t.Fatal(err)
		}
		// The sessions are found closed once idle for staleCheckIdle, or by
		// the keep-alive loop, and log in again.
		var pw1, tok1 int
		testtools.Eventually(5*time.Second, func() bool {
			var held []*session
			defer func() {
				for _, s := range held {
					c.release(s)
				}
			}()
			for range len(c.sessions) {
				s, err := c.acquire(ctx(t))
				if err != nil {
					return false // backing off after a failure during the outage
				}
				held = append(held, s)
			}
			pw1, tok1 = srv.Logins()
			return tok1-tok0 >= 8
		})
		if pw1 != pw0 || tok1-tok0 < 8 {
			t.Fatalf("after a restart with the new token: %d password and %d token logins, want 0 and at least 8", pw1-pw0, tok1-tok0)
		}

		c.Close()
		if names := srv.Tokens(); len(names) != 0 {
			t.Fatalf("tokens left after Close: %v", names)
		}
	})

	t.Run("renewed", func(t *testing.T) {
		srv, addr := startServer(t, iggytest.Config{})
		c := open(t, Config{Addr: addr, PoolSize: 2, PingInterval: 100 * time.Millisecond, tokenLifetime: 600 * time.Millisecond})
		first := srv.Tokens()
		if len(first) != 1 {
			t.Fatalf("tokens: %v, want one", first)
		}
		// Renewed at half its life: a new one, and the old deleted.
		if !testtools.Eventually(5*time.Second, func() bool {
			names := srv.Tokens()
			return len(names) == 1 && !slices.Contains(names, first[0])
		}) {
			t.Fatalf("token not renewed: %v", srv.Tokens())
		}
		if n := c.tokens.refused.Load(); n != 0 {
			t.Fatalf("refused token logins: %d", n)
		}
	})

	t.Run("password-logins", func(t *testing.T) {
		srv, addr := startServer(t, iggytest.Config{})
		openConnected(t, Config{Addr: addr, PoolSize: 4, PasswordLogins: true}, "t")
		pw, tok := srv.Logins()
		if pw < 4 || tok != 0 {
			t.Fatalf("logins: %d with the password, %d with a token; want at least 4 and 0", pw, tok)
		}
		if names := srv.Tokens(); len(names) != 0 {
			t.Fatalf("tokens minted with PasswordLogins: %v", names)
		}
	})
}

// TestSessionTokensRealServer: against a real iggy-server, a pool of 32
// logs in with the password once and with its session token 31 times, and
// after a SIGKILL and restart of the server (which keeps the token: it was
// committed before it was handed out) logs every session in again with the
// token. It logs the server's CPU for those 32 logins beside the same pool
// logging in with the password (the figures of docs/IGGY.md "Sessions").
func TestSessionTokensRealServer(t *testing.T) {
	if !realServer(t) {
		t.Skip("no iggy-server found (KIGGY_TEST_IGGY=server requires one): the model's tokens are TestSessionTokens")
	}
	node := iggyserver.StartT(t)
	// Logins that succeeded, by kind (the first login of a client tries
	// protocol 0.12 first, which a 0.11 server refuses before any check).
	ok := func(c *Client, code uint32) uint64 {
		i := commandIndex(code)
		n := c.metrics.latency[i].Count()
		for k := range c.metrics.errors[i] {
			n -= c.metrics.errors[i][k].Load()
		}
		return n
	}
	logins := func(c *Client) (pw, tok uint64) {
		return ok(c, proto.CodeLoginRegister), ok(c, proto.CodeLoginRegisterWithPAT)
	}
	for _, mode := range []struct {
		name     string
		password bool
	}{{"tokens", false}, {"password", true}} {
		c := openConnected(t, Config{Addr: node.Addr, PoolSize: 32, PasswordLogins: mode.password, PingInterval: -1}, "tk-"+mode.name)
		pw0, tok0 := logins(c)
		if !mode.password && (pw0 != 1 || tok0 < 31) {
			t.Fatalf("%s: %d password and %d token logins at start, want 1 and at least 31", mode.name, pw0, tok0)
		}
		node.Kill()
		if err := node.Restart(); err != nil {
			t.Fatal(err)
		}
		cpu0, err := procCPU(node.Pid())
		if err != nil {
			t.Fatal(err)
		}
		connectAll(t, c)
		cpu1, err := procCPU(node.Pid())
		if err != nil {
			t.Fatal(err)
		}
		pw1, tok1 := logins(c)
		t.Logf("%s: 32 sessions logged in again after a SIGKILL and restart: %d with the password, %d with the token; iggy-server's CPU meanwhile %v",
			mode.name, pw1-pw0, tok1-tok0, cpu1-cpu0)
		if !mode.password && (pw1 != pw0 || tok1-tok0 < 32 || c.tokens.refused.Load() != 0) {
			t.Fatalf("tokens: after the restart %d password and %d token logins, %d refused; want 0, at least 32, 0",
				pw1-pw0, tok1-tok0, c.tokens.refused.Load())
		}
		if !mode.password {
			// The renewal deletes the token every session logged in with:
			// the server must keep them (it does not evict a token's
			// sessions when the token goes), and new logins take the new one.
			old := *c.tokens.cur.Load()
			due := old
			due.renew = time.Now().Add(-time.Second)
			c.tokens.cur.Store(&due)
			s, err := c.acquire(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			c.maybeMintToken(ctx(t), s)
			c.release(s)
			if cur := c.tokens.cur.Load(); cur == nil || cur.name == old.name {
				t.Fatalf("token not renewed: %+v", cur)
			}
			for i := range 64 {
				if _, err := c.Append(ctx(t), "tk-"+mode.name, 0, batchOf(1, "renewed", 1)); err != nil {
					t.Fatalf("append %d on the sessions of the deleted token: %v", i, err)
				}
			}
			if n := c.metrics.connects.Load(); n != uint64(pw1+tok1) {
				t.Fatalf("sessions connected again after the renewal: %d connects, %d logins before", n, pw1+tok1)
			}
		}
		c.Close()
	}
}

// procCPU is a process's user + system CPU time so far (/proc/PID/stat,
// fields 14 and 15, in clock ticks of 1/100 s).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}
