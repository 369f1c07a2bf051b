package producer

import (
	"math"
	"testing"

	"github.com/kiggy-io/kiggy/wire"
)

// TestProducerExpiry: a producer idle past the expiration is dropped (and
// counted); one that appended since is kept; InitProducerId grants expire
// alike; a dropped window records nothing.
func TestProducerExpiry(t *testing.T) {
	var stats Stats
	var w Window
	w.Init(&stats, nil)
	w.Record(1, 0, 0, 0, -1, 1_000)
	w.Record(2, 0, 0, 0, -1, 1_000)
	w.Record(2, 0, 1, 1, -1, 50_000)
	var ids IDs
	ids.Init(0)
	ids.epochs[7] = epochGrant{ms: 1_000}
	ids.epochs[8] = epochGrant{ms: 50_000}
	w.Expire(1_001)
	ids.Expire(1_001)
	if _, ok := w.producers[1]; ok || len(w.producers) != 1 || stats.Producers.Load() != 1 || stats.Expired.Load() != 1 {
		t.Fatalf("after expiry: %v producers (gauge %d, expired %d)", len(w.producers), stats.Producers.Load(), stats.Expired.Load())
	}
	if _, ok := ids.epochs[7]; ok || len(ids.epochs) != 1 {
		t.Fatalf("grants after expiry: %v", ids.epochs)
	}
	w.Drop()
	w.Record(3, 0, 0, 0, -1, 60_000)
	if stats.Producers.Load() != 0 || len(w.producers) != 0 {
		t.Fatalf("after Drop: gauge %d, %d producers", stats.Producers.Load(), len(w.producers))
	}
}

// TestProducerWindow: the ring keeps exactly the last five batches; a new
// epoch clears it; sequences wrap.
func TestProducerWindow(t *testing.T) {
	var e entry
	for k := range int32(7) {
		e.add(0, batchMeta{first: 10 * k, last: 10*k + 9, offset: int64(k)}, 0)
	}
	for k := range int32(7) {
		d, ok := e.duplicate(&Batch{Epoch: 0, First: 10 * k, Last: 10*k + 9})
		if ok != (k >= 2) || ok && d.offset != int64(k) {
			t.Fatalf("batch %d: duplicate %v at %d", k, ok, d.offset)
		}
	}
	if last, _ := e.lastSeq(); last != 69 {
		t.Fatalf("last sequence %d", last)
	}
	if code := check(&e, &Batch{Epoch: 0, First: 71}); code != wire.OutOfOrderSequenceNumber {
		t.Fatalf("gap: %v", code)
	}
	e.add(1, batchMeta{first: 0, last: 0}, 0)
	if e.n != 1 {
		t.Fatalf("new epoch kept %d batches", e.n)
	}
	if got := LastSequence(math.MaxInt32-1, 3); got != 1 {
		t.Fatalf("LastSequence wraps to %d, want 1", got)
	}
	if !InSequence(math.MaxInt32, 0) || InSequence(math.MaxInt32, 1) {
		t.Fatal("inSequence does not wrap")
	}
}

// TestWindowCheck: a duplicate is answered with its offset and counted; an
// old epoch and a sequence gap are refused.
func TestWindowCheck(t *testing.T) {
	var stats Stats
	var w Window
	w.Init(&stats, nil)
	w.Record(5, 2, 0, 9, 100, 0)
	if code, dup, off := w.Check(&Batch{ID: 5, Epoch: 2, First: 0, Last: 9}); code != wire.NoError || !dup || off != 100 || stats.Duplicates.Load() != 1 {
		t.Fatalf("duplicate: %v %v %d (counted %d)", code, dup, off, stats.Duplicates.Load())
	}
	if code, dup, _ := w.Check(&Batch{ID: 5, Epoch: 2, First: 10, Last: 19}); code != wire.NoError || dup {
		t.Fatalf("next batch: %v %v", code, dup)
	}
	if code, _, _ := w.Check(&Batch{ID: 5, Epoch: 1, First: 10, Last: 19}); code != wire.InvalidProducerEpoch {
		t.Fatalf("old epoch: %v", code)
	}
	if code, _, _ := w.Check(&Batch{ID: 5, Epoch: 2, First: 11, Last: 19}); code != wire.OutOfOrderSequenceNumber {
		t.Fatalf("gap: %v", code)
	}
}

// TestGrant: a fresh id at epoch 0; its current epoch is bumped, the retry
// of a bump gets the same epoch, an older one is fenced.
func TestGrant(t *testing.T) {
	var ids IDs
	ids.Init(3)
	id, epoch, code := ids.Grant(-1, -1, 4)
	if code != wire.NoError || epoch != 0 || id>>counterBits != 3 {
		t.Fatalf("fresh: %d/%d %v", id, epoch, code)
	}
	if got, e, _ := ids.Grant(id, 0, 4); got != id || e != 1 {
		t.Fatalf("bump: %d/%d", got, e)
	}
	if got, e, _ := ids.Grant(id, 0, 4); got != id || e != 1 {
		t.Fatalf("retried bump: %d/%d", got, e)
	}
	if got, e, _ := ids.Grant(id, 1, 4); got != id || e != 2 {
		t.Fatalf("second bump: %d/%d", got, e)
	}
	if _, _, code := ids.Grant(id, 0, 4); code != wire.ProducerFenced {
		t.Fatalf("old epoch, v4: %v", code)
	}
	if _, _, code := ids.Grant(id, 0, 3); code != wire.InvalidProducerEpoch {
		t.Fatalf("old epoch, v3: %v", code)
	}
}
