package iggy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// tailMsg is what a Read presents of a message, but Iggy's append time
// (which the window does not keep, message.Batch.ServerTime).
type tailMsg struct {
	off     int64
	origin  uint64
	id      [16]byte
	payload string
	headers string
}

// readTail reads [from, to) of a partition with c.
func readTail(t testing.TB, c *Client, topic string, partition int32, from, to int64) []tailMsg {
	t.Helper()
	var out []tailMsg
	for next := from; next < to; {
		n := len(out)
		_, err := c.Read(ctx(t), topic, partition, next, 1<<20, func(m *message.Message) bool {
			if m.Offset >= to {
				return false
			}
			out = append(out, tailMsg{m.Offset, m.OriginTimestamp, m.ID, string(m.Payload), string(m.Headers)})
			next = m.Offset + 1
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == n {
			t.Fatalf("read at %d of %s/%d found nothing, want up to %d", next, topic, partition, to)
		}
	}
	return out
}

// watchTail reads each partition of topic once at offset 0, as a consumer
// starting at the tail does: the window keeps only the appends of
// partitions read within the TTL (readCache.wantsTail).
func watchTail(t testing.TB, c *Client, topic string, partitions int32) {
	t.Helper()
	for p := range partitions {
		if _, err := c.Read(ctx(t), topic, p, 0, 1<<20, func(*message.Message) bool { return false }); err != nil {
			t.Fatal(err)
		}
	}
}

// sameMessages fails unless a and b are the same messages.
func sameMessages(t testing.TB, what string, a, b []tailMsg) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d messages, the poll path %d", what, len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("%s: message %d is %+v, the poll path's %+v", what, i, a[i], b[i])
		}
	}
}

// TestTailWindowServesAppends: a Read of what this client appended is
// served from the tail window without a poll, and presents the messages as
// a client without a cache reads them from Iggy (single and joined appends,
// headers, several batches per partition).
func TestTailWindowServesAppends(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	plain := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "tw", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	watchTail(t, c, "tw", 2)
	var end [2]int64
	for i := range 6 {
		p := int32(i % 2)
		var base int64
		var err error
		if i%3 == 2 {
			a, b := stampedBatchOf(1_700_000_000_000_000, fmt.Sprintf("j%d-", i), 3), stampedBatchOf(1_700_000_000_000_000, fmt.Sprintf("k%d-", i), 2)
			b.Rebase(a.Origin, a.Count)
			base, err = c.AppendJoined(cx, "tw", p, []*message.Batch{a, b})
			end[p] = base + 5
		} else {
			base, err = c.Append(cx, "tw", p, stampedBatchOf(uint64(1_700_000_000_000_000+i), fmt.Sprintf("m%d-", i), 4))
			end[p] = base + 4
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	misses := c.cache.misses.Load()
	for p := range int32(2) {
		got := readTail(t, c, "tw", p, 0, end[p])
		want := readTail(t, plain, "tw", p, 0, end[p])
		sameMessages(t, fmt.Sprintf("partition %d", p), got, want)
	}
	if n := c.cache.misses.Load() - misses; n != 0 {
		t.Fatalf("%d reads polled Iggy; every message was appended through this client", n)
	}
	if c.cache.tailFills.Load() != 6 {
		t.Fatalf("%d appends kept, want 6", c.cache.tailFills.Load())
	}
}

// TestTailWindowUnread: the appends of a partition nobody reads are not
// kept; once a reader comes they are, until no reader has come for the
// TTL.
func TestTailWindowUnread(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "tu", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	appendTo := func(p int32) {
		t.Helper()
		if _, err := c.Append(cx, "tu", p, stampedBatchOf(1_700_000_000_000_000, "u-", 3)); err != nil {
			t.Fatal(err)
		}
	}
	rc := c.cache
	appendTo(0)
	appendTo(1)
	if fills, unread := rc.tailFills.Load(), rc.tailUnread.Load(); fills != 0 || unread != 2 || rc.tailGauge.Load() != 0 {
		t.Fatalf("before any read: %d appends kept, %d unread, window %d bytes; want 0, 2, 0", fills, unread, rc.tailGauge.Load())
	}
	readTail(t, c, "tu", 0, 0, 3) // a consumer of partition 0 only
	appendTo(0)
	appendTo(1)
	if fills, unread := rc.tailFills.Load(), rc.tailUnread.Load(); fills != 1 || unread != 3 {
		t.Fatalf("partition 0 read: %d appends kept, %d unread; want 1, 3", fills, unread)
	}
	misses := rc.misses.Load()
	readTail(t, c, "tu", 0, 3, 6)
	if rc.misses.Load() != misses {
		t.Fatal("the read at the tail polled Iggy")
	}
	rc.mu.Lock()
	rc.ttl = time.Millisecond // the reader is now long gone
	rc.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	appendTo(0)
	if fills, unread := rc.tailFills.Load(), rc.tailUnread.Load(); fills != 1 || unread != 4 {
		t.Fatalf("reader gone: %d appends kept, %d unread; want 1, 4", fills, unread)
	}
}

// TestTailWindowSkipsServerTime: a batch whose messages are read with
// Iggy's append time is not kept (the window cannot know that time).
func TestTailWindowSkipsServerTime(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "ts", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	b := seqBatch("v", 0, 3)
	b.ServerTime = true
	if _, err := c.Append(cx, "ts", 0, b); err != nil {
		t.Fatal(err)
	}
	if n := c.cache.tailFills.Load(); n != 0 {
		t.Fatalf("%d appends kept, want 0", n)
	}
	readSeq(t, c, "ts", 0, "v", 3, 4096)
	if c.cache.misses.Load() == 0 {
		t.Fatal("the read was not a poll")
	}
}

// TestTailWindowCoherence: what another writer appends, or a purge and
// refill, is never hidden or contradicted by the window: after each step
// the client reads exactly what a client without a cache reads.
func TestTailWindowCoherence(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	other := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "co", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	high := int64(0)
	check := func(step string) {
		t.Helper()
		sameMessages(t, step, readTail(t, c, "co", 0, 0, high), readTail(t, other, "co", 0, 0, high))
	}
	mine := func(prefix string, n int) {
		t.Helper()
		base, err := c.Append(cx, "co", 0, seqBatch(prefix, int(high), n))
		if err != nil {
			t.Fatal(err)
		}
		high = base + int64(n)
	}
	theirs := func(prefix string, n int) {
		t.Helper()
		base, err := other.Append(cx, "co", 0, seqBatch(prefix, int(high), n))
		if err != nil {
			t.Fatal(err)
		}
		high = base + int64(n)
		// Another writer's appends are seen within externalRecheck of
		// the last poll (readcache.go).
		time.Sleep(externalRecheck)
	}
	mine("a", 5)
	check("own appends")
	theirs("b", 3) // another writer between two of ours
	mine("c", 4)
	check("another writer's appends between")
	theirs("d", 2) // past the window's end
	check("another writer's appends at the end")

	// Delete and recreate elsewhere, refill with other messages, then
	// append here: Iggy confirms offsets the cache holds other messages at.
	if err := other.DeleteTopic(cx, "co"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.CreateTopic(cx, "co", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	high = 0
	theirs("e", 7)
	drops := c.cache.invalidations.Load()
	mine("f", 2)
	if c.cache.invalidations.Load() == drops {
		t.Fatal("an append confirmed at offsets the cache holds other messages at did not drop the partition")
	}
	// What the cache held is gone; the server may still answer polls of
	// the recreated topic from the deleted one's partitions for a moment
	// (docs/IGGY.md, "Topic incarnations": the 0.11 model does until its
	// teardown), so the reads converge rather than match at once.
	var got, want []tailMsg
	if !testtools.Eventually(10*time.Second, func() bool {
		got, want = readTail(t, c, "co", 0, 0, high), readTail(t, other, "co", 0, 0, high)
		return slices.Equal(got, want)
	}) {
		sameMessages(t, "after a delete, recreate and refill by another writer", got, want)
	}
}

// TestTailWindowBound: the window stays within its bound, each partition
// within its share, and its buffers are reused.
func TestTailWindowBound(t *testing.T) {
	addr, stream := target(t)
	const limit = 2 << 20
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2, TailWindowBytes: limit})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "bd", 8, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	watchTail(t, c, "bd", 8)
	rng := rand.New(rand.NewPCG(1, 2))
	payload := bytes.Repeat([]byte("x"), 2000)
	for range 400 {
		p := int32(rng.IntN(8))
		var b message.Batch
		b.Reset(1)
		for j := range 1 + rng.IntN(40) {
			b.Begin(uint64(1 + j))
			b.AppendPayload(payload...)
			b.MarkHeaders()
			b.End()
		}
		if _, err := c.Append(cx, "bd", p, &b); err != nil {
			t.Fatal(err)
		}
		rc := c.cache
		rc.mu.Lock()
		var sum int64
		for ch := rc.tailLRU.Oldest(); ch != nil; ch = rc.tailLRU.Newer(ch) {
			sum += ch.size
		}
		over := rc.tailBytes > limit || sum != rc.tailBytes
		rc.parts.each(func(pc *partCache) {
			if pc.tailN > maxTailChunks {
				over = true
			}
		})
		bytesNow := rc.tailBytes
		rc.mu.Unlock()
		if over {
			t.Fatalf("window holds %d bytes (LRU sum %d), bound %d, or a partition holds more than %d chunks", bytesNow, sum, limit, maxTailChunks)
		}
	}
	if c.cache.tailGauge.Load() == 0 {
		t.Fatal("nothing kept")
	}
}

// TestTailWindowSoleWriter: with Config.SoleWriter a Read at the high
// watermark of a topic this client created is answered without a poll,
// also after this client's appends; another writer's append (seen as a
// gap) or an append of unknown outcome makes the next Read poll, which
// makes the high watermark exact again.
func TestTailWindowSoleWriter(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2, SoleWriter: true})
	other := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "sw", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if !c.Capabilities().SoleWriter {
		t.Fatal("the client does not declare itself the sole writer")
	}
	polls := func() uint64 { return c.cache.misses.Load() }
	atTail := func(want int64, wantPolls uint64, step string) {
		t.Helper()
		before := polls()
		wm, err := c.Read(cx, "sw", 0, want, 1<<20, func(*message.Message) bool {
			t.Fatalf("%s: a message past the high watermark", step)
			return false
		})
		if err != nil {
			t.Fatal(err)
		}
		if wm.High != want {
			t.Fatalf("%s: high watermark %d, want %d", step, wm.High, want)
		}
		if n := polls() - before; n != wantPolls {
			t.Fatalf("%s: %d polls, want %d", step, n, wantPolls)
		}
	}
	if _, err := c.Append(cx, "sw", 0, seqBatch("a", 0, 2)); err != nil {
		t.Fatal(err)
	}
	atTail(2, 0, "a read at the tail of a topic created here")
	if _, err := c.Append(cx, "sw", 0, seqBatch("b", 2, 3)); err != nil {
		t.Fatal(err)
	}
	readTail(t, c, "sw", 0, 0, 5)
	atTail(5, 0, "after an own append")
	if _, err := other.Append(cx, "sw", 0, seqBatch("x", 5, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "sw", 0, seqBatch("c", 6, 1)); err != nil {
		t.Fatal(err)
	}
	atTail(7, 1, "after a gap")
	atTail(7, 0, "after the gap was polled")
	c.cache.unsure("sw", 0)
	atTail(7, 1, "after an append of unknown outcome")
	atTail(7, 0, "after that poll")
}

// TestTailWindowRecheck: without Config.SoleWriter, a Read at the high
// watermark a poll just told is answered without another poll for
// externalRecheck, then polls again and sees another writer's append.
func TestTailWindowRecheck(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	other := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "rc", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "rc", 0, seqBatch("a", 0, 3)); err != nil {
		t.Fatal(err)
	}
	read := func() (int, store.Watermarks) {
		n := 0
		wm, err := c.Read(cx, "rc", 0, 3, 1<<20, func(*message.Message) bool { n++; return true })
		if err != nil {
			t.Fatal(err)
		}
		return n, wm
	}
	misses := c.cache.misses.Load()
	read() // polls: nothing past 3, as Iggy says now
	if c.cache.misses.Load() != misses+1 {
		t.Fatal("the first read at the tail did not poll")
	}
	if _, err := other.Append(cx, "rc", 0, seqBatch("x", 3, 1)); err != nil {
		t.Fatal(err)
	}
	c.cache.mu.Lock()
	c.cache.recheck = time.Hour // as if the next read came at once
	c.cache.mu.Unlock()
	if n, wm := read(); n != 0 || wm.High != 3 || c.cache.misses.Load() != misses+1 {
		t.Fatalf("within the recheck interval: %d messages, high %d, %d polls; want the known answer without a poll", n, wm.High, c.cache.misses.Load()-misses)
	}
	c.cache.mu.Lock()
	c.cache.recheck = 0 // as if it had passed
	c.cache.mu.Unlock()
	if n, wm := read(); n != 1 || wm.High != 4 {
		t.Fatalf("after the recheck interval: %d messages, high %d; want another writer's message", n, wm.High)
	}
}

// TestTailWindowFailover: the window of a client on an Iggy cluster is
// dropped when the primary dies (the client reconnects elsewhere: the new
// primary may hold another tail), and what the client reads afterwards,
// appends before and after the failover, is what a client without a cache
// reads from the new primary.
func TestTailWindowFailover(t *testing.T) {
	cl := startCluster(t, 3)
	seeds := strings.Join(cl.Addrs(), ",")
	c := open(t, Config{Addr: seeds, PoolSize: 2, RequestTimeout: 2 * time.Second, ReconnectBackoffMax: 200 * time.Millisecond})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "fo", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	watchTail(t, c, "fo", 1)
	high := int64(0)
	appendSome := func(prefix string) {
		t.Helper()
		if !testtools.Eventually(15*time.Second, func() bool {
			base, err := c.Append(cx, "fo", 0, seqBatch(prefix, int(high), 5))
			if err == nil {
				high = base + 5
			}
			return err == nil
		}) {
			t.Fatal("no append confirmed")
		}
	}
	appendSome("a")
	misses := c.cache.misses.Load()
	readTail(t, c, "fo", 0, 0, high)
	if c.cache.misses.Load() != misses {
		t.Fatal("the read before the failover was not served from the window")
	}
	drops := c.cache.invalidations.Load()
	cl.Kill(cl.Primary())
	appendSome("b")
	if c.cache.invalidations.Load() == drops {
		t.Fatal("the failover did not drop the window")
	}
	plain := open(t, Config{Addr: seeds, PoolSize: 2, ReadCacheBytes: -1})
	sameMessages(t, "after the failover", readTail(t, c, "fo", 0, 0, high), readTail(t, plain, "fo", 0, 0, high))
}

// TestTailWindowPollCrossesAppend: a poll whose reply tells the partition
// as it was before an append this client confirmed while the reply was in
// flight is no purge: the appended messages stay in the window and, with
// Config.SoleWriter, the high watermark stays past them, so a reader at
// the old end gets them at once. (Judged against the cache at reply time,
// the reply voided the partition and left an exact high watermark below the
// append: a reader there was told "nothing more" until the next append.)
func TestTailWindowPollCrossesAppend(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	first := open(t, Config{Addr: addr, Stream: "kafka", PoolSize: 2})
	cx := ctx(t)
	if _, err := first.CreateTopic(cx, "cross", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Append(cx, "cross", 0, seqBatch("a", 0, 5)); err != nil {
		t.Fatal(err)
	}
	// A gateway that starts on the topic: its first Read polls, and the
	// reply (the partition holds 5) comes back 300 ms later.
	c := open(t, Config{Addr: addr, Stream: "kafka", PoolSize: 2, SoleWriter: true})
	srv.InjectFault(iggytest.Fault{Op: proto.OpNonReplicated, Code: proto.CodePollMessages, Count: 1, Delay: 300 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(cx, "cross", 0, 0, 1<<20, func(*message.Message) bool { return true })
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // the poll is in flight
	if _, err := c.Append(cx, "cross", 0, seqBatch("b", 5, 2)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []int64
	wm, err := c.Read(cx, "cross", 0, 5, 1<<20, func(m *message.Message) bool {
		got = append(got, m.Offset)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 5 || wm.High != 7 {
		t.Fatalf("a read at 5 after the crossing poll: offsets %v, high watermark %d; want 5 and 6, high 7", got, wm.High)
	}
}

// TestTailCheckWait: without Config.SoleWriter, a Read at the tail past the
// recheck waits for the topic's check instead of polling, and is answered
// by it (no poll); a Read waiting for a check that hangs ends when the
// client closes.
func TestTailCheckWait(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	c := open(t, Config{Addr: addr, Stream: "kafka", PoolSize: 2})
	c.cache.recheck = 300 * time.Millisecond
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "chk", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "chk", 0, seqBatch("a", 0, 3)); err != nil {
		t.Fatal(err)
	}
	readTail := func() (store.Watermarks, int, error) {
		n := 0
		wm, err := c.Read(cx, "chk", 0, 3, 1<<20, func(*message.Message) bool { n++; return true })
		return wm, n, err
	}
	if _, _, err := readTail(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(310 * time.Millisecond) // past the recheck
	misses, renewals := c.cache.misses.Load(), c.cache.checkRenewals.Load()
	// Slow, but answered within the recheck: the check's answer holds
	// for the read that waited for it.
	srv.InjectFault(iggytest.Fault{Op: proto.OpNonReplicated, Code: proto.CodeGetTopic, Count: 1, Delay: 150 * time.Millisecond})
	start := time.Now()
	wm, n, err := readTail()
	if err != nil || n != 0 || wm.High != 3 {
		t.Fatalf("a read at the tail: %d messages, high %d, %v; want none, high 3", n, wm.High, err)
	}
	if took := time.Since(start); took < 120*time.Millisecond {
		t.Fatalf("the read took %v: it did not wait for the delayed check", took)
	}
	if c.cache.misses.Load() != misses || c.cache.checkRenewals.Load() == renewals {
		t.Fatalf("polls %d → %d, renewals %d → %d: the check did not answer the read", misses, c.cache.misses.Load(), renewals, c.cache.checkRenewals.Load())
	}

	time.Sleep(310 * time.Millisecond)
	srv.InjectFault(iggytest.Fault{Op: proto.OpNonReplicated, Code: proto.CodeGetTopic, Count: 1, Drop: true})
	done := make(chan error, 1)
	sent := c.cache.checksSent.Load()
	go func() {
		_, _, err := readTail()
		done <- err
	}()
	testtools.WaitFor(t, 5*time.Second, "the read's check sent", func() bool { return c.cache.checksSent.Load() > sent })
	go c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a read waiting for a check that never answers succeeded after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read waiting for a hung check outlived the client's Close by 5 s")
	}
}

// TestTailFreeBound: the window keeps up to maxTailFree recycled chunk
// buffers a class, all of them within a quarter of its bound; a buffer
// taken out leaves room for another.
func TestTailFreeBound(t *testing.T) {
	rc := newReadCache(&Client{}, 1<<20, 4<<20, false) // free buffers: at most 1 MiB
	for range maxTailFree + 8 {
		rc.putTailBuf(make([]byte, 0, 4<<10))
	}
	if n := len(rc.tailFree[0]); n != maxTailFree {
		t.Fatalf("%d 4 KiB buffers kept, want %d", n, maxTailFree)
	}
	for range 16 {
		rc.putTailBuf(make([]byte, 0, 64<<10))
	}
	want := int64(maxTailFree*(4<<10) + 14*(64<<10)) // 128 KiB + 14 × 64 KiB ≤ 1 MiB < + 64 KiB
	if rc.tailFreeBytes != want {
		t.Fatalf("%d bytes of free buffers, want %d (a quarter of the bound)", rc.tailFreeBytes, want)
	}
	if b := rc.takeTailBuf(40 << 10); cap(b) != 64<<10 {
		t.Fatalf("a buffer for a 40 KiB chunk: cap %d", cap(b))
	}
	if rc.tailFreeBytes != want-64<<10 {
		t.Fatalf("%d bytes of free buffers after one was taken, want %d", rc.tailFreeBytes, want-64<<10)
	}
	rc.putTailBuf(make([]byte, 0, 64<<10))
	if rc.tailFreeBytes != want {
		t.Fatalf("%d bytes of free buffers after one came back, want %d", rc.tailFreeBytes, want)
	}
	rc.putTailBuf(make([]byte, 0, 5000)) // not a class size: not kept
	if rc.tailFreeBytes != want {
		t.Fatalf("a buffer of no class's size was kept")
	}
}
