package engine

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/quota"
)

// connRates applies the connection creation rates of KIP-612:
// Config.MaxConnectionCreationRate (Kafka's max.connection.creation.rate),
// which delays the acceptor, and Config.ConnectionCreationRatePerIP (the
// connection_creation_rate quota of Kafka's default IP entity), which
// refuses a connection after holding it for its throttle. Both are
// measured as Kafka's connection rate sensors are (quota.Meter: a sliding
// window of samples, a throttle of (r − q)/q × span bounded by one
// window). The epoll engine and the net engine serving its TLS listeners
// share one.
//
// One difference from Kafka's ConnectionQuotas: the IP rate is checked
// first, so that a connection refused for its address never makes the
// acceptor wait for the server-wide rate (Kafka waits, then takes the
// connection back from the server-wide rate).
type connRates struct {
	server *quota.Meter             // nil: no server-wide cap
	ips    *quota.Tracker           // nil: no per-IP cap
	rateOf func(netip.Addr) float64 // each address's rate (Config.ConnectionCreationRateOf); nil with ips
	span   int64                    // RateSamples × RateWindow, ns: how long an idle IP's meter is kept

	nextExpire atomic.Int64 // Unix ns of the next ips.Expire
	// held counts refused connections held for their throttle; past
	// maxHeld (MaxConnections) a refused connection is closed at once, so
	// holding them never runs the process out of descriptors.
	held    atomic.Int64
	maxHeld int64

	acceptThrottles, acceptThrottleNanos atomic.Uint64
	ipThrottles, ipThrottleNanos         atomic.Uint64
}

func newConnRates(cfg Config) *connRates {
	r := &connRates{maxHeld: int64(cfg.MaxConnections)}
	samples, window := cfg.RateSamples, cfg.RateWindow
	if samples < 2 {
		samples = quota.DefaultSamples
	}
	if window <= 0 {
		window = quota.DefaultWindow
	}
	r.span = int64(samples) * int64(window)
	if cfg.MaxConnectionCreationRate > 0 {
		t := quota.New(quota.Config{PerSecond: float64(cfg.MaxConnectionCreationRate), Samples: samples, Window: window, MaxClients: 1})
		r.server = t.Meter("", "", time.Now())
	}
	if r.rateOf = cfg.ConnectionCreationRateOf; r.rateOf == nil && cfg.ConnectionCreationRatePerIP > 0 {
		rate := float64(cfg.ConnectionCreationRatePerIP)
		r.rateOf = func(netip.Addr) float64 { return rate }
	}
	if r.rateOf != nil {
		r.ips = quota.NewTracker(quota.PerSecond, samples, window, 0)
	}
	return r
}

// acceptDelay records one connection in the server-wide rate and returns
// how long the acceptor waits before serving it: 0 within the rate.
func (r *connRates) acceptDelay(now time.Time) time.Duration {
	if r.server == nil {
		return 0
	}
	r.server.Add(1, now)
	d := r.server.Throttle(now)
	if d > 0 {
		r.acceptThrottles.Add(1)
		r.acceptThrottleNanos.Add(uint64(d))
	}
	return d
}

// ipThrottle records one connection of ip and returns 0 when it is within
// ip's rate. A positive throttle refuses it: the connection is taken back
// out of the rate (as Kafka does: it was not accepted), and the caller
// passes the throttle to hold. An invalid address (a Unix socket) is
// never throttled.
func (r *connRates) ipThrottle(ip netip.Addr, now time.Time) time.Duration {
	if r.ips == nil || !ip.IsValid() {
		return 0
	}
	if ns := now.UnixNano(); ns >= r.nextExpire.Load() {
		r.nextExpire.Store(ns + r.span)
		r.ips.Expire(now)
	}
	rate := r.rateOf(ip)
	if rate <= 0 {
		return 0
	}
	m := r.ips.MeterOf(quota.ClientKey("", ip.String()), rate, now)
	m.Add(1, now)
	d := m.Throttle(now)
	if d > 0 {
		m.Add(-1, now)
		r.ipThrottles.Add(1)
		r.ipThrottleNanos.Add(uint64(d))
	}
	return d
}

// hold keeps a refused connection open, unread, for d and then closes it
// (Kafka's delayed close of a throttled connection: the client learns of
// the refusal only then); at once when maxHeld are held already. The
// refusal is counted in n now.
func (r *connRates) hold(d time.Duration, closeFn func(), n *counters) {
	n.refused.Add(1)
	n.closes[ReasonConnectionRate].Add(1)
	if r.held.Add(1) > r.maxHeld {
		r.held.Add(-1)
		closeFn()
		return
	}
	time.AfterFunc(d, func() {
		closeFn()
		r.held.Add(-1)
	})
}

// addTo adds the rates' counters to s.
func (r *connRates) addTo(s *Stats) {
	s.AcceptThrottles = r.acceptThrottles.Load()
	s.AcceptThrottleTime = time.Duration(r.acceptThrottleNanos.Load())
	s.IPRateThrottles = r.ipThrottles.Load()
	s.IPRateThrottleTime = time.Duration(r.ipThrottleNanos.Load())
	s.IPRates = r.ips.Stats().Clients
}
