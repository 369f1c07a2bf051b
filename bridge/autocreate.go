package bridge

// The cap on Metadata auto-creation (docs/LIMITS.md, "Auto-created
// topics"): a client naming random topics in Metadata while auto-creation
// is on would otherwise create one topic per name, each holding memory in
// the embedded log and a topic in Iggy. Past Config.AutoCreateTopicsLimit
// topics in the log (however they were created) a Metadata answers
// UNKNOWN_TOPIC_OR_PARTITION, as Kafka does with auto-creation off;
// CreateTopics, an authorized admin request, is not capped. The count is
// the backend's, listed at most once a second, plus the topics created since
// the listing, so concurrent Metadata requests may pass the cap by a few.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// DefaultAutoCreateTopicsLimit is Config.AutoCreateTopicsLimit when 0.
const DefaultAutoCreateTopicsLimit = 10_000

// autoCreateRecount is how old the listed topic count may be when the cap
// is near.
const autoCreateRecount = time.Second

// autoCreateLimit is the gateway's auto-creation cap.
type autoCreateLimit struct {
	limit int // <= 0: no cap

	mu      sync.Mutex
	count   int       // topics in the log at listedAt, plus creations since
	listed  time.Time // zero: never listed
	refused atomic.Uint64
	// backendRefused counts the creations the backend refused for want of
	// room (store.ErrTooManyTopics: Iggy's 4,096 topics a stream).
	backendRefused atomic.Uint64
}

// admit reports whether one more topic may be auto-created; true counts it.
// It lists the backend's topics when its count is older than a second and
// the cap would refuse.
func (a *autoCreateLimit) admit(ctx context.Context, s store.Log) bool {
	if a.limit <= 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if (a.listed.IsZero() || a.count >= a.limit) && time.Since(a.listed) >= autoCreateRecount {
		if topics, err := s.Topics(ctx); err == nil {
			a.count, a.listed = len(topics), time.Now()
		}
	}
	if a.count >= a.limit {
		a.refused.Add(1)
		return false
	}
	a.count++
	return true
}
