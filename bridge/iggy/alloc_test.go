//go:build !race

package iggy

import (
	"context"
	"testing"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/message"
)

// TestAppendAllocs proves a full Append request/response cycle against
// iggytest allocates nothing in steady state (docs/design/style.md habit 7).
func TestAppendAllocs(t *testing.T) {
	addr := startServerProcess(t)
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1})
	cx := context.Background()
	if _, err := c.CreateTopic(cx, "alloc", 1, bridge.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	b := batchOf(1_700_000_000_000_000, "payload-", 10)
	if _, err := c.Append(cx, "alloc", 0, b); err != nil {
		t.Fatal(err)
	}
	var failed error
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.Append(cx, "alloc", 0, b); err != nil {
			failed = err
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Fatalf("Append allocates %.1f times per call", allocs)
	}
}

// TestReadAllocs proves a Read that fits one poll allocates nothing.
func TestReadAllocs(t *testing.T) {
	addr := startServerProcess(t)
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1})
	cx := context.Background()
	c.CreateTopic(cx, "ralloc", 1, bridge.TopicConfig{})
	c.Append(cx, "ralloc", 0, batchOf(1, "payload-", 10))
	n := 0
	fn := func(m *message.Message) bool { n++; return true }
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.Read(cx, "ralloc", 0, 0, 1<<20, fn); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Read allocates %.1f times per call", allocs)
	}
	if n == 0 {
		t.Fatal("nothing read")
	}
}
