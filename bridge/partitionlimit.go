package bridge

// The cap on the partitions the log holds (--max-partitions; docs/LIMITS.md,
// "Partitions"): every partition is state the backend keeps for good, a
// topic and its consensus groups in Iggy (which iggy-server ticks whether
// or not anyone writes to them; docs/IGGY.md, "Topics") or memory in the
// embedded log. Kafka has no such cap (KIP-578 proposed max.partitions and
// was not adopted), only the 10,000 partitions one CreateTopics request may
// create (maxPartitionsPerRequest). A creation that would pass the cap,
// by CreateTopics, CreatePartitions or Metadata auto-creation, is refused:
// POLICY_VIOLATION for the admin requests (a limit of the cluster, as a
// CreateTopicPolicy refusal), UNKNOWN_TOPIC_OR_PARTITION for
// auto-creation (as with it off). Partitions held are never taken away.
//
// The count is the backend's topic list, read again when it is a second
// old (or a deletion made it stale) and a creation asks, plus the
// partitions admitted since; instances of a cluster each count the same
// list, so creations through several instances within a second may pass
// the cap by what they created.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// DefaultMaxPartitions is Config.MaxPartitions when 0.
const DefaultMaxPartitions = 100_000

// partitionRecount is how old the listed partition count may be.
const partitionRecount = time.Second

// partitionLimit is the gateway's cap on the partitions in the log.
type partitionLimit struct {
	limit int // <= 0: no cap

	mu     sync.Mutex
	count  int       // partitions in the log at listed, plus those admitted since
	listed time.Time // zero: never listed, or stale after a deletion

	held         atomic.Int64  // count, for the gauge
	adminRefused atomic.Uint64 // CreateTopics and CreatePartitions
	autoRefused  atomic.Uint64 // Metadata auto-creation
}

// room reports whether n more partitions fit under the cap, listing the
// backend's topics first when the count is a second old; reserve counts
// them when they fit. A listing that fails keeps the count it has (none
// yet: the creation is admitted, and the backend, unreachable, will
// likely refuse it anyway).
func (p *partitionLimit) room(ctx context.Context, s store.Log, n int32, reserve bool) bool {
	if p.limit <= 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.listed) >= partitionRecount {
		if topics, err := s.Topics(ctx); err == nil {
			sum := 0
			for _, t := range topics {
				sum += int(t.Partitions)
			}
			p.count, p.listed = sum, time.Now()
			p.held.Store(int64(sum))
		}
	}
	if p.count+int(n) > p.limit {
		return false
	}
	if reserve {
		p.count += int(n)
	}
	p.held.Store(int64(p.count))
	return true
}

// release gives back n partitions reserved for a creation that failed.
func (p *partitionLimit) release(n int32) {
	if p.limit <= 0 {
		return
	}
	p.mu.Lock()
	p.count = max(0, p.count-int(n))
	p.held.Store(int64(p.count))
	p.mu.Unlock()
}

// stale makes the next creation list the backend's topics again: a
// topic was deleted.
func (p *partitionLimit) stale() {
	p.mu.Lock()
	p.listed = time.Time{}
	p.mu.Unlock()
}

// refusal is the POLICY_VIOLATION message for n partitions that did not
// fit, and counts it.
func (p *partitionLimit) refusal(n int32) string {
	p.adminRefused.Add(1)
	return fmt.Sprintf("the cluster holds %d partitions, its maximum is %d (--max-partitions): %d more do not fit",
		p.held.Load(), p.limit, n)
}
