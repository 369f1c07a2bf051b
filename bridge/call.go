package bridge

import (
	"time"

	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/quota"
	"github.com/kiggy-io/kiggy/wire"
)

// Writing a handler.
//
// A handler serves one Kafka API: a method
//
//	func (g *Gateway) deleteGroups(c *call) (parked bool)
//
// in a file of its own named by its key (42_delete_groups.go), which
// registers it from init with handle (gateway.go):
//
//	func init() { handle(wire.KeyDeleteGroups, (*Gateway).deleteGroups) }
//
// The gateway calls it once per request, in the connection's arrival order,
// after the header is parsed and the version checked against wire.APIs. It
// gets:
//
//   - c.hdr: the request header (API key, version, correlation id);
//   - c.body: the request body, a view into the frame, valid until the
//     request completes;
//   - c.state: pooled scratch space (state.go). Decode into a request struct
//     kept there and build the response in one, so the steady state
//     allocates nothing (decodeOrClose's and respond's arguments escape: a
//     response in a local variable costs an allocation);
//   - c.inline: true when it runs on the event loop (only on a backend that
//     declares Capabilities.NonBlocking, only for a small frame, and never
//     for the group coordinator's APIs, offLoopKeys in gateway.go).
//
// It decodes with decodeOrClose, which closes the connection on a malformed
// body as Kafka does; counts the response's error codes with
// resp.CountErrors(g.errorCounter(c)); answers with respond (c.req.Respond
// for a response it appends by hand); and returns false. Completing the
// request is its last act, exactly once.
//
// Two ways out of the simple shape:
//
//   - Offload. Work too slow for the event loop (decompression): return
//     g.offload(c). The handler is called again on a worker with c.resumed
//     set; the request is decoded already and must not be decoded again.
//   - Park. A request that has to wait (a long-polling Fetch, a JoinGroup
//     waiting for its generation) registers its wake-up and returns true,
//     holding no loop and no worker. Whoever completes it later either
//     answers it with g.answerParked / g.finishParked, or runs the handler
//     again on a worker with g.requeue (c.resumed set).
//
// Every goroutine that runs handler code runs it under g.catch (panics.go),
// so a panic closes only its own connection. docs/design/adding-an-api.md
// lists the rest of adding an API (codec, tests, docs).

// handlerFunc serves one decoded request. It returns true when it parked the
// request (it will complete it later and then call Gateway.resume).
type handlerFunc func(g *Gateway, c *call) (parked bool)

// call is one request being served.
type call struct {
	cs     *connState
	req    *engine.Request
	seq    uint64 // req's number among its connection's requests (pipeline.go)
	hdr    wire.RequestHeader
	body   []byte
	state  *state
	inline bool
	// resumed is set when the handler runs again for the same request (after
	// offload, or after a parked call's wake-up): the request is decoded.
	resumed bool
	// start is when the gateway first saw the request (latency metric).
	start time.Time
	// throttleMs is the quota throttle its response reports (quotas.go).
	throttleMs int32
}

// decoder is a wire request: Decode parses a body of a given version.
type decoder interface {
	Decode(body []byte, version int16) error
}

// decodeOrClose is a handler's prologue: it decodes c's body into r at the
// request's version, or closes the connection with protocol_error (Kafka
// closes it on a request it cannot parse) and reports false; the handler
// then returns false at once.
func decodeOrClose[R decoder](c *call, r R) bool {
	if err := r.Decode(c.body, c.hdr.APIVersion); err != nil {
		c.req.Close(engine.ReasonProtocolError, err.Error())
		return false
	}
	return true
}

// appender is a wire response: AppendTo appends its body at a version.
type appender interface {
	AppendTo(dst []byte, version int16) []byte
}

// respond is a handler's epilogue: it completes c with resp, encoded at the
// request's version behind the response header.
func respond[R appender](c *call, resp R) {
	buf := c.responseBuffer()
	n := len(buf)
	buf = resp.AppendTo(buf, c.hdr.APIVersion)
	c.putThrottle(buf, n)
	c.req.Respond(buf)
}

// responseHeaderLen is the length of what responseBuffer returns: the
// bytes the engine reserves in front of a response (its size) and c's
// response header.
func (c *call) responseHeaderLen() int {
	var hdr [16]byte
	return len(c.req.ResponseBuffer()) + len(wire.AppendResponseHeader(hdr[:0], c.hdr.APIKey, c.hdr.APIVersion, c.hdr.CorrelationID))
}

// responseBuffer returns the engine's response buffer with c's response
// header already appended.
func (c *call) responseBuffer() []byte {
	buf := c.req.ResponseBuffer()
	return wire.AppendResponseHeader(buf, c.hdr.APIKey, c.hdr.APIVersion, c.hdr.CorrelationID)
}

// offload moves a call that started inline onto a worker, where its handler
// runs again with c.resumed set; the connection's later requests wait for
// it. The handler returns what offload returns.
func (g *Gateway) offload(c *call) (parked bool) {
	g.requeue(c)
	return true
}

// requeue runs c's handler again on a worker, with c.resumed set: the hand-off
// of an offloaded call, and of a parked call that woke up.
func (g *Gateway) requeue(c *call) {
	c.inline, c.resumed = false, true
	select {
	case g.work <- task{c: c}:
	default:
		go g.runOffloaded(c) // overload: more goroutines, never a blocked caller
	}
}

// runOffloaded runs a requeued call's handler and, unless it parks again,
// continues its connection.
func (g *Gateway) runOffloaded(c *call) {
	st := c.state
	cs, seq := c.cs, c.seq
	h := g.handler(c.hdr.APIKey)
	var meter *quota.Meter
	if !quotaExempt(c.hdr.APIKey) {
		meter = cs.quota.meter // charged in serveOne (nil: no quota); this is the rest of its time
	}
	start := time.Now()
	parked, ok := g.invoke(h, c)
	g.chargeCall(cs, meter, start, 0, false)
	if !parked {
		if ok {
			g.observe(c)
			g.putState(st)
		}
		g.resume(cs, seq)
	}
}

// finishParked completes a parked call with resp (already encoded) and
// continues its connection.
func (g *Gateway) finishParked(c *call, resp []byte) {
	cs, seq := c.cs, c.seq
	if c.throttleMs > 0 {
		c.putThrottle(resp, c.responseHeaderLen())
	}
	c.req.Respond(resp)
	g.observe(c)
	g.putState(c.state)
	g.resume(cs, seq)
}
