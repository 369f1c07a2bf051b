package engine

import (
	"crypto/tls"
	"encoding/binary"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Handler serves Kafka requests. Serve is called on an event loop (or a
// connection's reader goroutine in the net engine) and must not block: it
// either completes the request inline or hands it to another goroutine.
type Handler interface {
	Serve(req *Request)
}

// Drainer is a Handler told when its server starts to drain (Shutdown), so
// that it answers the requests it holds parked (long polls, group joins)
// at once instead of the drain waiting for them. It may be told more than
// once.
type Drainer interface {
	Draining()
}

// draining tells h, when it is a Drainer, that its server drains.
func draining(h Handler) {
	if d, ok := h.(Drainer); ok {
		d.Draining()
	}
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(req *Request)

// Serve calls f(req).
func (f HandlerFunc) Serve(req *Request) { f(req) }

// ConnInfo describes a connection. It is stable for the connection's life
// and may be kept after it (it is never reused).
type ConnInfo struct {
	// ID is unique per server, starting at 1.
	ID uint64
	// RemoteAddr and LocalAddr are "ip:port" strings.
	RemoteAddr string
	LocalAddr  string
	// Listener is the name of the listener the connection came in on
	// (Kafka's listener name, such as "PLAINTEXT" or "SASL_SSL"); "" on a
	// server that serves one unnamed listener.
	Listener string
	// TLS is the connection's TLS state once its handshake is done; nil on
	// a plaintext connection.
	TLS *tls.ConnectionState

	closed atomic.Bool
	// ips and ip: the per-IP count the connection holds (perip.go); nil
	// when not counted. Released once, by the connection's close.
	ips *ipCounts
	ip  netip.Addr
	// authDeadline is when the connection is closed unless Authenticated
	// is called (Listener.AuthTimeout), in Unix nanoseconds; 0 = never.
	authDeadline atomic.Int64
	// authenticated: Authenticated was called (Listener.MaxFrameBeforeAuth
	// no longer applies).
	authenticated atomic.Bool
	// throttleEnd is when a quota throttle (Throttle) ends, in Unix
	// nanoseconds; 0 = none in force. Whoever sees it passed resets it to
	// 0, so an unthrottled connection's check stays one atomic load.
	throttleEnd atomic.Int64
	// engineNanos is the loop time spent on the connection (EngineTime).
	engineNanos atomic.Int64
}

// Authenticated tells the engine that the connection authenticated: the
// listener's AuthTimeout and MaxFrameBeforeAuth no longer apply to it.
func (c *ConnInfo) Authenticated() {
	c.authDeadline.Store(0)
	c.authenticated.Store(true)
}

// authExpired reports whether the connection passed its AuthTimeout
// without authenticating.
func (c *ConnInfo) authExpired(nowUnixNano int64) bool {
	d := c.authDeadline.Load()
	return d != 0 && nowUnixNano > d
}

// startAuthClock arms the listener's AuthTimeout on a new connection.
func (c *ConnInfo) startAuthClock(d time.Duration) {
	if d > 0 {
		c.authDeadline.Store(time.Now().Add(d).UnixNano())
	}
}

// maxThrottle bounds one Throttle: Kafka's throttle_time_ms is an int32 of
// milliseconds, and the bound keeps the end's Unix nanoseconds in range.
const maxThrottle = math.MaxInt32 * time.Millisecond

// Throttle stops reading the connection's requests until d from now
// (Kafka's channel muting for a quota violation, KIP-219): requests already
// read are still served and their responses written, but no further frame
// is started until then. It may be called from any goroutine, at any time
// (also after the request's Serve returned, or after the connection
// closed), any number of times: the later of the current and the new end
// wins. d <= 0 does nothing; d is capped at math.MaxInt32 milliseconds.
//
// An engine notices a throttle set off its own goroutine at the latest
// when it next reads the connection; one set inside Serve holds from the
// next frame on.
func (c *ConnInfo) Throttle(d time.Duration) {
	if d <= 0 {
		return
	}
	end := time.Now().Add(min(d, maxThrottle)).UnixNano()
	for {
		cur := c.throttleEnd.Load()
		if cur >= end || c.throttleEnd.CompareAndSwap(cur, end) {
			return
		}
	}
}

// EngineTime returns the time the engine has spent on the connection so
// far (Kafka counts its network threads' time in a client's request quota,
// KIP-257): on the epoll engine, reading and framing its requests, calling
// Serve for them, and writing its responses; on the net engine, whose
// reads and writes block in the runtime, the dispatch of each frame, its
// Serve call included.
func (c *ConnInfo) EngineTime() time.Duration { return time.Duration(c.engineNanos.Load()) }

// ThrottledUntil returns when the connection's Throttle ends; the zero
// time when none is in force.
func (c *ConnInfo) ThrottledUntil() time.Time {
	if end := c.mutedUntil(); end != 0 {
		return time.Unix(0, end)
	}
	return time.Time{}
}

// mutedUntil returns the end of the Throttle in force, in Unix
// nanoseconds, or 0. It is on the engines' read paths: one atomic load when
// no throttle was set (or the last one was seen passed), the clock only
// while one is.
func (c *ConnInfo) mutedUntil() int64 {
	end := c.throttleEnd.Load()
	if end == 0 {
		return 0
	}
	if end > time.Now().UnixNano() {
		return end
	}
	// Passed: back to one load. A CAS, so a later Throttle is not lost.
	c.throttleEnd.CompareAndSwap(end, 0)
	return 0
}

// Closed reports whether the engine has closed the connection. A handler
// holding a long poll may use it to give up early; completing a request of a
// closed connection is still required and simply releases it.
func (c *ConnInfo) Closed() bool { return c.closed.Load() }

// completion is how a handler finished a request.
type completion uint8

const (
	compRespond completion = iota
	compNoResponse
	compClose
)

// Request states. A request in a pool is stFree. The engine sets stServing
// before Serve; after Serve returns it moves stServing -> stAsync. The
// completing call moves stServing -> stInline (the engine then finishes the
// request itself after Serve returns, no queue, no wake-up) or stAsync ->
// stDone (the completing goroutine hands it to its owner).
const (
	stFree uint32 = iota
	stServing
	stAsync
	stInline
	stDone
)

// owner receives requests completed off the serving goroutine.
type owner interface {
	complete(r *Request)
}

// defaultResponseBuffer is the capacity of ResponseBuffer: big enough for
// every metadata-class response; bigger ones use ResponseBufferSize.
const defaultResponseBuffer = 4 << 10

// Request is one complete request frame. It is owned by the handler from
// Serve until exactly one of Respond, NoResponse or Close is called (from
// any goroutine); after that it must not be used. A second completion call
// is ignored.
//
// Buffer ownership: the frame buffer belongs to the Request from arrival
// until the engine processes its completion, then returns to its pool. The
// response buffer belongs to the handler from ResponseBuffer until Respond,
// then to the engine until written.
type Request struct {
	// Set by the engine before Serve; immutable while the handler owns it.
	frame []byte
	fbuf  *[]byte
	conn  *ConnInfo
	owner owner

	// Written by the completing call, read by the owner after the state
	// transition that publishes them.
	rbuf *[]byte
	out  []byte
	// splices are bytes written inside out without being copied into it
	// (RespondSpliced), in At order; outLen is the whole response's
	// length, out's and the splices' together.
	splices []Splice
	outLen  int
	kind    completion
	reason  CloseReason
	msg     string
	// closeAfter: RespondThenClose, close with reason once out is written.
	closeAfter bool
	claimed    atomic.Bool
	state      atomic.Uint32

	// Owned by the connection's owner (loop or net connection).
	done bool // completion processed; the slot may be written in order
}

var requestPool = sync.Pool{New: func() any { return new(Request) }}

// getRequest returns a cleared Request from the pool.
func getRequest() *Request {
	r := requestPool.Get().(*Request)
	r.state.Store(stServing)
	return r
}

// putRequest releases r's buffers and returns it to the pool. Forbidden
// after: any use of r.
func putRequest(r *Request) {
	putBuf(r.fbuf)
	putBuf(r.rbuf)
	r.unpinSplices()
	r.frame, r.fbuf, r.rbuf, r.out, r.outLen = nil, nil, nil, nil, 0
	r.conn, r.owner, r.msg = nil, nil, ""
	r.kind, r.reason, r.done, r.closeAfter = compRespond, 0, false, false
	r.claimed.Store(false)
	r.state.Store(stFree)
	requestPool.Put(r)
}

// releaseFrame returns the frame buffer to its pool once the request is
// complete; the frame is invalid from then on.
func (r *Request) releaseFrame() {
	putBuf(r.fbuf)
	r.fbuf, r.frame = nil, nil
}

// Frame returns the request bytes without the 4-byte size prefix. It is valid
// until the request is completed.
func (r *Request) Frame() []byte { return r.frame }

// Conn returns the connection the request arrived on.
func (r *Request) Conn() *ConnInfo { return r.conn }

// ResponseBuffer returns a pooled buffer with 4 bytes reserved (len 4) for
// the size prefix, capacity 4 KiB. Append the response header and body to it
// and pass the result to Respond. Calling it again returns the same buffer,
// reset to len 4.
func (r *Request) ResponseBuffer() []byte {
	if r.rbuf == nil {
		r.rbuf = getBuf(defaultResponseBuffer)
	}
	return (*r.rbuf)[:4]
}

// ResponseBufferSize is ResponseBuffer with room for at least n bytes after
// the reserved 4, for responses whose size is known up front (Fetch).
func (r *Request) ResponseBufferSize(n int) []byte {
	if n < 0 || n > math.MaxInt32 {
		n = 0
	}
	if r.rbuf != nil && cap(*r.rbuf) < n+4 {
		putBuf(r.rbuf)
		r.rbuf = nil
	}
	if r.rbuf == nil {
		r.rbuf = getBuf(max(n+4, defaultResponseBuffer))
	}
	return (*r.rbuf)[:4]
}

// GrowResponse returns resp with room for at least n more bytes. resp must be
// the slice ResponseBuffer or ResponseBufferSize returned, with bytes
// appended (or an earlier result of GrowResponse). When it lacks the room,
// its contents move to a pooled buffer of at least twice its capacity and the
// request's previous buffer returns to the pool, so a response that outgrows
// its first guess (a Fetch of many full partitions) costs pooled, already
// faulted-in memory rather than fresh zeroed allocations as append's growth
// would. Forbidden after: any use of the resp passed in, when the result's
// backing array differs.
func (r *Request) GrowResponse(resp []byte, n int) []byte {
	if n <= cap(resp)-len(resp) {
		return resp
	}
	nb := getBuf(max(len(resp)+n, 2*cap(resp)))
	out := append((*nb)[:0], resp...)
	putBuf(r.rbuf)
	r.rbuf = nb
	return out
}

// Respond completes the request with resp: a ResponseBuffer with the
// response header and body appended (it may have grown past the pooled
// buffer; the engine then writes the grown slice). The engine backfills the
// size and writes the response after those of all earlier requests of the
// connection. resp must not be used after Respond. A resp shorter than 4
// bytes or longer than MaxInt32 closes the connection as protocol_error.
func (r *Request) Respond(resp []byte) {
	if !r.claimed.CompareAndSwap(false, true) {
		return
	}
	if len(resp) < 4 || len(resp)-4 > math.MaxInt32 {
		r.kind, r.reason, r.msg = compClose, ReasonProtocolError, "engine: response without room for its size"
	} else {
		binary.BigEndian.PutUint32(resp, uint32(len(resp)-4))
		r.kind, r.out, r.outLen = compRespond, resp, len(resp)
	}
	r.finish()
}

// Splice is bytes a response carries without their being copied into its
// buffer (RespondSpliced): Data is written before the byte at offset At of
// the response buffer (At = len(resp): after it), and Pin, when not nil,
// is unpinned once the engine no longer needs Data: after the response is
// written, or when it never will be (the connection closed).
type Splice struct {
	At   int
	Data []byte
	Pin  Unpinner
}

// Unpinner is a Splice's owner, told when its bytes are no longer read.
type Unpinner interface {
	Unpin()
}

// MaxSplices bounds the splices of one response; more close the connection
// as a handler error (each is an iovec of a writev, and IOV_MAX is 1024).
const MaxSplices = 4096

// RespondSpliced completes the request as Respond does, with the bytes of
// splices written inside resp at their offsets (in rising At order, each
// within [4, len(resp)]): a large response of bytes the handler holds
// elsewhere (a Fetch answered from shared batches) is written with one
// writev instead of being copied into resp first. The size prefix counts
// resp and the splices. splices is copied; the pins pass to the engine,
// which unpins each exactly once, also when the response is never written.
func (r *Request) RespondSpliced(resp []byte, splices []Splice) {
	if !r.claimed.CompareAndSwap(false, true) {
		for _, sp := range splices {
			if sp.Pin != nil {
				sp.Pin.Unpin()
			}
		}
		return
	}
	r.splices = append(r.splices[:0], splices...)
	total, at := len(resp), 4
	ok := len(resp) >= 4 && len(splices) <= MaxSplices
	for _, sp := range splices {
		ok = ok && sp.At >= at && sp.At <= len(resp)
		at = sp.At
		total += len(sp.Data)
	}
	if !ok || total-4 > math.MaxInt32 {
		r.kind, r.reason, r.msg = compClose, ReasonProtocolError, "engine: spliced response out of bounds"
	} else {
		binary.BigEndian.PutUint32(resp, uint32(total-4))
		r.kind, r.out, r.outLen = compRespond, resp, total
	}
	r.finish()
}

// unpinSplices releases the splices' pins, once.
func (r *Request) unpinSplices() {
	for i := range r.splices {
		if p := r.splices[i].Pin; p != nil {
			p.Unpin()
		}
		r.splices[i] = Splice{}
	}
	r.splices = r.splices[:0]
}

// segments appends to dst the pieces of the response from byte off on, in
// order (out's runs and the splices between them, none empty), at most max
// of them; it returns dst.
func (r *Request) segments(dst [][]byte, off, max int) [][]byte {
	prev := 0
	emit := func(b []byte) {
		if len(dst) >= max {
			return
		}
		if off >= len(b) {
			off -= len(b)
			return
		}
		dst = append(dst, b[off:])
		off = 0
	}
	for i := range r.splices {
		sp := &r.splices[i]
		if prev < sp.At {
			emit(r.out[prev:sp.At])
		}
		if len(sp.Data) > 0 {
			emit(sp.Data)
		}
		prev = sp.At
	}
	if prev < len(r.out) {
		emit(r.out[prev:])
	}
	return dst
}

// RespondThenClose completes the request with resp, as Respond, and then
// closes the connection once resp is written (after the responses of all
// earlier requests): nothing more is read from it. The close is counted under
// reason. A failed SASL authentication ends so in Kafka (its
// SaslServerAuthenticator sends the error, then closes the channel).
func (r *Request) RespondThenClose(resp []byte, reason CloseReason) {
	if reason >= NumCloseReasons {
		reason = ReasonProtocolError
	}
	if !r.claimed.CompareAndSwap(false, true) {
		return
	}
	if len(resp) < 4 || len(resp)-4 > math.MaxInt32 {
		r.kind, r.reason, r.msg = compClose, ReasonProtocolError, "engine: response without room for its size"
	} else {
		binary.BigEndian.PutUint32(resp, uint32(len(resp)-4))
		r.kind, r.out, r.outLen, r.reason, r.closeAfter = compRespond, resp, len(resp), reason, true
	}
	r.finish()
}

// NoResponse completes the request without writing anything, as for an
// acks=0 Produce (docs/design/kafka-protocol.md §1.5: "acks=0 Produce gets
// no response at all"). Its place in the response order is released in order.
func (r *Request) NoResponse() {
	if !r.claimed.CompareAndSwap(false, true) {
		return
	}
	r.kind = compNoResponse
	r.finish()
}

// Close completes the request by closing the connection once the responses
// of all earlier requests are written; later requests are dropped. The close
// is counted under reason (kiggy_connections_closed_total{reason}); detail,
// which may be empty, only goes to the debug log (a handler's own cause,
// such as "unsupported_version", under ReasonProtocolError).
func (r *Request) Close(reason CloseReason, detail string) {
	if !r.claimed.CompareAndSwap(false, true) {
		return
	}
	if reason >= NumCloseReasons {
		reason = ReasonProtocolError
	}
	r.kind, r.reason, r.msg = compClose, reason, detail
	r.finish()
}

// finish publishes the completion to the engine.
func (r *Request) finish() {
	if r.state.CompareAndSwap(stServing, stInline) {
		return // the serving goroutine finishes it after Serve returns
	}
	if r.state.CompareAndSwap(stAsync, stDone) {
		r.owner.complete(r)
	}
}

// served is called by the engine after Serve returns; it reports whether the
// handler completed the request inline.
func (r *Request) served() bool {
	return !r.state.CompareAndSwap(stServing, stAsync)
}

// slots is a fixed-capacity ring of a connection's requests in arrival
// order, from dispatch until their response is written (or skipped). It is
// what keeps responses in request order: only the head may be written, and a
// completed later slot waits for the earlier ones.
type slots struct {
	buf  []*Request
	head int
	n    int
}

func newSlots(capacity int) slots { return slots{buf: make([]*Request, capacity)} }

func (s *slots) full() bool  { return s.n == len(s.buf) }
func (s *slots) empty() bool { return s.n == 0 }
func (s *slots) len() int    { return s.n }

// at returns the i-th oldest request.
func (s *slots) at(i int) *Request {
	j := s.head + i
	if j >= len(s.buf) {
		j -= len(s.buf)
	}
	return s.buf[j]
}

func (s *slots) push(r *Request) {
	j := s.head + s.n
	if j >= len(s.buf) {
		j -= len(s.buf)
	}
	s.buf[j] = r
	s.n++
}

func (s *slots) pop() *Request {
	r := s.buf[s.head]
	s.buf[s.head] = nil
	s.head++
	if s.head == len(s.buf) {
		s.head = 0
	}
	s.n--
	return r
}
