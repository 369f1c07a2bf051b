package iggy

import (
	"errors"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
)

// TestVerifyLogin: the server's own users are accepted, a wrong password or
// an unknown user is ErrAuth, and the probe leaves the client's sessions
// and counters alone.
func TestVerifyLogin(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	c := open(t, Config{Addr: addr, PoolSize: 1})
	cx := ctx(t)
	before := c.metrics.connects.Load()
	if err := c.VerifyLogin(cx, "iggy", "iggy"); err != nil {
		t.Fatalf("the root user: %v", err)
	}
	for _, bad := range [][2]string{{"iggy", "nope"}, {"nobody", "iggy"}} {
		if err := c.VerifyLogin(cx, bad[0], bad[1]); !errors.Is(err, ErrAuth) {
			t.Errorf("%s/%s: %v, want ErrAuth", bad[0], bad[1], err)
		}
	}
	if got := c.metrics.connects.Load(); got != before {
		t.Errorf("the probes counted as client connects: %d → %d", before, got)
	}
	srv.Close()
	if err := c.VerifyLogin(cx, "iggy", "iggy"); err == nil || errors.Is(err, ErrAuth) {
		t.Errorf("server gone: %v, want a non-auth error", err)
	}
}
