// Package producer holds the state of idempotent producers
// (docs/MAPPING.md "Producer stamp", docs/LIMITS.md): per partition, a
// window of each producer's last batches for duplicate and sequence checks,
// and the producer ids and epochs InitProducerId hands out (ids.go).
//
// For every partition the gateway keeps, per producer id, the epoch and the
// last retainedBatches batches appended (first and last sequence, first
// offset), as Kafka's ProducerStateManager does (ProducerStateEntry
// NUM_BATCHES_TO_RETAIN = 5). An idempotent batch is checked against that
// window and appended under the window's lock, so the check-then-append is
// atomic per partition whatever connection the batch arrives on; the
// gateway holds the lock across Check, its append and Record.
//
// The window is not persisted on its own: every idempotent batch carries a
// mapping.Producer stamp on its first stored message, and the gateway
// rebuilds a window from the partition's log tail before its first
// idempotent append after start (Reset, Record, MarkLoaded). A write whose
// outcome is unknown (a timeout after sending) resets the window, so the
// next append rebuilds it from what the log really holds.
package producer

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kiggy-io/kiggy/wire"
)

// retainedBatches is how many batches per producer and partition are kept
// for duplicate detection (Kafka ProducerStateEntry.NUM_BATCHES_TO_RETAIN).
const retainedBatches = 5

// Batch is what duplicate detection needs to know of an incoming
// idempotent batch.
type Batch struct {
	ID    int64 // the producer id; -1 for a batch that is not idempotent
	Epoch int16
	First int32 // baseSequence
	Last  int32 // baseSequence + lastOffsetDelta, wrapping past MaxInt32 (LastSequence)
	// LastTS is the mapped batch's largest message origin timestamp (µs),
	// set for every batch, idempotent or not: the gateway's coalescing
	// keeps a round within one batch's timestamp span.
	LastTS uint64
	// Transactional: the batch is part of a Kafka transaction; its
	// coordinator admits it (bridge/txn, Coordinator.CheckProduce).
	Transactional bool
	// PrincipalType and PrincipalName are who sent the batch, for the
	// per-principal cap (Limits); views that may alias a request frame.
	PrincipalType, PrincipalName string
}

// LastSequence is Kafka's DefaultRecordBatch.incrementSequence(base, delta).
func LastSequence(base, delta int32) int32 {
	if int64(base) > int64(math.MaxInt32)-int64(delta) {
		return int32(int64(delta) - (int64(math.MaxInt32) - int64(base)) - 1)
	}
	return base + delta
}

// InSequence is ProducerAppendInfo.inSequence: next follows last, wrapping
// from MaxInt32 to 0.
func InSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || next == 0 && last == math.MaxInt32
}

// batchMeta is one remembered batch.
type batchMeta struct {
	first, last int32
	offset      int64 // offset of its first record; -1 when not confirmed
}

// entry is one producer's state in one partition: a fixed-size ring, so
// memory per producer is bounded.
type entry struct {
	epoch   int16
	n       uint8 // batches held
	head    uint8 // index of the oldest
	batches [retainedBatches]batchMeta
	lastMs  int64  // gateway clock (Unix ms) of the last append, for expiry
	owner   *owner // the principal it is counted against; nil when none
}

// duplicate returns the remembered batch with exactly b's sequence range in
// b's epoch (ProducerStateEntry.findDuplicateBatch).
func (e *entry) duplicate(b *Batch) (batchMeta, bool) {
	if e.epoch != b.Epoch {
		return batchMeta{}, false
	}
	for i := range int(e.n) {
		m := e.batches[(int(e.head)+i)%retainedBatches]
		if m.first == b.First && m.last == b.Last {
			return m, true
		}
	}
	return batchMeta{}, false
}

// lastSeq is the last sequence of the newest batch; ok=false when none.
func (e *entry) lastSeq() (int32, bool) {
	if e.n == 0 {
		return 0, false
	}
	return e.batches[(int(e.head)+int(e.n)-1)%retainedBatches].last, true
}

// add records an appended batch; a new epoch clears the batches
// (ProducerStateEntry.addBatch, maybeUpdateProducerEpoch).
func (e *entry) add(epoch int16, b batchMeta, nowMs int64) {
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

// check validates b against the producer's state (nil: none), as
// ProducerAppendInfo.checkProducerEpoch and checkSequence do for an append
// from a client.
func check(e *entry, b *Batch) wire.ErrorCode {
	if e == nil {
		// No state (a new producer, or its batches expired or fell out of
		// the scanned tail): Kafka accepts any sequence.
		return wire.NoError
	}
	if b.Epoch < e.epoch {
		// Kafka ≥ 2.7 answers INVALID_PRODUCER_EPOCH to Produce, never
		// PRODUCER_FENCED (ProducerAppendInfo.checkProducerEpoch).
		return wire.InvalidProducerEpoch
	}
	if b.Epoch != e.epoch {
		// "Invalid sequence number for new epoch": a bumped epoch starts at 0.
		if b.First != 0 {
			return wire.OutOfOrderSequenceNumber
		}
		return wire.NoError
	}
	if last, ok := e.lastSeq(); ok && !InSequence(last, b.First) {
		return wire.OutOfOrderSequenceNumber
	}
	return wire.NoError
}

// Stats counts over every window of a gateway; its fields are the
// kiggy_idempotent_* metrics.
type Stats struct {
	Producers  atomic.Int64 // entries (producer id and partition) held
	Duplicates atomic.Uint64
	Expired    atomic.Uint64
	Rebuilds   atomic.Uint64
}

// Window is one partition's producer window. Its lock is held across Check,
// the append and Record, and while the window is rebuilt; every method but
// Lock, Unlock and TryLock needs it held. Init before use.
type Window struct {
	mu      sync.Mutex
	loaded  bool
	dropped bool // its topic was deleted: nothing is recorded any more
	// LeaderEpoch is the partition's leader epoch when the window was
	// loaded (-1 without placement): a partition that moved away and came
	// back is rebuilt, as another instance appended meanwhile
	// (docs/design/cluster.md §5).
	LeaderEpoch int32
	producers   map[int64]*entry
	stats       *Stats
	limits      *Limits
}

// Init makes w an empty window (not loaded) counted in stats, whose new
// producer states limits admits (nil: any).
func (w *Window) Init(stats *Stats, limits *Limits) {
	w.producers = make(map[int64]*entry)
	w.stats = stats
	w.limits = limits
}

// Lock locks the window.
func (w *Window) Lock() { w.mu.Lock() }

// Unlock unlocks the window.
func (w *Window) Unlock() { w.mu.Unlock() }

// TryLock locks the window if it is free and reports whether it did.
func (w *Window) TryLock() bool { return w.mu.TryLock() }

// Loaded reports whether the window was rebuilt from the log since it was
// made or last reset.
func (w *Window) Loaded() bool { return w.loaded }

// MarkLoaded notes that the window was rebuilt from the log tail.
func (w *Window) MarkLoaded() {
	w.loaded = true
	w.stats.Rebuilds.Add(1)
}

// Idle reports whether the window holds nothing and was never loaded.
func (w *Window) Idle() bool { return !w.loaded && len(w.producers) == 0 }

// Check looks b up in the window. A duplicate of one of the producer's
// remembered batches is reported with that batch's offset (and counted);
// otherwise the code says whether b may be appended: NoError, an old epoch
// or a sequence gap, or, for a producer without a state here, a refusal of
// the window's Limits (an id never issued, a cap reached).
func (w *Window) Check(b *Batch) (code wire.ErrorCode, duplicate bool, offset int64) {
	e := w.producers[b.ID]
	if e == nil {
		return w.limits.admit(b, w.stats.Producers.Load()), false, -1
	}
	if d, ok := e.duplicate(b); ok {
		// UnifiedLog.analyzeAndValidateProducerState: a duplicate of
		// one of the last five batches is answered with its original
		// offsets.
		w.stats.Duplicates.Add(1)
		return wire.NoError, true, d.offset
	}
	return check(e, b), false, -1
}

// Reset empties the window so the next append rebuilds it.
func (w *Window) Reset() {
	w.stats.Producers.Add(-int64(len(w.producers)))
	for _, e := range w.producers {
		e.release()
	}
	clear(w.producers)
	w.loaded = false
}

// Drop empties the window of a deleted topic for good: an append in flight
// on it finishes without recording.
func (w *Window) Drop() {
	w.Reset()
	w.dropped = true
}

// Record adds an appended batch of producer id at epoch: its sequences
// first..last and the offset of its first record (-1 when not known), at
// nowMs (Unix ms, for expiry).
// A state it creates is counted against no principal: Record rebuilds a
// window from the log.
func (w *Window) Record(id int64, epoch int16, first, last int32, offset, nowMs int64) {
	w.record(id, epoch, first, last, offset, nowMs, nil)
}

// RecordBatch adds b, appended from a client at offset, at nowMs; a state
// it creates is counted against b's principal (Limits.PerPrincipal).
func (w *Window) RecordBatch(b *Batch, offset, nowMs int64) {
	if w.dropped {
		return
	}
	var o *owner
	if w.producers[b.ID] == nil {
		o = w.limits.owned(b)
	}
	w.record(b.ID, b.Epoch, b.First, b.Last, offset, nowMs, o)
}

func (w *Window) record(id int64, epoch int16, first, last int32, offset, nowMs int64, o *owner) {
	if w.dropped {
		return
	}
	e := w.producers[id]
	if e == nil {
		e = &entry{epoch: epoch, owner: o}
		if o != nil {
			o.states.Add(1)
		}
		w.producers[id] = e
		w.stats.Producers.Add(1)
	}
	e.add(epoch, batchMeta{first: first, last: last, offset: offset}, nowMs)
}

// release uncounts e from its principal.
func (e *entry) release() {
	if e.owner != nil {
		e.owner.states.Add(-1)
		e.owner = nil
	}
}

// Expire drops the producers whose last append was before limitMs (Kafka
// producer.id.expiration.ms; ProducerStateManager.removeExpiredProducers).
func (w *Window) Expire(limitMs int64) {
	for id, e := range w.producers {
		if e.lastMs < limitMs {
			e.release()
			delete(w.producers, id)
			w.stats.Producers.Add(-1)
			w.stats.Expired.Add(1)
		}
	}
}

// Active lists the window's producers by producer id, as DescribeProducers
// answers them (no transactions: CoordinatorEpoch and
// CurrentTxnStartOffset are -1).
func (w *Window) Active() []wire.DescribeProducersActiveProducer {
	out := make([]wire.DescribeProducersActiveProducer, 0, len(w.producers))
	for id, e := range w.producers {
		last, ok := e.lastSeq()
		if !ok {
			last = -1
		}
		out = append(out, wire.DescribeProducersActiveProducer{
			ProducerID: id, ProducerEpoch: int32(e.epoch), LastSequence: last, LastTimestamp: e.lastMs,
			CoordinatorEpoch: -1, CurrentTxnStartOffset: -1,
		})
	}
	slices.SortFunc(out, func(a, b wire.DescribeProducersActiveProducer) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	return out
}
