package bridge

// The order of one connection's requests (docs/design/architecture.md §4).
//
// A Kafka broker reads one request of a connection at a time: it mutes the
// socket until the response is sent, so a connection's requests are served
// one after another, and a producer's batches reach each partition in the
// order it sent them. kiggy keeps that order, with one exception where a
// backend has round trips (Iggy): a Produce may start as soon as the Produce
// before it has put all its appends into their partitions' queues
// (coalesce.go), without waiting for their round trips. The queues keep
// the order that matters, each partition's appends in arrival order, and
// check idempotent batches at the head of each round against the producer
// window as it stands after every batch before them; the engine writes the
// responses in request order (engine/request.go). A producer with five
// requests in flight then has them in flight at the backend too, instead
// of each waiting for the slowest partition of every request before it.
//
// A transactional Produce's batches are admitted by the coordinator before
// they queue, under one hold of the transaction kept until its appends are
// done (fanout.go), so a commit's markers still come after them.
//
// Every other request, and a Produce behind one, starts only when every
// request before it has finished, as in Kafka. So does a Produce behind a
// transactional Produce in a cluster (a partition's leader admits its
// appends as they run), behind one whose partition is named twice, or on a
// throttled connection (quotas.go: the throttle holds back the requests
// read ahead).

import (
	"time"

	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/wire"
)

// mayStartLocked reports whether req, the connection's oldest request not
// started, may start now: nothing is running, or the newest running request
// is open and req is a Produce. Under cs.mu.
func (cs *connState) mayStartLocked(req *engine.Request) bool {
	if cs.running == 0 {
		return true
	}
	return cs.open && isProduce(req.Frame()) && !cs.throttled()
}

// throttled reports whether a quota has muted the connection.
func (cs *connState) throttled() bool {
	until := cs.conn.ThrottledUntil() // one atomic load when no quota throttled it
	return !until.IsZero() && time.Now().Before(until)
}

// startLocked counts a request of cs as started and returns its number.
// Under cs.mu.
func (g *Gateway) startLocked(cs *connState) uint64 {
	if cs.running > 0 {
		g.metrics.pipelinedProduces.Add(1)
	}
	cs.running++
	cs.started++
	cs.open = false
	return cs.started
}

// popLocked removes and returns the oldest queued request. Under cs.mu.
func (cs *connState) popLocked() *engine.Request {
	req := cs.queue[0]
	copy(cs.queue, cs.queue[1:])
	cs.queue[len(cs.queue)-1] = nil
	cs.queue = cs.queue[:len(cs.queue)-1]
	return req
}

// next counts request number done as finished and returns the connection's
// next request with its number when it may start now (nil otherwise: a
// later finish or open starts it).
func (g *Gateway) next(cs *connState, done uint64) (*engine.Request, uint64) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.running--
	if done == cs.started {
		cs.open = true
	}
	if len(cs.queue) == 0 || !cs.mayStartLocked(cs.queue[0]) {
		return nil, 0
	}
	req := cs.popLocked()
	return req, g.startLocked(cs)
}

// openProduce is called by the Produce c once all its appends are queued:
// the connection's next request starts now, on a worker, when it is a
// Produce; a Produce read later starts on arrival (Serve).
func (g *Gateway) openProduce(c *call) {
	if c.throttleMs > 0 {
		// The client owes a throttle (its request or byte quota): the
		// connection is muted when c is answered, and what it read
		// ahead waits for the throttle too (deferThrottled).
		return
	}
	cs := c.cs
	cs.mu.Lock()
	if c.seq != cs.started {
		cs.mu.Unlock()
		return // not the newest: only the newest opens the connection
	}
	cs.open = true
	var req *engine.Request
	var seq uint64
	if len(cs.queue) > 0 && cs.mayStartLocked(cs.queue[0]) {
		req = cs.popLocked()
		seq = g.startLocked(cs)
	}
	cs.mu.Unlock()
	if req != nil {
		g.submit(cs, req, seq)
	}
}

// isProduce reports whether frame is a Produce request.
func isProduce(frame []byte) bool { return frameKey(frame) == wire.KeyProduce }
