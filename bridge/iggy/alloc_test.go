//go:build !race

package iggy

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestAppendAllocs proves a full Append request/response cycle against
// iggytest allocates nothing in steady state (docs/design/style.md habit 7).
func TestAppendAllocs(t *testing.T) {
	addr := startServerProcess(t)
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1})
	cx := context.Background()
	if _, err := c.CreateTopic(cx, "alloc", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	b := batchOf(1_700_000_000_000_000, "payload-", 10)
	noAllocs(t, "Append", func() error {
		_, err := c.Append(cx, "alloc", 0, b)
		return err
	})
}

// noAllocs runs fn once to warm up, then fails t if fn fails or allocates
// in steady state.
func noAllocs(t *testing.T, what string, fn func() error) {
	t.Helper()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	var failed error
	allocs := testing.AllocsPerRun(200, func() {
		if err := fn(); err != nil {
			failed = err
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Fatalf("%s allocates %.1f times per call", what, allocs)
	}
}

// TestAppendJoinedAllocs proves a joined append of stamped batches, written
// from their own buffers in one vectored write, allocates nothing.
func TestAppendJoinedAllocs(t *testing.T) {
	addr := startServerProcess(t)
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1})
	cx := context.Background()
	if _, err := c.CreateTopic(cx, "jalloc", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	bs := []*message.Batch{stampedBatchOf(1_700_000_000_000_000, "a-", 10), stampedBatchOf(1_700_000_000_000_000, "b-", 10)}
	bs[1].Rebase(bs[1].Origin, bs[0].Count)
	noAllocs(t, "AppendJoined", func() error {
		_, err := c.AppendJoined(cx, "jalloc", 0, bs)
		return err
	})
}

// TestReadAllocs proves a Read that fits one poll allocates nothing.
func TestReadAllocs(t *testing.T) {
	addr := startServerProcess(t)
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1})
	cx := context.Background()
	c.CreateTopic(cx, "ralloc", 1, store.TopicConfig{})
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

// TestReadAllocsUncached: the same with the read cache off.
func TestReadAllocsUncached(t *testing.T) {
	addr := startServerProcess(t)
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1, ReadCacheBytes: -1})
	cx := context.Background()
	c.CreateTopic(cx, "ralloc", 1, store.TopicConfig{})
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

// TestCachedReadAllocs: a sequential reader served from the read cache
// (chunks polled ahead, several per partition, readers stepping through
// them and across their boundaries) allocates nothing per Read.
func TestCachedReadAllocs(t *testing.T) {
	addr := startServerProcess(t)
	c := open(t, Config{Addr: addr, PoolSize: 2, PingInterval: -1})
	cx := context.Background()
	c.CreateTopic(cx, "calloc", 1, store.TopicConfig{})
	for i := range 10 {
		c.Append(cx, "calloc", 0, batchOf(uint64(1+i), "payload-", 100))
	}
	// Cache [0, 1000) in chunks of 250 messages.
	for off := int64(0); off < 1000; off += 250 {
		c.cache.mu.Lock()
		p := c.cache.part("calloc", 0)
		p.chunkBytes = 1
		p.msgSize = 1 // a count of the budget: 250 messages
		c.cache.mu.Unlock()
		s, err := c.acquire(cx)
		if err != nil {
			t.Fatal(err)
		}
		c.avgMsg.Store(1)
		ch, _, _, err := c.cache.poll(cx, s, p, uint64(off), 250, 0)
		if err != nil || ch == nil {
			t.Fatal(ch, err)
		}
		c.cache.mu.Lock()
		c.cache.unpin(ch)
		c.cache.mu.Unlock()
		c.release(s)
	}
	next := int64(0)
	fn := func(m *message.Message) bool { next = m.Offset + 1; return true }
	allocs := testing.AllocsPerRun(200, func() {
		if next >= 1000 {
			next = 0
		}
		if _, err := c.Read(cx, "calloc", 0, next, 300, fn); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("a cached Read allocates %.1f times per call", allocs)
	}
	if c.cache.hits.Load() < 200 {
		t.Fatalf("%d hits: the reads were not served from the cache", c.cache.hits.Load())
	}
}

// TestMissReadAllocs: a reader stepping through a partition larger than the
// cache, every Read a poll of its own (read-ahead off), chunks evicted and
// their buffers and structs recycled: no allocation per Read either.
func TestMissReadAllocs(t *testing.T) {
	addr := startServerProcess(t)
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1, ReadCacheBytes: 1 << 20})
	cx := context.Background()
	c.CreateTopic(cx, "malloc", 1, store.TopicConfig{})
	big := string(make([]byte, 1000))
	for i := range 20 {
		c.Append(cx, "malloc", 0, batchOf(uint64(1+i), big, 100))
	}
	c.cache.mu.Lock()
	c.cache.part("malloc", 0).queued = true // never queued: no read-ahead
	c.cache.mu.Unlock()
	next := int64(0)
	fn := func(m *message.Message) bool { next = m.Offset + 1; return true }
	read := func() {
		if next >= 2000 {
			next = 0
		}
		if _, err := c.Read(cx, "malloc", 0, next, 64<<10, fn); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		read() // warm the free lists
	}
	misses := c.cache.misses.Load()
	allocs := testing.AllocsPerRun(200, read)
	if c.cache.misses.Load()-misses < 50 {
		t.Fatalf("%d misses in 200 reads: the test does not measure the poll path", c.cache.misses.Load()-misses)
	}
	if allocs != 0 {
		t.Fatalf("a Read that polls allocates %.1f times per call", allocs)
	}
}

// TestAppendAuditAllocs proves the append audit costs nothing when the
// logger is at info: the debug line is neither built nor written.
func TestAppendAuditAllocs(t *testing.T) {
	addr := startServerProcess(t)
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1, Logger: log})
	cx := context.Background()
	if _, err := c.CreateTopic(cx, "aalloc", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	b := batchOf(1_700_000_000_000_000, "payload-", 10)
	if _, err := c.Append(cx, "aalloc", 0, b); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() { _, _ = c.Append(cx, "aalloc", 0, b) })
	if allocs != 0 {
		t.Fatalf("Append at info level allocates %.1f times per call", allocs)
	}
}
