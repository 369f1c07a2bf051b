package quota

import (
	"testing"
	"time"
)

// TestBucketFollowsKafka replays Kafka's StrictControllerMutationQuotaTest
// (rate 10, 10 windows of 1 s: a burst of 100): 90 and 90 are admitted (the
// bucket at −80), a third is refused owing 8 s; 1 s later (−70) still
// refused, owing 7 s; after 8 s the bucket is back at 0 and admits again.
func TestBucketFollowsKafka(t *testing.T) {
	b := NewBuckets(10, 10, time.Second, 0)
	t0 := time.Unix(1000, 0)
	for i, want := range []bool{true, true, false} {
		ok, owed := b.Take("alice", "app", 90, true, t0)
		if ok != want || (ok && owed != 0) {
			t.Fatalf("take %d of 90: admitted %v owing %v, want %v owing 0 if admitted", i+1, ok, owed, want)
		}
		if !ok && owed != 8*time.Second {
			t.Fatalf("refused at −80: owes %v, want 8s", owed)
		}
	}
	if ok, owed := b.Take("alice", "app", 1, true, t0.Add(time.Second)); ok || owed != 7*time.Second {
		t.Fatalf("1 s later: admitted %v owing %v, want refused owing 7s", ok, owed)
	}
	if ok, _ := b.Take("alice", "app", 1, true, t0.Add(8*time.Second)); !ok {
		t.Fatal("8 s later the bucket is at 0: want admitted")
	}
	if ok, _ := b.Take("bob", "app", 100, true, t0); !ok {
		t.Fatal("another client has a bucket of its own")
	}
	if s := b.Stats(); s.Rejections != 2 || s.Clients != 2 {
		t.Fatalf("stats %+v, want 2 rejections, 2 clients", s)
	}
}

// TestBucketPermissive: the versions before THROTTLING_QUOTA_EXCEEDED are
// always admitted and owe what the bucket is short.
func TestBucketPermissive(t *testing.T) {
	b := NewBuckets(10, 10, time.Second, 0)
	t0 := time.Unix(1000, 0)
	if ok, owed := b.Take("u", "c", 100, false, t0); !ok || owed != 0 {
		t.Fatalf("the burst: admitted %v owing %v, want admitted owing 0", ok, owed)
	}
	if ok, owed := b.Take("u", "c", 50, false, t0); !ok || owed != 5*time.Second {
		t.Fatalf("50 past the burst: admitted %v owing %v, want admitted owing 5s", ok, owed)
	}
	if s := b.Stats(); s.Rejections != 0 {
		t.Fatalf("%d rejections, want 0", s.Rejections)
	}
}

// TestBucketBounds: a nil Buckets admits everything; past maxClients new
// clients share one bucket; a refilled bucket is forgotten.
func TestBucketBounds(t *testing.T) {
	var none *Buckets
	if NewBuckets(0, 0, 0, 0) != nil {
		t.Fatal("rate 0: want no quota")
	}
	if ok, owed := none.Take("u", "c", 1<<20, true, time.Now()); !ok || owed != 0 || none.Rate() != 0 {
		t.Fatal("a nil Buckets refused or throttled")
	}
	none.Expire(time.Now())
	if w := NewBuckets(1, 0, 0, 0).Window(); w != DefaultWindow {
		t.Fatalf("default window %v, want %v", w, DefaultWindow)
	}
	b := NewBuckets(1, 2, time.Second, 2) // a burst of 2
	t0 := time.Unix(1000, 0)
	for _, id := range []string{"a", "b", "c", "d"} {
		b.Take("u", id, 2, true, t0)
	}
	// c took the overflow bucket to 0 and d, admitted at 0, to −2: e,
	// new, shares it and is refused.
	if ok, _ := b.Take("u", "e", 1, true, t0); ok {
		t.Fatal("e shares the overflow bucket, now below zero: want refused")
	}
	if ok, _ := b.Take("u", "a", 1, true, t0); !ok {
		t.Fatal("a, with a bucket of its own at 0, was refused")
	}
	b.Expire(t0.Add(time.Second))
	if s := b.Stats(); s.Clients != 2 {
		t.Fatalf("%d clients after 1 s, want 2 (not refilled yet)", s.Clients)
	}
	b.Expire(t0.Add(3 * time.Second))
	if s := b.Stats(); s.Clients != 0 {
		t.Fatalf("%d clients after their buckets refilled, want 0", s.Clients)
	}
}
