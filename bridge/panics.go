package bridge

import (
	"errors"
	"runtime/debug"
	"sync/atomic"

	"github.com/kiggy-io/kiggy/engine"
)

// Panics in handler code end the request that hit them, never the process.
// Handler code runs on the event loop (inline requests), on the workers, on
// overflow goroutines, after a parked Fetch wakes, in group callbacks (on
// the coordinator's timers or on another member's request) and on the
// fan-out goroutines of a Produce or Fetch; every one of those runs it
// through catch. A request whose handler panicked is closed: its connection
// closes once the responses before it are written (Kafka answers an
// unexpected exception with UNKNOWN_SERVER_ERROR, but a half-built response
// and the scratch state a panic leaves behind cannot be trusted; clients
// treat a lost connection as retriable). The connection's later requests are
// closed unserved, so each still completes exactly once and the engine's
// in-order response ring never waits for a response that will not come.

// errPartPanicked is what a fan-out's caller re-raises once its goroutines
// are done when one of them panicked: that panic was logged and counted
// where it happened, and the request is abandoned as a whole.
var errPartPanicked = errors.New("bridge: a concurrent partition operation panicked")

// catch runs fn, which does work of call c, and recovers a panic in it: the
// panic is logged once with its stack and counted under c's API (unless it
// is errPartPanicked, already logged). It reports whether fn panicked; the
// caller then decides what is left of c (abandon, or a fan-out's mark).
func (g *Gateway) catch(c *call, fn func()) (panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			panicked = true
			if p != errPartPanicked {
				g.panicked(c, p)
			}
		}
	}()
	fn()
	return false
}

// panicked logs and counts one recovered panic of c's handler code.
func (g *Gateway) panicked(c *call, p any) {
	k := c.hdr.APIKey
	if k >= 0 && int(k) < maxAPIKey {
		g.metrics.panics[k].Add(1)
	}
	g.cfg.Logger.Error("bridge: handler panicked; closing the connection",
		"api", k.String(), "conn", c.cs.conn.ID, "remote", c.cs.conn.RemoteAddr,
		"panic", p, "stack", string(debug.Stack()))
}

// invoke runs c's handler h under catch. It reports whether the call parked;
// ok is false when the handler panicked, and c is abandoned then.
func (g *Gateway) invoke(h handlerFunc, c *call) (parked, ok bool) {
	if g.catch(c, func() { parked = h(g, c) }) {
		g.abandon(c)
		return false, false
	}
	return parked, true
}

// answerParked completes parked call c (a group callback, on the
// coordinator's timer or another member's request) with the response build
// returns, building it under catch; after a panic c is abandoned instead.
func (g *Gateway) answerParked(c *call, build func() []byte) {
	var resp []byte
	if g.catch(c, func() { resp = build() }) {
		g.abandonParked(c)
		return
	}
	g.finishParked(c, resp)
}

// abandonParked abandons parked call c and continues its connection, whose
// queued requests are then closed in turn.
func (g *Gateway) abandonParked(c *call) {
	cs, seq := c.cs, c.seq
	g.abandon(c)
	g.resume(cs, seq)
}

// abandon ends a call whose handler code panicked: its request closes the
// connection, and the connection's later requests are closed unserved
// (serveOne). Its state is not pooled again: a panic may have left it
// inconsistent. Handler code completes its request last, and a group
// callback's guard ends before finishParked completes it, so the request
// abandon closes is still the handler's (a panic in finishParked itself,
// reached from a handler that got its callback synchronously, is the one
// case where it may not be).
func (g *Gateway) abandon(c *call) {
	c.cs.failed.Store(true)
	c.req.Close(engine.ReasonProtocolError, closeHandlerPanic)
}

// closeHandlerPanic is the close detail of a request whose handler
// panicked; the close counts under engine.ReasonProtocolError.
const closeHandlerPanic = "handler_panic"

// testPanicHook, set only by tests, is called at the points of handler code
// that no Log fault reaches (the group callbacks), to inject a panic there.
var testPanicHook atomic.Pointer[func(site string)]

// testPanic calls testPanicHook, if a test set one.
func testPanic(site string) {
	if f := testPanicHook.Load(); f != nil {
		(*f)(site)
	}
}
