// Package quota meters what each client uses and computes the throttle of
// a client over its quota, as Kafka's quotas do, over a sliding window of
// samples (Kafka's quota.window.num × quota.window.size.seconds):
//
//   - the request quota (KIP-124, `request_percentage`): a client is a
//     (user principal, client id) pair, its usage the time its requests
//     held the gateway, as a percentage of one thread; the gateway mutes
//     the connection of a client over it for the throttle time;
//   - the connection creation rates (KIP-612, `max.connection.creation.rate`
//     and the IP quota `connection_creation_rate`): the usage is a count of
//     connections, its quota a rate per second; the engine delays or
//     refuses the connections over it.
//
// See docs/design/quotas.md.
package quota

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults, Kafka's (QuotaConfig).
const (
	// DefaultSamples is quota.window.num.
	DefaultSamples = 11
	// DefaultWindow is quota.window.size.seconds.
	DefaultWindow = time.Second
	// DefaultMaxClients bounds the clients metered one by one; beyond it new
	// clients share one meter (Tracker.Meter).
	DefaultMaxClients = 100_000
)

// Config configures a Tracker.
type Config struct {
	// RequestPercentage is every client's quota, in percent of one thread
	// (Kafka's request_percentage for the default user and client id: 100
	// is one thread's time), its usage recorded as durations (Meter.Record).
	RequestPercentage float64
	// PerSecond, used when RequestPercentage is 0, is every client's quota
	// as a count per second, its usage recorded as counts (Meter.Add):
	// connections, for a connection creation rate. 0 for both means no
	// quota.
	PerSecond float64
	// Samples and Window are the sliding window: usage is measured over
	// Samples windows of Window each (0 = 11 and 1 s, Kafka's defaults).
	Samples int
	Window  time.Duration
	// MaxClients bounds the clients metered one by one (0 = 100,000).
	MaxClients int
}

// Tracker holds one Meter per client. It is safe for concurrent use.
type Tracker struct {
	bound   float64 // the default quota, in usage per ns (0: none)
	scale   float64 // usage per ns of a quota of 1
	samples int
	window  int64 // ns

	mu       sync.Mutex
	meters   map[Key]*Meter
	max      int
	overflow *Meter

	throttles     atomic.Uint64
	throttleNanos atomic.Uint64
}

// New returns a Tracker for cfg, or nil when cfg sets no quota: a nil
// Tracker meters nothing.
func New(cfg Config) *Tracker {
	unit := PerSecond
	q := cfg.PerSecond
	if cfg.RequestPercentage > 0 {
		unit, q = Percent, cfg.RequestPercentage
	}
	if q <= 0 {
		return nil
	}
	t := NewTracker(unit, cfg.Samples, cfg.Window, cfg.MaxClients)
	t.bound = q * t.scale
	return t
}

// Unit is what a Tracker's quotas count.
type Unit uint8

const (
	// Percent: a quota is a percentage of one thread's time (Kafka's
	// request_percentage), its usage recorded as durations (Meter.Record).
	Percent Unit = iota
	// PerSecond: a quota is a count a second (bytes, connections), its
	// usage recorded as counts (Meter.Add).
	PerSecond
)

// NewTracker returns a Tracker with no default quota, whose meters each
// get their quota from MeterOf, in unit: over samples windows of window
// (0 = 11 and 1 s, Kafka's defaults), at most maxClients (0 = 100,000)
// metered one by one.
func NewTracker(unit Unit, samples int, window time.Duration, maxClients int) *Tracker {
	if samples < 2 {
		samples = DefaultSamples
	}
	if window <= 0 {
		window = DefaultWindow
	}
	if maxClients <= 0 {
		maxClients = DefaultMaxClients
	}
	t := &Tracker{
		scale:   1 / float64(time.Second), // counts per ns
		samples: samples,
		window:  int64(window),
		meters:  map[Key]*Meter{},
		max:     maxClients,
	}
	if unit == Percent {
		t.scale = 1.0 / 100 // time used per time
	}
	t.overflow = t.newMeter(time.Now().UnixNano())
	return t
}

// Meter returns the meter of the client (user, clientID) under the
// tracker's default quota (New), creating it on first use.
func (t *Tracker) Meter(user, clientID string, now time.Time) *Meter {
	return t.meterOf(ClientKey(user, clientID), t.bound, now)
}

// MeterOf returns the meter of k whose quota is limit (in the tracker's
// Unit; Table.Limit), creating it on first use. k's names may alias a
// request frame: they are copied when kept. Past MaxClients a new client
// gets the shared overflow meter, so clients that invent ids share one
// quota instead of growing the tracker.
func (t *Tracker) MeterOf(k Key, limit float64, now time.Time) *Meter {
	return t.meterOf(k, limit*t.scale, now)
}

func (t *Tracker) meterOf(k Key, bound float64, now time.Time) *Meter {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.meters[k]
	if m == nil {
		if len(t.meters) >= t.max {
			m = t.overflow
		} else {
			m = t.newMeter(now.UnixNano())
			t.meters[Key{User: strings.Clone(k.User), ClientID: strings.Clone(k.ClientID), AllUsers: k.AllUsers, AllClientIDs: k.AllClientIDs}] = m
		}
	}
	m.bound.Store(math.Float64bits(bound))
	return m
}

func (t *Tracker) newMeter(now int64) *Meter {
	m := &Meter{t: t, starts: make([]int64, t.samples), used: make([]int64, t.samples)}
	for i := range m.starts {
		m.starts[i] = now
	}
	m.last.Store(now)
	return m
}

// Expire forgets the meters not used for a whole window span (Samples ×
// Window): their usage has aged out, so a new meter measures the same.
// A holder of an expired meter sees Meter.Expired and asks again.
func (t *Tracker) Expire(now time.Time) {
	if t == nil {
		return
	}
	cutoff := now.UnixNano() - int64(t.samples)*t.window
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, m := range t.meters {
		if m.last.Load() < cutoff {
			m.expired.Store(true)
			delete(t.meters, k)
		}
	}
}

// Stats is a snapshot of a Tracker's counters.
type Stats struct {
	// Clients is the number of clients metered one by one.
	Clients int
	// Throttles counts the throttles handed out, and ThrottleTime their sum.
	Throttles    uint64
	ThrottleTime time.Duration
}

// Stats returns the tracker's counters; zero for a nil Tracker.
func (t *Tracker) Stats() Stats {
	if t == nil {
		return Stats{}
	}
	t.mu.Lock()
	n := len(t.meters)
	t.mu.Unlock()
	return Stats{Clients: n, Throttles: t.throttles.Load(), ThrottleTime: time.Duration(t.throttleNanos.Load())}
}

// Meter is one client's usage: the gateway time of its requests in a ring
// of Samples windows (Kafka's SampledStat).
type Meter struct {
	t       *Tracker
	mu      sync.Mutex
	starts  []int64 // each sample's start, Unix ns
	used    []int64 // each sample's usage, ns
	cur     int
	last    atomic.Int64 // the last Record, Unix ns (Tracker.Expire)
	expired atomic.Bool
	bound   atomic.Uint64 // the quota, usage per ns, as float64 bits
}

// Expired reports whether the tracker forgot m (Tracker.Expire).
func (m *Meter) Expired() bool { return m.expired.Load() }

// Record adds d of gateway time used at now (a request quota).
func (m *Meter) Record(d time.Duration, now time.Time) { m.Add(int64(d), now) }

// Add adds n used at now: a count for a PerSecond quota (negative to take
// back what Add added, as Kafka un-records a connection it refuses).
func (m *Meter) Add(n int64, now time.Time) {
	ns := now.UnixNano()
	m.last.Store(ns)
	m.mu.Lock()
	if ns-m.starts[m.cur] >= m.t.window {
		// The current sample is full: the next one (the oldest) starts now.
		m.cur = (m.cur + 1) % len(m.starts)
		m.starts[m.cur], m.used[m.cur] = ns, 0
	}
	m.used[m.cur] += n
	m.mu.Unlock()
}

// Throttle returns how long the client must wait at now to be back within
// its quota: 0 when within it. Kafka's rule (QuotaUtils.throttleTime):
// with usage rate r over the measured span s and quota q, the client waits
// (r − q) / q × s, the time after which r over the longer span is q; and,
// as Kafka's request quota bounds it, at most one window.
func (m *Meter) Throttle(now time.Time) time.Duration {
	rate, span := m.rate(now.UnixNano())
	q := math.Float64frombits(m.bound.Load())
	if q <= 0 || rate <= q {
		return 0
	}
	d := min(time.Duration((rate-q)/q*float64(span)), time.Duration(m.t.window))
	m.t.throttles.Add(1)
	m.t.throttleNanos.Add(uint64(d))
	return d
}

// rate is the usage over the samples (a fraction of one thread) and the
// span it was measured over. As in Kafka's Rate, samples older than the
// whole span are dropped, and the span is at least Samples−1 windows, so a
// client's first burst is averaged over that much time rather than judged
// at once.
func (m *Meter) rate(now int64) (float64, int64) {
	w := m.t.window
	full := int64(len(m.starts)) * w
	m.mu.Lock()
	var total int64
	oldest := now
	for i, start := range m.starts {
		if now-start >= full {
			m.starts[i], m.used[i] = now, 0 // obsolete
			continue
		}
		total += m.used[i]
		oldest = min(oldest, start)
	}
	m.mu.Unlock()
	span := now - oldest
	if minSpan := int64(len(m.starts)-1) * w; span < minSpan {
		span = minSpan
	}
	return float64(total) / float64(span), span
}
