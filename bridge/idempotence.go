package bridge

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/producer"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/wire"
)

// Idempotent producers: the windows and the producer ids are
// bridge/producer; the gateway keeps the registry of partitions, each with
// its window and its append queue (coalesce.go), and appends and rebuilds
// windows through the Log. On the embedded log non-idempotent batches
// (producer id -1) never take a window's lock. On a backend with network
// round trips every append of a partition goes through the partition's
// queue and is appended by a round's leader under the window's lock,
// coalesced with the others (coalesce.go).

// partitionProducers is one partition's producer window and append queue.
// The window's lock is held across check, append and update, and while the
// window is rebuilt.
type partitionProducers struct {
	// queue coalesces the partition's appends (coalesce.go); a round's
	// leader takes the window's lock.
	queue appendQueue
	// unsettled: an append's outcome was unknown since the window was
	// last rebuilt, so the rebuild settles the partition first (under the
	// window's lock; rebuildProducers).
	unsettled bool
	producer.Window
}

// uncertain empties pp after an append whose outcome was unknown (caller
// holds pp's lock): only the log knows whether it was stored, and the
// rebuild that reads it back settles the partition first.
func (pp *partitionProducers) uncertain() {
	pp.Reset()
	pp.unsettled = true
}

// newPartitionProducers returns an empty window (not loaded) counted in stats.
func newPartitionProducers(stats *producer.Stats, limits *producer.Limits) *partitionProducers {
	pp := new(partitionProducers)
	pp.Init(stats, limits)
	return pp
}

// producerStates is the gateway's registry of partition windows. Lock
// order: mu, then a partition's window lock.
type producerStates struct {
	mu     sync.RWMutex
	parts  map[partitionKey]*partitionProducers
	stats  producer.Stats
	limits *producer.Limits
}

func (s *producerStates) init(limits *producer.Limits) {
	s.parts = make(map[partitionKey]*partitionProducers)
	s.limits = limits
}

// DefaultMaxProducerStates and DefaultMaxProducerStatesPerPrincipal are
// Config.MaxProducerStates and MaxProducerStatesPerPrincipal when 0: at
// about 350 bytes a state, 350 MB and 35 MB.
const (
	DefaultMaxProducerStates             = 1_000_000
	DefaultMaxProducerStatesPerPrincipal = 100_000
)

// producerLimits is what admits a new producer state (producer.Limits)
// under g's configuration.
func (g *Gateway) producerLimits() *producer.Limits {
	l := &producer.Limits{
		Max:          max(g.cfg.MaxProducerStates, 0),
		PerPrincipal: max(g.cfg.MaxProducerStatesPerPrincipal, 0),
		Now:          func() int64 { return time.Now().UnixMilli() },
	}
	if g.cfg.RefuseUnissuedProducerIDs {
		l.IDs = &g.producerIDs
	}
	return l
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
		pp = newPartitionProducers(&s.stats, s.limits)
		s.parts[partitionKey{strings.Clone(topic), p}] = pp
	}
	return pp
}

// forget drops the window of topic/partition if it is still pp and was
// never loaded (a target that turned out not to exist leaves nothing
// behind). The caller must not hold pp's lock: the lock order is s.mu, then
// a partition's window.
func (s *producerStates) forget(topic string, p int32, pp *partitionProducers) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parts[partitionKey{topic, p}] != pp {
		return
	}
	pp.Lock()
	idle := pp.Idle()
	pp.Unlock()
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
		pp.Lock()
		pp.Drop()
		pp.Unlock()
	}
}

// expire drops producers idle for longer than ttl from every window (Kafka
// producer.id.expiration.ms; ProducerStateManager.removeExpiredProducers).
func (s *producerStates) expire(nowMs int64, ttl time.Duration) {
	limit := nowMs - ttl.Milliseconds()
	s.mu.RLock()
	for _, pp := range s.parts {
		// A partition busy appending (an Iggy round trip may take the
		// produce timeout) is expired on a later sweep: never stall the
		// janitor behind it.
		if !pp.TryLock() {
			continue
		}
		pp.Expire(limit)
		pp.Unlock()
	}
	s.mu.RUnlock()
}

// appendIdempotent appends one mapped idempotent batch: under the
// partition's producer lock it rebuilds the window if needed, answers a
// duplicate of a remembered batch with its original base offset (storing
// nothing), refuses an old epoch or a sequence gap, and otherwise appends
// and remembers the batch.
func (g *Gateway) appendIdempotent(ctx context.Context, topic string, index int32, b *message.Batch, pb *producer.Batch) (wire.ErrorCode, int64) {
	ps := &g.producers
	pp := ps.partition(topic, index)
	pp.Lock()
	epoch := g.leaderEpoch(topic, index)
	if !pp.Loaded() || pp.LeaderEpoch != epoch {
		pp.LeaderEpoch = epoch
		if err := g.rebuildProducers(topic, index, pp); err != nil {
			pp.Unlock()
			if errors.Is(err, store.ErrUnknownTopic) || errors.Is(err, store.ErrUnknownPartition) {
				ps.forget(topic, index, pp)
			}
			return logCode(err), -1
		}
		if ctx.Err() != nil {
			// The request's time ran out during the scan: answer without
			// sending, so the rebuilt window stays valid for the retry.
			pp.Unlock()
			return wire.RequestTimedOut, -1
		}
	}
	defer pp.Unlock()
	if code, dup, offset := pp.Check(pb); dup {
		return wire.NoError, offset
	} else if code != wire.NoError {
		return code, -1
	}
	code, base := g.appendPartition(ctx, topic, index, b)
	switch {
	case code == wire.RequestTimedOut:
		// Stored or not: only the log knows. Read it back next time.
		pp.uncertain()
	case code == wire.NoError:
		pp.RecordBatch(pb, base, time.Now().UnixMilli())
		if base < 0 {
			// Confirmed without an offset: the log has it for a duplicate.
			pp.Reset()
		}
	}
	return code, base
}

// rebuildProducers fills pp from the producer stamps in the partition's last
// ProducerStateScan messages (caller holds pp's lock). It runs under its own
// deadline (ProduceTimeoutCap), not the request's: a scan slower than a
// client's request timeout must still finish once, or every retry would
// start it again and time out alike.
//
// After an append whose outcome was unknown (pp.unsettled) it first
// settles the partition where the Log can (store.Settler): on Iggy that
// write may still be committed after a read that looks for it — by a new
// primary after a failover — and a retry of a batch the scan missed would
// be stored twice (docs/LIMITS.md, "Delivery guarantees"). A partition
// that cannot be settled now fails the rebuild (ErrUnavailable: the
// producer retries), and stays unsettled.
func (g *Gateway) rebuildProducers(topic string, index int32, pp *partitionProducers) error {
	ctx, cancel := context.WithTimeout(g.ctx, g.cfg.ProduceTimeoutCap)
	defer cancel()
	pp.Reset()
	start := time.Now()
	if s, ok := g.store.(store.Settler); ok && pp.unsettled {
		if err := s.Settle(ctx, topic, index); err != nil {
			g.metrics.producerSettleFailures.Add(1)
			return err
		}
		g.metrics.producerSettles.Add(1)
	}
	wm, err := g.store.Watermarks(ctx, topic, index)
	if err != nil {
		return err
	}
	from := max(wm.LogStart, wm.High-int64(g.cfg.ProducerStateScan))
	next, high := from, wm.High
	stamps := 0
	for next < high {
		progressed := false
		_, err := g.store.Read(ctx, topic, index, next, 8<<20, func(m *message.Message) bool {
			if m.Offset >= high {
				return false
			}
			if st, ok := mapping.FindProducer(m.Headers); ok {
				stamps++
				pp.Record(st.ID, st.Epoch, st.BaseSequence, producer.LastSequence(st.BaseSequence, st.Count-1),
					m.Offset, int64(m.Timestamp/1000))
			}
			next, progressed = m.Offset+1, true
			return true
		})
		if err != nil {
			pp.Reset()
			return err
		}
		if !progressed {
			break // trimmed or expired under us
		}
	}
	pp.MarkLoaded()
	pp.unsettled = false
	g.cfg.Logger.Debug("idempotence: producer states rebuilt from the tail", "topic", topic, "partition", index,
		"from", from, "high", high, "stamps", stamps, "took", time.Since(start))
	return nil
}
