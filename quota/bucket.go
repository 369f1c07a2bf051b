package quota

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Buckets meters the controller mutation quota (KIP-599,
// `controller_mutation_rate`): the partitions a client (user principal,
// client id) may create or delete a second. Each client has a token bucket
// (Kafka's TokenBucket): it holds at most Rate × Samples × Window tokens,
// starts full, refills at Rate a second, and every partition created or
// deleted takes one. A bucket may go below zero: a request is not cut
// short by its own mutations, and the client then owes the time the
// bucket takes to refill to zero. It is safe for concurrent use; a nil
// Buckets admits everything.
type Buckets struct {
	rate   float64 // tokens a second
	burst  float64
	window time.Duration

	mu       sync.Mutex
	byClient map[clientKey]*bucket
	max      int
	overflow *bucket

	rejections atomic.Uint64
}

type clientKey struct{ user, clientID string }

// bucket is one client's tokens at last (Unix ns); under Buckets.mu.
type bucket struct {
	tokens float64
	last   int64
}

// NewBuckets returns the buckets of a controller mutation quota of rate
// partitions a second over samples windows of window (0 = Kafka's
// defaults: 11 of 1 s); past maxClients (0 = 100,000) new clients share
// one bucket. It returns nil when rate is 0 or less: no quota.
func NewBuckets(rate float64, samples int, window time.Duration, maxClients int) *Buckets {
	if rate <= 0 {
		return nil
	}
	if samples < 1 {
		samples = DefaultSamples
	}
	if window <= 0 {
		window = DefaultWindow
	}
	if maxClients <= 0 {
		maxClients = DefaultMaxClients
	}
	burst := rate * float64(samples) * window.Seconds()
	return &Buckets{rate: rate, burst: burst, window: window, byClient: map[clientKey]*bucket{}, max: maxClients,
		overflow: &bucket{tokens: burst, last: time.Now().UnixNano()}}
}

// Rate is the quota in partitions a second; 0 for a nil Buckets.
func (b *Buckets) Rate() float64 {
	if b == nil {
		return 0
	}
	return b.rate
}

// Window is one sample window of the quota's span: the longest a
// connection is muted for what its client owes (the client, told the
// whole time, waits the rest itself).
func (b *Buckets) Window() time.Duration { return b.window }

// Take records n partition mutations of the client (user, clientID) at
// now and returns the time the client owes (0 while its bucket is not
// below zero). strict is Kafka's StrictControllerMutationQuota, for the
// request versions that know THROTTLING_QUOTA_EXCEEDED: a client whose
// bucket is already below zero is refused (ok false, nothing taken), and
// one that is not is admitted whatever n is and owes nothing now; not
// strict (PermissiveControllerMutationQuota, older versions) always
// admits and owes whatever the bucket is short. clientID may alias a
// request frame: it is copied when kept.
func (b *Buckets) Take(user, clientID string, n int, strict bool, now time.Time) (ok bool, owed time.Duration) {
	if b == nil {
		return true, 0
	}
	ns := now.UnixNano()
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.bucketOf(user, clientID, ns)
	k.refill(b, ns)
	if strict && k.tokens < 0 {
		b.rejections.Add(1)
		return false, b.owed(k.tokens)
	}
	k.tokens -= float64(n)
	if strict {
		return true, 0
	}
	return true, b.owed(k.tokens)
}

// owed is the time a bucket of tokens takes to refill to zero.
func (b *Buckets) owed(tokens float64) time.Duration {
	if tokens >= 0 {
		return 0
	}
	return time.Duration(-tokens / b.rate * float64(time.Second))
}

// refill adds what the rate gave k since its last use, up to the burst.
func (k *bucket) refill(b *Buckets, ns int64) {
	if ns > k.last {
		k.tokens = min(b.burst, k.tokens+float64(ns-k.last)/float64(time.Second)*b.rate)
		k.last = ns
	}
}

// bucketOf returns the client's bucket, a full new one on first use;
// under mu.
func (b *Buckets) bucketOf(user, clientID string, ns int64) *bucket {
	if k := b.byClient[clientKey{user, clientID}]; k != nil {
		return k
	}
	if len(b.byClient) >= b.max {
		return b.overflow
	}
	k := &bucket{tokens: b.burst, last: ns}
	b.byClient[clientKey{strings.Clone(user), strings.Clone(clientID)}] = k
	return k
}

// Expire forgets the buckets that have refilled to full: a new bucket is
// the same.
func (b *Buckets) Expire(now time.Time) {
	if b == nil {
		return
	}
	ns := now.UnixNano()
	b.mu.Lock()
	defer b.mu.Unlock()
	for key, k := range b.byClient {
		if k.refill(b, ns); k.tokens >= b.burst {
			delete(b.byClient, key)
		}
	}
}

// BucketStats is a snapshot of a Buckets' counters.
type BucketStats struct {
	// Clients is the number of clients with a bucket not full.
	Clients int
	// Rejections counts the mutations refused (strict Take that returned
	// false).
	Rejections uint64
}

// Stats returns the counters; zero for a nil Buckets.
func (b *Buckets) Stats() BucketStats {
	if b == nil {
		return BucketStats{}
	}
	b.mu.Lock()
	n := len(b.byClient)
	b.mu.Unlock()
	return BucketStats{Clients: n, Rejections: b.rejections.Load()}
}
