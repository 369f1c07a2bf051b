package iggy

// The tail window (docs/IGGY.md, "The tail window"): a consumer at the tail
// asks for the records this gateway appended a moment earlier. Rather than
// poll Iggy for them, the read cache keeps the frames of every append Iggy
// confirmed as a chunk of its own, laid out as a poll reply would hold them
// (one batch record: the batch header kiggy sent, with the base offset
// Iggy confirmed, then the frames), so a Read at or near the high watermark
// is served from memory by the same walk as a polled chunk, and the Fetch
// built from it is the one a poll would have given. Only partitions a
// reader came to within the TTL are kept (wantsTail): a partition nobody
// consumes costs its producer no copy.
//
// Only what Iggy confirmed stored is kept, at the offsets it confirmed. A
// fill never overlaps what is cached: an append confirmed below the high
// watermark the cache knows (another writer got there first, or the topic
// was purged or recreated) is not kept, and a cached chunk past the
// confirmed base (which offsets that only grow cannot explain) drops the
// partition. Every invalidation of the read cache (a topic created or
// deleted through kiggy, a poll that saw a purge or a recreate, a
// reconnect) drops the window with it, and a window chunk is served for at
// most the read cache's TTL. A batch whose frames a read would present
// with Iggy's own append time (message.Batch.ServerTime) is not kept: only
// Iggy knows that time.
//
// With Config.SoleWriter (no writer but this gateway) the cache also knows
// when a partition's high watermark is exact: a poll told it, and every
// append since was this client's and continued it. A Read at that exact high
// watermark is then answered "nothing more" without a poll, and the gateway
// parks such a Fetch until one of its own appends wakes it: an idle consumer
// costs Iggy nothing.

import (
	"encoding/binary"
	"math/bits"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
)

// DefaultTailWindowBytes is the tail window's default memory bound.
const DefaultTailWindowBytes = 32 << 20

// Tail window tuning.
const (
	// maxTailChunks is how many window chunks one partition keeps: a
	// consumer more appends behind than that reads through the poll path.
	maxTailChunks = 16
	// minTailShare is the least a partition may keep when many partitions
	// share the bound (each keeps bound/partitions, at least this).
	minTailShare = 256 << 10
	// Window chunk buffers come in power-of-two classes from 1<<tailClassMin
	// bytes to keepReplyBuf, at most maxTailFree of each kept for reuse and
	// all of them within a quarter of the window's bound (putTailBuf).
	// Appends' sizes wander between the classes: with 8 a class, 11 % of
	// the fills at 50 % of Kafka's maximum with three groups found their
	// class empty and allocated; with 32, 3–4 % (docs/IGGY.md, "The tail
	// window").
	tailClassMin = 12
	tailClasses  = 11
	maxTailFree  = 32
)

// tailClass is the buffer class of an n-byte chunk, -1 when too large to
// keep a buffer of.
func tailClass(n int) int {
	c := 0
	if n > 1<<tailClassMin {
		c = bits.Len(uint(n-1)) - tailClassMin
	}
	if c >= tailClasses {
		return -1
	}
	return c
}

// takeTailBuf returns a buffer of at least n bytes from the window's free
// lists (or a new one); under mu.
func (rc *readCache) takeTailBuf(n int) []byte {
	c := tailClass(n)
	if c < 0 {
		return make([]byte, 0, n)
	}
	if l := rc.tailFree[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		rc.tailFree[c] = l[:len(l)-1]
		rc.tailFreeBytes -= int64(cap(b))
		return b[:0]
	}
	return make([]byte, 0, 1<<(c+tailClassMin))
}

// putTailBuf keeps a window chunk's buffer for a later fill, unless its
// class holds maxTailFree already or the kept buffers would pass a quarter
// of the window's bound; under mu.
func (rc *readCache) putTailBuf(b []byte) {
	c := tailClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+tailClassMin) || len(rc.tailFree[c]) >= maxTailFree ||
		rc.tailFreeBytes+int64(cap(b)) > rc.tailLimit/4 {
		return
	}
	rc.tailFree[c] = append(rc.tailFree[c], b[:0])
	rc.tailFreeBytes += int64(cap(b))
}

// takeChunk returns a recycled chunk struct or a new one; under mu.
func (rc *readCache) takeChunk() *chunk {
	if n := len(rc.freeChunks); n > 0 {
		ch := rc.freeChunks[n-1]
		rc.freeChunks[n-1] = nil
		rc.freeChunks = rc.freeChunks[:n-1]
		return ch
	}
	return new(chunk)
}

// appended records an append Iggy confirmed at base (count messages; hdr
// its sealed batch header, b and rest its frames): the partition's high
// watermark rises, and the frames are kept in the tail window when they can
// be. sent is generation() before the append was sent: a partition cache
// made since then may speak of another incarnation of the topic, and is not
// touched.
func (rc *readCache) appended(topic string, partition int32, base int64, count int, sent uint64,
	hdr []byte, b *message.Batch, rest []*message.Batch) {
	if rc == nil {
		return
	}
	size := proto.BatchHeaderSize + b.Size()
	for _, r := range rest {
		size += r.Size()
	}
	ch := rc.buildTail(topic, partition, base, count, size, hdr, b, rest)

	rc.mu.Lock()
	defer rc.mu.Unlock()
	end := base + int64(count)
	p := rc.parts.get(topic, partition)
	switch {
	case p == nil && ch != nil && rc.gen.Load() == sent:
		p = rc.part(topic, partition)
	case p == nil || p.born > sent:
		rc.dropUnused(ch)
		return
	}
	old := p.high
	if p.exact && base != old && end > old {
		// Someone else's append (or one of ours whose confirmation has
		// not been seen yet) lies between: the next Read polls.
		p.exact = false
	}
	p.high = max(p.high, end)
	if rc.cachedEnd(p) > uint64(base) {
		// Offsets Iggy just confirmed as this append's are cached
		// already: a poll that raced the confirmation holds them (the
		// same message: kept as it is), or the partition restarted its
		// offsets (a purge, a recreate) and the cached message there is
		// another: what is cached is not what is stored.
		if sum, ok := p.sumAt(uint64(base)); !ok || sum != binary.LittleEndian.Uint64(b.Frames()) {
			rc.invalidateLocked(p)
		}
		rc.tailSkips.Add(1)
		rc.dropUnused(ch)
		return
	}
	switch {
	case ch == nil:
		return
	case base < old:
		// Confirmed below a high watermark a GetTopic or a poll taught:
		// not kept, as the window holds no guesses.
		rc.tailSkips.Add(1)
		rc.dropUnused(ch)
		return
	}
	ch.p = p
	notePollSize(p, int64(size)/int64(count))
	rc.insertTail(p, ch)
	rc.tailFills.Add(1)
}

// buildTail copies an append's frames (size bytes with the batch header)
// into a chunk for the tail window, or returns nil when the window does not
// keep them: it is off, the batch has server-stamped times, it is over a
// quarter of the window, or nobody reads the partition through it
// (wantsTail). The copy is made outside the lock: readers of the cache do
// not wait for it.
func (rc *readCache) buildTail(topic string, partition int32, base int64, count, size int, hdr []byte,
	b *message.Batch, rest []*message.Batch) *chunk {
	keep := rc.tailLimit > 0 && !b.ServerTime && int64(size) <= rc.tailLimit/4
	for _, r := range rest {
		keep = keep && !r.ServerTime
	}
	if !keep {
		return nil
	}
	rc.mu.Lock()
	if !rc.wantsTail(rc.parts.get(topic, partition), time.Now()) {
		rc.mu.Unlock()
		rc.tailUnread.Add(1)
		return nil
	}
	buf := rc.takeTailBuf(size)
	ch := rc.takeChunk()
	marks := ch.marks[:0]
	rc.mu.Unlock()
	ch.buf, ch.marks = buf, marks
	if !ch.build(base, count, partition, hdr, b, rest) {
		rc.mu.Lock()
		rc.dropUnused(ch)
		rc.mu.Unlock()
		return nil
	}
	return ch
}

// wantsTail reports whether p's appends are worth keeping: a reader came
// within the TTL (a consumer at the tail reads every fetch.max.wait.ms at
// least), so a partition nobody reads costs its producers no copy (the copy
// was 8 % of the gateway's CPU in a produce-only run, docs/BENCHMARKS.md);
// under mu. A reader's first Read after a quiet spell polls, and the
// appends after it are kept.
func (rc *readCache) wantsTail(p *partCache, now time.Time) bool {
	return p != nil && !p.dead && now.Sub(p.readAt) <= rc.ttl
}

// build lays out ch as a poll reply holding the append: hdr with the
// confirmed base offset, then the frames of b and rest. It reports whether
// the frames walked as a poll reply's do.
func (ch *chunk) build(base int64, count int, partition int32, hdr []byte, b *message.Batch, rest []*message.Batch) bool {
	buf := append(ch.buf, hdr[:proto.BatchHeaderSize]...)
	binary.LittleEndian.PutUint64(buf[proto.BatchPartitionID:], uint64(partition))
	binary.LittleEndian.PutUint64(buf[proto.BatchBaseOffset:], uint64(base))
	// Iggy's append time, which no kept frame is read with (ServerTime):
	// this gateway's clock at the confirmation stands in for it.
	binary.LittleEndian.PutUint64(buf[proto.BatchBaseTimestamp:], uint64(time.Now().UnixMicro()))
	buf = append(buf, b.Frames()...)
	for _, r := range rest {
		buf = append(buf, r.Frames()...)
	}
	ch.buf, ch.records = buf, buf
	if lastSum, ok := stampedLast(b, rest); ok {
		// Frames stamped as they were built (the gateway's): their
		// checksums are at hand, the frames need no walk here, and the
		// chunk has no marks (a reader starting inside it walks from its
		// start: a window chunk holds one append, at most a round).
		ch.first, ch.end, ch.lastSum = uint64(base), uint64(base)+uint64(count), lastSum
	} else {
		first, end, lastSum, _, _, marks, _, ok := scanRecords(buf, uint64(base), uint64(base), ch.marks)
		ch.marks = marks
		if !ok || first != uint64(base) || end != uint64(base)+uint64(count) {
			return false
		}
		ch.first, ch.end, ch.lastSum = first, end, lastSum
	}
	ch.size = int64(cap(buf))
	ch.polled = time.Now()
	ch.tail = true
	return true
}

// stampedLast returns the checksum of the last frame of an append whose
// batches were all stamped as they were built (message.Batch.Sums).
func stampedLast(b *message.Batch, rest []*message.Batch) (uint64, bool) {
	last := b
	if len(rest) > 0 {
		last = rest[len(rest)-1]
	}
	if b.Sums() == nil || last.Sums() == nil {
		return 0, false
	}
	for _, r := range rest {
		if r.Sums() == nil {
			return 0, false
		}
	}
	sums := last.Sums()
	return binary.LittleEndian.Uint64(sums[len(sums)-8:]), true
}

// dropUnused returns a window chunk that was never published; under mu.
func (rc *readCache) dropUnused(ch *chunk) {
	if ch == nil {
		return
	}
	rc.putTailBuf(ch.buf)
	marks := ch.marks[:0]
	*ch = chunk{marks: marks}
	if len(rc.freeChunks) < 4*maxChunksPerPartition {
		rc.freeChunks = append(rc.freeChunks, ch)
	}
}

// insertTail publishes a window chunk in p within the partition's share of
// the window and the window's bound; under mu.
func (rc *readCache) insertTail(p *partCache, ch *chunk) {
	parts := rc.tailParts
	if p.tailN == 0 {
		parts++
	}
	share := max(rc.tailLimit/int64(parts), minTailShare)
	for p.tailN > 0 && (p.tailN >= maxTailChunks || p.tailBytes+ch.size > share) {
		rc.evict(p.oldestTail())
	}
	for rc.tailBytes+ch.size > rc.tailLimit && rc.tailLRU.Oldest() != nil {
		rc.evict(rc.tailLRU.Oldest())
	}
	for len(p.chunks) >= maxChunksPerPartition {
		rc.evict(p.chunks[0])
	}
	p.place(ch)
	if p.tailN == 0 {
		rc.tailParts++
	}
	p.tailN++
	p.tailBytes += ch.size
	rc.tailBytes += ch.size
	rc.tailGauge.Store(rc.tailBytes)
	rc.tailLRU.PushBack(ch)
}

// oldestTail is p's window chunk of the lowest offsets; p has one; under mu.
func (p *partCache) oldestTail() *chunk {
	for _, ch := range p.chunks {
		if ch.tail {
			return ch
		}
	}
	return nil
}

// forgetTail undoes a window chunk's accounting as it leaves the cache;
// under mu.
func (rc *readCache) forgetTail(ch *chunk) {
	p := ch.p
	rc.tailLRU.Remove(ch)
	rc.tailBytes -= ch.size
	rc.tailGauge.Store(rc.tailBytes)
	p.tailBytes -= ch.size
	p.tailN--
	if p.tailN == 0 {
		rc.tailParts--
	}
}

// sumAt returns the checksum of the cached message at off; under mu.
func (p *partCache) sumAt(off uint64) (uint64, bool) {
	ch := p.find(off)
	if ch == nil {
		return 0, false
	}
	var it proto.RecordIter
	it.Reset(ch.records)
	for it.Next() {
		h := it.Header()
		for fr := it.Frames(); len(fr) > 0; {
			f, err := message.ParseFrame(fr)
			if err != nil {
				return 0, false
			}
			if h.BaseOffset+uint64(f.OffsetDelta) == off {
				return f.Checksum, true
			}
			fr = fr[f.Size:]
		}
	}
	return 0, false
}

// created notes a topic this client just created: its partitions are
// empty, which with Config.SoleWriter is an exact high watermark of 0, so
// not even the first Read at the tail needs a poll.
func (rc *readCache) created(topic string, partitions int32) {
	if rc == nil || !rc.soleWriter {
		return
	}
	rc.mu.Lock()
	for i := range partitions {
		p := rc.part(topic, i)
		if p.high == 0 && len(p.chunks) == 0 {
			p.exact = true
		}
	}
	rc.mu.Unlock()
}

// moved notes that Iggy holds records at or past what the cache knows of
// the partitions (a readiness wait answered, waits.go): their high
// watermarks are no longer exact, and the next Read at them polls.
func (rc *readCache) moved(topic string, partitions []int32) {
	if rc == nil {
		return
	}
	rc.mu.Lock()
	for _, i := range partitions {
		if p := rc.parts.get(topic, i); p != nil {
			// As an append of unknown outcome: a poll sent before the
			// wait answered does not make high exact again.
			p.exact = false
			p.unsure++
		}
	}
	rc.mu.Unlock()
}

// unsure notes an append to the partition whose outcome is unknown (it may
// be stored): its high watermark is no longer known exactly.
func (rc *readCache) unsure(topic string, partition int32) {
	if rc == nil {
		return
	}
	rc.mu.Lock()
	if p := rc.parts.get(topic, partition); p != nil {
		p.exact = false
		p.unsure++
	}
	rc.mu.Unlock()
}
