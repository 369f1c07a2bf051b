package producer

import (
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/wire"
)

// TestIssued: an id InitProducerId granted is issued, by this instance,
// by another or before a restart under another instance id; ids below the
// first counter any kiggy could hold (1, 2, 3, ...), beyond the clock and
// this instance's counter by more than the slack, and negative ones are
// not.
func TestIssued(t *testing.T) {
	now := time.Now().UnixMilli()
	var ids IDs
	ids.Init(3)
	id, _, code := ids.Grant(-1, -1, 4)
	if code != wire.NoError || !ids.Issued(id, now) {
		t.Fatalf("granted id %d (code %v) not issued", id, code)
	}
	var other IDs
	other.Init(9)
	for _, c := range []struct {
		id   int64
		want bool
	}{
		{1, false}, {1_000_000, false}, {-1, false}, {-id, false}, {7 << counterBits, false},
		{3<<counterBits | (firstCounter - 1), false},
		{3<<counterBits | firstCounter, true},
		{id + 1, true},                                // not granted yet, within the slack
		{3<<counterBits | (now + counterSlack), true}, // the slack's end
		{3<<counterBits | (now + counterSlack + 1000), false},
		{9<<counterBits | (now - 1000), true},          // another instance's
		{1<<62 | (now - 1000), true},                   // any instance bits
		{3<<counterBits | (1<<counterBits - 1), false}, // the top of the counter
	} {
		if got := ids.Issued(c.id, now); got != c.want {
			t.Errorf("Issued(%#x) = %v, want %v", c.id, got, c.want)
		}
	}
	if !other.Issued(id, now+5) {
		t.Errorf("id %#x of instance 3 refused by instance 9 (a restart under another id)", id)
	}
}

// issuedID returns an id ids granted.
func issuedID(t *testing.T, ids *IDs) int64 {
	t.Helper()
	id, _, code := ids.Grant(-1, -1, 4)
	if code != wire.NoError {
		t.Fatal(code)
	}
	return id
}

// TestLimits: a never-issued id is refused with UNKNOWN_PRODUCER_ID and
// creates nothing; past the total cap and a principal's cap a new
// producer is refused with THROTTLING_QUOTA_EXCEEDED while every admitted
// producer keeps appending and its duplicates are still recognised (no
// eviction); a state that expires, or a window reset, frees its place; a
// state rebuilt from the log counts in the total only.
func TestLimits(t *testing.T) {
	var ids IDs
	ids.Init(1)
	lim := &Limits{IDs: &ids, Max: 5, PerPrincipal: 2, Now: func() int64 { return time.Now().UnixMilli() }}
	var stats Stats
	var w, w2 Window
	w.Init(&stats, lim)
	w2.Init(&stats, lim)
	now := int64(1_000)
	try := func(w *Window, id int64, user string) wire.ErrorCode {
		t.Helper()
		b := Batch{ID: id, PrincipalType: "User", PrincipalName: user}
		code, dup, _ := w.Check(&b)
		if dup {
			t.Fatalf("%d: duplicate", id)
		}
		if code == wire.NoError {
			w.RecordBatch(&b, 0, now)
		}
		return code
	}

	if code := try(&w, 7, "alice"); code != wire.UnknownProducerID || stats.Producers.Load() != 0 || lim.Refused(ReasonNeverIssued) != 1 {
		t.Fatalf("never-issued id: %v, %d states, %d refused", code, stats.Producers.Load(), lim.Refused(ReasonNeverIssued))
	}
	a1, a2, a3 := issuedID(t, &ids), issuedID(t, &ids), issuedID(t, &ids)
	if try(&w, a1, "alice") != wire.NoError || try(&w, a2, "alice") != wire.NoError {
		t.Fatal("alice's first two producers refused")
	}
	if code := try(&w, a3, "alice"); code != wire.ThrottlingQuotaExceeded || lim.Refused(ReasonPrincipalCap) != 1 {
		t.Fatalf("alice's third producer: %v", code)
	}
	// The same producer in another partition is another state.
	if code := try(&w2, a1, "alice"); code != wire.ThrottlingQuotaExceeded {
		t.Fatalf("alice's producer in a second partition: %v", code)
	}
	b1, b2 := issuedID(t, &ids), issuedID(t, &ids)
	if try(&w, b1, "bob") != wire.NoError || try(&w2, b2, "bob") != wire.NoError {
		t.Fatal("bob refused under his own cap")
	}
	// A state rebuilt from the log: counted in the total, not against anyone.
	w2.Record(issuedID(t, &ids), 0, 0, 0, 9, now)
	if stats.Producers.Load() != 5 {
		t.Fatalf("%d states, want 5", stats.Producers.Load())
	}
	if code := try(&w2, issuedID(t, &ids), "carol"); code != wire.ThrottlingQuotaExceeded || lim.Refused(ReasonLimit) != 1 {
		t.Fatalf("past the total cap: %v", code)
	}
	// Admitted producers keep going, and their retries are duplicates.
	next := Batch{ID: a1, First: 1, Last: 1, PrincipalType: "User", PrincipalName: "alice"}
	if code, dup, _ := w.Check(&next); code != wire.NoError || dup {
		t.Fatalf("alice's next batch: %v dup %v", code, dup)
	}
	w.RecordBatch(&next, 1, now)
	if _, dup, off := w.Check(&next); !dup || off != 1 {
		t.Fatalf("alice's retry: dup %v offset %d", dup, off)
	}
	// Expiry frees alice's places (her producers appended at now).
	w.Record(b1, 0, 1, 1, 2, now+10)
	w.Expire(now + 1)
	if stats.Producers.Load() != 3 || try(&w, a3, "alice") != wire.NoError {
		t.Fatalf("after expiry: %d states; alice still refused", stats.Producers.Load())
	}
	w.Reset()
	w2.Reset()
	if stats.Producers.Load() != 0 {
		t.Fatalf("after reset: %d states", stats.Producers.Load())
	}
	for _, o := range lim.owners {
		if o.states.Load() != 0 {
			t.Fatalf("after reset an owner still counts %d", o.states.Load())
		}
	}
	// No limits at all: anything goes.
	var free Window
	free.Init(&stats, nil)
	if code, _, _ := free.Check(&Batch{ID: 7}); code != wire.NoError {
		t.Fatal(code)
	}
}
