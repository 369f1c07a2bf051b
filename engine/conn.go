package engine

// What both engines do for a connection, whatever carries its bytes: admit
// it under MaxConnections, hand each complete frame to a Request and the
// handler, keep the requests in arrival order until their responses are
// written (the limits read the same counts), gather the consecutive
// completed responses at the head for one write, pop what a write
// completed, and count the close. The transport parts stay with each
// engine: the epoll loop's reads, epoll interest, writev and sweep
// (epoll_*_linux.go), and the net engine's reader and writer goroutines,
// sync.Cond and deadlines (net.go). inflight's fields belong to whoever owns
// the connection: the epoll loop, or the net connection's mu.

import (
	"context"
	"log/slog"
	"math"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// inflight is a connection's requests from dispatch until their response is
// written (or skipped), and the counts the limits read.
type inflight struct {
	slots    slots
	inBytes  int  // frame bytes of requests not yet completed
	outBytes int  // bytes of completed responses not yet written
	woff     int  // bytes of the head response already written (epoll's partial writes)
	closing  bool // no more reads; close once the slots drain
	closeWhy CloseReason
}

// admitConn counts a newly accepted connection against maxConns; false
// means it was refused (counted as such) and the caller must close it. It
// is counted before the close, so that a peer that sees the connection end
// also sees it counted.
func admitConn(open *atomic.Int64, n *counters, maxConns int) bool {
	if int(open.Add(1)) <= maxConns {
		return true
	}
	n.refused.Add(1)
	n.closes[ReasonMaxConnections].Add(1)
	open.Add(-1)
	return false
}

// takeRequest hands the framer's completed frame to a new Request of the
// connection info, completed through o.
func takeRequest(fr *framer, info *ConnInfo, o owner) *Request {
	fb, size := fr.take()
	r := getRequest()
	r.fbuf, r.frame = fb, (*fb)[:size:size]
	r.conn, r.owner = info, o
	return r
}

// admit queues r behind the connection's earlier requests.
func (q *inflight) admit(r *Request) {
	q.slots.push(r)
	q.inBytes += len(r.frame)
}

// serveRequest calls the handler, turning a panic into a protocol_error
// close of this connection only (docs/design/style.md habit 12).
func serveRequest(h Handler, lg *slog.Logger, r *Request) {
	defer func() {
		if p := recover(); p != nil {
			lg.Error("engine: handler panicked", "conn", r.conn.ID, "panic", p, "stack", string(debug.Stack()))
			r.Close(ReasonProtocolError, "engine: handler panicked")
		}
	}()
	h.Serve(r)
}

// overLimit reports whether the connection may not start another frame:
// MaxInFlight, MaxOutputBytes, or MaxInFlightBytes (which never stops the
// first request in flight).
func (q *inflight) overLimit(cfg *Config) bool {
	return q.slots.full() || q.outBytes > cfg.MaxOutputBytes ||
		(q.inBytes > cfg.MaxInFlightBytes && !q.slots.empty())
}

// pauseCause names what paused reads (Stats.Pauses); throttled: a
// ConnInfo.Throttle is in force.
func (q *inflight) pauseCause(cfg *Config, throttled bool) PauseCause {
	return pauseCause(q.outBytes > cfg.MaxOutputBytes, throttled, q.slots.full())
}

// startClosing marks the connection closing for why; false if it already
// was (the first reason stands).
func (q *inflight) startClosing(why CloseReason) bool {
	if q.closing {
		return false
	}
	q.closing, q.closeWhy = true, why
	return true
}

// settle records r's completion: its frame is released, its response
// counted, and Close or RespondThenClose start the connection's close. It
// reports whether r started it, so the engine stops reading.
func (q *inflight) settle(r *Request) bool {
	q.inBytes -= len(r.frame)
	r.releaseFrame()
	r.done = true
	switch r.kind {
	case compRespond:
		q.outBytes += r.outLen
		if r.closeAfter {
			// RespondThenClose: read nothing more; close once written.
			return q.startClosing(r.reason)
		}
	case compClose:
		return q.startClosing(r.reason)
	}
	return false
}

// popNoResponses pops the completed NoResponse requests at the head and
// returns how many.
func (q *inflight) popNoResponses() int {
	n := 0
	for !q.slots.empty() && q.slots.at(0).done && q.slots.at(0).kind == compNoResponse {
		putRequest(q.slots.pop())
		n++
	}
	return n
}

// closeAtHead returns the head request when it is a completed Close (the
// connection closes now that the responses before it are written), else nil.
func (q *inflight) closeAtHead() *Request {
	if q.slots.empty() {
		return nil
	}
	if r := q.slots.at(0); r.done && r.kind == compClose {
		return r
	}
	return nil
}

// gather appends to dst the pieces of the consecutive completed responses
// from the head (the head's from byte woff on), stopping at a request not
// yet completed, at a Close, or when dst holds max pieces. With whole, a
// response whose pieces would not all fit is left for the next write,
// unless it is the first (it is then gathered entirely, past max).
func (q *inflight) gather(dst [][]byte, max int, whole bool) [][]byte {
	for i := 0; i < q.slots.len() && len(dst) < max; i++ {
		r := q.slots.at(i)
		if !r.done || r.kind == compClose {
			break
		}
		if r.kind != compRespond {
			continue
		}
		off, limit := 0, max
		if i == 0 {
			off = q.woff
		}
		if whole {
			if len(dst) > 0 && len(dst)+2*len(r.splices)+1 > max {
				break // the next write takes it whole
			}
			limit = math.MaxInt
		}
		dst = r.segments(dst, off, limit)
	}
	return dst
}

// advance pops the requests whose responses n written bytes completed (and
// the completed NoResponse ones among and after them), keeping the offset
// of a partial write in woff; it reports whether it popped any.
func (q *inflight) advance(n int) bool {
	popped := false
	for !q.slots.empty() {
		r := q.slots.at(0)
		if !r.done || r.kind == compClose {
			break
		}
		if r.kind == compRespond {
			left := r.outLen - q.woff
			if n < left {
				q.woff += n
				q.outBytes -= n
				break
			}
			n -= left
			q.outBytes -= left
			q.woff = 0
		}
		putRequest(q.slots.pop())
		popped = true
	}
	return popped
}

// release frees the slots of a closed connection. Requests still owned by
// handlers release themselves on completion.
func (q *inflight) release() {
	for !q.slots.empty() {
		if r := q.slots.pop(); r.done {
			putRequest(r)
		}
	}
}

// countClose counts a close of connection info (open is the server's count
// of open connections, n the counters it was served under) and logs it at
// debug level.
func countClose(open *atomic.Int64, n *counters, lg *slog.Logger, info *ConnInfo, why CloseReason, msg string) {
	info.releaseIP()
	open.Add(-1)
	n.open.Add(-1)
	n.closes[why].Add(1)
	if lg.Enabled(context.Background(), slog.LevelDebug) {
		lg.Debug("engine: connection closed", "conn", info.ID, "remote", info.RemoteAddr,
			"reason", why.String(), "detail", msg)
	}
}

// awaitClosed waits until no connection is open or ctx ends (a Shutdown's
// drain), polling every 2 ms.
func awaitClosed(ctx context.Context, open *atomic.Int64) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for open.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// awaitDone waits for a shutdown already under way (done closed) or for ctx,
// for a second Shutdown call on either engine.
func awaitDone(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
