package engine

import (
	"errors"
	"log/slog"
	"net/netip"
	"runtime"
	"time"
)

// Defaults applied by Config when a field is zero.
const (
	// DefaultMaxConnections bounds open connections per server.
	DefaultMaxConnections = 10000
	// DefaultMaxFrameSize is Kafka's socket.request.max.bytes default (100 MiB).
	DefaultMaxFrameSize = 100 << 20
	// DefaultMaxInFlight is the Java consumer's pipelining depth
	// (ConsumerUtils.CONSUMER_MAX_INFLIGHT_REQUESTS_PER_CONNECTION = 100), so
	// no stock client is ever throttled below the depth it chose itself.
	// Memory stays bounded by MaxInFlightBytes and MaxOutputBytes.
	DefaultMaxInFlight = 100
	// DefaultMaxInFlightBytes bounds the request frame bytes a connection may
	// have in flight before its reads pause.
	DefaultMaxInFlightBytes = 64 << 20
	// DefaultMaxOutputBytes bounds queued response bytes per connection.
	DefaultMaxOutputBytes = 16 << 20
	// DefaultIdleTimeout is Kafka's connections.max.idle.ms default.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultReadTimeout bounds the time one frame may take to arrive.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds the time one queued response may take to be
	// written.
	DefaultWriteTimeout = 30 * time.Second
)

// Hard bounds enforced by Config.validate.
const (
	// MaxLoops is the largest accepted Config.Loops.
	MaxLoops = 1024
	// maxFrameLimit is the largest accepted Config.MaxFrameSize (1 GiB): the
	// biggest pooled size class.
	maxFrameLimit = 1 << maxClassShift
	// maxInFlightLimit is the largest accepted Config.MaxInFlight.
	maxInFlightLimit = 1 << 16
)

// Config configures an engine. Its zero value means "all defaults"; every
// field is normalized once by the constructors.
type Config struct {
	// Loops is the number of epoll event loops; 0 = runtime.GOMAXPROCS(0),
	// the threads that can run them at once. The net engine ignores it.
	// Bounds: 0..MaxLoops.
	Loops int
	// MaxConnections bounds open connections; 0 = 10000. Connections beyond
	// it are accepted and closed at once, counted as refused and under
	// ReasonMaxConnections. Kafka equivalent: max.connections.
	MaxConnections int
	// MaxConnectionsPerIP bounds the open connections of one client IP
	// address (IPv4-mapped IPv6 addresses count as IPv4); 0 = no cap.
	// Connections beyond it are accepted and closed at once, counted as
	// refused and under ReasonMaxConnectionsPerIP. Kafka equivalent:
	// max.connections.per.ip (whose default is no cap too).
	MaxConnectionsPerIP int
	// MaxConnectionCreationRate bounds the connections the server accepts a
	// second, over all its listeners; 0 = no cap. The acceptor that takes a
	// connection over the rate waits its throttle (at most one RateWindow)
	// before serving it and accepting the next: the peers wait in the
	// listen backlog. Kafka equivalent: max.connection.creation.rate
	// (KIP-612).
	MaxConnectionCreationRate int
	// ConnectionCreationRatePerIP bounds the connections one client IP
	// address may open a second; 0 = no cap. A connection over it is not
	// served: it is held, unread, for its throttle (at most one
	// RateWindow) and then closed, counted as refused and under
	// ReasonConnectionRate, so that a client reconnecting in a loop waits
	// for each refusal. Kafka equivalent: the connection_creation_rate
	// quota of the default IP entity (KIP-612).
	ConnectionCreationRatePerIP int
	// ConnectionCreationRateOf, when set, gives each address its
	// connection creation rate instead of ConnectionCreationRatePerIP
	// (0 = no cap for that address), asked for each connection: Kafka's
	// connection_creation_rate quotas of single IP entities over the
	// default IP entity's, which an AlterClientQuotas may change at any
	// time (bridge.Gateway.ConnectionCreationRate).
	ConnectionCreationRateOf func(netip.Addr) float64
	// RateSamples and RateWindow are the sliding window the connection
	// creation rates are measured over; 0 = 11 samples of 1 s (Kafka's
	// quota.window.num and quota.window.size.seconds). The rate of a first
	// burst is taken over at least RateSamples−1 windows.
	RateSamples int
	RateWindow  time.Duration
	// MaxFrameSize bounds the declared size of a request frame in bytes,
	// excluding the 4-byte prefix; 0 = 100 MiB. A bigger or negative size
	// closes the connection before any buffer grows. Bounds: 0..1 GiB.
	// Kafka equivalent: socket.request.max.bytes.
	MaxFrameSize int32
	// MaxInFlight is the number of requests a connection may have between
	// arrival and response; 0 = 100 (the Java consumer's depth). Beyond it the
	// engine stops reading that connection until responses drain. Kafka
	// itself serves one request at a time per connection (socket muting).
	MaxInFlight int
	// MaxInFlightBytes bounds the request frame bytes a connection may hold
	// in flight; 0 = 64 MiB. Beyond it reads pause. A single frame bigger
	// than this (but within MaxFrameSize) is still accepted when nothing else
	// is in flight. Kafka equivalent (server-wide): queued.max.request.bytes.
	MaxInFlightBytes int
	// MaxOutputBytes bounds response bytes queued on a connection before its
	// reads pause; 0 = 16 MiB. Responses already being computed are still
	// queued, so the bound is soft by at most MaxInFlight responses.
	MaxOutputBytes int
	// IdleTimeout closes a connection with no frame in progress, no request
	// in flight and no output queued; 0 = 10 min. Kafka equivalent:
	// connections.max.idle.ms.
	IdleTimeout time.Duration
	// ReadTimeout closes a connection whose current frame has not fully
	// arrived this long after it started (slowloris); 0 = 30 s.
	ReadTimeout time.Duration
	// WriteTimeout closes a connection whose oldest queued response has not
	// been fully written this long after it was queued; 0 = 30 s.
	WriteTimeout time.Duration
	// Logger receives close reasons at debug level; nil = discard.
	Logger *slog.Logger

	// hookPaused, set by a test only, runs in the epoll loop's setInterest
	// after it decided that a connection is throttled: the test makes the
	// throttle end there (TestThrottleEndsWhilePausing).
	hookPaused func(*ConnInfo)
}

// Errors returned by constructors for an invalid Config.
var (
	// ErrConfig means a Config field is out of its documented bounds.
	ErrConfig = errors.New("engine: invalid config")
)

// normalize returns c with zero fields replaced by their defaults and an
// error if a field is outside its documented bounds.
func (c Config) normalize() (Config, error) {
	if c.Loops == 0 {
		c.Loops = runtime.GOMAXPROCS(0)
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxInFlightBytes == 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, c.validate()
}

// validate checks the bounds of a normalized Config.
func (c Config) validate() error {
	switch {
	case c.Loops < 0 || c.Loops > MaxLoops,
		c.MaxConnections < 0, c.MaxConnectionsPerIP < 0,
		c.MaxConnectionCreationRate < 0, c.ConnectionCreationRatePerIP < 0, c.RateSamples < 0, c.RateWindow < 0,
		c.MaxFrameSize < 0 || c.MaxFrameSize > maxFrameLimit,
		c.MaxInFlight < 0 || c.MaxInFlight > maxInFlightLimit,
		c.MaxInFlightBytes < 0,
		c.MaxOutputBytes < 0,
		c.IdleTimeout < 0, c.ReadTimeout < 0, c.WriteTimeout < 0:
		return ErrConfig
	}
	return nil
}

// sweepInterval is how often a loop checks its connections' timeouts: a
// quarter of the shortest timeout, between 5 ms and 500 ms, so a timeout
// fires at most 25% late and an idle server wakes at most twice a second.
func (c Config) sweepInterval() time.Duration {
	d := min(c.IdleTimeout, c.ReadTimeout, c.WriteTimeout) / 4
	return max(5*time.Millisecond, min(d, 500*time.Millisecond))
}
