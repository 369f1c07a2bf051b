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
	rate    float64 // the default quota, tokens a second (0: none)
	samples int
	window  time.Duration

	mu       sync.Mutex
	byClient map[Key]*bucket
	max      int
	overflow *bucket

	rejections atomic.Uint64
}

// bucket is one client's tokens at last (Unix ns), its rate a second and
// its burst; under Buckets.mu.
type bucket struct {
	tokens      float64
	last        int64
	rate, burst float64
}

// NewBuckets returns the buckets of a controller mutation quota of rate
// partitions a second over samples windows of window (0 = Kafka's
// defaults: 11 of 1 s); past maxClients (0 = 100,000) new clients share
// one bucket. It returns nil when rate is 0 or less: no quota.
func NewBuckets(rate float64, samples int, window time.Duration, maxClients int) *Buckets {
	if rate <= 0 {
		return nil
	}
	b := NewBucketSet(samples, window, maxClients)
	b.rate = rate
	return b
}

// NewBucketSet returns buckets with no default rate, whose clients each get
// their rate from TakeOf, over samples windows of window (0 = Kafka's
// defaults: 11 of 1 s); past maxClients (0 = 100,000) new clients share
// one bucket.
func NewBucketSet(samples int, window time.Duration, maxClients int) *Buckets {
	if samples < 1 {
		samples = DefaultSamples
	}
	if window <= 0 {
		window = DefaultWindow
	}
	if maxClients <= 0 {
		maxClients = DefaultMaxClients
	}
	return &Buckets{samples: samples, window: window, byClient: map[Key]*bucket{}, max: maxClients,
		overflow: &bucket{last: time.Now().UnixNano()}}
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
	return b.TakeOf(ClientKey(user, clientID), b.rate, n, strict, now)
}

// TakeOf is Take for the bucket of k whose rate is rate partitions a
// second (Table.Limit); a bucket whose rate changed keeps its tokens, up
// to the new burst.
func (b *Buckets) TakeOf(k Key, rate float64, n int, strict bool, now time.Time) (ok bool, owed time.Duration) {
	if rate <= 0 {
		return true, 0
	}
	ns := now.UnixNano()
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.bucketOf(k, rate, ns)
	bk.refill(ns)
	if strict && bk.tokens < 0 {
		b.rejections.Add(1)
		return false, bk.owed()
	}
	bk.tokens -= float64(n)
	if strict {
		return true, 0
	}
	return true, bk.owed()
}

// owed is the time k takes to refill to zero.
func (k *bucket) owed() time.Duration {
	if k.tokens >= 0 {
		return 0
	}
	return time.Duration(-k.tokens / k.rate * float64(time.Second))
}

// refill adds what the rate gave k since its last use, up to the burst.
func (k *bucket) refill(ns int64) {
	if ns > k.last {
		k.tokens = min(k.burst, k.tokens+float64(ns-k.last)/float64(time.Second)*k.rate)
		k.last = ns
	}
}

// bucketOf returns k's bucket at rate, a full new one on first use;
// under mu.
func (b *Buckets) bucketOf(k Key, rate float64, ns int64) *bucket {
	bk := b.byClient[k]
	if bk == nil && len(b.byClient) >= b.max {
		bk = b.overflow
	}
	burst := rate * float64(b.samples) * b.window.Seconds()
	if bk == nil {
		bk = &bucket{last: ns}
		b.byClient[Key{User: strings.Clone(k.User), ClientID: strings.Clone(k.ClientID), AllUsers: k.AllUsers, AllClientIDs: k.AllClientIDs}] = bk
	}
	if bk.rate != rate {
		if bk.rate == 0 { // new: starts full
			bk.tokens = burst
		} else {
			bk.refill(ns) // at the old rate, up to now
		}
		bk.rate, bk.burst, bk.last = rate, burst, ns
		bk.tokens = min(bk.tokens, burst)
	}
	return bk
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
		if k.refill(ns); k.tokens >= k.burst {
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
