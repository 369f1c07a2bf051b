//go:build !race

package iggy

import (
	"context"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestRoutedAllocs: an Append and a Read on a routed partition (routes.go)
// allocate nothing in steady state either. The route is set by hand to the
// one server (in a process of its own, so only the client's allocations
// count): the routed session pool is what is measured.
func TestRoutedAllocs(t *testing.T) {
	addr := startServerProcess(t)
	c := open(t, Config{Addr: addr, PoolSize: 2, PingInterval: -1, ReadCacheBytes: -1})
	cx := context.Background()
	if _, err := c.CreateTopic(cx, "ralloc", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	_, gen := c.target()
	c.setRoute("ralloc", 0, addr, gen, addr)
	if c.routeOf("ralloc", 0) == nil {
		t.Fatal("route not set")
	}
	b := batchOf(1_700_000_000_000_000, "payload-", 10)
	noAllocs(t, "routed Append", func() error {
		_, err := c.Append(cx, "ralloc", 0, b)
		return err
	})
	n := 0
	fn := func(*message.Message) bool { n++; return true }
	noAllocs(t, "routed Read", func() error {
		_, err := c.Read(cx, "ralloc", 0, 0, 1<<20, fn)
		return err
	})
	if n == 0 {
		t.Fatal("routed Read read nothing")
	}
	c.routes.mu.Lock()
	p := c.routes.pools[addr]
	c.routes.mu.Unlock()
	connected := 0
	for _, s := range p.sessions { // all idle now
		if s.conn != nil {
			connected++
		}
	}
	if connected == 0 {
		t.Fatal("the routed pool was never used")
	}
}
