package bridge

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/wire"
)

// Idempotent producers (docs/MAPPING.md "Producer stamp", docs/LIMITS.md).
//
// For every partition the gateway keeps, per producer id, the epoch and the
// last retainedBatches batches appended (first and last sequence, first
// offset), as Kafka's ProducerStateManager does (ProducerStateEntry
// NUM_BATCHES_TO_RETAIN = 5). An idempotent batch is checked against that
// window and appended under the partition's producer lock, so the
// check-then-append is atomic per partition whatever connection the batch
// arrives on; on the embedded log non-idempotent batches (producer id -1)
// never take the lock. On a backend with network round trips every append
// of a partition goes through the partition's queue and is appended by a
// round's leader under the lock, coalesced with the others (coalesce.go).
//
// The window is not persisted on its own: every idempotent batch carries a
// mapping.Producer stamp on its first stored message, and the first
// idempotent append to a partition after start rebuilds the window from the
// partition's last ProducerStateScan messages. A write whose outcome is
// unknown (a timeout after sending) forgets the window, so the next append
// rebuilds it from what the log really holds.

// retainedBatches is how many batches per producer and partition are kept
// for duplicate detection (Kafka ProducerStateEntry.NUM_BATCHES_TO_RETAIN).
const retainedBatches = 5

// producerBatch is what duplicate detection needs to know of an incoming
// idempotent batch.
type producerBatch struct {
	id    int64
	epoch int16
	first int32 // baseSequence
	last  int32 // baseSequence + lastOffsetDelta, wrapping past MaxInt32
	// lastTS is the mapped batch's largest message origin timestamp (µs),
	// set for every batch, idempotent or not: coalescing keeps a round
	// within one batch's timestamp span (coalesce.go).
	lastTS uint64
}

// lastSequence is Kafka's DefaultRecordBatch.incrementSequence(base, delta).
func lastSequence(base, delta int32) int32 {
	if int64(base) > int64(math.MaxInt32)-int64(delta) {
		return int32(int64(delta) - (int64(math.MaxInt32) - int64(base)) - 1)
	}
	return base + delta
}

// inSequence is ProducerAppendInfo.inSequence: next follows last, wrapping
// from MaxInt32 to 0.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || next == 0 && last == math.MaxInt32
}

// batchMeta is one remembered batch.
type batchMeta struct {
	first, last int32
	offset      int64 // offset of its first record; -1 when not confirmed
}

// producerEntry is one producer's state in one partition: a fixed-size
// ring, so memory per producer is bounded.
type producerEntry struct {
	epoch   int16
	n       uint8 // batches held
	head    uint8 // index of the oldest
	batches [retainedBatches]batchMeta
	lastMs  int64 // gateway clock (Unix ms) of the last append, for expiry
}

// duplicate returns the remembered batch with exactly pb's sequence range in
// pb's epoch (ProducerStateEntry.findDuplicateBatch).
func (e *producerEntry) duplicate(pb *producerBatch) (batchMeta, bool) {
	if e.epoch != pb.epoch {
		return batchMeta{}, false
	}
	for i := range int(e.n) {
		b := e.batches[(int(e.head)+i)%retainedBatches]
		if b.first == pb.first && b.last == pb.last {
			return b, true
		}
	}
	return batchMeta{}, false
}

// lastSeq is the last sequence of the newest batch; ok=false when none.
func (e *producerEntry) lastSeq() (int32, bool) {
	if e.n == 0 {
		return 0, false
	}
	return e.batches[(int(e.head)+int(e.n)-1)%retainedBatches].last, true
}

// add records an appended batch; a new epoch clears the batches
// (ProducerStateEntry.addBatch, maybeUpdateProducerEpoch).
func (e *producerEntry) add(epoch int16, b batchMeta, nowMs int64) {
	if e.epoch != epoch {
		e.epoch, e.n, e.head = epoch, 0, 0
	}
	if e.n == retainedBatches {
		e.batches[e.head] = b
		e.head = (e.head + 1) % retainedBatches
	} else {
		e.batches[(int(e.head)+int(e.n))%retainedBatches] = b
		e.n++
	}
	e.lastMs = nowMs
}

// check validates pb against the producer's state (nil: none), as
// ProducerAppendInfo.checkProducerEpoch and checkSequence do for an append
// from a client.
func check(e *producerEntry, pb *producerBatch) wire.ErrorCode {
	if e == nil {
		// No state (a new producer, or its batches expired or fell out of
		// the scanned tail): Kafka accepts any sequence.
		return wire.NoError
	}
	if pb.epoch < e.epoch {
		// Kafka ≥ 2.7 answers INVALID_PRODUCER_EPOCH to Produce, never
		// PRODUCER_FENCED (ProducerAppendInfo.checkProducerEpoch).
		return wire.InvalidProducerEpoch
	}
	if pb.epoch != e.epoch {
		// "Invalid sequence number for new epoch": a bumped epoch starts at 0.
		if pb.first != 0 {
			return wire.OutOfOrderSequenceNumber
		}
		return wire.NoError
	}
	if last, ok := e.lastSeq(); ok && !inSequence(last, pb.first) {
		return wire.OutOfOrderSequenceNumber
	}
	return wire.NoError
}

// partitionProducers is one partition's producer window. mu is held across
// check, append and update, and while the window is rebuilt.
type partitionProducers struct {
	// queue coalesces the partition's appends (coalesce.go); a round's
	// leader takes mu.
	queue   appendQueue
	mu      sync.Mutex
	loaded  bool
	dropped bool // its topic was deleted: nothing is recorded any more
	// leaderEpoch is the partition's leader epoch when the window was
	// loaded (Config.Placement; -1 without): a partition that moved away
	// and came back is rebuilt, as another instance appended meanwhile
	// (docs/design/cluster.md §5).
	leaderEpoch int32
	producers   map[int64]*producerEntry
}

// producerStates is the gateway's registry of partition windows. Lock
// order: mu, then a partition's mu; epochMu is never held with either.
type producerStates struct {
	mu    sync.RWMutex
	parts map[partitionKey]*partitionProducers

	// epochs are the epochs InitProducerId handed out, by producer id, so
	// a KIP-360 bump continues from the right epoch (see initProducerID).
	epochMu sync.Mutex
	epochs  map[int64]epochGrant

	producers  atomic.Int64 // entries over all partitions
	duplicates atomic.Uint64
	expired    atomic.Uint64
	rebuilds   atomic.Uint64
}

// epochGrant is an epoch InitProducerId returned, when, and whether it was
// a bump.
type epochGrant struct {
	epoch  int16
	bumped bool
	ms     int64
}

func (s *producerStates) init() {
	s.parts = make(map[partitionKey]*partitionProducers)
	s.epochs = make(map[int64]epochGrant)
}

// partition returns the window of topic/partition, creating it empty (not
// loaded). The lookup does not allocate; creation copies the topic name,
// which may alias a request frame.
func (s *producerStates) partition(topic string, p int32) *partitionProducers {
	k := partitionKey{topic, p}
	s.mu.RLock()
	pp := s.parts[k]
	s.mu.RUnlock()
	if pp != nil {
		return pp
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pp = s.parts[k]; pp == nil {
		pp = &partitionProducers{producers: make(map[int64]*producerEntry)}
		s.parts[partitionKey{strings.Clone(topic), p}] = pp
	}
	return pp
}

// forget drops the window of topic/partition if it is still pp and was
// never loaded (a target that turned out not to exist leaves nothing
// behind). The caller must not hold pp.mu: the lock order is s.mu, then a
// partition's mu.
func (s *producerStates) forget(topic string, p int32, pp *partitionProducers) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parts[partitionKey{topic, p}] != pp {
		return
	}
	pp.mu.Lock()
	idle := !pp.loaded && len(pp.producers) == 0
	pp.mu.Unlock()
	if idle && pp.queue.idle() {
		delete(s.parts, partitionKey{topic, p})
	}
}

// dropTopic forgets every window of a deleted topic.
func (s *producerStates) dropTopic(topic string) {
	var dropped []*partitionProducers
	s.mu.Lock()
	for k, pp := range s.parts {
		if k.topic == topic {
			dropped = append(dropped, pp)
			delete(s.parts, k)
		}
	}
	s.mu.Unlock()
	// An append in flight on a dropped window finishes without recording;
	// nobody finds the window again.
	for _, pp := range dropped {
		pp.mu.Lock()
		s.reset(pp)
		pp.dropped = true
		pp.mu.Unlock()
	}
}

// reset empties a window (caller holds pp.mu) so the next append rebuilds it.
func (s *producerStates) reset(pp *partitionProducers) {
	s.producers.Add(-int64(len(pp.producers)))
	clear(pp.producers)
	pp.loaded = false
}

// record adds an appended batch to pp (caller holds pp.mu).
func (s *producerStates) record(pp *partitionProducers, id int64, epoch int16, b batchMeta, nowMs int64) {
	if pp.dropped {
		return
	}
	e := pp.producers[id]
	if e == nil {
		e = &producerEntry{epoch: epoch}
		pp.producers[id] = e
		s.producers.Add(1)
	}
	e.add(epoch, b, nowMs)
}

// expire drops producers idle for longer than ttl (Kafka
// producer.id.expiration.ms; ProducerStateManager.removeExpiredProducers)
// and forgets InitProducerId grants as old.
func (s *producerStates) expire(nowMs int64, ttl time.Duration) {
	limit := nowMs - ttl.Milliseconds()
	s.mu.RLock()
	for _, pp := range s.parts {
		// A partition busy appending (an Iggy round trip may take the
		// produce timeout) is expired on a later sweep: never stall the
		// janitor behind it.
		if !pp.mu.TryLock() {
			continue
		}
		for id, e := range pp.producers {
			if e.lastMs < limit {
				delete(pp.producers, id)
				s.producers.Add(-1)
				s.expired.Add(1)
			}
		}
		pp.mu.Unlock()
	}
	s.mu.RUnlock()
	s.epochMu.Lock()
	for id, g := range s.epochs {
		if g.ms < limit {
			delete(s.epochs, id)
		}
	}
	s.epochMu.Unlock()
}

// appendIdempotent appends one mapped idempotent batch: under the
// partition's producer lock it rebuilds the window if needed, answers a
// duplicate of a remembered batch with its original base offset (storing
// nothing), refuses an old epoch or a sequence gap, and otherwise appends
// and remembers the batch.
func (g *Gateway) appendIdempotent(ctx context.Context, topic string, index int32, b *message.Batch, pb *producerBatch) (wire.ErrorCode, int64) {
	ps := &g.producers
	pp := ps.partition(topic, index)
	pp.mu.Lock()
	epoch := g.leaderEpoch(topic, index)
	if !pp.loaded || pp.leaderEpoch != epoch {
		pp.leaderEpoch = epoch
		if err := g.rebuildProducers(topic, index, pp); err != nil {
			pp.mu.Unlock()
			if errors.Is(err, store.ErrUnknownTopic) || errors.Is(err, store.ErrUnknownPartition) {
				ps.forget(topic, index, pp)
			}
			return logCode(err), -1
		}
		if ctx.Err() != nil {
			// The request's time ran out during the scan: answer without
			// sending, so the rebuilt window stays valid for the retry.
			pp.mu.Unlock()
			return wire.RequestTimedOut, -1
		}
	}
	defer pp.mu.Unlock()
	e := pp.producers[pb.id]
	if e != nil {
		if d, ok := e.duplicate(pb); ok {
			// UnifiedLog.analyzeAndValidateProducerState: a duplicate of one
			// of the last five batches is answered with its original offsets.
			ps.duplicates.Add(1)
			return wire.NoError, d.offset
		}
	}
	if code := check(e, pb); code != wire.NoError {
		return code, -1
	}
	code, base := g.appendPartition(ctx, topic, index, b)
	switch {
	case code == wire.RequestTimedOut:
		// Stored or not: only the log knows. Read it back next time.
		ps.reset(pp)
	case code == wire.NoError:
		ps.record(pp, pb.id, pb.epoch, batchMeta{first: pb.first, last: pb.last, offset: base}, time.Now().UnixMilli())
		if base < 0 {
			// Confirmed without an offset: the log has it for a duplicate.
			ps.reset(pp)
		}
	}
	return code, base
}

// rebuildProducers fills pp from the producer stamps in the partition's last
// ProducerStateScan messages (caller holds pp.mu). It runs under its own
// deadline (ProduceTimeoutCap), not the request's: a scan slower than a
// client's request timeout must still finish once, or every retry would
// start it again and time out alike.
func (g *Gateway) rebuildProducers(topic string, index int32, pp *partitionProducers) error {
	ctx, cancel := context.WithTimeout(g.ctx, g.cfg.ProduceTimeoutCap)
	defer cancel()
	ps := &g.producers
	ps.reset(pp)
	wm, err := g.store.Watermarks(ctx, topic, index)
	if err != nil {
		return err
	}
	next := max(wm.LogStart, wm.High-int64(g.cfg.ProducerStateScan))
	high := wm.High
	for next < high {
		progressed := false
		_, err := g.store.Read(ctx, topic, index, next, 8<<20, func(m *message.Message) bool {
			if m.Offset >= high {
				return false
			}
			if st, ok := mapping.FindProducer(m.Headers); ok {
				ps.record(pp, st.ID, st.Epoch, batchMeta{
					first:  st.BaseSequence,
					last:   lastSequence(st.BaseSequence, st.Count-1),
					offset: m.Offset,
				}, int64(m.Timestamp/1000))
			}
			next, progressed = m.Offset+1, true
			return true
		})
		if err != nil {
			ps.reset(pp)
			return err
		}
		if !progressed {
			break // trimmed or expired under us
		}
	}
	pp.loaded = true
	ps.rebuilds.Add(1)
	return nil
}
