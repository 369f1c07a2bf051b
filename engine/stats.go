package engine

import (
	"sync/atomic"
	"time"
)

// CloseReason says why the engine closed a connection. The set is small and
// fixed so metrics can pre-resolve one counter per reason.
type CloseReason uint8

// Close reasons.
const (
	// ReasonPeerClosed: the peer closed its side (read returned EOF).
	ReasonPeerClosed CloseReason = iota
	// ReasonIOError: a read or write failed (reset, broken pipe, ...).
	ReasonIOError
	// ReasonFrameTooLarge: a declared frame size exceeded MaxFrameSize
	// (docs/design/kafka-protocol.md §1.1: Kafka closes the connection when
	// a declared size is above socket.request.max.bytes).
	ReasonFrameTooLarge
	// ReasonNegativeSize: a declared frame size was negative
	// (docs/design/kafka-protocol.md §1.1: kiggy also closes on a negative
	// size).
	ReasonNegativeSize
	// ReasonIdleTimeout: nothing in progress for IdleTimeout.
	ReasonIdleTimeout
	// ReasonReadTimeout: a started frame did not complete within ReadTimeout.
	ReasonReadTimeout
	// ReasonWriteTimeout: a queued response was not written within
	// WriteTimeout.
	ReasonWriteTimeout
	// ReasonProtocolError: the handler closed the connection (Request.Close)
	// because of what the peer sent (a malformed or unsupported request), or
	// its code panicked.
	ReasonProtocolError
	// ReasonMaxConnections: refused because MaxConnections were open.
	ReasonMaxConnections
	// ReasonShutdown: closed by Shutdown.
	ReasonShutdown
	// ReasonTLSHandshake: the TLS handshake of a TLS listener's connection
	// failed or did not finish within the listener's HandshakeTimeout.
	ReasonTLSHandshake
	// ReasonAuthentication: closed after answering a failed SASL
	// authentication (Request.RespondThenClose), as Kafka does.
	ReasonAuthentication
	// ReasonMaxConnectionsPerIP: refused because MaxConnectionsPerIP
	// connections of the client's IP address were open.
	ReasonMaxConnectionsPerIP
	// ReasonConnectionRate: refused, after being held for its throttle,
	// because its IP address opened connections faster than
	// ConnectionCreationRatePerIP.
	ReasonConnectionRate
	// NumCloseReasons is the number of close reasons.
	NumCloseReasons
)

var reasonNames = [NumCloseReasons]string{
	ReasonPeerClosed:          "peer_closed",
	ReasonIOError:             "io_error",
	ReasonFrameTooLarge:       "frame_too_large",
	ReasonNegativeSize:        "negative_size",
	ReasonIdleTimeout:         "idle_timeout",
	ReasonReadTimeout:         "read_timeout",
	ReasonWriteTimeout:        "write_timeout",
	ReasonProtocolError:       "protocol_error",
	ReasonMaxConnections:      "max_connections",
	ReasonShutdown:            "shutdown",
	ReasonTLSHandshake:        "tls_handshake",
	ReasonAuthentication:      "authentication_failed",
	ReasonMaxConnectionsPerIP: "max_connections_per_ip",
	ReasonConnectionRate:      "connection_creation_rate",
}

// String returns the reason's metric label, e.g. "frame_too_large".
func (r CloseReason) String() string {
	if r < NumCloseReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// ParseCloseReason maps a label to its reason. Unknown labels map to
// ReasonProtocolError.
func ParseCloseReason(s string) CloseReason {
	for i, n := range reasonNames {
		if n == s {
			return CloseReason(i)
		}
	}
	return ReasonProtocolError
}

// PauseCause says which per-connection limit, or a quota's throttle, stopped
// reading a connection.
type PauseCause uint8

// Pause causes.
const (
	// PauseInFlight: MaxInFlight requests awaiting responses.
	PauseInFlight PauseCause = iota
	// PauseInFlightBytes: MaxInFlightBytes of request frames awaiting
	// responses.
	PauseInFlightBytes
	// PauseOutputBytes: MaxOutputBytes of responses queued, unwritten.
	PauseOutputBytes
	// PauseThrottle: the handler throttled the connection for a client
	// quota (ConnInfo.Throttle; Kafka's channel muting, KIP-219).
	PauseThrottle
	// NumPauseCauses is the number of pause causes.
	NumPauseCauses
)

var pauseNames = [NumPauseCauses]string{
	PauseInFlight:      "max_in_flight",
	PauseInFlightBytes: "max_in_flight_bytes",
	PauseOutputBytes:   "max_output_bytes",
	PauseThrottle:      "quota_throttle",
}

// String returns the cause's metric label: the limit's flag name with
// underscores, e.g. "max_in_flight", or "quota_throttle".
func (p PauseCause) String() string {
	if p < NumPauseCauses {
		return pauseNames[p]
	}
	return "unknown"
}

// pauseCause names what pauses a connection, given that something does:
// queued output first (a client that does not read is what matters most to
// an operator), then a quota's throttle (it holds the connection whatever
// completes), then the request count, else the request bytes.
func pauseCause(outOver, throttled, slotsFull bool) PauseCause {
	switch {
	case outOver:
		return PauseOutputBytes
	case throttled:
		return PauseThrottle
	case slotsFull:
		return PauseInFlight
	}
	return PauseInFlightBytes
}

// Stats is a snapshot of a server's counters.
type Stats struct {
	// Open is the number of connections open now.
	Open int64
	// Accepted counts connections accepted and served.
	Accepted uint64
	// Refused counts connections accepted and closed at once because
	// MaxConnections were open, or MaxConnectionsPerIP of the client's
	// address, and those closed after their throttle for
	// ConnectionCreationRatePerIP (also counted in Closes).
	Refused uint64
	// AcceptThrottles counts the connections an acceptor waited to serve
	// for MaxConnectionCreationRate, and AcceptThrottleTime the time it
	// waited.
	AcceptThrottles    uint64
	AcceptThrottleTime time.Duration
	// IPRateThrottles counts the connections refused for
	// ConnectionCreationRatePerIP, and IPRateThrottleTime the time they
	// were held before their close; IPRates is the number of addresses
	// whose rate is measured now.
	IPRateThrottles    uint64
	IPRateThrottleTime time.Duration
	IPRates            int
	// Requests counts complete request frames handed to the handler.
	Requests uint64
	// BytesIn and BytesOut count bytes read and written on connections.
	BytesIn, BytesOut uint64
	// Closes counts closed connections by reason.
	Closes [NumCloseReasons]uint64
	// Pauses counts the times a connection's reads stopped at a limit or
	// for a quota's throttle, by cause.
	Pauses [NumPauseCauses]uint64
}

// Closed returns the number of connections closed for reason r.
func (s *Stats) Closed(r CloseReason) uint64 {
	if r < NumCloseReasons {
		return s.Closes[r]
	}
	return 0
}

// counters are updated with atomics by one owner (a loop or a connection)
// and summed by Stats. Each owner has its own copy so the hot path never
// shares a cache line across loops.
type counters struct {
	open     atomic.Int64
	accepted atomic.Uint64
	refused  atomic.Uint64
	requests atomic.Uint64
	bytesIn  atomic.Uint64
	bytesOut atomic.Uint64
	closes   [NumCloseReasons]atomic.Uint64
	pauses   [NumPauseCauses]atomic.Uint64
	_        [64]byte
}

// addTo adds c's counts to s.
func (c *counters) addTo(s *Stats) {
	s.Open += c.open.Load()
	s.Accepted += c.accepted.Load()
	s.Refused += c.refused.Load()
	s.Requests += c.requests.Load()
	s.BytesIn += c.bytesIn.Load()
	s.BytesOut += c.bytesOut.Load()
	for i := range c.closes {
		s.Closes[i] += c.closes[i].Load()
	}
	for i := range c.pauses {
		s.Pauses[i] += c.pauses[i].Load()
	}
}
