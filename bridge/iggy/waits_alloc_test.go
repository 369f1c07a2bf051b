//go:build !race

package iggy

import (
	"os"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestWaitForAppendAllocs: a wait allocates nothing in steady state (the
// server runs in another process, as in alloc_test.go).
func TestWaitForAppendAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if os.Getenv(iggytest.DialectEnv) == "0.11" {
		t.Skip("the server process inherits KIGGY_IGGY_PROTOCOL=0.11: no waits")
	}
	addr := startServerProcess(t)
	c := open(t, Config{Addr: addr, Protocol: proto.Dialect012, WaitSessions: 2})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "wa", 4, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "wa", 3, batchOf(1, "a", 1)); err != nil {
		t.Fatal(err)
	}
	parts, offs := []int32{0, 1, 2, 3}, []int64{0, 0, 0, 0}
	wait := func() {
		if ready, err := c.WaitForAppend(cx, "wa", parts, offs, time.Second); err != nil || !ready {
			t.Fatalf("ready %v err %v", ready, err)
		}
	}
	for range 10 {
		wait()
	}
	if n := testing.AllocsPerRun(200, wait); n > 0 {
		t.Errorf("%.1f allocations per wait, want 0", n)
	}
}
