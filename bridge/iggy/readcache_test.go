package iggy

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// seqBatch builds n messages whose payloads are "<prefix><from+i>", so a
// reader can check each message against its offset.
func seqBatch(prefix string, from, n int) *message.Batch {
	var b message.Batch
	b.Reset(1)
	for i := range n {
		b.Begin(uint64(1 + i))
		b.AppendPayloadString(prefix + strconv.Itoa(from+i))
		b.MarkHeaders()
		b.End()
	}
	return &b
}

// readSeq reads a partition from offset 0 until want messages arrived,
// checking that offsets are contiguous and payloads match them.
func readSeq(t testing.TB, c *Client, topic string, partition int32, prefix string, want int, maxBytes int) {
	t.Helper()
	next := int64(0)
	deadline := time.Now().Add(15 * time.Second)
	for next < int64(want) {
		next = readChecked(t, c, topic, partition, prefix, next, maxBytes)
		if time.Now().After(deadline) {
			t.Fatalf("stuck at offset %d of %d", next, want)
		}
	}
}

// readChecked makes one Read of a partition from offset from within
// maxBytes, checking that offsets are contiguous from from and payloads
// ("<prefix><offset>", seqBatch) match them, and returns the offset after
// the last message delivered.
func readChecked(t testing.TB, c *Client, topic string, partition int32, prefix string, from int64, maxBytes int) int64 {
	t.Helper()
	next := from
	var bad error
	_, err := c.Read(ctx(t), topic, partition, from, maxBytes, func(m *message.Message) bool {
		if m.Offset != next {
			bad = fmt.Errorf("offset %d, want %d", m.Offset, next)
			return false
		}
		if got, exp := string(m.Payload), prefix+strconv.FormatInt(next, 10); got != exp {
			bad = fmt.Errorf("offset %d: payload %q, want %q", m.Offset, got, exp)
			return false
		}
		next++
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if bad != nil {
		t.Fatalf("read from %d within %d bytes: %v", from, maxBytes, bad)
	}
	return next
}

// TestReadCacheHitsAndReadAhead: a sequential reader is served from memory
// once the read-ahead polled the next chunk, every message once, in order;
// a second reader of the same data polls nothing itself.
func TestReadCacheHitsAndReadAhead(t *testing.T) {
	addr, stream := target(t)
	// The poll path: the tail window (which would answer these reads
	// from the appends) is off.
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 4, TailWindowBytes: -1})
	cx := ctx(t)
	c.CreateTopic(cx, "ra", 1, store.TopicConfig{})
	for i := range 20 {
		if _, err := c.Append(cx, "ra", 0, seqBatch("m", i*100, 100)); err != nil {
			t.Fatal(err)
		}
	}
	rc := c.cache
	// The first Read misses and queues a read-ahead past what it polled.
	n := int64(0)
	if _, err := c.Read(cx, "ra", 0, 0, 1<<20, func(*message.Message) bool { n++; return true }); err != nil || n == 0 {
		t.Fatal(n, err)
	}
	if !testtools.Eventually(5*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return rc.parts.get("ra", 0).find(uint64(n)) != nil
	}) {
		t.Fatalf("no read-ahead past offset %d (read-aheads %d)", n, rc.readAheads.Load())
	}
	hits := rc.hits.Load()
	if _, err := c.Read(cx, "ra", 0, n, 1<<20, func(*message.Message) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if rc.hits.Load() != hits+1 {
		t.Fatal("the read after the read-ahead was not a hit")
	}
	readSeq(t, c, "ra", 0, "m", 2000, 2000)
	misses := rc.misses.Load()
	readSeq(t, c, "ra", 0, "m", 2000, 3000)
	if got := rc.misses.Load() - misses; got > 0 {
		t.Fatalf("a second reader of cached data polled %d times", got)
	}
	if n := rc.invalidations.Load(); n != 0 {
		// Every poll that continued a cached run compared its first message
		// with the cached one: the same stored message must compare equal.
		t.Fatalf("%d invalidations without any change to the topic", n)
	}
	wantLines(t, scrape(c), "kiggy_iggy_read_cache_limit_bytes "+strconv.Itoa(DefaultReadCacheBytes))
}

// TestReadCacheConcurrent: three readers follow a partition while a writer
// appends to it (run with -race); each sees every message once, in order,
// and the cache never holds more than its bound.
func TestReadCacheConcurrent(t *testing.T) {
	addr, stream := target(t)
	const limit = 256 << 10
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 4, ReadCacheBytes: limit})
	cx := ctx(t)
	c.CreateTopic(cx, "cc", 2, store.TopicConfig{})
	const total = 3000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < total; i += 50 {
			for p := range int32(2) {
				if _, err := c.Append(cx, "cc", p, seqBatch("x", i, 50)); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	for r := range 3 {
		wg.Go(func() { readSeq(t, c, "cc", int32(r%2), "x", total, 1000+r*700) })
	}
	stop := make(chan struct{})
	var over int64
	var mon sync.WaitGroup
	mon.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if b := c.cache.gauge.Load(); b > limit {
				over = b
			}
			time.Sleep(time.Millisecond) // the gauge is sampled every millisecond
		}
	})
	wg.Wait()
	close(stop)
	mon.Wait()
	if over > 0 {
		t.Fatalf("cache held %d bytes, bound %d", over, limit)
	}
}

// TestReadCacheBound: reading more than the bound evicts, least recently
// used first, and the held bytes stay under it.
func TestReadCacheBound(t *testing.T) {
	addr, stream := target(t)
	const limit = 512 << 10
	// The bound of polled chunks: reads are not served from the tail
	// window (tailwindow_test.go bounds that).
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2, ReadCacheBytes: limit, TailWindowBytes: -1})
	cx := ctx(t)
	c.CreateTopic(cx, "b", 8, store.TopicConfig{})
	for p := range int32(8) {
		for i := range 4 {
			if _, err := c.Append(cx, "b", p, seqBatch("v", i*200, 200)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p := range int32(8) {
		readSeq(t, c, "b", p, "v", 800, 4000)
		if b := c.cache.gauge.Load(); b > limit {
			t.Fatalf("cache holds %d bytes, bound %d", b, limit)
		}
	}
	if c.cache.evictions.Load() == 0 {
		t.Fatal("nothing evicted")
	}
	c.cache.mu.Lock()
	var sum int64
	for ch := c.cache.lru.Oldest(); ch != nil; ch = c.cache.lru.Newer(ch) {
		sum += ch.size
	}
	bytes := c.cache.bytes
	c.cache.mu.Unlock()
	if sum != bytes {
		t.Fatalf("LRU holds %d bytes, counted %d", sum, bytes)
	}
}

// TestReadCacheDeleteInvalidates: a topic deleted and recreated through the
// client serves the new data at once, offsets from 0 again.
func TestReadCacheDeleteInvalidates(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	c.CreateTopic(cx, "d", 1, store.TopicConfig{})
	c.Append(cx, "d", 0, seqBatch("old", 0, 50))
	readSeq(t, c, "d", 0, "old", 50, 1<<20)
	if err := c.DeleteTopic(cx, "d"); err != nil {
		t.Fatal(err)
	}
	c.CreateTopic(cx, "d", 1, store.TopicConfig{})
	c.Append(cx, "d", 0, seqBatch("new", 0, 10))
	readSeq(t, c, "d", 0, "new", 10, 1<<20)
	wm, err := c.Read(cx, "d", 0, 10, 1<<20, func(*message.Message) bool { return true })
	if err != nil || wm.High != 10 {
		t.Fatalf("watermarks %+v, %v; want high 10", wm, err)
	}
}

// TestReadCacheExternalRecreate: a topic deleted and refilled by another
// client (as a purge restarts offsets at 0) is noticed by the next poll of
// the partition: Iggy's current offset below what is cached, or another
// message where a cached one was, drops the partition.
func TestReadCacheExternalRecreate(t *testing.T) {
	// iggytest without stale-incarnation polls: right after an outside
	// delete and re-create a real server may still answer from the old
	// partitions (TestIncarnationFence), which this test is not about.
	_, addr := startServer(t, iggytest.Config{StaleIncarnationPolls: -1})
	stream := "kafka"
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	// What a poll sees, at every Read: no 100 ms trust in a high
	// watermark a poll told (TestTailWindowRecheck).
	c.cache.recheck = 0
	other := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, ReadCacheBytes: -1})
	cx := ctx(t)
	c.CreateTopic(cx, "e", 1, store.TopicConfig{})
	c.Append(cx, "e", 0, seqBatch("old", 0, 50))
	readSeq(t, c, "e", 0, "old", 50, 1<<20)

	// Fewer messages: the poll at the cached end sees current_offset 9.
	other.DeleteTopic(cx, "e")
	other.CreateTopic(cx, "e", 1, store.TopicConfig{})
	other.Append(cx, "e", 0, seqBatch("new", 0, 10))
	wm, err := c.Read(cx, "e", 0, 50, 1<<20, func(*message.Message) bool { return true })
	if err != nil || wm.High != 10 {
		t.Fatalf("read at the old end: %+v %v; want high 10", wm, err)
	}
	readSeq(t, c, "e", 0, "new", 10, 1<<20)

	// More messages than were cached: the overlapping message differs.
	other.DeleteTopic(cx, "e")
	other.CreateTopic(cx, "e", 1, store.TopicConfig{})
	other.Append(cx, "e", 0, seqBatch("newer", 0, 30))
	inv := c.cache.invalidations.Load()
	c.Read(cx, "e", 0, 10, 1<<20, func(*message.Message) bool { return true })
	if c.cache.invalidations.Load() == inv {
		t.Fatal("the refilled partition was not dropped")
	}
	readSeq(t, c, "e", 0, "newer", 30, 1<<20)
}

// TestReadCacheTTL: a chunk older than the TTL is polled again.
func TestReadCacheTTL(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	c.cache.ttl = 50 * time.Millisecond
	cx := ctx(t)
	c.CreateTopic(cx, "ttl", 1, store.TopicConfig{})
	c.Append(cx, "ttl", 0, seqBatch("a", 0, 5))
	readSeq(t, c, "ttl", 0, "a", 5, 1<<20)
	time.Sleep(100 * time.Millisecond) // twice the 50 ms TTL: the chunk must expire
	misses := c.cache.misses.Load()
	readSeq(t, c, "ttl", 0, "a", 5, 1<<20)
	if c.cache.misses.Load() == misses {
		t.Fatal("an expired chunk was served")
	}
}

// TestReadCacheOff: ReadCacheBytes < 0 reads straight from Iggy.
func TestReadCacheOff(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, ReadCacheBytes: -1})
	cx := ctx(t)
	c.CreateTopic(cx, "off", 1, store.TopicConfig{})
	c.Append(cx, "off", 0, seqBatch("o", 0, 300))
	readSeq(t, c, "off", 0, "o", 300, 500)
	if c.cache != nil {
		t.Fatal("cache on")
	}
	wantLines(t, scrape(c), "kiggy_iggy_read_cache_limit_bytes 0")
}

// TestReadCacheWatermarks: a Read served from memory reports the high
// watermark of the latest Append confirmed through the client, and a Read
// at the end of what is cached reaches Iggy (new messages, no stale empty
// answer).
func TestReadCacheWatermarks(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	c.CreateTopic(cx, "w", 1, store.TopicConfig{})
	c.Append(cx, "w", 0, seqBatch("w", 0, 20))
	readSeq(t, c, "w", 0, "w", 20, 1<<20)
	c.Append(cx, "w", 0, seqBatch("w", 20, 5))
	hits := c.cache.hits.Load()
	wm, err := c.Read(cx, "w", 0, 3, 1<<20, func(*message.Message) bool { return true })
	if err != nil || wm.High != 25 {
		t.Fatalf("cached read: %+v %v; want high 25", wm, err)
	}
	if c.cache.hits.Load() != hits+1 {
		t.Fatal("not served from the cache")
	}
	var got []int64
	wm, err = c.Read(cx, "w", 0, 20, 1<<20, func(m *message.Message) bool { got = append(got, m.Offset); return true })
	if err != nil || wm.High != 25 || len(got) != 5 || got[0] != 20 {
		t.Fatalf("read at the cached end: %v %+v %v", got, wm, err)
	}
	wm, err = c.Read(cx, "w", 0, 25, 1<<20, func(*message.Message) bool { t.Error("a message past the end"); return true })
	if err != nil || wm.High != 25 {
		t.Fatalf("read at the high watermark: %+v %v", wm, err)
	}
}

// TestReadCacheUnknownPartitions: Reads of partitions or topics that do
// not exist leave no cache entries behind.
func TestReadCacheUnknownPartitions(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	c.CreateTopic(cx, "u", 1, store.TopicConfig{})
	for p := int32(1); p < 50; p++ {
		if _, err := c.Read(cx, "u", p, 0, 1000, func(*message.Message) bool { return true }); err == nil {
			t.Fatalf("partition %d read", p)
		}
		if _, err := c.Read(cx, fmt.Sprintf("missing-%d", p), 0, 0, 1000, func(*message.Message) bool { return true }); err == nil {
			t.Fatal("missing topic read")
		}
	}
	c.cache.mu.Lock()
	n := c.cache.parts.len()
	c.cache.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d entries left", n)
	}
}

// TestReadCacheSharedTailPoll: readers of several groups at a partition's
// tail at once share one poll: those that waited for it take its answer
// (nothing new, the high watermark) instead of polling again.
func TestReadCacheSharedTailPoll(t *testing.T) {
	_, addr := startServer(t, iggytest.Config{Latency: 100 * time.Millisecond})
	c := open(t, Config{Addr: addr, PoolSize: 4})
	cx := ctx(t)
	c.CreateTopic(cx, "tail", 1, store.TopicConfig{})
	c.Append(cx, "tail", 0, seqBatch("t", 0, 3))
	misses := c.cache.misses.Load()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			wm, err := c.Read(cx, "tail", 0, 3, 1000, func(*message.Message) bool { t.Error("a message past the tail"); return true })
			if err != nil || wm.High != 3 {
				t.Errorf("read at the tail: %+v %v", wm, err)
			}
		})
	}
	wg.Wait()
	if got := c.cache.misses.Load() - misses; got >= 3 {
		t.Fatalf("three readers at the tail polled %d times", got)
	}
}

// TestReadGeneration: the generation the gateway's fetch cache checks its
// entries against (store.SharedReads) changes when the read cache drops
// data as possibly no longer stored: a topic created or deleted through the
// client, a refill by another client seen by a poll, a reconnect; not on
// reads, appends or evictions. The high watermark is the cache's; without
// the read cache there is no fetch cache.
func TestReadGeneration(t *testing.T) {
	// Without stale-incarnation polls, as TestReadCacheExternalRecreate.
	srv, addr := startServer(t, iggytest.Config{StaleIncarnationPolls: -1})
	c := open(t, Config{Addr: addr, PoolSize: 2, ReadCacheBytes: 1 << 20})
	// The other client's refill is seen by the next Read at once, not
	// after externalRecheck (TestTailWindowRecheck covers that).
	c.cache.recheck = 0
	other := open(t, Config{Addr: addr, PoolSize: 1, ReadCacheBytes: -1})
	if n := c.FetchCacheBytes(); n != DefaultFetchCacheBytes {
		t.Fatalf("FetchCacheBytes %d, want the default", n)
	}
	if n := other.FetchCacheBytes(); n != 0 {
		t.Fatalf("without the read cache: FetchCacheBytes %d, want 0", n)
	}
	if n := open(t, Config{Addr: addr, PoolSize: 1, FetchCacheBytes: -1}).FetchCacheBytes(); n != 0 {
		t.Fatalf("FetchCacheBytes -1: %d, want 0", n)
	}
	cx := ctx(t)
	gen := func() uint64 { g, _ := c.ReadGeneration("g", 0); return g }
	g0 := gen()
	if _, err := c.CreateTopic(cx, "g", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	g1 := gen()
	if g1 == g0 {
		t.Fatal("CreateTopic kept the generation")
	}
	if _, h := c.ReadGeneration("g", 0); h != -1 {
		t.Fatalf("high watermark %d of a partition never read, want -1", h)
	}
	c.Append(cx, "g", 0, seqBatch("a", 0, 20))
	readSeq(t, c, "g", 0, "a", 20, 1<<20)
	c.Append(cx, "g", 0, seqBatch("a", 20, 5))
	readSeq(t, c, "g", 0, "a", 25, 300)
	if g, h := c.ReadGeneration("g", 0); g != g1 || h != 25 {
		t.Fatalf("after reads and appends: generation %d high %d, want %d and 25", g, h, g1)
	}

	// Refilled by another client: the poll at the cached end sees fewer.
	other.DeleteTopic(cx, "g")
	other.CreateTopic(cx, "g", 1, store.TopicConfig{})
	other.Append(cx, "g", 0, seqBatch("b", 0, 3))
	if g := gen(); g != g1 {
		t.Fatal("the generation changed before the client saw anything")
	}
	c.Read(cx, "g", 0, 25, 1<<20, func(*message.Message) bool { return true })
	g2 := gen()
	if g2 == g1 {
		t.Fatal("a refill seen by a poll kept the generation")
	}

	// A reconnect.
	readSeq(t, c, "g", 0, "b", 3, 1<<20)
	srv.Stop()
	if _, err := srv.Start(addr); err != nil {
		t.Skipf("iggytest restart on %s: %v", addr, err)
	}
	if !testtools.Eventually(10*time.Second, func() bool {
		if gen() != g2 {
			return true
		}
		c.Read(cx, "g", 0, 3, 1<<20, func(*message.Message) bool { return true })
		return false
	}) {
		t.Fatal("a reconnect kept the generation")
	}
	g3 := gen()
	if err := c.DeleteTopic(cx, "g"); err != nil {
		t.Fatal(err)
	}
	if gen() == g3 {
		t.Fatal("DeleteTopic kept the generation")
	}
}

// TestReadCacheWalkMarks: a chunk of many batch records carries a walk
// mark every markStride bytes, and reads starting anywhere inside it, at
// every offset and with budgets that stop them mid-record, get exactly the
// messages at and after their offset, in order.
func TestReadCacheWalkMarks(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	c.CreateTopic(cx, "marks", 1, store.TopicConfig{})
	const perBatch, batches = 37, 30
	pad := strings.Repeat("x", 300)
	for i := range batches {
		if _, err := c.Append(cx, "marks", 0, seqBatch(pad, i*perBatch, perBatch)); err != nil {
			t.Fatal(err)
		}
	}
	total := int64(perBatch * batches)
	// The first poll of a partition asks for firstPollCount messages; the
	// next, sized from them, for the budget: one chunk of the rest.
	n := int64(0)
	for n < total {
		if _, err := c.Read(cx, "marks", 0, n, 4<<20, func(*message.Message) bool { n++; return true }); err != nil {
			t.Fatal(n, err)
		}
	}
	rc := c.cache
	rc.mu.Lock()
	ch := rc.parts.get("marks", 0).find(uint64(total - 1))
	marks := 0
	if ch != nil {
		marks = len(ch.marks)
	}
	rc.mu.Unlock()
	if want := int(total-firstPollCount) * 300 / markStride / 2; marks < want {
		t.Fatalf("the chunk has %d walk marks, want at least %d", marks, want)
	}
	for from := int64(0); from < total; from += 7 {
		for _, budget := range []int{1, 1500, 9000} {
			if next := readChecked(t, c, "marks", 0, pad, from, budget); next == from {
				t.Fatalf("read from %d (budget %d) delivered nothing", from, budget)
			}
		}
	}
}

// estimate is c.ReadEstimate's bytes and whether the read is local.
func estimate(c *Client, now time.Time, topic string, partition int32, offset int64) (int64, bool) {
	e := c.ReadEstimate(now, topic, partition, offset)
	return e.Bytes, e.Local
}

// TestReadEstimate: the estimate of a partition nothing is known of is −1;
// at or past the high watermark the client knows (here from its own
// appends), 0; before it, once a poll has measured the partition's message
// size, the messages left times that size.
func TestReadEstimate(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	c.CreateTopic(cx, "est", 1, store.TopicConfig{})
	if got, _ := estimate(c, time.Now(), "est", 0, 0); got != -1 {
		t.Fatalf("before any append or read: %d, want -1", got)
	}
	for i := range 4 {
		if _, err := c.Append(cx, "est", 0, seqBatch(strings.Repeat("v", 500), i*50, 50)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Read(cx, "est", 0, 0, 4096, func(*message.Message) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if got, _ := estimate(c, time.Now(), "est", 0, 200); got != 0 {
		t.Fatalf("at the high watermark: %d, want 0", got)
	}
	// There, known exact from the client's own appends, the estimate is
	// the Read: answered, as a Read would be, without a poll.
	idle, misses := c.cache.idleAnswers.Load(), c.cache.misses.Load()
	if e := c.ReadEstimate(time.Now(), "est", 0, 200); !e.Answered || !e.Local || e.High != 200 {
		t.Fatalf("at the exact high watermark: %+v, want answered at 200", e)
	}
	if c.cache.idleAnswers.Load() != idle+1 || c.cache.misses.Load() != misses {
		t.Fatalf("answered estimate: idle answers %d→%d, misses %d→%d", idle, c.cache.idleAnswers.Load(), misses, c.cache.misses.Load())
	}
	for _, off := range []int64{0, 100, 199, 201} {
		if e := c.ReadEstimate(time.Now(), "est", 0, off); e.Answered {
			t.Fatalf("offset %d, high watermark 200: answered %+v", off, e)
		}
	}
	// The poll just made holds offset 0: a Read there is answered from
	// memory. Past the high watermark a Read polls.
	if _, local := estimate(c, time.Now(), "est", 0, 0); !local {
		t.Fatal("offset 0, just polled: not local")
	}
	if _, local := estimate(c, time.Now(), "est", 0, 201); local {
		t.Fatal("past the high watermark: local")
	}
	if _, local := estimate(c, time.Now(), "est", 1, 0); local {
		t.Fatal("a partition never read: local")
	}
	got, _ := estimate(c, time.Now(), "est", 0, 100)
	if got < 100*500 || got > 100*1000 {
		t.Fatalf("100 messages of about 570 bytes before the high watermark: estimate %d", got)
	}
	// Appends the tail window keeps (a reader came to the partition, which
	// was empty: no poll races them): from an append's first offset the
	// estimate is the bytes the window holds, not the messages left times
	// the message size, which the one large message after them raised
	// (11 × 20 KiB).
	c.CreateTopic(cx, "estwin", 1, store.TopicConfig{})
	if _, err := c.Read(cx, "estwin", 0, 0, 4096, func(*message.Message) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "estwin", 0, seqBatch(strings.Repeat("v", 500), 0, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "estwin", 0, seqBatch(strings.Repeat("w", 20000), 10, 1)); err != nil {
		t.Fatal(err)
	}
	got, local := estimate(c, time.Now(), "estwin", 0, 0)
	if !local || got < 10*500+20000 || got > 10*700+20000+700 {
		t.Fatalf("10 messages of about 570 bytes and one of about 20 KiB in the tail window: estimate %d (local %v)", got, local)
	}
	if got, _ := estimate(c, time.Now(), "estwin", 0, 10); got < 20000 || got > 20000+700 {
		t.Fatalf("one message of about 20 KiB in the tail window: estimate %d", got)
	}
	// Inside an append: its bytes in proportion to the messages left.
	if got, _ := estimate(c, time.Now(), "estwin", 0, 5); got < 5*500+20000 || got > 5*700+20000+700 {
		t.Fatalf("5 messages of about 570 bytes and one of about 20 KiB: estimate %d", got)
	}
}

// TestReadAtCallersClock: ReadAt and ReadEstimate judge a chunk's age at
// the time the caller passes (a Fetch's wave reads the clock once for all
// its partitions): past the TTL the chunk just polled is stale for both, a
// Read then polls again; at the clock now it is a hit. A read at an
// earlier time never moves the partition's last read back.
func TestReadAtCallersClock(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	c.CreateTopic(cx, "clk", 1, store.TopicConfig{})
	if _, err := c.Append(cx, "clk", 0, seqBatch("v", 0, 10)); err != nil {
		t.Fatal(err)
	}
	all := func(*message.Message) bool { return true }
	if _, err := c.Read(cx, "clk", 0, 0, 4096, all); err != nil { // polls offsets 0..9
		t.Fatal(err)
	}
	now := time.Now()
	later := now.Add(readCacheTTL + time.Second)
	if _, local := estimate(c, now, "clk", 0, 0); !local {
		t.Fatal("just polled, judged now: not local")
	}
	if _, local := estimate(c, later, "clk", 0, 0); local {
		t.Fatal("judged past the TTL: local")
	}
	rc := c.cache
	hits, misses := rc.hits.Load(), rc.misses.Load()
	if _, err := c.ReadAt(cx, now, "clk", 0, 0, 4096, all); err != nil {
		t.Fatal(err)
	}
	if rc.hits.Load() != hits+1 || rc.misses.Load() != misses {
		t.Fatalf("ReadAt now: hits %d→%d, misses %d→%d; want one hit", hits, rc.hits.Load(), misses, rc.misses.Load())
	}
	if _, err := c.ReadAt(cx, later, "clk", 0, 0, 4096, all); err != nil {
		t.Fatal(err)
	}
	if rc.misses.Load() != misses+1 {
		t.Fatalf("ReadAt past the TTL: misses %d→%d; want a poll", misses, rc.misses.Load())
	}
	if _, err := c.ReadAt(cx, now, "clk", 0, 10, 4096, all); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	readAt := rc.parts.get("clk", 0).readAt
	rc.mu.Unlock()
	if !readAt.Equal(later) {
		t.Fatalf("last read at %v after reads at %v and then %v; want the later", readAt, later, now)
	}
}

// TestWatermarksTeachHighs: a client that neither wrote nor read a topic
// knows no high watermark of it; one Watermarks call (GetTopic) teaches it
// every partition's, which the gateway answers partitions past a Fetch's
// budget with.
func TestWatermarksTeachHighs(t *testing.T) {
	addr, stream := target(t)
	w := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	w.CreateTopic(cx, "teach", 3, store.TopicConfig{})
	for p := range int32(3) {
		if _, err := w.Append(cx, "teach", p, seqBatch("m", 0, int(p+1)*10)); err != nil {
			t.Fatal(err)
		}
	}
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	if _, high := c.ReadGeneration("teach", 2); high != -1 {
		t.Fatalf("a fresh client knows high watermark %d", high)
	}
	if wm, err := c.Watermarks(cx, "teach", 0); err != nil || wm.High != 10 {
		t.Fatalf("Watermarks: %+v %v", wm, err)
	}
	for p := range int32(3) {
		if _, high := c.ReadGeneration("teach", p); high != int64(p+1)*10 {
			t.Fatalf("partition %d: high watermark %d after one GetTopic, want %d", p, high, (p+1)*10)
		}
	}
}

// TestReadCacheRecycledBuffers: recycled reply buffers keep the largest
// once full, and a session taking one gets the largest, so its next reply,
// about as large as the one whose buffer went to a chunk, needs no fresh
// buffer.
func TestReadCacheRecycledBuffers(t *testing.T) {
	rc := &readCache{}
	for i := range maxFreeBufs {
		rc.recycle(&chunk{buf: make([]byte, (i+1)<<10)})
	}
	rc.recycle(&chunk{buf: make([]byte, 1<<20)})
	rc.recycle(&chunk{buf: make([]byte, 512)}) // smaller than every kept one
	if len(rc.free) != maxFreeBufs {
		t.Fatalf("%d buffers kept, want %d", len(rc.free), maxFreeBufs)
	}
	if b := rc.takeBuf(); cap(b) != 1<<20 {
		t.Fatalf("took a buffer of %d bytes, want the largest (1 MiB)", cap(b))
	}
	for _, b := range rc.free {
		if cap(b) < 2<<10 {
			t.Fatalf("a %d-byte buffer was kept over larger ones", cap(b))
		}
	}
}

// TestReadCacheLateRepliesTeachNothing: a GetTopic or an append confirmed
// for a topic's earlier incarnation, whose reply arrives after the topic was
// deleted and created again, does not raise the new incarnation's high
// watermarks (nor make cache entries for it); replies to requests sent
// after the invalidation do.
func TestReadCacheLateRepliesTeachNothing(t *testing.T) {
	rc := newReadCache(&Client{}, 1<<20, 0, false)
	old := rc.generation()
	rc.learnHighs("t", []partitionInfo{{id: 0, currentOffset: 99, messages: 100}}, old)
	if _, high := readGen(rc, "t", 0); high != 100 {
		t.Fatalf("a current GetTopic taught high %d, want 100", high)
	}
	rc.invalidateTopic("t") // deleted and created again
	rc.learnHighs("t", []partitionInfo{{id: 0, currentOffset: 4999, messages: 5000}, {id: 1, currentOffset: 9, messages: 10}}, old)
	appendedHigh(rc, "t", 0, 7000, old)
	rc.mu.Lock()
	n := rc.parts.len()
	rc.mu.Unlock()
	if n != 0 {
		t.Fatalf("late replies made %d partition entries for the new incarnation", n)
	}
	now := rc.generation()
	rc.learnHighs("t", []partitionInfo{{id: 0, currentOffset: 0, messages: 1}}, now)
	appendedHigh(rc, "t", 0, 7000, old) // the old incarnation's append, late
	if _, high := readGen(rc, "t", 0); high != 1 {
		t.Fatalf("high %d after a late append of the old incarnation, want 1", high)
	}
	appendedHigh(rc, "t", 0, 3, now)
	if _, high := readGen(rc, "t", 0); high != 3 {
		t.Fatalf("high %d after a current append, want 3", high)
	}
}

// appendedHigh tells rc of a one-message append confirmed at high-1 whose
// frames are not kept.
func appendedHigh(rc *readCache, topic string, partition int32, high int64, sent uint64) {
	var b message.Batch
	b.Reset(0)
	rc.appended(topic, partition, high-1, 1, sent, nil, &b, nil)
}

// readGen is Client.ReadGeneration on a bare cache.
func readGen(rc *readCache, topic string, partition int32) (uint64, int64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if p := rc.parts.get(topic, partition); p != nil {
		return rc.gen.Load(), p.high
	}
	return rc.gen.Load(), -1
}

// TestReadCacheDroppedMidPoll: a partition whose cache is dropped while a
// poll is in flight (a reconnect of another session voids the whole cache)
// still tells that poll's reader the high watermark Iggy reported, not the
// end of the short chunk it delivered: a reader that stops at the high
// watermark it is told must not stop short of acknowledged records.
func TestReadCacheDroppedMidPoll(t *testing.T) {
	var c *Client
	var armed atomic.Bool
	_, addr := startServer(t, iggytest.Config{Tap: func(frame, _ []byte) {
		h := proto.ParseRequestHeader(frame)
		if codeOfRequest(&h) == proto.CodePollMessages && armed.CompareAndSwap(true, false) {
			c.cache.invalidateAll() // served, the reply not yet written
		}
	}})
	c = open(t, Config{Addr: addr, PoolSize: 2, ReadCacheBytes: 1 << 20})
	other := open(t, Config{Addr: addr, PoolSize: 1, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := other.CreateTopic(cx, "d", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	const n = 3000 // more than one read-ahead chunk of this cache holds
	for i := 0; i < n; i += 500 {
		if _, err := other.Append(cx, "d", 0, seqBatch(strings.Repeat("x", 100), i, 500)); err != nil {
			t.Fatal(err)
		}
	}
	armed.Store(true)
	got := 0
	wm, err := c.Read(cx, "d", 0, 0, 1<<20, func(*message.Message) bool { got++; return true })
	if err != nil {
		t.Fatal(err)
	}
	if armed.Load() {
		t.Fatal("the read did not poll")
	}
	if got == 0 || got >= n {
		t.Fatalf("delivered %d of %d messages: the test wants one short chunk", got, n)
	}
	if wm.High != n {
		t.Fatalf("high watermark %d after a poll whose cache was dropped, want %d", wm.High, n)
	}
}

// TestPartCacheFind: find's binary search over a partition's sorted,
// disjoint chunks (with gaps and an empty chunk) returns the chunk holding
// each offset, as a scan of every chunk does.
func TestPartCacheFind(t *testing.T) {
	spans := [][2]uint64{{0, 10}, {10, 25}, {30, 31}, {31, 31}, {31, 40}, {100, 164}}
	var p partCache
	for _, s := range spans {
		p.chunks = append(p.chunks, &chunk{first: s[0], end: s[1]})
	}
	for n := range len(spans) + 1 {
		p := partCache{chunks: p.chunks[:n]}
		for off := uint64(0); off < 200; off++ {
			var want *chunk
			for _, ch := range p.chunks {
				if ch.first <= off && off < ch.end {
					want = ch
				}
			}
			if got := p.find(off); got != want {
				t.Fatalf("%d chunks, offset %d: found %v, want %v", n, off, got, want)
			}
		}
	}
}
