package iggy

// The read cache (docs/IGGY.md, "The read cache and read-ahead"): Kafka consumers read a partition
// sequentially, and several consumer groups often read the same partition
// near its tail, so a Read is served from chunks of earlier PollMessages
// replies kept in memory when it can be, and a background worker polls the
// next chunk of a partition while the consumer works on the last one.
//
// A chunk is one PollMessages reply, kept whole (the session's reply buffer
// is taken over, never copied) and immutable once published: it holds the
// messages [first, end) that Iggy returned, so nothing past what Iggy
// acknowledged as stored is ever served. Chunks are pinned by readers while
// fn runs over them without the lock; eviction removes a chunk from the
// cache at once and recycles its buffer when the last reader unpins it.
//
// Invalidation: a topic kiggy deletes or creates drops its partitions; a
// poll that says Iggy holds fewer messages than are cached (a purge restarts
// offsets at 0), or whose overlapping first message differs from the cached
// one (a purge or a recreate refilled past the cached range), drops the
// partition; a reconnect (the server may have restarted and lost its tail)
// drops everything.

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/lru"
	"github.com/kiggy-io/kiggy/internal/metric"
)

// DefaultReadCacheBytes is the read cache's default memory bound.
const DefaultReadCacheBytes = 64 << 20

// DefaultFetchCacheBytes is the default bound of the encoded batches the
// gateway shares between Fetches (Config.FetchCacheBytes).
const DefaultFetchCacheBytes = 64 << 20

// Read cache tuning.
const (
	maxChunksPerPartition = 32       // chunks one partition may hold
	minChunkBytes         = 64 << 10 // smallest read-ahead poll, bytes
	maxChunkBytes         = 4 << 20  // largest read-ahead poll, bytes
	maxFreeBufs           = 8        // recycled chunk buffers kept
	// readCacheTTL is how long a chunk is served after its poll. Changes
	// made to a topic outside this gateway (a purge, a delete and recreate)
	// are noticed by the next poll of the partition; the TTL bounds how
	// long a partition nobody polls can serve what was there before.
	readCacheTTL = 5 * time.Second
)

type partKey struct {
	topic     string
	partition int32
}

// chunk is one cached PollMessages reply: messages [first, end).
type chunk struct {
	p                *partCache
	first, end       uint64     // offsets covered
	lastSum          uint64     // checksum of the message at end-1
	records          []byte     // the reply's batch records
	marks            []walkMark // where walks may start (scanRecords); kept when recycled
	buf              []byte     // the whole reply buffer (owned)
	size             int64      // bytes counted against the bound (cap(buf))
	polled           time.Time  // when Iggy returned it
	refs             int32      // readers serving from it now (under readCache.mu)
	cached           bool       // in p.chunks and the LRU
	tail             bool       // a tail window chunk (tailwindow.go), in readCache.tailLRU
	lru.Links[chunk]            // in readCache.lru
}

// LRULinks places a chunk in the cache's LRU list (internal/lru).
func (ch *chunk) LRULinks() *lru.Links[chunk] { return &ch.Links }

// partCache is one partition's cached chunks, sorted by first, disjoint.
type partCache struct {
	key    partKey
	chunks []*chunk
	high   int64 // highest known high watermark (current_offset+1, appends)

	polling  bool   // a poll registered as shared is in flight
	pollFrom uint64 // its first offset
	pollTo   uint64 // one past the last offset it can return
	cond     sync.Cond

	// The last shared poll that found nothing at its offset (a reader at
	// the tail): readers that waited for it answer with its watermark.
	emptySeq  uint64
	emptyFrom uint64
	emptyHigh int64 // -1: unknown (the reader asked GetTopic)

	queued     bool   // waiting in the read-ahead queue
	raFrom     uint64 // where the next read-ahead starts
	chunkBytes int    // read-ahead poll size (the last reader's budget)
	dead       bool   // dropped from the cache: in-flight results are discarded
	msgSize    int64  // bytes per message of its polls (notePollSize); 0 = not polled yet
	// born is readCache.gen when p was made: a reply to a request sent
	// under an older generation may speak of an incarnation of the topic
	// that p is not, and does not update p (appended, learnHighs).
	born uint64

	// The tail window (tailwindow.go): tailN chunks of tailBytes. exact:
	// high is Iggy's high watermark as a poll sent at verified told it,
	// continued by every append of this client since; unsure counts
	// appends of unknown outcome, so a poll sent before one does not make
	// high exact again. Without Config.SoleWriter other writers may have
	// appended since verified: exact is trusted for externalRecheck.
	tailN     int
	tailBytes int64
	exact     bool
	unsure    uint64
	verified  time.Time
	// readAt is when p was last Read: the window keeps p's appends only
	// while a reader came within the TTL (wantsTail), so a partition
	// nobody consumes costs its producer no copy.
	readAt time.Time
}

// externalRecheck is how long, without Config.SoleWriter, a Read at a high
// watermark a poll told exactly is answered without polling again: what
// other writers append is seen within it, as a parked Fetch's re-reads
// (every 100 ms) see it, while a consumer at the tail fetching many times
// a second polls a partition at most this often rather than every time.
const externalRecheck = 100 * time.Millisecond

// cacheReader is the per-Read walking state (pooled: fn makes it escape).
type cacheReader struct {
	it  proto.RecordIter
	msg message.Message
}

// readCache is the client's read cache; nil when disabled.
type readCache struct {
	c     *Client
	limit int64
	ctx   context.Context
	stop  context.CancelFunc
	queue chan *partCache

	mu         sync.Mutex
	parts      partIndex
	lru        lru.List[chunk, *chunk]
	bytes      int64
	free       [][]byte
	freeChunks []*chunk

	readers sync.Pool
	ttl     time.Duration

	hits, misses, evictions, readAheads, invalidations, shared atomic.Uint64
	shrinks                                                    atomic.Uint64 // polls asked again with fewer messages (replyTooLargeError)
	gauge                                                      atomic.Int64
	// gen changes whenever cached data is dropped as possibly no longer
	// stored (invalidation, not eviction): the gateway's fetch cache serves
	// what it encoded from earlier Reads only under the gen it read them
	// under (ReadGeneration).
	gen atomic.Uint64

	// The tail window (tailwindow.go), bounded by tailLimit apart from
	// the polled chunks' limit; tailParts partitions hold window chunks.
	// soleWriter: Config.SoleWriter.
	tailLimit                        int64
	tailBytes                        int64
	tailParts                        int
	tailLRU                          lru.List[chunk, *chunk]
	tailFree                         [tailClasses][][]byte
	tailFreeBytes                    int64 // capacity of the buffers in tailFree
	tailGauge                        atomic.Int64
	tailFills, tailSkips, tailUnread atomic.Uint64
	idleAnswers                      atomic.Uint64 // Reads at an exact high watermark answered without a poll
	recheck                          time.Duration // externalRecheck (tests change it)
	soleWriter                       bool

	// Tail checks (tailcheck.go): the check in flight of each topic, the
	// queue of the checkers, and what they did.
	checks                    map[string]*topicCheck
	checkq                    chan *topicCheck
	checksSent, checkRenewals atomic.Uint64
}

func newReadCache(c *Client, limit, tailLimit int64, soleWriter bool) *readCache {
	ctx, stop := context.WithCancel(context.Background())
	rc := &readCache{c: c, limit: limit, ctx: ctx, stop: stop, parts: newPartIndex(),
		queue: make(chan *partCache, 4096), checkq: make(chan *topicCheck, 1024), ttl: readCacheTTL, tailLimit: max(tailLimit, 0), soleWriter: soleWriter, recheck: externalRecheck}
	rc.readers.New = func() any { return new(cacheReader) }
	return rc
}

// readAheadWorkers is how many background pollers run, each with a session
// of its own outside the pool, so a read-ahead never holds a session a
// Produce or a Fetch waits for: two per GOMAXPROCS thread (each decodes what
// it polls), at most 8, and at most half the pool. They follow the CPUs,
// not the pool, which a deployment sizes for its round trips: more pollers
// than the CPUs can decode for read back slower (docs/BENCHMARKS.md, "Iggy
// sessions").
func readAheadWorkers(pool int) int { return max(1, min(pool/2, 2*runtime.GOMAXPROCS(0), 8)) }

// start runs the read-ahead workers.
func (rc *readCache) start(n int) {
	for range n {
		rc.c.wg.Add(1)
		go rc.worker()
	}
	if !rc.soleWriter {
		for range tailCheckers {
			rc.c.wg.Add(1)
			go rc.checker()
		}
	}
}

// part returns key's partition cache, creating it; under mu.
func (rc *readCache) part(topic string, partition int32) *partCache {
	p := rc.parts.get(topic, partition)
	if p == nil {
		// topic may alias a Kafka request frame: the key holds a clone
		// (the one its topic's other partitions hold, if any).
		var name string
		if tp := rc.parts.topic(topic); tp != nil {
			name = tp.name
		} else {
			name = strings.Clone(topic)
		}
		p = &partCache{key: partKey{name, partition}, born: rc.gen.Load()}
		p.cond.L = &rc.mu
		rc.parts.put(p)
	}
	return p
}

// noteRead notes a Read of p at now (wantsTail). A Fetch reads the clock
// once for all its reads (Client.ReadAt), so a later Read may bring an
// earlier time: the last read time never goes back.
func (p *partCache) noteRead(now time.Time) {
	if now.After(p.readAt) {
		p.readAt = now
	}
}

// find returns the chunk holding offset, or nil; under mu.
func (p *partCache) find(offset uint64) *chunk {
	if i := p.findIndex(offset); i >= 0 {
		return p.chunks[i]
	}
	return nil
}

// findIndex returns the index in p.chunks of the chunk holding offset, or
// −1; under mu.
func (p *partCache) findIndex(offset uint64) int {
	// The chunks are sorted and disjoint: the first that ends past offset
	// holds it, if any does (a binary search; a consumer at the tail asks
	// of every partition on every Fetch, past all of them).
	lo, hi := 0, len(p.chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.chunks[m].end <= offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(p.chunks) && p.chunks[lo].first <= offset {
		return lo
	}
	return -1
}

// lookup returns p's chunk holding offset unless it is older than the TTL
// (then it is dropped), or nil; under mu.
func (rc *readCache) lookup(p *partCache, offset uint64, now time.Time) *chunk {
	ch := p.find(offset)
	if ch != nil && rc.stale(ch, now) {
		rc.dropLocked(ch)
		return nil
	}
	return ch
}

// endingAt returns the chunk whose end is offset, or nil; under mu.
func (p *partCache) endingAt(offset uint64) *chunk {
	for _, ch := range p.chunks {
		if ch.end == offset {
			return ch
		}
	}
	return nil
}

// stale reports whether ch is past the TTL at now: read drops it rather
// than serve it.
func (rc *readCache) stale(ch *chunk, now time.Time) bool { return now.Sub(ch.polled) > rc.ttl }

// endTrusted reports whether an exact high watermark verified age ago is
// still the end a Read answers without polling: always for a sole writer,
// else within externalRecheck.
func (rc *readCache) endTrusted(age time.Duration) bool { return rc.soleWriter || age < rc.recheck }

// read serves a Read through the cache (see store.Log.Read): from a cached
// chunk, at an exact high watermark without a poll, or by a poll. now is
// the caller's clock (Client.ReadAt), the zero time for the clock now.
func (rc *readCache) read(ctx context.Context, now time.Time, topic string, partition int32, offset int64, maxBytes int,
	fn func(*message.Message) bool) (store.Watermarks, error) {
	from := uint64(offset)
	if now.IsZero() {
		now = time.Now()
	}
	rc.mu.Lock()
	p := rc.part(topic, partition)
	p.chunkBytes = min(max(maxBytes, minChunkBytes), maxChunkBytes, int(rc.limit/8))
	p.noteRead(now)
	p, ch, empty := rc.findLocked(topic, partition, p, from, now)
	if empty >= 0 {
		rc.mu.Unlock()
		rc.hits.Add(1)
		return store.Watermarks{High: empty}, nil
	}
	high := int64(-1)
	var err error
	if ch == nil && p.exact && from == uint64(p.high) {
		p, ch, high, err = rc.atHighLocked(ctx, topic, partition, p, from, now)
	}
	switch {
	case err != nil:
		rc.mu.Unlock()
		return store.Watermarks{}, err
	case ch != nil:
		ch.refs++
		rc.touch(ch)
		rc.mu.Unlock()
		rc.hits.Add(1)
		return rc.serve(p, ch, from, maxBytes, fn)
	case high >= 0:
		rc.mu.Unlock()
		return store.Watermarks{High: high}, nil
	}
	return rc.pollLocked(ctx, topic, partition, p, offset, maxBytes, fn)
}

// findLocked returns the cached chunk holding from, waiting once for
// another reader's poll (or a read-ahead) that will return it rather than
// poll the same stretch again, and the partition's cache as it is after
// that wait. When that poll found nothing at from, empty is its high
// watermark, this Read's answer; otherwise empty is -1. Under mu, which
// the wait releases meanwhile.
func (rc *readCache) findLocked(topic string, partition int32, p *partCache, from uint64, now time.Time) (_ *partCache, _ *chunk, empty int64) {
	for waited := false; ; waited = true {
		if ch := rc.lookup(p, from, now); ch != nil {
			return p, ch, -1
		}
		if !p.polling || from < p.pollFrom || from >= p.pollTo || waited {
			return p, nil, -1
		}
		rc.shared.Add(1)
		seq := p.emptySeq
		p.cond.Wait()
		if p.dead {
			p = rc.part(topic, partition)
			p.noteRead(now)
		} else if p.emptySeq != seq && p.emptyFrom == from && p.emptyHigh >= 0 {
			return p, nil, p.emptyHigh
		}
	}
}

// atHighLocked answers a Read at p's exact high watermark without a poll
// while that end is trusted (endTrusted): high is the watermark, or -1 when
// the Read must poll. With other writers, past externalRecheck it first
// waits for the topic's tail check (tailcheck.go), which renews every
// partition of the topic at once, rather than poll this one; if this
// client's own append landed meanwhile, ch is the chunk holding from. Past
// half of the recheck the topic's next check starts in the background.
// Under mu, which the wait releases meanwhile.
func (rc *readCache) atHighLocked(ctx context.Context, topic string, partition int32, p *partCache, from uint64,
	now time.Time) (_ *partCache, ch *chunk, high int64, err error) {
	age := now.Sub(p.verified)
	if !rc.soleWriter && rc.recheck > 0 && age >= rc.recheck {
		if chk := rc.tailCheckLocked(topic); chk != nil {
			rc.mu.Unlock()
			select {
			case <-chk.done:
			case <-ctx.Done():
				err = unavailable(ctx.Err())
			case <-rc.ctx.Done():
				err = unavailable(ErrClosed)
			}
			now = time.Now()
			rc.mu.Lock()
			if err != nil {
				return p, nil, -1, err
			}
			if p.dead {
				p = rc.part(topic, partition)
			}
			if ch = rc.lookup(p, from, now); ch != nil {
				return p, ch, -1, nil
			}
			age = now.Sub(p.verified)
		}
	}
	if !p.exact || from != uint64(p.high) || !rc.endTrusted(age) {
		return p, nil, -1, nil
	}
	rc.answerAtHighLocked(p, topic, now, age)
	return p, nil, p.high, nil
}

// answerAtHighLocked is what a Read answered at p's exact high watermark
// without a poll does besides answering (read, or ReadEstimate standing
// for it): it notes the reader, counts the answer and, with other writers,
// past half of the recheck (age is the watermark's), starts the topic's
// next tail check in the background. Under mu.
func (rc *readCache) answerAtHighLocked(p *partCache, topic string, now time.Time, age time.Duration) {
	p.noteRead(now)
	rc.idleAnswers.Add(1)
	if !rc.soleWriter && age >= rc.recheck/2 {
		rc.tailCheckLocked(topic)
	}
}

// pollLocked serves a Read the cache could not: it polls at least a
// read-ahead chunk from offset (a sequential reader's next Reads are then
// served from it), announcing the stretch so that other readers of it wait
// for this poll (findLocked) instead of polling it too. Called under mu,
// which it releases.
func (rc *readCache) pollLocked(ctx context.Context, topic string, partition int32, p *partCache, offset int64,
	maxBytes int, fn func(*message.Message) bool) (store.Watermarks, error) {
	from := uint64(offset)
	budget := max(maxBytes, p.chunkBytes)
	shared := !p.polling
	if shared {
		p.polling, p.pollFrom, p.pollTo = true, from, from+uint64(pollCount(rc.c, p, budget))
	}
	rc.mu.Unlock()
	rc.misses.Add(1)

	// Only a poll needs the topic's incarnation (a hit is served from a
	// chunk checked when it was polled); learned before taking a session.
	fence := rc.c.fence(ctx, topic)
	s, err := rc.c.acquireRead(ctx, topic, partition) // a routed partition reads from its route
	if err != nil {
		rc.donePolling(p, shared)
		return store.Watermarks{}, unavailable(err)
	}
	ch, current, polled, err := rc.poll(ctx, s, p, from, budget, fence)
	rc.c.releaseFor(s)
	if err != nil {
		rc.donePolling(p, shared)
		rc.forgetEmpty(p)
		return store.Watermarks{}, rc.c.pollError(ctx, topic, partition, err)
	}
	rc.mu.Lock()
	if ch == nil {
		var high int64 = -1
		switch {
		case current > 0 || polled > 0:
			high = int64(current) + 1
		case offset == 0:
			high = 0 // nothing at offset 0: empty (or expired)
		}
		if shared {
			p.emptySeq++
			p.emptyFrom, p.emptyHigh = from, high
			p.polling = false
			p.cond.Broadcast()
		}
		rc.mu.Unlock()
		if high >= 0 {
			return store.Watermarks{High: high}, nil
		}
		// current_offset 0 is both "empty" and "one message at offset 0": ask.
		return rc.c.watermarks(ctx, topic, partition)
	}
	if shared {
		p.polling = false
		p.cond.Broadcast()
	}
	p = ch.p // pinned by poll
	rc.mu.Unlock()
	return rc.serve(p, ch, from, maxBytes, fn)
}

// forgetEmpty drops p when it holds nothing and nothing is pending for it,
// after a failed poll: a Fetch of partitions that do not exist leaves no
// entries behind.
func (rc *readCache) forgetEmpty(p *partCache) {
	rc.mu.Lock()
	if len(p.chunks) == 0 && !p.polling && !p.queued && !p.dead {
		rc.gen.Add(1)
		p.dead = true
		p.cond.Broadcast()
		rc.parts.remove(p)
	}
	rc.mu.Unlock()
}

// donePolling clears a failed shared poll and wakes its waiters.
func (rc *readCache) donePolling(p *partCache, shared bool) {
	if !shared {
		return
	}
	rc.mu.Lock()
	p.polling = false
	p.cond.Broadcast()
	rc.mu.Unlock()
}

// serve calls fn for the messages of ch (pinned by the caller) from offset
// on, and of the chunks contiguous with it, within maxBytes; then it asks
// for a read-ahead when the reader got near the end of what is cached.
func (rc *readCache) serve(p *partCache, ch *chunk, from uint64, maxBytes int,
	fn func(*message.Message) bool) (store.Watermarks, error) {
	r := rc.readers.Get().(*cacheReader)
	budget, delivered := maxBytes, 0
	var err error
	waited := false
	for {
		// A cached chunk passed its topic's fence when it was polled.
		res, werr := walkRecords(&r.it, &r.msg, ch.records, ch.mark(from), from, budget, delivered == 0, false, 0, fn)
		delivered += res.delivered
		budget -= res.bytes
		if res.delivered > 0 {
			from = res.last + 1
		}
		rc.mu.Lock()
		end := ch.end
		rc.unpin(ch)
		if werr != nil {
			err = werr
			ch = nil
		} else if res.stopped || budget <= 0 || from < end {
			ch = nil
		} else {
			ch = rc.lookup(p, end, time.Now())
			if ch == nil && !waited && p.polling && p.pollFrom <= end && end < p.pollTo {
				// The next stretch is being polled (read-ahead): wait for
				// it once rather than answer short.
				waited = true
				rc.shared.Add(1)
				p.cond.Wait()
				ch = rc.lookup(p, end, time.Now())
			}
			if ch != nil && !p.dead {
				from = max(from, ch.first)
				ch.refs++
				rc.touch(ch)
				rc.mu.Unlock()
				continue
			}
		}
		high := max(p.high, int64(end))
		if !p.dead {
			rc.wantReadAhead(p, from)
		}
		rc.mu.Unlock()
		r.msg = message.Message{}
		rc.readers.Put(r)
		if err != nil {
			return store.Watermarks{}, err
		}
		return store.Watermarks{High: high}, nil
	}
}

// wantReadAhead queues p for a background poll from the end of the cached
// run a reader at offset at is in, when that end is less than two chunks
// ahead of it, unless Iggy holds nothing past it or a poll is due; under mu.
func (rc *readCache) wantReadAhead(p *partCache, at uint64) {
	end := at
	for ch := p.find(end); ch != nil; ch = p.find(end) {
		end = ch.end
	}
	if p.queued || p.high <= int64(end) || (p.polling && p.pollFrom <= end && end < p.pollTo) ||
		end-at >= 2*uint64(pollCount(rc.c, p, p.chunkBytes)) {
		return
	}
	select {
	case rc.queue <- p:
		p.queued, p.raFrom = true, end
	default:
	}
}

// worker polls queued partitions ahead of their readers on a session of
// its own.
func (rc *readCache) worker() {
	defer rc.c.wg.Done()
	s := newSession(rc.c)
	defer s.close()
	for {
		var p *partCache
		select {
		case <-rc.ctx.Done():
			return
		case p = <-rc.queue:
		}
		rc.mu.Lock()
		p.queued = false
		from := p.raFrom
		if p.dead || p.high <= int64(from) || p.find(from) != nil || p.polling && p.pollFrom <= from && from < p.pollTo {
			rc.mu.Unlock()
			continue
		}
		budget := p.chunkBytes
		shared := !p.polling
		if shared {
			p.polling, p.pollFrom, p.pollTo = true, from, from+uint64(pollCount(rc.c, p, budget))
		}
		rc.mu.Unlock()
		rc.readAheads.Add(1)
		var err error
		fence := rc.c.fence(rc.ctx, p.key.topic)
		if err = s.ensure(rc.ctx); err == nil {
			var ch *chunk
			if ch, _, _, err = rc.poll(rc.ctx, s, p, from, budget, fence); ch != nil {
				rc.mu.Lock()
				rc.unpin(ch)
				rc.mu.Unlock()
			}
		}
		if err != nil {
			rc.c.log.Debug("iggy: read-ahead poll failed", "topic", p.key.topic, "partition", p.key.partition, "err", err)
			switch codeOf(err) {
			case proto.CodeStreamIDNotFound, proto.CodeTopicIDNotFound, proto.CodeStreamNameNotFound, proto.CodeTopicNameNotFound:
				rc.c.forget(p.key.topic)
				rc.invalidateTopic(p.key.topic)
			}
		}
		rc.donePolling(p, shared)
	}
}

// pollCount is the PollMessages count for a byte budget, from p's message
// size as its last polls found it; under mu. Iggy bounds a poll by count
// only, so a count from another partition's size can ask for far more bytes
// than the budget (64 KiB messages after 1 KiB ones: 64×, a reply over the
// frame limit): a partition not polled yet asks for at most firstPollCount
// messages (docs/IGGY.md, "The read cache and read-ahead").
func pollCount(c *Client, p *partCache, budget int) int64 {
	if p.msgSize > 0 {
		return min(max(int64(budget)/p.msgSize, 1), maxPollCount)
	}
	return min(max(int64(budget)/max(c.avgMsg.Load(), 64), 1), firstPollCount)
}

// firstPollCount caps the count of a partition's first poll, whose message
// size is not known yet: 32 messages of Kafka's default 1 MiB
// max.message.bytes are half the frame limit.
const firstPollCount = 32

// notePollSize folds a poll's bytes per message into p's size: up at once
// (the next poll must not ask too much), down by 1/8; under mu.
func notePollSize(p *partCache, per int64) {
	per = max(per, 64)
	if per >= p.msgSize {
		p.msgSize = per
	} else {
		p.msgSize += (per - p.msgSize) / 8
	}
}

// poll sends one PollMessages for p from offset from on s and publishes the
// reply as a chunk (the session's reply buffer moves into it). It returns
// the chunk pinned for the caller, who unpins it (nil when the reply held no
// message at or past from), and the reply's current_offset and message
// count. When a cached chunk ends at from, the poll starts one message
// earlier and checks that message against the cached one.
//
// A reply holding a batch appended before fence (the topic's created_at,
// incarnation.go) is an earlier incarnation's: it is dropped and poll fails
// with errStaleIncarnation.
func (rc *readCache) poll(ctx context.Context, s *session, p *partCache, from uint64, budget int, fence uint64) (*chunk, uint64, int, error) {
	c := rc.c
	rc.mu.Lock()
	var check uint64
	unsure, sentAt := p.unsure, time.Now()
	// What Iggy held when the poll was sent, at least: the reply is judged
	// a purge only against this, as appends confirmed while it was in
	// flight (the tail window's chunks, appended) may be past what it saw.
	endAtSend := rc.cachedEnd(p)
	prev := p.endingAt(from)
	start := from
	if prev != nil && from > 0 {
		check, start = prev.lastSum, from-1
	}
	count := pollCount(c, p, budget)
	rc.mu.Unlock()
	floor := int64(1)
	if start < from {
		count++
		floor = 2 // the checked message and one new
	}
	body, err := rc.pollShrinking(ctx, s, p, start, count, floor, budget)
	if err != nil {
		return nil, 0, 0, err
	}
	head := s.dialect.PollReplyHeaderSize()
	if len(body) < head {
		return nil, 0, 0, errBadPoll
	}
	current := binary.LittleEndian.Uint64(body[4:])
	first, end, lastSum, seenSum, polled, marks, oldest, ok := scanRecords(body[head:], from, start, s.marks[:0])
	s.marks = marks
	if !ok {
		return nil, 0, 0, errBadPoll
	}
	if (polled > 0 && oldest < fence) || c.staleServed(p.key.topic, p.key.partition, servedIncarnation(s.dialect, body)) {
		c.metrics.staleIncarnations.Add(1)
		return nil, 0, 0, unavailable(errStaleIncarnation)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if polled > 0 {
		per := int64(len(body)) / int64(polled)
		avg := c.avgMsg.Load()
		c.avgMsg.Store(avg + (per-avg)/8)
		notePollSize(p, per)
	}
	if p.dead {
		// Dropped while the poll was in flight (the topic was deleted or
		// recreated, or a reconnect voided the cache): the reply answers
		// its reader and is not cached. Its high watermark is still the
		// one this reader is told (serve reads it from the dead p): what
		// p knew before it died may be far behind what Iggy just said.
		if polled > 0 || current > 0 {
			p.high = max(p.high, int64(current)+1)
		}
		if end == 0 {
			return nil, current, polled, nil
		}
		ch := rc.newChunk(s, p, body, from, first, end, lastSum)
		ch.refs = 1
		return ch, current, polled, nil
	}
	// A purge restarts offsets at 0: Iggy holding fewer messages than are
	// cached, or another message where a cached one was, voids the
	// partition's cache.
	if hw := current + 1; (polled > 0 || current > 0) && hw < endAtSend ||
		polled == 0 && current == 0 && endAtSend > 1 ||
		start < from && seenSum != check && polled > 0 {
		rc.invalidateLocked(p)
		p = rc.part(p.key.topic, p.key.partition)
	}
	switch {
	case polled > 0 || current > 0:
		p.high = max(p.high, int64(current)+1)
		// What Iggy holds is what it said plus this client's appends
		// confirmed since (appended), unless one of unknown outcome came
		// in between; and, with other writers, theirs since sentAt.
		p.exact, p.verified = p.unsure == unsure, sentAt
	case from == 0 && p.high == 0:
		// Nothing at offset 0: an empty partition.
		p.exact, p.verified = p.unsure == unsure, sentAt
	}
	if end == 0 {
		return nil, current, polled, nil
	}
	ch := rc.newChunk(s, p, body, from, first, end, lastSum)
	ch.refs = 1
	rc.insert(p, ch)
	return ch, current, polled, nil
}

// pollShrinking polls count messages from start and returns the reply's
// body; a reply of more bytes than a frame holds is asked again for fewer
// messages, sized from what that reply was, down to floor.
func (rc *readCache) pollShrinking(ctx context.Context, s *session, p *partCache, start uint64, count, floor int64,
	budget int) ([]byte, error) {
	for tries := 0; ; tries++ {
		req := rc.c.pollRequest(s, p.key.topic, p.key.partition, proto.PollOffset, start, uint32(count))
		body, _, err := s.do(ctx, proto.CodePollMessages, req)
		// s.do returns the session's error as it is (no wrapping): a type
		// assertion, where errors.As would allocate on every poll.
		if big, ok := err.(*replyTooLargeError); ok && count > floor && tries < maxShrinks {
			rc.mu.Lock()
			notePollSize(p, int64(big.Size)/count+1)
			count = shrunkCount(count, floor, big, pollCount(rc.c, p, budget))
			rc.mu.Unlock()
			rc.shrinks.Add(1)
			continue
		}
		return body, err
	}
}

// newChunk makes a chunk of a poll reply on s: a reply filling most of the
// session's buffer takes the buffer over (the session gets a recycled one),
// a small one is copied so a few messages do not pin a large buffer; under
// mu.
func (rc *readCache) newChunk(s *session, p *partCache, body []byte, from, first, end, lastSum uint64) *chunk {
	var ch *chunk
	if n := len(rc.freeChunks); n > 0 {
		ch = rc.freeChunks[n-1]
		rc.freeChunks[n-1] = nil
		rc.freeChunks = rc.freeChunks[:n-1]
	} else {
		ch = new(chunk)
	}
	*ch = chunk{p: p, first: first, end: end, lastSum: lastSum, polled: time.Now(), marks: append(ch.marks[:0], s.marks...)}
	if first > from && p.find(from) == nil {
		ch.first = from // the log starts past from: the chunk answers from too
	}
	head := s.dialect.PollReplyHeaderSize()
	if len(body) >= cap(s.rbuf)/4 {
		ch.buf, ch.records = s.rbuf, body[head:]
		s.rbuf = rc.takeBuf()
	} else {
		ch.buf = append([]byte(nil), body...)
		ch.records = ch.buf[head:]
	}
	ch.size = int64(cap(ch.buf))
	return ch
}

// scanRecords walks a poll reply's records once: the first and one past the
// last offset at or past from, the checksum of the last message, that of the
// message at start when start < from, how many messages it holds and the
// oldest batch append time (µs); ok is false for a malformed reply or one
// whose offsets do not rise. It
// appends to marks a walkMark about every markStride bytes of the messages
// at or past from (the first of them included), for serve to start its
// walks near where a reader is rather than at the reply's start.
func scanRecords(records []byte, from, start uint64, marks []walkMark) (first, end, lastSum, seenSum uint64, polled int, out []walkMark, oldest uint64, ok bool) {
	var it proto.RecordIter
	it.Reset(records)
	lastMark := -markStride
	oldest = math.MaxUint64
	for it.Next() {
		h := it.Header()
		oldest = min(oldest, h.BaseTimestamp)
		all := it.Frames()
		rec := len(records) - len(it.Rest()) - len(all) - proto.BatchHeaderSize
		for fr := all; len(fr) > 0; {
			f, err := message.ParseFrame(fr)
			if err != nil {
				return 0, 0, 0, 0, 0, marks, 0, false
			}
			at := rec + proto.BatchHeaderSize + len(all) - len(fr)
			fr = fr[f.Size:]
			polled++
			off := h.BaseOffset + uint64(f.OffsetDelta)
			if off == start && start < from {
				seenSum = f.Checksum
			}
			if off < from {
				continue
			}
			if end == 0 {
				first = off
			} else if off < end {
				// Offsets at or past from must rise (§3.8 replies are in
				// offset order): a chunk claims [first, end) whole.
				return 0, 0, 0, 0, 0, marks, 0, false
			}
			if at-lastMark >= markStride {
				marks = append(marks, walkMark{off: off, rec: int32(rec), frame: int32(at)})
				lastMark = at
			}
			end, lastSum = off+1, f.Checksum
		}
	}
	return first, end, lastSum, seenSum, polled, marks, oldest, it.Err() == nil
}

// markStride is about how many bytes of messages lie between two walkMarks
// of a chunk: a read starting inside a chunk parses at most that many bytes
// of frames before its first message, instead of every frame from the
// chunk's start (docs/IGGY.md, "Walk marks": with a reader's stretches not
// aligned to the polls, that walk was most of the read cache's CPU).
const markStride = 8 << 10

// mark returns the walkMark of ch to start a walk for offset from at: the
// last at or below from, or the zero mark (the chunk's start).
func (ch *chunk) mark(from uint64) walkMark {
	lo, hi := 0, len(ch.marks) // the first mark past from is in [lo, hi]
	for lo < hi {
		if m := lo + (hi-lo)/2; ch.marks[m].off > from {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo == 0 {
		return walkMark{}
	}
	return ch.marks[lo-1]
}

// bytesFrom returns about how many bytes of ch's records hold its messages
// from offset (in [first, end)) on: exact from a mark at offset (a chunk's
// first message has one, or starts a window chunk's records), else the
// bytes from the mark below it in proportion to the messages left.
func (ch *chunk) bytesFrom(offset uint64) int64 {
	m := ch.mark(offset)
	from := ch.first
	if m.frame > 0 {
		from = m.off
	}
	n := int64(len(ch.records) - int(m.frame))
	if offset > from && ch.end > from {
		n = n * int64(ch.end-offset) / int64(ch.end-from)
	}
	return max(n, 0)
}

// cachedEnd is one past the highest cached offset of p; under mu.
func (rc *readCache) cachedEnd(p *partCache) uint64 {
	var end uint64
	for _, ch := range p.chunks {
		end = max(end, ch.end)
	}
	return end
}

// insert publishes ch in p (dropping chunks it overlaps) and evicts the
// least recently used chunks past the bound; under mu. A chunk larger than
// the bound is served to its reader and never cached.
func (rc *readCache) insert(p *partCache, ch *chunk) {
	for i := 0; i < len(p.chunks); {
		if o := p.chunks[i]; o.first < ch.end && ch.first < o.end {
			rc.dropLocked(o) // removes p.chunks[i]
			continue
		}
		i++
	}
	if ch.size > rc.limit {
		return
	}
	for len(p.chunks) >= maxChunksPerPartition {
		rc.evict(p.chunks[0])
	}
	for rc.bytes+ch.size > rc.limit && rc.lru.Oldest() != nil {
		rc.evict(rc.lru.Oldest())
	}
	p.place(ch)
	rc.bytes += ch.size
	rc.gauge.Store(rc.bytes)
	rc.lru.PushBack(ch)
}

// place puts ch among p's chunks in offset order and marks it cached;
// under mu.
func (p *partCache) place(ch *chunk) {
	i := len(p.chunks)
	for i > 0 && p.chunks[i-1].first > ch.first {
		i--
	}
	p.chunks = append(p.chunks, nil)
	copy(p.chunks[i+1:], p.chunks[i:])
	p.chunks[i] = ch
	ch.cached = true
}

// evict drops ch to make room; under mu.
func (rc *readCache) evict(ch *chunk) {
	rc.evictions.Add(1)
	rc.dropLocked(ch)
}

// dropLocked removes ch from its partition and the LRU; its buffer is
// recycled once no reader holds it; under mu.
func (rc *readCache) dropLocked(ch *chunk) {
	if !ch.cached {
		return
	}
	ch.cached = false
	p := ch.p
	if ch.tail {
		rc.forgetTail(ch)
	}
	for i, o := range p.chunks {
		if o == ch {
			copy(p.chunks[i:], p.chunks[i+1:])
			p.chunks[len(p.chunks)-1] = nil
			p.chunks = p.chunks[:len(p.chunks)-1]
			break
		}
	}
	if !ch.tail {
		rc.lru.Remove(ch)
		rc.bytes -= ch.size
		rc.gauge.Store(rc.bytes)
	}
	if ch.refs == 0 {
		rc.recycle(ch)
	}
}

// unpin releases a reader's hold on ch; under mu.
func (rc *readCache) unpin(ch *chunk) {
	ch.refs--
	if ch.refs == 0 && !ch.cached {
		rc.recycle(ch)
	}
}

// recycle keeps ch's buffer for a later reply; under mu.
func (rc *readCache) recycle(ch *chunk) {
	if ch.tail {
		rc.dropUnused(ch)
		return
	}
	if b := ch.buf; b != nil && cap(b) <= keepReplyBuf {
		if len(rc.free) < maxFreeBufs {
			rc.free = append(rc.free, b[:cap(b)])
		} else {
			// Full: keep the larger buffers (takeBuf hands out the largest).
			small := 0
			for i := range rc.free {
				if cap(rc.free[i]) < cap(rc.free[small]) {
					small = i
				}
			}
			if cap(b) > cap(rc.free[small]) {
				rc.free[small] = b[:cap(b)]
			}
		}
	}
	ch.buf, ch.records, ch.p = nil, nil, nil
	if len(rc.freeChunks) < 4*maxChunksPerPartition {
		rc.freeChunks = append(rc.freeChunks, ch)
	}
}

// takeBuf returns a recycled reply buffer for a session that gave its own
// to a chunk; under mu.
func (rc *readCache) takeBuf() []byte {
	if n := len(rc.free); n > 0 {
		// The largest: a session's next reply is about as large as the
		// one its buffer just went to a chunk with, and a smaller buffer
		// would be replaced by a fresh one for it.
		big := 0
		for i := range rc.free {
			if cap(rc.free[i]) > cap(rc.free[big]) {
				big = i
			}
		}
		b := rc.free[big]
		rc.free[big], rc.free[n-1] = rc.free[n-1], nil
		rc.free = rc.free[:n-1]
		return b
	}
	return make([]byte, 64<<10)
}

// touch makes a cached chunk the most recently used; under mu.
func (rc *readCache) touch(ch *chunk) {
	switch {
	case !ch.cached:
	case ch.tail:
		rc.tailLRU.Touch(ch)
	default:
		rc.lru.Touch(ch)
	}
}

// invalidateLocked drops p and its chunks; readers of p's chunks finish on
// them, polls in flight for p are discarded; under mu.
func (rc *readCache) invalidateLocked(p *partCache) {
	if p.dead {
		return
	}
	rc.invalidations.Add(1)
	rc.gen.Add(1)
	for len(p.chunks) > 0 {
		rc.dropLocked(p.chunks[len(p.chunks)-1])
	}
	p.dead = true
	p.cond.Broadcast()
	rc.parts.remove(p)
}

// invalidateTopic drops every cached partition of topic (deleted, created,
// or missing on the server).
func (rc *readCache) invalidateTopic(topic string) {
	if rc == nil {
		return
	}
	rc.mu.Lock()
	rc.gen.Add(1)
	rc.parts.eachOf(topic, rc.invalidateLocked)
	rc.mu.Unlock()
}

// invalidateAll drops everything (a session reconnected: the server may
// have restarted and lost what it had not written).
func (rc *readCache) invalidateAll() {
	if rc == nil {
		return
	}
	rc.mu.Lock()
	rc.gen.Add(1)
	rc.parts.each(rc.invalidateLocked)
	rc.mu.Unlock()
}

// generation returns the cache's invalidation count, to pass to
// learnHighs and appended with the reply of a request sent after it.
func (rc *readCache) generation() uint64 {
	if rc == nil {
		return 0
	}
	return rc.gen.Load()
}

// learnHighs raises the high watermarks the cache knows for every
// partition of topic from a GetTopic reply, so a Fetch that has no budget
// left for a partition answers its high watermark without asking again
// (bridge/fetch.go skipPart): one GetTopic teaches all of a topic's
// partitions. sent is generation() before the request: a reply that
// crossed an invalidation may describe a deleted incarnation and teaches
// nothing it could not have taught before it.
func (rc *readCache) learnHighs(topic string, parts []partitionInfo, sent uint64) {
	if rc == nil {
		return
	}
	rc.mu.Lock()
	same := rc.gen.Load() == sent
	for _, pi := range parts {
		if pi.id > math.MaxInt32 {
			continue
		}
		p := rc.parts.get(topic, int32(pi.id))
		switch {
		case p == nil && same:
			p = rc.part(topic, int32(pi.id))
		case p == nil || p.born > sent:
			continue
		}
		p.high = max(p.high, watermarksOf(pi).High)
	}
	rc.mu.Unlock()
}

// Capabilities implements store.CapabilityDeclarer: with
// Config.SoleWriter every append to the stream goes through this client, so
// the gateway's own append notifications wake its parked Fetches.
func (c *Client) Capabilities() store.Capabilities {
	return store.Capabilities{SoleWriter: c.cfg.SoleWriter && !c.cfg.system}
}

// FetchCacheBytes is the bound of the encoded batches the gateway may share
// between Fetches of this client's partitions (store.SharedReads,
// Config.FetchCacheBytes): 0 without the read cache, whose invalidations
// the gateway's entries follow.
func (c *Client) FetchCacheBytes() int64 {
	if c.cache == nil || c.cfg.FetchCacheBytes < 0 {
		return 0
	}
	return c.cfg.FetchCacheBytes
}

// ReadGeneration implements store.SharedReads: the read cache's
// invalidation count, and the highest high watermark it knows for the
// partition (−1 when it holds nothing of it).
func (c *Client) ReadGeneration(topic string, partition int32) (uint64, int64) {
	rc := c.cache
	if rc == nil {
		return 0, -1
	}
	rc.mu.Lock()
	gen, high := rc.gen.Load(), int64(-1)
	if p := rc.parts.get(topic, partition); p != nil {
		high = p.high
	}
	rc.mu.Unlock()
	return gen, high
}

// ReadEstimate tells about a Read of topic/partition from offset
// (store.ReadEstimator), judged at now. Its Bytes: 0 when the highest high
// watermark the client knows is at or below offset; else the bytes the
// cached chunks hold from offset on, as far as they run without a gap, and
// past them the messages left times the partition's message size as its
// polls and appends found it; −1 when the client knows neither. Local: a
// Read now would be answered from memory, without a round trip (a live
// chunk holds offset, a poll's or the tail window's, or offset is a high
// watermark known exact that read answers without polling). Answered: the
// latter, and no poll in flight covers offset (a Read would wait for it):
// the estimate is that Read, answered as read answers it (atHighLocked).
func (c *Client) ReadEstimate(now time.Time, topic string, partition int32, offset int64) store.Estimate {
	rc := c.cache
	if rc == nil {
		return store.Estimate{Bytes: -1}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	p := rc.parts.get(topic, partition)
	if p == nil || p.high < 0 {
		return store.Estimate{Bytes: -1}
	}
	i := -1
	var local bool
	if offset >= 0 {
		if i = p.findIndex(uint64(offset)); i >= 0 {
			local = !rc.stale(p.chunks[i], now)
		} else if p.exact && offset == p.high {
			age := now.Sub(p.verified)
			if local = rc.endTrusted(age); local && !(p.polling && uint64(offset) >= p.pollFrom && uint64(offset) < p.pollTo) {
				rc.answerAtHighLocked(p, topic, now, age)
				return store.Estimate{Local: true, Answered: true, High: p.high}
			}
		}
	}
	if p.high <= offset {
		return store.Estimate{Local: local}
	}
	if i < 0 {
		if p.msgSize <= 0 {
			return store.Estimate{Bytes: -1, Local: local}
		}
		return store.Estimate{Bytes: (p.high - offset) * p.msgSize, Local: local}
	}
	// The chunks' own bytes: a reader at the tail reads an append or a
	// few whole, which the message size (raised at once by a larger
	// message, lowered slowly) overstates, after one large message, many
	// times over, and the gateway sizes the read's buffer by this (docs/IGGY.md, "Fetches share
	// encoded batches").
	var n int64
	at := uint64(offset)
	for ; i < len(p.chunks) && p.chunks[i].first <= at && at < uint64(p.high); i++ {
		ch := p.chunks[i]
		n += ch.bytesFrom(at)
		at = ch.end
	}
	if at < uint64(p.high) {
		n += (int64(uint64(p.high) - at)) * max(p.msgSize, 64)
	}
	return store.Estimate{Bytes: n, Local: local}
}

// close stops the read-ahead workers (Client.Close waits for them).
func (rc *readCache) close() {
	if rc != nil {
		rc.stop()
	}
}

// writeMetrics writes the cache's metrics (zeros when it is off).
func (rc *readCache) writeMetrics(w io.Writer) {
	var limit, bytes int64
	var hits, misses, shared, evictions, readAheads, invalidations uint64
	if rc != nil {
		limit, bytes = rc.limit, rc.gauge.Load()
		hits, misses, shared = rc.hits.Load(), rc.misses.Load(), rc.shared.Load()
		evictions, readAheads, invalidations = rc.evictions.Load(), rc.readAheads.Load(), rc.invalidations.Load()
	}
	metric.Single(w, "kiggy_iggy_read_cache_limit_bytes", "gauge", "The read cache's memory bound (--iggy-read-cache-bytes; 0 = off).", limit)
	metric.Single(w, "kiggy_iggy_read_cache_bytes", "gauge", "Bytes of Iggy poll replies held by the read cache.", bytes)
	metric.Single(w, "kiggy_iggy_read_cache_hits_total", "counter", "Reads served from the read cache without a poll of their own.", hits)
	metric.Single(w, "kiggy_iggy_read_cache_misses_total", "counter", "Reads that polled Iggy themselves.", misses)
	metric.Single(w, "kiggy_iggy_read_cache_shared_waits_total", "counter", "Reads that waited for a poll already in flight for their offset instead of polling again.", shared)
	metric.Single(w, "kiggy_iggy_read_cache_evictions_total", "counter", "Cached chunks evicted to stay within the bound (least recently used first).", evictions)
	metric.Single(w, "kiggy_iggy_read_cache_readaheads_total", "counter", "Background polls of the next chunk ahead of a sequential reader.", readAheads)
	metric.Single(w, "kiggy_iggy_read_cache_invalidations_total", "counter", "Partitions dropped from the read cache (topic deleted or created, a purge seen, a reconnect).", invalidations)
	var tailLimit, tailBytes int64
	var fills, skips, unread, idle uint64
	if rc != nil {
		tailLimit, tailBytes = rc.tailLimit, rc.tailGauge.Load()
		fills, skips, unread, idle = rc.tailFills.Load(), rc.tailSkips.Load(), rc.tailUnread.Load(), rc.idleAnswers.Load()
	}
	metric.Single(w, "kiggy_iggy_tail_window_limit_bytes", "gauge", "The tail window's memory bound (--iggy-tail-window-bytes; 0 = off).", tailLimit)
	metric.Single(w, "kiggy_iggy_tail_window_bytes", "gauge", "Bytes of confirmed appends held by the tail window.", tailBytes)
	metric.Single(w, "kiggy_iggy_tail_window_fills_total", "counter", "Appends kept in the tail window for readers at the tail.", fills)
	metric.Single(w, "kiggy_iggy_tail_window_skips_total", "counter", "Appends not kept because the cache knew of other messages at or past their offsets (another writer, a purge or recreate).", skips)
	metric.Single(w, "kiggy_iggy_tail_window_unread_total", "counter", "Appends not kept because nobody had read their partition within the read cache's TTL (5 s).", unread)
	metric.Single(w, "kiggy_iggy_tail_idle_answers_total", "counter", "Reads at a high watermark known exactly (--iggy-sole-writer, or told by a poll or a tail check within 100 ms) answered without polling Iggy.", idle)
	var checks, renewals uint64
	if rc != nil {
		checks, renewals = rc.checksSent.Load(), rc.checkRenewals.Load()
	}
	metric.Single(w, "kiggy_iggy_tail_checks_total", "counter", "GetTopic requests sent to renew the exact high watermarks of a topic's partitions at once (without --iggy-sole-writer).", checks)
	metric.Single(w, "kiggy_iggy_tail_check_renewals_total", "counter", "Partitions whose exact high watermark a tail check renewed, sparing a poll.", renewals)
}
