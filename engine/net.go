package engine

// Design note: the net engine.
//
// One reader goroutine and one writer goroutine per net.Conn, for systems
// without epoll and for TLS (any net.Listener works). Semantics match the
// epoll engine: the same framer, the same slot ring for in-order responses,
// the same limits and close reasons.
//
// The reader owns the framer and a pooled 16 KiB read buffer. It calls the
// handler's Serve itself. Before feeding each frame it waits (sync.Cond)
// while the connection must pause (MaxInFlight, MaxInFlightBytes,
// MaxOutputBytes, or a quota's ConnInfo.Throttle, whose end a timer
// signals); since the read buffer is its own, pausing mid-buffer needs no
// stash. Timeouts are read deadlines: ReadTimeout from the start of
// the frame in progress, else IdleTimeout (re-armed while requests are in
// flight, since the connection is then not idle).
//
// The writer collects the consecutive completed responses at the head of
// the ring under the lock, writes them with net.Buffers (writev on TCP)
// outside it under a WriteTimeout deadline, then pops them. The writer is
// the only goroutine that releases slots after a close, so a request is
// never released while it is being written.
//
// On Linux a TCP connection's reads and writes go through a meteredConn
// (netmeter.go), so the connection is charged their system calls (and,
// under TLS, their crypto) but not their waits, as the epoll engine is.
//
// The in-flight ring, completion bookkeeping, what a write takes and pops,
// and close accounting are shared with the epoll engine (conn.go).
//
// Lock ordering: netServer.mu before nconn.mu; neither is held across I/O.

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const netReadBuffer = 16 << 10

type netServer struct {
	// Immutable
	cfg    Config
	h      Handler
	cfgErr error

	// nextID and open point at ownIDs and ownOpen, or at the epoll
	// engine's when it serves its TLS listeners with this engine, so
	// connection ids stay unique and MaxConnections counts both.
	nextID  *atomic.Uint64
	open    *atomic.Int64
	ips     *ipCounts  // MaxConnectionsPerIP (perip.go), the epoll engine's too
	rates   *connRates // the connection creation rates, the epoll engine's too
	ownIDs  atomic.Uint64
	ownOpen atomic.Int64
	ownIPs  ipCounts
	n       counters

	mu       sync.Mutex
	lns      map[net.Listener]struct{}
	conns    map[*nconn]struct{}
	shutdown bool
	done     chan struct{}
}

// NewNet returns the net.Conn engine: a reader and a writer goroutine per
// connection, with the semantics of the epoll engine. An invalid cfg makes
// Serve return ErrConfig.
func NewNet(cfg Config, h Handler) Server {
	cfg, err := cfg.normalize()
	s := newNet(cfg, h)
	s.cfgErr = err
	return s
}

func newNet(cfg Config, h Handler) *netServer {
	s := &netServer{
		cfg:   cfg,
		h:     h,
		lns:   make(map[net.Listener]struct{}),
		conns: make(map[*nconn]struct{}),
		done:  make(chan struct{}),
	}
	s.ownIPs.max = cfg.MaxConnectionsPerIP
	s.nextID, s.open, s.ips = &s.ownIDs, &s.ownOpen, &s.ownIPs
	s.rates = newConnRates(cfg)
	return s
}

// Serve implements Server. An *engine.Listener names its connections and,
// with TLS set, serves them over TLS.
func (s *netServer) Serve(l net.Listener) error {
	if s.cfgErr != nil {
		return s.cfgErr
	}
	ln, lcfg := listenerOf(l)
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			stopped := s.shutdown
			s.mu.Unlock()
			if stopped {
				<-s.done
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			if isTemporaryAccept(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.cfg.Logger.Warn("engine: accept failed; backing off", "err", err, "delay", backoff)
				time.Sleep(backoff)
				continue
			}
			s.mu.Lock()
			delete(s.lns, ln)
			s.mu.Unlock()
			return err
		}
		backoff = 0
		s.accept(nc, lcfg)
	}
}

// isTemporaryAccept reports accept errors worth retrying (EMFILE and
// friends surface as *net.OpError wrapping a syscall error).
func isTemporaryAccept(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && !errors.Is(err, net.ErrClosed)
}

func (s *netServer) accept(nc net.Conn, l *Listener) {
	ip := addrIP(nc.RemoteAddr())
	now := time.Now()
	if d := s.rates.ipThrottle(ip, now); d > 0 {
		s.rates.hold(d, func() { nc.Close() }, &s.n)
		return
	}
	if d := s.rates.acceptDelay(now); d > 0 {
		// At most one RateWindow; a Shutdown meanwhile is seen below.
		time.Sleep(d)
	}
	if !admitConn(s.open, &s.n, s.cfg.MaxConnections) || !admitIP(s.ips, ip, s.open, &s.n) {
		nc.Close()
		return
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	info := &ConnInfo{ID: s.nextID.Add(1), RemoteAddr: nc.RemoteAddr().String(), LocalAddr: nc.LocalAddr().String(), Listener: l.Name}
	info.setIP(s.ips, ip)
	info.startAuthClock(l.AuthTimeout)
	meter := newMeteredConn(nc) // netmeter.go
	if meter != nil {
		nc = meter
	}
	var tc *tls.Conn
	if l.TLS != nil {
		tc = tls.Server(nc, l.TLS)
		nc = tc
	}
	c := &nconn{
		s:        s,
		nc:       nc,
		meter:    meter,
		info:     info,
		inflight: inflight{slots: newSlots(s.cfg.MaxInFlight)},
		wake:     make(chan struct{}, 1),
		tls:      tc != nil,
		bufs:     make([][]byte, 0, maxNetBufs),
	}
	c.fr.max = s.cfg.MaxFrameSize
	c.fr.limitBeforeAuth(l.MaxFrameBeforeAuth, info)
	c.cond.L = &c.mu
	c.lastActive.Store(time.Now().UnixNano())
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		info.releaseIP()
		s.open.Add(-1)
		nc.Close()
		s.n.closes[ReasonShutdown].Add(1)
		return
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.n.accepted.Add(1)
	s.n.open.Add(1)
	if tc != nil {
		go c.handshake(tc, l.HandshakeTimeout)
		return
	}
	go c.readLoop()
	go c.writeLoop()
}

// handshake runs a TLS connection's handshake on its own goroutine (never
// on the accept loop, so peers that stall their handshake delay no one
// else), bounded by timeout, then becomes the connection's reader. A failed
// or late handshake closes the connection as ReasonTLSHandshake.
func (c *nconn) handshake(tc *tls.Conn, timeout time.Duration) {
	// The deadline is set before stopRead is checked, the reverse of drain,
	// so a drain cannot be lost between the two (as in readLoop).
	_ = tc.SetDeadline(time.Now().Add(timeout))
	if c.stopRead.Load() {
		c.closeWith(ReasonShutdown, "")
		return
	}
	t0 := time.Now()
	var r0, w0 int64
	if c.meter != nil {
		r0, w0 = c.meter.readParked.Load(), c.meter.writeParked.Load()
	}
	err := tc.Handshake()
	if c.meter != nil {
		// Its crypto and system calls, not its waits for the peer.
		ioCharge(c.info, t0, c.meter.readParked.Load()-r0+c.meter.writeParked.Load()-w0)
	}
	if err != nil {
		why := ReasonTLSHandshake
		if c.stopRead.Load() {
			why = ReasonShutdown
		}
		c.closeWith(why, err.Error())
		return
	}
	st := tc.ConnectionState()
	c.info.TLS = &st // before the reader starts: immutable from the first request on
	_ = tc.SetWriteDeadline(time.Time{})
	c.lastActive.Store(time.Now().UnixNano())
	go c.writeLoop()
	c.readLoop()
}

// Shutdown implements Server.
func (s *netServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return awaitDone(ctx, s.done)
	}
	s.shutdown = true
	for ln := range s.lns {
		ln.Close()
	}
	draining(s.h)
	conns := make([]*nconn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.drain()
	}
	err := awaitClosed(ctx, s.open)
	if err != nil {
		s.mu.Lock()
		conns = conns[:0]
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			c.closeWith(ReasonShutdown, "")
		}
	}
	close(s.done)
	return err
}

// Stats implements Server.
func (s *netServer) Stats() Stats {
	var st Stats
	s.n.addTo(&st)
	s.rates.addTo(&st)
	st.Open = s.open.Load()
	return st
}

// nconn is one connection of the net engine.
type nconn struct {
	// Immutable
	s    *netServer
	nc   net.Conn
	info *ConnInfo
	wake chan struct{} // cap 1: the writer has work
	tls  bool          // nc is a *tls.Conn
	// meter is the TCP connection under nc when its I/O is metered
	// (netmeter.go), else nil.
	meter *meteredConn

	lastActive atomic.Int64 // unix nanos of the last dispatch or write
	stopRead   atomic.Bool  // reader must not start another Read

	// Owned by the reader goroutine
	fr framer

	// Guarded by mu
	mu       sync.Mutex
	cond     sync.Cond // signalled when slots pop or the connection closes
	inflight           // requests from dispatch until written (conn.go)
	closed   bool
	released bool // the writer has released the slots; completions self-release

	// Owned by the writer goroutine
	bufs  [][]byte    // the pieces of the responses being written (Request.segments)
	wbufs net.Buffers // consumed by WriteTo; a field so it does not escape per write
}

const maxNetBufs = 64

// waitRoom blocks while the connection must pause: at a limit, or while a
// quota's Throttle is in force; ok false means stop reading; waited reports
// that it blocked (the pause was ours, not the peer's, so a frame in
// progress gets a fresh ReadTimeout). A pause is counted once, under what
// first caused it.
func (c *nconn) waitRoom() (ok, waited bool) {
	cfg := &c.s.cfg
	var timer *time.Timer
	c.mu.Lock()
	for !c.closed && !c.closing {
		until := c.info.mutedUntil()
		if until == 0 && !c.overLimit(cfg) {
			break
		}
		if !waited {
			c.s.n.pauses[c.pauseCause(cfg, until != 0)].Add(1)
			waited = true
		}
		if until != 0 {
			// No completion ends a throttle: a timer wakes the wait at
			// its end (re-armed if a handler extended it); a close wakes
			// it through the cond as for any pause.
			d := time.Until(time.Unix(0, until))
			if timer == nil {
				timer = time.AfterFunc(d, c.broadcast)
			} else {
				timer.Reset(d)
			}
		}
		c.cond.Wait()
	}
	ok = !c.closed && !c.closing
	c.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	return ok, waited
}

// broadcast wakes the reader out of waitRoom (a throttle's end).
func (c *nconn) broadcast() {
	c.mu.Lock()
	c.cond.Broadcast()
	c.mu.Unlock()
}

func (c *nconn) readLoop() {
	rb := getBuf(netReadBuffer)
	defer func() {
		c.fr.reset()
		putBuf(rb)
	}()
	buf := (*rb)[:netReadBuffer]
	var frameStart time.Time
	for {
		ok, waited := c.waitRoom()
		if !ok {
			return
		}
		now := time.Now()
		if !c.fr.inFrame() || waited {
			frameStart = now
		}
		c.nc.SetReadDeadline(c.readDeadline(now, frameStart))
		if c.stopRead.Load() {
			return
		}
		ok, err := c.readOnce(buf, &frameStart)
		if !ok || err != nil && c.readFailed(err, frameStart) {
			return
		}
	}
}

// readDeadline is the deadline of the next read: ReadTimeout from the start
// of the frame in progress, else IdleTimeout, and never past the
// listener's AuthTimeout.
func (c *nconn) readDeadline(now, frameStart time.Time) time.Time {
	cfg := &c.s.cfg
	deadline := now.Add(cfg.IdleTimeout)
	if c.fr.inFrame() {
		deadline = frameStart.Add(cfg.ReadTimeout)
	}
	if d := c.info.authDeadline.Load(); d != 0 && d < deadline.UnixNano() {
		deadline = time.Unix(0, d) // Listener.AuthTimeout
	}
	return deadline
}

// readOnce does one Read, straight into a large frame's buffer or through
// buf, and dispatches the frames it completes (each restarting
// *frameStart). ok false means stop reading: the connection closes.
func (c *nconn) readOnce(buf []byte, frameStart *time.Time) (ok bool, err error) {
	var n int
	if t := c.fr.tail(); t != nil {
		n, err = c.read(t)
		if n > 0 {
			c.s.n.bytesIn.Add(uint64(n))
			if c.fr.filled(n) {
				*frameStart = c.timedDispatch()
			}
		}
		return true, err
	}
	n, err = c.read(buf)
	if n > 0 {
		c.s.n.bytesIn.Add(uint64(n))
	}
	for used := 0; used < n; {
		// Before a read's first frame readLoop's waitRoom has just run,
		// but a throttle set by a worker while we were in Read must hold
		// from this frame on (one atomic load when none is set).
		if used > 0 || c.info.mutedUntil() != 0 {
			ok, waited := c.waitRoom()
			if !ok {
				return false, err
			}
			if waited {
				*frameStart = time.Now() // our pause, not a slow peer
			}
		}
		k, done, bad := c.fr.feed(buf[used:n])
		used += k
		if bad != reasonNone {
			c.closeWith(bad, "")
			return false, err
		}
		if done {
			*frameStart = c.timedDispatch()
		}
	}
	return true, err
}

// read reads from the connection into p; a metered connection's read is
// charged to its EngineTime, less its waits (netmeter.go).
func (c *nconn) read(p []byte) (int, error) {
	if c.meter == nil {
		return c.nc.Read(p)
	}
	t0, p0 := time.Now(), c.meter.readParked.Load()
	n, err := c.nc.Read(p)
	ioCharge(c.info, t0, c.meter.readParked.Load()-p0)
	return n, err
}

// timedDispatch dispatches the frame read and charges its time, inline
// Serve included, to the connection's EngineTime; it returns the time after.
func (c *nconn) timedDispatch() time.Time {
	t0 := time.Now()
	c.dispatch()
	now := time.Now()
	c.info.engineNanos.Add(int64(now.Sub(t0)))
	return now
}

// readFailed handles a failed Read: a timeout closes the connection if
// its AuthTimeout, ReadTimeout or IdleTimeout passed; EOF or another error
// closes it. It reports whether to stop reading.
func (c *nconn) readFailed(err error, frameStart time.Time) bool {
	cfg := &c.s.cfg
	var ne net.Error
	switch {
	case c.stopRead.Load():
		return true
	case errors.As(err, &ne) && ne.Timeout():
		if c.info.authExpired(time.Now().UnixNano()) {
			c.closeWith(ReasonIdleTimeout, "not authenticated within the listener's AuthTimeout")
			return true
		}
		if c.fr.inFrame() {
			if time.Since(frameStart) >= cfg.ReadTimeout {
				c.closeWith(ReasonReadTimeout, "")
				return true
			}
			return false
		}
		c.mu.Lock()
		idle := c.slots.empty()
		c.mu.Unlock()
		if idle && time.Since(time.Unix(0, c.lastActive.Load())) >= cfg.IdleTimeout {
			c.closeWith(ReasonIdleTimeout, "")
			return true
		}
		return false
	case errors.Is(err, io.EOF):
		c.closeWith(ReasonPeerClosed, "")
		return true
	default:
		c.closeWith(ReasonIOError, "")
		return true
	}
}

// dispatch hands the framer's completed frame to the handler.
func (c *nconn) dispatch() {
	r := takeRequest(&c.fr, c.info, c)
	c.mu.Lock()
	c.admit(r)
	c.mu.Unlock()
	c.lastActive.Store(time.Now().UnixNano())
	c.s.n.requests.Add(1)
	serveRequest(c.s.h, c.s.cfg.Logger, r)
	if r.served() {
		c.complete(r)
	}
}

// complete records a completion (from any goroutine) and wakes the writer
// when the head of the ring became writable.
func (c *nconn) complete(r *Request) {
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		putRequest(r)
		return
	}
	if c.settle(r) {
		c.stopRead.Store(true)
		c.cond.Broadcast()
	}
	headDone := c.slots.at(0).done
	kind, closeAfter := r.kind, r.closeAfter
	c.mu.Unlock() // r may be written and released from here on
	if headDone {
		c.signal()
	}
	if kind == compClose || closeAfter {
		c.nc.SetReadDeadline(time.Now()) // wake the reader out of Read
	}
}

func (c *nconn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// drain starts a graceful close for Shutdown.
func (c *nconn) drain() {
	c.mu.Lock()
	c.startClosing(ReasonShutdown)
	c.stopRead.Store(true)
	c.cond.Broadcast()
	c.mu.Unlock()
	c.nc.SetReadDeadline(time.Now())
	c.signal()
}

// closeWith closes the connection now. The writer releases the slots.
func (c *nconn) closeWith(why CloseReason, msg string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.stopRead.Store(true)
	c.cond.Broadcast()
	c.mu.Unlock()
	c.info.closed.Store(true)
	c.nc.Close()
	c.signal()
	s := c.s
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	countClose(s.open, &s.n, s.cfg.Logger, c.info, why, msg)
}

// releaseLocked frees the slots after close. Requests still owned by
// handlers release themselves on completion.
func (c *nconn) releaseLocked() {
	c.release()
	c.released = true
	c.cond.Broadcast()
}

func (c *nconn) writeLoop() {
	cfg := &c.s.cfg
	for {
		c.mu.Lock()
		if c.closed {
			c.releaseLocked()
			c.mu.Unlock()
			return
		}
		// Pop leading NoResponse slots; stop at a Close slot.
		if c.popNoResponses() > 0 {
			c.cond.Broadcast()
		}
		if head := c.closeAtHead(); head != nil {
			why, msg := head.reason, head.msg
			c.mu.Unlock()
			c.closeWith(why, msg)
			continue
		}
		if c.closing && c.slots.empty() {
			why := c.closeWhy
			c.mu.Unlock()
			c.closeWith(why, "")
			continue
		}
		c.bufs = c.gather(c.bufs[:0], maxNetBufs, true)
		nb := len(c.bufs)
		c.mu.Unlock()
		if nb == 0 {
			<-c.wake
			continue
		}
		c.nc.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
		var n int64
		var err error
		var t0 time.Time
		var p0 int64
		if c.meter != nil {
			t0, p0 = time.Now(), c.meter.writeParked.Load()
		}
		switch {
		case c.tls && nb > 1:
			n, err = c.writeCoalesced(c.bufs[:nb])
		case c.meter != nil && !c.tls:
			n, err = c.meter.writeBuffers(c.bufs[:nb])
		default:
			c.wbufs = c.bufs[:nb]
			n, err = c.wbufs.WriteTo(c.nc)
		}
		if c.meter != nil {
			// Charged like the reads: the system calls (and TLS's
			// crypto), not the waits for a slow reader.
			ioCharge(c.info, t0, c.meter.writeParked.Load()-p0)
		}
		clear(c.bufs[:nb])
		c.s.n.bytesOut.Add(uint64(n))
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.closeWith(ReasonWriteTimeout, "")
			} else {
				c.closeWith(ReasonIOError, "")
			}
			continue
		}
		c.mu.Lock()
		c.advance(int(n)) // every byte gathered was written
		c.cond.Broadcast()
		c.mu.Unlock()
		c.lastActive.Store(time.Now().UnixNano())
	}
}

// tlsCoalesce is the most response bytes a TLS connection copies into one
// write: one full TLS record. tls.Conn has no writev, and writes each buffer
// as records of its own (one system call each), so small pipelined
// responses share a record instead.
const tlsCoalesce = 16 << 10

// writeCoalesced writes bufs to a TLS connection, copying runs of small
// responses into one pooled buffer per write; a response bigger than
// tlsCoalesce is written on its own.
func (c *nconn) writeCoalesced(bufs [][]byte) (int64, error) {
	var total int64
	sb := getBuf(tlsCoalesce)
	defer putBuf(sb)
	acc := (*sb)[:0]
	flush := func() error {
		if len(acc) == 0 {
			return nil
		}
		n, err := c.nc.Write(acc)
		total += int64(n)
		acc = acc[:0]
		return err
	}
	for _, b := range bufs {
		if len(b) > tlsCoalesce {
			if err := flush(); err != nil {
				return total, err
			}
			n, err := c.nc.Write(b)
			total += int64(n)
			if err != nil {
				return total, err
			}
			continue
		}
		if len(acc)+len(b) > tlsCoalesce {
			if err := flush(); err != nil {
				return total, err
			}
		}
		acc = append(acc, b...)
	}
	return total, flush()
}
