package bridge

import (
	"context"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/producer"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/wire"
)

// Coalesced appends (backends with network round trips: Iggy).
//
// Every append to one partition goes through that partition's queue. The
// first to arrive while no append of the partition is running is the
// round's head: it takes every append queued behind it (up to maxCoalesceBytes and
// maxCoalesceCount), checks the idempotent ones against the producer window
// in arrival order, and sends what passed as one batch, so one backend round
// trip (one Iggy SendMessages, one segment-file write at the `written`
// durability) carries the appends of every connection that wrote to the
// partition meanwhile. Each append then gets its own base offset: the
// batch's base plus the records of the appends before it. When it is done
// the head hands the queue to the oldest append still waiting, which heads
// the next round with whatever queued meanwhile; so no request serves others
// for longer than one round trip.
//
// The guarantees of the uncoalesced path hold: appends of one partition are
// stored in the order they arrived, one at a time (the head holds the
// partition's producer lock across check, append and update); an idempotent
// batch is checked against the window as it stands after every batch before
// it (two batches of one producer share a round trip only when the second
// follows the first in sequence, checkInRound; any other is sent after the
// first is recorded); the appends of one round trip are
// stored all or none, so one outcome (stored at these offsets, refused, or
// unknown) is every member's.

// Coalescing bounds: one round trip carries at most this many frame bytes
// and messages. 1 MiB is Iggy's own default size_of_messages_required_to_save
// (docs/IGGY.md "Durability"), ten times iggy-bench's batch of 100 × 1 KiB.
// An append larger than the bound goes alone.
const (
	maxCoalesceBytes = 1 << 20
	maxCoalesceCount = 16 << 10
)

// appendQueue is one partition's queue of appends waiting for a round trip.
type appendQueue struct {
	mu      sync.Mutex
	waiting []*queuedAppend
	running bool // the round's head owns the partition's appends
}

// queuedAppend is one append waiting in (or taken through) a partition queue.
// Pooled: done is made once.
type queuedAppend struct {
	ctx   context.Context
	batch *message.Batch
	pb    producer.Batch
	code  wire.ErrorCode
	base  int64
	head  bool          // handed the queue: the owner heads the next round
	done  chan struct{} // one send per hand-over or result
	// pp is the partition's producers (and queue); foundIdle is set when
	// w found no round running, so it heads the next at once (queueAppend).
	pp        *partitionProducers
	foundIdle bool
	// rounds is the connection's round tokens (maxConnRounds) a head of
	// its Produce takes for its round trip; nil outside a Produce.
	rounds chan struct{}

	// The head's scratch for its round.
	group []*queuedAppend
	set   flushSet
}

// codePending marks a member of a round not yet answered.
const codePending wire.ErrorCode = math.MinInt16

var queuedAppends = sync.Pool{New: func() any { return &queuedAppend{done: make(chan struct{}, 1)} }}

// coalesceBatches holds the batches several appends are copied into.
var coalesceBatches = sync.Pool{New: func() any { return new(message.Batch) }}

// appendCoalesced appends one mapped partition entry through the partition's
// queue (see above) and returns its code and base offset.
func (g *Gateway) appendCoalesced(ctx context.Context, topic string, index int32, b *message.Batch, pb *producer.Batch) (wire.ErrorCode, int64) {
	return g.awaitAppend(topic, index, g.queueAppend(ctx, topic, index, b, pb))
}

// queueAppend puts one mapped partition entry into the partition's queue,
// where it keeps its place in the partition's order; awaitAppend, which
// must follow, sends it and returns its outcome. A Produce queues all its
// appends before awaiting any, and then lets the connection's next Produce
// start (pipeline.go).
func (g *Gateway) queueAppend(ctx context.Context, topic string, index int32, b *message.Batch, pb *producer.Batch) *queuedAppend {
	w := queuedAppends.Get().(*queuedAppend)
	w.ctx, w.batch, w.pb, w.code, w.base, w.head = ctx, b, *pb, wire.NoError, -1, false
	w.pp, w.foundIdle = g.producers.enqueue(topic, index, w)
	return w
}

// awaitAppend heads w's round when w found its partition's queue idle or is
// handed it, else waits for the round that carries it, and returns w's
// code and base offset.
func (g *Gateway) awaitAppend(topic string, index int32, w *queuedAppend) (wire.ErrorCode, int64) {
	head := w.foundIdle
	if !head {
		<-w.done
		head = w.head
		if head {
			g.metrics.roundWaits.Add(1)
		}
	}
	if head {
		if tokens := w.rounds; tokens != nil {
			// The token is taken while w holds its partition's queue, and
			// holds no session: a holder of one never waits for another
			// partition's queue or for a connection's token, so this ends.
			select {
			case tokens <- struct{}{}:
			default:
				g.metrics.connRoundWaits.Add(1)
				tokens <- struct{}{}
			}
			defer func() { <-tokens }() // a panicking round gives it back too
		}
		g.runRound(topic, index, w.pp, w)
	}
	code, base := w.code, w.base
	w.ctx, w.batch, w.pp, w.rounds = nil, nil, nil, nil
	queuedAppends.Put(w)
	return code, base
}

// maxConnRounds bounds the append round trips one connection's Produces
// have running at once, on a backend with round trips (Iggy). A producer
// whose Produce names 1,000 partitions would otherwise send up to 1,000
// rounds together, each needing one of the Log's sessions, and every other
// client's append would queue for a session behind them: measured on the
// real iggy-server, a steady producer's p99 went from 1 ms to 105-112 ms
// beside two connections producing to 1,000 partitions a request. Sixteen
// is half the default Iggy pool (docs/IGGY.md, "Sessions").
const maxConnRounds = 16

// roundTokens returns the connection's round tokens (maxConnRounds),
// making them on first use.
func (cs *connState) roundTokens() chan struct{} {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.rounds == nil {
		cs.rounds = make(chan struct{}, maxConnRounds)
	}
	return cs.rounds
}

// enqueue puts w into the queue of topic/partition, creating the
// partition's window if needed, and reports whether w heads (no round was
// running). It enqueues under s.mu, so forget, which drops only a window
// whose queue is idle, never drops one an append is about to join.
func (s *producerStates) enqueue(topic string, p int32, w *queuedAppend) (*partitionProducers, bool) {
	k := partitionKey{topic, p}
	s.mu.RLock()
	if pp := s.parts[k]; pp != nil {
		head := pp.queue.push(w)
		s.mu.RUnlock()
		return pp, head
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	pp := s.parts[k]
	if pp == nil {
		pp = newPartitionProducers(&s.stats, s.limits)
		s.parts[partitionKey{strings.Clone(topic), p}] = pp
	}
	return pp, pp.queue.push(w)
}

// push appends w and reports whether it heads.
func (q *appendQueue) push(w *queuedAppend) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting = append(q.waiting, w)
	head := !q.running
	q.running = true
	return head
}

// idle reports whether no append is queued or running.
func (q *appendQueue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.running && len(q.waiting) == 0
}

// runRound takes the queue's appends (w's first, as w is the oldest), appends
// them and hands the queue on. A panic while appending answers every member
// not yet answered UNKNOWN_SERVER_ERROR before it propagates to w's caller.
func (g *Gateway) runRound(topic string, index int32, pp *partitionProducers, w *queuedAppend) {
	q := &pp.queue
	q.mu.Lock()
	n := len(q.waiting)
	bytes, count := 0, 0
	for i, m := range q.waiting {
		bytes += m.batch.Size()
		count += m.batch.Count
		if i > 0 && (bytes > maxCoalesceBytes || count > maxCoalesceCount) {
			n = i
			break
		}
	}
	w.group = append(w.group[:0], q.waiting[:n]...)
	rest := copy(q.waiting, q.waiting[n:])
	clear(q.waiting[rest:])
	q.waiting = q.waiting[:rest]
	q.mu.Unlock()

	for _, m := range w.group {
		m.code = codePending
	}
	defer func() {
		unknown := false
		for _, m := range w.group {
			if m.code == codePending {
				// A panic: nobody may wait for ever.
				m.code = wire.UnknownServerError
			}
			unknown = unknown || m.code == wire.UnknownTopicOrPartition
		}
		for _, m := range w.group[1:] {
			m.done <- struct{}{}
		}
		clear(w.group)
		w.group = w.group[:0]
		q.mu.Lock()
		idle := len(q.waiting) == 0
		if idle {
			q.running = false
		} else {
			next := q.waiting[0]
			next.head = true
			next.done <- struct{}{}
		}
		q.mu.Unlock()
		if unknown && idle {
			// A target that turned out not to exist leaves nothing behind.
			g.producers.forget(topic, index, pp)
		}
	}()
	g.commitGroup(topic, index, pp, w.group, &w.set)
}

// commitGroup checks and appends a round's appends in order, under the
// partition's producer lock, and answers each in its code and base.
// f is the head's scratch.
func (g *Gateway) commitGroup(topic string, index int32, pp *partitionProducers, group []*queuedAppend, f *flushSet) {
	pp.Lock()
	defer pp.Unlock()
	idempotent := false
	for _, m := range group {
		idempotent = idempotent || m.pb.ID >= 0
	}
	loadCode := wire.NoError
	if idempotent {
		epoch := g.leaderEpoch(topic, index)
		if !pp.Loaded() || pp.LeaderEpoch != epoch {
			pp.LeaderEpoch = epoch
			if err := g.rebuildProducers(topic, index, pp); err != nil {
				loadCode = logCode(err)
			}
		}
	}
	for _, m := range group {
		if err := m.ctx.Err(); err != nil {
			// Its time ran out waiting: not sent, so a retry is safe.
			m.code = wire.RequestTimedOut
			continue
		}
		if m.pb.ID >= 0 {
			if loadCode != wire.NoError {
				m.code = loadCode
				continue
			}
			if !g.checkInRound(topic, index, pp, f, m) {
				continue
			}
		}
		if !f.fits(m) {
			g.flush(topic, index, pp, f)
		}
		f.add(m)
	}
	g.flush(topic, index, pp, f)
}

// checkInRound checks the idempotent append m, about to join the set f,
// against its producer's window; it reports whether m is to be sent, else
// m's code (a refusal, or a duplicate's success and original offset) is
// set.
//
// A batch of a producer that already has one in the set follows it in the
// same round trip when it is the next in sequence, in the same epoch, and
// fits: a round is stored all or none, and the window after the earlier
// batch is recorded would accept it (a batch in sequence after one the
// window accepted is no duplicate, and its producer has a state by then),
// so its check is the earlier one's. Any other batch of that producer, or
// one that does not fit, waits for the set to be recorded and is checked
// against the window as the set left it, as Kafka checks a batch after the
// one before it is appended (ProducerAppendInfo).
func (g *Gateway) checkInRound(topic string, index int32, pp *partitionProducers, f *flushSet, m *queuedAppend) bool {
	if prev := f.last(m.pb.ID); prev != nil {
		if prev.pb.Epoch == m.pb.Epoch && producer.InSequence(prev.pb.Last, m.pb.First) && f.fits(m) {
			g.metrics.producerFollows.Add(1)
			return true
		}
		g.flush(topic, index, pp, f)
	}
	if !pp.Loaded() {
		// The previous flush's outcome was unknown: read the log again.
		if err := g.rebuildProducers(topic, index, pp); err != nil {
			m.code = logCode(err)
			return false
		}
	}
	code, dup, offset := pp.Check(&m.pb)
	if dup {
		m.code, m.base = wire.NoError, offset
		return false
	}
	m.code = code
	return code == wire.NoError
}

// flushSet is the appends one round trip is about to carry.
type flushSet struct {
	members  []*queuedAppend
	batches  []*message.Batch // scratch of a joined append
	bytes    int
	count    int
	min, max uint64 // the origin timestamps spanned (µs)
}

// last returns producer id's newest batch in the set, or nil.
func (f *flushSet) last(id int64) *queuedAppend {
	for i := len(f.members) - 1; i >= 0; i-- {
		if m := f.members[i]; m.pb.ID == id {
			return m
		}
	}
	return nil
}

// fits reports whether m can join the set: the bounds, and the u32 µs
// timestamp deltas of one batch (message.MaxTimestampSpan) over the set's
// messages and m's.
func (f *flushSet) fits(m *queuedAppend) bool {
	if len(f.members) == 0 {
		return true
	}
	b := m.batch
	if f.bytes+b.Size() > maxCoalesceBytes || f.count+b.Count > maxCoalesceCount {
		return false
	}
	lo, hi := min(f.min, b.Origin), max(f.max, m.pb.LastTS)
	return hi-lo <= message.MaxTimestampSpan
}

// stamped reports whether every member's frames carry their checksums
// (message.Batch.Sums), as a joined append needs.
func (f *flushSet) stamped() bool {
	for _, m := range f.members {
		if m.batch.Sums() == nil {
			return false
		}
	}
	return true
}

// add puts m into the set (fits said it may join).
func (f *flushSet) add(m *queuedAppend) {
	last := max(m.pb.LastTS, m.batch.Origin)
	if len(f.members) == 0 {
		f.min, f.max = m.batch.Origin, last
	} else {
		f.min, f.max = min(f.min, m.batch.Origin), max(f.max, last)
	}
	f.members = append(f.members, m)
	f.bytes += m.batch.Size()
	f.count += m.batch.Count
}

// flush appends the set's batches as one, answers its members and empties
// it. Caller holds pp's lock.
func (g *Gateway) flush(topic string, index int32, pp *partitionProducers, f *flushSet) {
	if len(f.members) == 0 {
		return
	}
	b := f.members[0].batch
	var joined *message.Batch
	var code wire.ErrorCode
	var base int64
	// Any member's context will do; they are all still waiting. The
	// oldest's expires first.
	ctx := f.members[0].ctx
	if len(f.members) > 1 {
		g.metrics.coalescedAppends.Add(uint64(len(f.members) - 1))
	}
	switch ja, ok := g.store.(store.JoinedAppender); {
	case len(f.members) > 1 && ok && f.stamped():
		// Every member's frames rewritten in place onto the set's origin
		// (within its span, flushSet.fits) and numbered through the set,
		// then sent from their own buffers: no copy (docs/IGGY.md,
		// "Append (SendMessages)").
		first := 0
		f.batches = f.batches[:0]
		for _, m := range f.members {
			m.batch.Rebase(f.min, first)
			first += m.batch.Count
			f.batches = append(f.batches, m.batch)
		}
		at, err := ja.AppendJoined(ctx, topic, index, f.batches)
		code, base = g.appended(topic, index, f.count, at, err)
		clear(f.batches)
	case len(f.members) > 1:
		joined = coalesceBatches.Get().(*message.Batch)
		joined.Checksums = !g.caps.NoFrameChecksums
		joined.Reset(f.min)
		for _, m := range f.members {
			// Within the span of the set (flushSet.fits), so every
			// member's origin is ≥ f.min.
			joined.Join(m.batch)
		}
		b = joined
		code, base = g.appendPartition(ctx, topic, index, b)
	default:
		code, base = g.appendPartition(ctx, topic, index, b)
	}
	g.metrics.appendTrips.Add(1)
	if joined != nil {
		if cap(joined.Buf) <= maxRetainedBatch {
			coalesceBatches.Put(joined)
		}
	}
	now := time.Now().UnixMilli()
	off := base
	for _, m := range f.members {
		m.code, m.base = code, -1
		if code == wire.NoError && base >= 0 {
			m.base = off
			off += int64(m.batch.Count)
		}
		if m.pb.ID < 0 {
			continue
		}
		switch {
		case code == wire.RequestTimedOut:
			// Stored or not: only the log knows. Read it back next time.
			pp.uncertain()
		case code == wire.NoError:
			pp.RecordBatch(&m.pb, m.base, now)
			if base < 0 {
				// Confirmed without an offset: the log has it for a duplicate.
				pp.Reset()
			}
		}
	}
	clear(f.members)
	f.members = f.members[:0]
	f.bytes, f.count = 0, 0
}
