package bridge

// The caps on what creations may add to the log (docs/LIMITS.md,
// "Auto-created topics" and "Partitions"). Both count what the log holds,
// however it was created.
//
//   - --auto-create-topics-limit (10,000 topics): a client naming random
//     topics in Metadata while auto-creation is on would otherwise create one
//     topic per name. Past it a Metadata answers UNKNOWN_TOPIC_OR_PARTITION,
//     as Kafka does with auto-creation off; CreateTopics, an authorized admin
//     request, is not held to it.
//   - --max-partitions (100,000 partitions): every partition is state the
//     backend keeps for good, a partition whose consensus group iggy-server
//     ticks whether or not anyone writes to it (docs/IGGY.md, "Topics") or
//     memory in the embedded log. Kafka has no such cap (KIP-578 proposed
//     max.partitions and was not adopted), only the 10,000 partitions one
//     request may create (maxPartitionsPerRequest). A CreateTopics or
//     CreatePartitions past it is POLICY_VIOLATION (a limit of the cluster,
//     as a CreateTopicPolicy refusal), a Metadata auto-creation
//     UNKNOWN_TOPIC_OR_PARTITION. Partitions held are never taken away.
//
// The count is the backend's topic list, read again when a creation asks and
// the listing is a second old (or a deletion through this instance made it
// stale), plus what was admitted since. A creation admitted but not finished
// is a reservation: a listing taken while it runs counts what the listing
// does not show of it yet, so one instance never passes a cap however its
// creations and listings interleave. Instances of a cluster each count the
// same list, so creations through several instances within a second may pass
// a cap by what they created.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// DefaultAutoCreateTopicsLimit is Config.AutoCreateTopicsLimit when 0.
const DefaultAutoCreateTopicsLimit = 10_000

// DefaultMaxPartitions is Config.MaxPartitions when 0.
const DefaultMaxPartitions = 100_000

// censusAge is how old the listed counts may be when a creation asks.
const censusAge = time.Second

// creationLimits counts the log's topics and partitions for the caps.
type creationLimits struct {
	autoTopics int // --auto-create-topics-limit; <= 0: no cap
	partitions int // --max-partitions; <= 0: no cap

	mu        sync.Mutex
	topics    int       // in the log at listed, plus those admitted since
	parts     int       // likewise
	listed    time.Time // zero: never listed, or stale after a deletion
	running   map[*reservation]struct{}
	heldGauge atomic.Int64

	autoRefused     atomic.Uint64 // auto-creation past --auto-create-topics-limit
	autoPartRefused atomic.Uint64 // auto-creation past --max-partitions
	backendRefused  atomic.Uint64 // auto-creation the backend refused (Iggy's 4,096 topics a stream)
	adminRefused    atomic.Uint64 // CreateTopics and CreatePartitions past --max-partitions
}

// A reservation is an admitted creation that has not finished: a new topic
// (from 0) or more partitions for one, from partitions to. Its caller ends
// it with done or, if the creation failed, release; both take nil (nothing
// was counted: the caps are off).
type reservation struct {
	topic    string
	from, to int32
	// What the counts hold of it beyond the last listing: all of it until
	// a listing shows it.
	topicsCounted int // 1 or 0
	partsCounted  int
}

// off reports whether neither cap is set: nothing is counted.
func (l *creationLimits) off() bool { return l.autoTopics <= 0 && l.partitions <= 0 }

// countLocked lists the backend's topics when the counts are a second old,
// and adds what the listing does not show yet of the creations running. A
// listing that fails keeps the counts it has (none yet: the creation is
// admitted, and the backend, unreachable, will likely refuse it anyway).
func (l *creationLimits) countLocked(ctx context.Context, s store.Log) {
	if time.Since(l.listed) < censusAge {
		return
	}
	topics, err := s.Topics(ctx)
	if err != nil {
		return
	}
	l.topics, l.parts, l.listed = len(topics), 0, time.Now()
	var shown map[string]int32
	if len(l.running) > 0 {
		shown = make(map[string]int32, len(topics))
	}
	for _, t := range topics {
		l.parts += int(t.Partitions)
		if shown != nil {
			shown[t.Name] = t.Partitions
		}
	}
	for r := range l.running {
		has, ok := shown[r.topic]
		r.topicsCounted, r.partsCounted = 0, int(max(0, r.to-max(has, r.from)))
		if r.from == 0 && !ok {
			r.topicsCounted = 1
		}
		l.addLocked(r.topicsCounted, r.partsCounted)
	}
	l.heldGauge.Store(int64(l.parts))
}

// admitAuto returns a reservation if Metadata may auto-create topic with
// parts partitions, else counts the refusal by its cap and returns false.
func (l *creationLimits) admitAuto(ctx context.Context, s store.Log, topic string, parts int32) (*reservation, bool) {
	if l.off() {
		return nil, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.countLocked(ctx, s)
	switch {
	case l.partitions > 0 && l.parts+int(parts) > l.partitions:
		l.autoPartRefused.Add(1)
		return nil, false
	case l.autoTopics > 0 && l.topics >= l.autoTopics:
		l.autoRefused.Add(1)
		return nil, false
	}
	return l.reserveLocked(topic, 0, parts), true
}

// fits reports whether an admin request may add parts partitions under
// --max-partitions, reserving nothing (validate_only).
func (l *creationLimits) fits(ctx context.Context, s store.Log, parts int32) bool {
	if l.off() {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.countLocked(ctx, s)
	return l.partitions <= 0 || l.parts+int(parts) <= l.partitions
}

// reserve returns a reservation if an admin request may take topic from
// from partitions (0: a new topic) to to under --max-partitions, counted for
// both caps; false if they do not fit.
func (l *creationLimits) reserve(ctx context.Context, s store.Log, topic string, from, to int32) (*reservation, bool) {
	if l.off() {
		return nil, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.countLocked(ctx, s)
	if l.partitions > 0 && l.parts+int(to-from) > l.partitions {
		return nil, false
	}
	return l.reserveLocked(topic, from, to), true
}

func (l *creationLimits) reserveLocked(topic string, from, to int32) *reservation {
	r := &reservation{topic: topic, from: from, to: to, partsCounted: int(to - from)}
	if from == 0 {
		r.topicsCounted = 1
	}
	if l.running == nil {
		l.running = map[*reservation]struct{}{}
	}
	l.running[r] = struct{}{}
	l.addLocked(r.topicsCounted, r.partsCounted)
	return r
}

// end ends a reservation with its creation's outcome: done when it
// succeeded or its outcome is unknown (the backend may hold it: counted
// until the next listing tells), release when it failed.
func (l *creationLimits) end(r *reservation, err error) {
	if err == nil || errors.Is(err, store.ErrUnknownOutcome) {
		l.done(r)
	} else {
		l.release(r)
	}
}

// done ends a reservation whose creation succeeded: what it counted stays
// counted until the next listing shows it.
func (l *creationLimits) done(r *reservation) {
	if r == nil {
		return
	}
	l.mu.Lock()
	delete(l.running, r)
	l.mu.Unlock()
}

// release gives back what a reservation counted: its creation failed. What
// the backend made of it all the same (Iggy creates partitions in steps) is
// counted at the next listing.
func (l *creationLimits) release(r *reservation) {
	if r == nil {
		return
	}
	l.mu.Lock()
	delete(l.running, r)
	l.addLocked(-r.topicsCounted, -r.partsCounted)
	l.mu.Unlock()
}

func (l *creationLimits) addLocked(topics, parts int) {
	l.topics, l.parts = max(0, l.topics+topics), max(0, l.parts+parts)
	l.heldGauge.Store(int64(l.parts))
}

// stale makes the next creation list the backend's topics again: a topic
// was deleted.
func (l *creationLimits) stale() {
	l.mu.Lock()
	l.listed = time.Time{}
	l.mu.Unlock()
}

// refusal is the POLICY_VIOLATION message for parts partitions that did
// not fit, and counts it.
func (l *creationLimits) refusal(parts int32) string {
	l.adminRefused.Add(1)
	return fmt.Sprintf("the cluster holds %d partitions, its maximum is %d (--max-partitions): %d more do not fit",
		l.heldGauge.Load(), l.partitions, parts)
}
