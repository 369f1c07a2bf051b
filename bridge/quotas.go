// Client request quotas (Kafka's request_percentage, KIP-124;
// docs/design/quotas.md): each request's gateway time is charged to its
// client, the (user principal, client id) pair; a request of a client over
// its quota carries the throttle in its response's throttle_time_ms and
// mutes the connection for that long after it (KIP-219), so a client that
// floods the gateway waits instead of taking the time of the others.

package bridge

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/quota"
	"github.com/kiggy-io/kiggy/wire"
)

// connQuota caches a connection's quota meter: a connection's client id
// rarely changes, so the tracker is asked once. Only the goroutine serving
// the connection's current request touches meter and the client (requests
// of a connection are served one at a time).
type connQuota struct {
	meter          *quota.Meter
	user, clientID string // the client meter belongs to
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
	if g.quotas == nil || quotaExempt(c.hdr.APIKey) {
		return nil, 0
	}
	cq := &c.cs.quota
	user, id := c.cs.principal().Name, c.hdr.ClientID.S
	if cq.meter == nil || cq.meter.Expired() || cq.clientID != id || cq.user != user {
		cq.meter = g.quotas.Meter(user, id, c.start)
		cq.user, cq.clientID = user, strings.Clone(id)
	}
	d := cq.meter.Throttle(c.start)
	if d > 0 {
		c.throttleMs = int32(min((d+time.Millisecond-1)/time.Millisecond, 1<<31-1))
	}
	return cq.meter, d
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

// deferThrottled serves req, the next request of a connection its quota
// throttled, once the throttle has passed, and reports whether it did so:
// the engine stops reading a throttled connection, and this holds back
// the requests it had read ahead (up to its in-flight limit), so a
// throttled client's requests all wait, as in Kafka, which reads one
// request of a connection at a time.
func (g *Gateway) deferThrottled(cs *connState, req *engine.Request) bool {
	if g.quotas == nil {
		return false
	}
	d := time.Until(cs.conn.ThrottledUntil())
	if d <= 0 {
		return false
	}
	time.AfterFunc(d, func() { g.submit(cs, req) })
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
