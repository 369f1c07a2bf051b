package bridge

import (
	"math"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/wire"
)

// TestProducerExpiry: a producer idle past the expiration is dropped (and
// counted); one that appended since is kept; InitProducerId grants expire
// alike.
func TestProducerExpiry(t *testing.T) {
	var ps producerStates
	ps.init()
	pp := ps.partition("t", 0)
	ps.record(pp, 1, 0, batchMeta{first: 0, last: 0}, 1_000)
	ps.record(pp, 2, 0, batchMeta{first: 0, last: 0}, 1_000)
	ps.record(pp, 2, 0, batchMeta{first: 1, last: 1}, 50_000)
	ps.epochs[7] = epochGrant{ms: 1_000}
	ps.epochs[8] = epochGrant{ms: 50_000}
	ps.expire(61_001, time.Minute)
	if _, ok := pp.producers[1]; ok || len(pp.producers) != 1 || ps.producers.Load() != 1 || ps.expired.Load() != 1 {
		t.Fatalf("after expiry: %v producers (gauge %d, expired %d)", len(pp.producers), ps.producers.Load(), ps.expired.Load())
	}
	if _, ok := ps.epochs[7]; ok || len(ps.epochs) != 1 {
		t.Fatalf("grants after expiry: %v", ps.epochs)
	}
	ps.dropTopic("t")
	if ps.producers.Load() != 0 || len(ps.parts) != 0 {
		t.Fatalf("after dropTopic: gauge %d, %d partitions", ps.producers.Load(), len(ps.parts))
	}
}

// TestProducerWindow: the ring keeps exactly the last five batches; a new
// epoch clears it; sequences wrap.
func TestProducerWindow(t *testing.T) {
	var e producerEntry
	for k := range int32(7) {
		e.add(0, batchMeta{first: 10 * k, last: 10*k + 9, offset: int64(k)}, 0)
	}
	for k := range int32(7) {
		d, ok := e.duplicate(&producerBatch{epoch: 0, first: 10 * k, last: 10*k + 9})
		if ok != (k >= 2) || ok && d.offset != int64(k) {
			t.Fatalf("batch %d: duplicate %v at %d", k, ok, d.offset)
		}
	}
	if last, _ := e.lastSeq(); last != 69 {
		t.Fatalf("last sequence %d", last)
	}
	if code := check(&e, &producerBatch{epoch: 0, first: 71}); code != wire.OutOfOrderSequenceNumber {
		t.Fatalf("gap: %v", code)
	}
	e.add(1, batchMeta{first: 0, last: 0}, 0)
	if e.n != 1 {
		t.Fatalf("new epoch kept %d batches", e.n)
	}
	if got := lastSequence(math.MaxInt32-1, 3); got != 1 {
		t.Fatalf("lastSequence wraps to %d, want 1", got)
	}
	if !inSequence(math.MaxInt32, 0) || inSequence(math.MaxInt32, 1) {
		t.Fatal("inSequence does not wrap")
	}
}
