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
// stale), plus what was admitted since; instances of a cluster each count the
// same list, so creations through several instances within a second may pass
// a cap by what they created.

import (
	"context"
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
	heldGauge atomic.Int64

	autoRefused     atomic.Uint64 // auto-creation past --auto-create-topics-limit
	autoPartRefused atomic.Uint64 // auto-creation past --max-partitions
	backendRefused  atomic.Uint64 // auto-creation the backend refused (Iggy's 4,096 topics a stream)
	adminRefused    atomic.Uint64 // CreateTopics and CreatePartitions past --max-partitions
}

// off reports whether neither cap is set: nothing is counted.
func (l *creationLimits) off() bool { return l.autoTopics <= 0 && l.partitions <= 0 }

// countLocked lists the backend's topics when the counts are a second old.
// A listing that fails keeps the counts it has (none yet: the creation is
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
	for _, t := range topics {
		l.parts += int(t.Partitions)
	}
	l.heldGauge.Store(int64(l.parts))
}

// admitAuto reports whether Metadata may auto-create a topic of parts
// partitions, counting the refusal by its cap; true counts the topic
// (releaseAuto gives it back if the creation fails).
func (l *creationLimits) admitAuto(ctx context.Context, s store.Log, parts int32) bool {
	if l.off() {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.countLocked(ctx, s)
	switch {
	case l.partitions > 0 && l.parts+int(parts) > l.partitions:
		l.autoPartRefused.Add(1)
		return false
	case l.autoTopics > 0 && l.topics >= l.autoTopics:
		l.autoRefused.Add(1)
		return false
	}
	l.addLocked(1, int(parts))
	return true
}

// room reports whether an admin request may add parts partitions (in topics
// new topics) under --max-partitions; reserve counts them when they fit, for
// both caps (release gives them back if the creation fails).
func (l *creationLimits) room(ctx context.Context, s store.Log, topics int, parts int32, reserve bool) bool {
	if l.off() {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.countLocked(ctx, s)
	if l.partitions > 0 && l.parts+int(parts) > l.partitions {
		return false
	}
	if reserve {
		l.addLocked(topics, int(parts))
	}
	return true
}

// release gives back what admitAuto or room counted for a creation that
// failed.
func (l *creationLimits) release(topics int, parts int32) {
	if l.off() {
		return
	}
	l.mu.Lock()
	l.addLocked(-topics, -int(parts))
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
