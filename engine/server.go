// Package engine is kiggy's network layer: it accepts Kafka client
// connections, cuts the byte stream into request frames (docs/design/kafka-protocol.md
// §1.1), hands each frame to a Handler, and writes the responses back
// strictly in request order per connection (docs/design/kafka-protocol.md
// §1.5), with limits, timeouts,
// backpressure and graceful drain.
//
// Two engines implement Server with the same semantics: NewEpoll (Linux:
// event loops over epoll, zero allocations per request in steady state) and
// NewNet (a reader and a writer goroutine per net.Conn; portable, and the
// base for TLS).
package engine

import (
	"context"
	"errors"
	"net"
)

// Server serves connections with one Handler.
type Server interface {
	// Serve accepts connections on ln until Shutdown and blocks until then.
	// It returns nil after a clean shutdown, or the accept error that
	// stopped it. Shutdown closes ln.
	Serve(ln net.Listener) error
	// Shutdown drains the server: it stops accepting (closing the
	// listeners, so new connections are refused), closes idle connections,
	// stops reading the others, lets their in-flight requests complete and
	// be answered, then closes them. It returns nil once every connection is
	// closed, or ctx.Err() if the deadline came first and forced the
	// remaining connections closed.
	Shutdown(ctx context.Context) error
	// Stats returns a snapshot of the server's counters.
	Stats() Stats
}

// Engine kinds accepted by New.
const (
	KindEpoll = "epoll"
	KindNet   = "net"
)

// Errors returned by servers.
var (
	// ErrServerClosed is returned by Serve after Shutdown has started.
	ErrServerClosed = errors.New("engine: server closed")
	// ErrUnsupported is returned by NewEpoll where epoll does not exist.
	ErrUnsupported = errors.New("engine: epoll engine needs Linux; use the net engine")
	// ErrListener is returned by the epoll Serve for a listener without a
	// socket file descriptor (a TLS or custom listener: use the net engine).
	ErrListener = errors.New("engine: epoll engine needs a *net.TCPListener or *net.UnixListener (TLS listeners need the net engine)")
	// ErrUnknownKind is returned by New for an unknown engine kind.
	ErrUnknownKind = errors.New("engine: unknown engine kind (want \"epoll\", \"net\" or \"\")")
)

// New returns a server of the given kind: "epoll", "net", or "" for
// DefaultKind.
func New(kind string, cfg Config, h Handler) (Server, error) {
	if kind == "" {
		kind = DefaultKind
	}
	switch kind {
	case KindEpoll:
		return NewEpoll(cfg, h)
	case KindNet:
		cfg, err := cfg.normalize()
		if err != nil {
			return nil, err
		}
		return newNet(cfg, h), nil
	}
	return nil, ErrUnknownKind
}
