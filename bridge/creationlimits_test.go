package bridge

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestCreationLimitsCountRunningCreations: a listing taken while admitted
// creations run (not yet in the backend, or in it but not yet done) counts
// each once, so the cap is never passed, and a failed creation gives its
// partitions back. Before reservations, a listing taken while one ran
// forgot it: a hostile CreateTopics flood on two connections made 1,000
// topics under --max-partitions 1000 beside a one-partition topic. A
// creation whose outcome is unknown stays counted until a listing tells.
func TestCreationLimitsCountRunningCreations(t *testing.T) {
	ctx := context.Background()
	log := memlog.New(memlog.Config{})
	if _, err := log.CreateTopic(ctx, "steady", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	l := &creationLimits{partitions: 10, autoTopics: 5}
	relist := func() { l.mu.Lock(); l.listed = time.Time{}; l.mu.Unlock() }
	counts := func() (int, int) { l.mu.Lock(); defer l.mu.Unlock(); return l.topics, l.parts }

	// a: admitted, not yet created when the listing is taken.
	a, ok := l.reserve(ctx, log, "a", 0, 4)
	if !ok {
		t.Fatal("a refused with 1 of 10 partitions held")
	}
	// b: more partitions for steady, in the backend before the listing
	// but not yet done.
	b, ok := l.reserve(ctx, log, "steady", 1, 3)
	if !ok {
		t.Fatal("steady's growth refused with 5 of 10 partitions held")
	}
	if err := log.CreatePartitions(ctx, "steady", 3); err != nil {
		t.Fatal(err)
	}
	relist()
	if !l.fits(ctx, log, 3) || l.fits(ctx, log, 4) {
		_, parts := counts()
		t.Fatalf("after a listing with two creations running: %d partitions counted; want 7 (3 more fit, 4 do not)", parts)
	}
	if topics, parts := counts(); topics != 2 || parts != 7 {
		t.Fatalf("counts %d topics, %d partitions, want 2 and 7", topics, parts)
	}
	l.done(b)
	if _, err := log.CreateTopic(ctx, "a", 4, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	l.done(a)
	if topics, parts := counts(); topics != 2 || parts != 7 {
		t.Fatalf("after both are done: counts %d topics, %d partitions, want 2 and 7", topics, parts)
	}
	relist()
	l.fits(ctx, log, 0) // lists
	if topics, parts := counts(); topics != 2 || parts != 7 {
		t.Fatalf("listed again: counts %d topics, %d partitions, want 2 and 7", topics, parts)
	}

	// c: admitted, listed while running, then failed: given back.
	c, ok := l.admitAuto(ctx, log, "c", 3)
	if !ok {
		t.Fatal("auto-creation of c refused with 7 of 10 partitions held")
	}
	relist()
	if _, ok := l.admitAuto(ctx, log, "d", 1); ok {
		t.Fatal("auto-creation of d admitted with 10 of 10 partitions held")
	}
	l.release(c)
	if topics, parts := counts(); topics != 2 || parts != 7 {
		t.Fatalf("after c failed: counts %d topics, %d partitions, want 2 and 7", topics, parts)
	}

	// e: its creation's outcome unknown (the backend may hold it): counted
	// until a listing tells; f: failed, given back at once.
	e, _ := l.reserve(ctx, log, "e", 0, 2)
	l.end(e, fmt.Errorf("timed out: %w", store.ErrUnknownOutcome))
	f, _ := l.reserve(ctx, log, "f", 0, 1)
	l.end(f, store.ErrInvalidConfig)
	if topics, parts := counts(); topics != 3 || parts != 9 {
		t.Fatalf("after an unknown outcome and a failure: counts %d topics, %d partitions, want 3 and 9", topics, parts)
	}
	relist()
	l.fits(ctx, log, 0) // lists: e was not made
	if topics, parts := counts(); topics != 2 || parts != 7 {
		t.Fatalf("listed after the unknown outcome: counts %d topics, %d partitions, want 2 and 7", topics, parts)
	}
	if len(l.running) != 0 {
		t.Fatalf("%d reservations still running", len(l.running))
	}
}
