// Client request quotas (Kafka's request_percentage, KIP-124;
// docs/design/quotas.md): each request's gateway time is charged to its
// client, the (user principal, client id) pair; a request of a client over
// its quota carries the throttle in its response's throttle_time_ms and
// mutes the connection for that long after it (KIP-219), so a client that
// floods the gateway waits instead of taking the time of the others.

package bridge

import (
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/quota"
	"github.com/kiggy-io/kiggy/wire"
)

// clientMeter caches a connection's meter in one quota's tracker: a
// connection's client id rarely changes and the quotas more rarely still,
// so the quota book is asked once per client and table (a nil meter: no
// quota for the client). Only the goroutine serving the connection's
// current request touches it (requests of a connection are served one at
// a time).
type clientMeter struct {
	meter          *quota.Meter
	version        uint64 // the quota book's version meter was resolved in
	resolved       bool
	user, clientID string // the client meter belongs to
}

// of returns the meter of c's client for the quota key in t, nil when no
// quota applies to the client.
func (m *clientMeter) of(g *Gateway, t *quota.Tracker, key string, c *call) *quota.Meter {
	book := g.quotaBook
	if !book.Has(key) {
		m.meter, m.resolved = nil, false
		return nil
	}
	v := book.Version()
	user, id := c.cs.principal().Name, c.hdr.ClientID.S
	if m.resolved && m.version == v && m.clientID == id && m.user == user && (m.meter == nil || !m.meter.Expired()) {
		return m.meter
	}
	m.resolved, m.version, m.user, m.clientID, m.meter = true, v, user, strings.Clone(id), nil
	if limit, k := book.Limit(key, user, id); limit > 0 {
		m.meter = t.MeterOf(k, limit, c.start)
	}
	return m.meter
}

// connQuota is a connection's request quota meter.
type connQuota struct {
	clientMeter
	// engineSeen is the connection's EngineTime charged so far. Atomic: a
	// parked call's completion may charge it on another goroutine while
	// the call that parked is still being charged.
	engineSeen atomic.Int64
}

// quotaExempt reports whether requests of key are exempt from quotas:
// those Kafka marks clusterAction (ApiKeys.clusterAction), which kiggy's
// instances send one another.
func quotaExempt(key wire.APIKey) bool { return key == wire.KeyWriteTxnMarkers }

// meterCall returns the meter to charge c to and the throttle c's client
// owes now, for the usage up to c (nil and 0 without a quota).
func (g *Gateway) meterCall(c *call) (*quota.Meter, time.Duration) {
	if quotaExempt(c.hdr.APIKey) {
		return nil, 0
	}
	m := c.cs.quota.of(g, g.quotas, quota.KeyRequestPercentage, c)
	if m == nil {
		return nil, 0
	}
	d := m.Throttle(c.start)
	if d > 0 {
		c.throttleMs = throttleMillis(d)
	}
	return m, d
}

// chargeCall charges m with the gateway time a request used and, when the
// client owed a throttle, mutes the connection for it: the request just
// served is answered, the next is read after the throttle. The time is the
// handler's since start, run on a worker, and the engine's time on the
// connection since the last charge (reading, framing, writing, and the
// handlers it ran inline: an inline handler's time is charged with the
// engine's, at the connection's next request); while the engine has
// measured nothing (EngineTime 0), the handler's time alone.
func (g *Gateway) chargeCall(cs *connState, m *quota.Meter, start time.Time, throttle time.Duration, inline bool) {
	if m == nil {
		return
	}
	now := time.Now()
	var used time.Duration
	if et := cs.conn.EngineTime(); et > 0 {
		used = cs.quota.engineSince(et)
		if !inline {
			used += now.Sub(start)
		}
	} else {
		used = now.Sub(start)
	}
	m.Record(used, now)
	if throttle > 0 {
		cs.conn.Throttle(throttle)
	}
}

// putThrottle writes c's quota throttle into resp's throttle_time_ms, where
// the response has it first (wire.PutThrottle); hdrLen is the length of
// resp's response header.
func (c *call) putThrottle(resp []byte, hdrLen int) {
	if c.throttleMs > 0 && hdrLen <= len(resp) {
		wire.PutThrottle(resp[hdrLen:], c.hdr.APIKey, c.hdr.APIVersion, c.throttleMs)
	}
}

// throttleMillis is d in whole milliseconds, rounded up, as
// throttle_time_ms carries it.
func throttleMillis(d time.Duration) int32 {
	return int32(min((d+time.Millisecond-1)/time.Millisecond, math.MaxInt32))
}

// chargeProduce charges a Produce request's bytes to its client's
// producer byte rate (Kafka's producer_byte_rate; docs/design/quotas.md
// §7) and returns the throttle the client owes with them counted, as
// Kafka records the request's size before it computes the throttle; the
// connection is muted for it after the response (0 without the quota).
func (g *Gateway) chargeProduce(c *call) time.Duration {
	m := c.cs.produceMeter.of(g, g.produceBytes, quota.KeyProducerByteRate, c)
	if m == nil {
		return 0
	}
	now := time.Now()
	m.Add(int64(len(c.req.Frame())), now)
	d := m.Throttle(now)
	c.cs.conn.Throttle(d)
	return d
}

// fetchThrottle returns the throttle a consumer's Fetch owes under the
// consumer byte rate (Kafka's consumer_byte_rate; docs/design/quotas.md
// §7) on what the client fetched before it; 0 without the quota, and for a
// replica's Fetch.
func (g *Gateway) fetchThrottle(c *call, replica int32) time.Duration {
	if replica >= 0 {
		return 0
	}
	if m := c.cs.fetchMeter.of(g, g.fetchBytes, quota.KeyConsumerByteRate, c); m != nil {
		return m.Throttle(time.Now())
	}
	return 0
}

// chargeFetch charges the bytes a consumer's Fetch answered with.
func (g *Gateway) chargeFetch(c *call, replica int32, n int) {
	if replica >= 0 {
		return
	}
	if m := c.cs.fetchMeter.of(g, g.fetchBytes, quota.KeyConsumerByteRate, c); m != nil {
		m.Add(int64(n), time.Now())
	}
}

// mutationQuota is one request's controller mutation quota (Kafka's
// controller_mutation_rate, KIP-599; docs/design/quotas.md): CreateTopics,
// CreatePartitions and DeleteTopics charge each topic that passed every
// other check with the partitions it creates or deletes, as Kafka's
// ReplicationControlManager does (applyPartitionChangeQuota). validate_only
// changes nothing and is not charged.
type mutationQuota struct {
	b    *quota.Buckets
	key  quota.Key // the client's bucket
	rate float64   // its quota, partitions a second; 0: none
	// strict: the request's version knows THROTTLING_QUOTA_EXCEEDED
	// (CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+): a topic
	// of a client already over its quota is refused; older versions are
	// always admitted and throttled.
	strict bool
	owed   time.Duration
}

// mutationQuotaFor returns c's controller mutation quota; strictSince is
// the first version of c's API that is answered
// THROTTLING_QUOTA_EXCEEDED.
func (g *Gateway) mutationQuotaFor(c *call, strictSince int16) mutationQuota {
	q := mutationQuota{b: g.mutations, strict: c.hdr.APIVersion >= strictSince}
	q.rate, q.key = g.quotaBook.Limit(quota.KeyControllerMutationRate, c.cs.principal().Name, c.hdr.ClientID.S)
	return q
}

// on reports whether a quota is set: the handlers look a topic up only then.
func (q *mutationQuota) on() bool { return q.rate > 0 }

// admit charges n partition mutations; false refuses the topic with
// THROTTLING_QUOTA_EXCEEDED (mutationRefused).
func (q *mutationQuota) admit(n int32) bool {
	ok, owed := q.b.TakeOf(q.key, q.rate, int(n), q.strict, time.Now())
	q.owed = max(q.owed, owed)
	return ok
}

// mutationRefused is what a topic the quota refused is answered (Kafka's
// Errors.THROTTLING_QUOTA_EXCEEDED.message()).
const mutationRefused = "The throttling quota has been exceeded."

// finish reports what the client owes in c's throttle_time_ms (the larger
// of it and the request quota's, as Kafka's
// sendResponseMaybeThrottleWithControllerQuota) and mutes the connection:
// it is not read for that long, at most one quota window (the client,
// told the whole time, waits it out itself, KIP-219).
func (q *mutationQuota) finish(c *call) {
	if q.owed <= 0 {
		return
	}
	c.throttleMs = max(c.throttleMs, throttleMillis(q.owed))
	c.cs.conn.Throttle(min(q.owed, q.b.Window()))
}

// deferThrottled serves req, the next request of a connection its quota
// throttled, once the throttle has passed, and reports whether it did so:
// the engine stops reading a throttled connection, and this holds back
// the requests it had read ahead (up to its in-flight limit), so a
// throttled client's requests all wait, as in Kafka, which reads one
// request of a connection at a time.
func (g *Gateway) deferThrottled(cs *connState, req *engine.Request, seq uint64) bool {
	until := cs.conn.ThrottledUntil() // one atomic load when no quota throttled it
	if until.IsZero() {
		return false
	}
	d := time.Until(until)
	if d <= 0 {
		return false
	}
	time.AfterFunc(d, func() { g.submit(cs, req, seq) })
	return true
}

// engineSince returns the engine time up to et not charged yet, and marks
// it charged (only forward: a charger that read an older EngineTime gets
// nothing).
func (cq *connQuota) engineSince(et time.Duration) time.Duration {
	for {
		prev := cq.engineSeen.Load()
		if int64(et) <= prev {
			return 0
		}
		if cq.engineSeen.CompareAndSwap(prev, int64(et)) {
			return et - time.Duration(prev)
		}
	}
}
