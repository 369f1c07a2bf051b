package engine

import (
	"crypto/tls"
	"net"
	"time"
)

// DefaultHandshakeTimeout bounds a TLS handshake when
// Listener.HandshakeTimeout is zero.
const DefaultHandshakeTimeout = 10 * time.Second

// Listener is a net.Listener with the name and security of a Kafka
// listener (docs/design/security.md §4). Pass it to Server.Serve: every
// connection it accepts gets ConnInfo.Listener = Name, and with TLS set
// the connection is served over TLS, its ConnInfo.TLS set once the
// handshake is done. A plain net.Listener passed to Serve is an unnamed
// plaintext listener.
//
// TLS connections are served by the net engine's reader and writer
// goroutines (crypto/tls needs a net.Conn); the epoll engine hands a TLS
// listener to a net engine of its own that shares its handler, limits,
// connection ids and counters, so one Server serves plaintext listeners on
// epoll and TLS listeners beside them.
type Listener struct {
	net.Listener
	// Name is the listener's name (Kafka's listener name, e.g. "SSL").
	Name string
	// TLS, when set, makes the listener's connections TLS. It must not be
	// modified after Serve.
	TLS *tls.Config
	// HandshakeTimeout bounds the TLS handshake, which runs on the
	// connection's own goroutine, never on the accept loop; a connection
	// that has not finished it by then is closed (ReasonTLSHandshake).
	// 0 = DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// AuthTimeout, when > 0, closes a connection of this listener that
	// long after it was accepted unless the handler called
	// ConnInfo.Authenticated first (a SASL listener's time to
	// authenticate). It is counted as an idle timeout.
	AuthTimeout time.Duration
	// MaxFrameBeforeAuth, when > 0, closes a connection of this listener
	// whose request frame declares more than this many bytes before the
	// handler called ConnInfo.Authenticated, before any buffer grows
	// (ReasonFrameTooLarge): Kafka's sasl.server.max.receive.size, "the
	// maximum receive size allowed before and during initial SASL
	// authentication", so that a client that has not authenticated cannot
	// make the server hold a frame of Config.MaxFrameSize.
	MaxFrameBeforeAuth int32
}

// listenerOf splits what Serve was given into the socket to accept on and
// the listener's name and TLS settings.
func listenerOf(ln net.Listener) (net.Listener, *Listener) {
	if l, ok := ln.(*Listener); ok {
		if l.HandshakeTimeout <= 0 {
			c := *l
			c.HandshakeTimeout = DefaultHandshakeTimeout
			return l.Listener, &c
		}
		return l.Listener, l
	}
	return ln, &Listener{Listener: ln}
}
