//go:build linux

package engine

// Design note: the epoll engine.
//
// Shape. Config.Loops event loops, each a goroutine owning an epoll instance,
// an eventfd for wake-ups, a 16 KiB read buffer, an iovec array and the
// connections assigned to it. Every field of a connection marked "Owned by
// the loop" is touched only by that goroutine, so the hot path takes no lock.
//
// Parking. A loop never blocks a thread in epoll_wait. Its epoll fd is itself
// pollable, so it is wrapped in an os.File and the loop waits through
// RawConn.Read: the callback calls epoll_wait with a zero timeout and, when
// nothing is ready, the goroutine parks in the Go runtime's poller like any
// network goroutine. The first version blocked in epoll_wait(-1); with 2
// cores, two loops parked in system calls held both Ps until sysmon took
// them back, and round trips took 60-90 µs instead of ~20 µs. Sweeps use the
// file's read deadline, so a loop with no traffic wakes only to sweep.
//
// Listener. The acceptor dups the listener's fd (F_DUPFD_CLOEXEC), wraps it
// the same way (a listener's own RawConn cannot Read), and accepts with
// accept4(SOCK_NONBLOCK|SOCK_CLOEXEC), so any *net.TCPListener or
// *net.UnixListener from package net works. Shutdown closes both descriptors,
// so the kernel refuses new connections. Accepted sockets get TCP_NODELAY
// and go to the loop with the fewest connections, through its command queue.
//
// Level-triggered. Each readable connection gets reads of at most 256 KiB
// per loop iteration, then the loop moves on: one busy connection cannot
// starve the others, and nothing is left unread that epoll would not report
// again. Backpressure is then just interest: a paused connection has EPOLLIN
// removed (EPOLL_CTL_MOD) and the kernel's receive buffer, then TCP flow
// control, holds the peer back; EPOLLOUT is registered only while a write is
// blocked. Edge-triggered would force reading to EAGAIN (unfair, unbounded
// work per event) or bookkeeping of "readable but not read" connections.
//
// Framing and buffers. Reads land in the loop's read buffer; the framer
// copies each frame into a pooled size-class buffer owned by its Request
// (large frame bodies are read straight into that buffer). A Request's frame
// therefore stays valid while later requests of the connection are read and
// completed out of order. If reads must pause in the middle of the read
// buffer (MaxInFlight reached), the unconsumed tail is copied into a pooled
// per-connection stash and fed first when reads resume; EPOLLIN stays off
// while a stash exists so bytes never overtake it.
//
// Ordering. Each connection has a ring of slots (MaxInFlight) holding its
// requests from dispatch until their response is written. Completions come
// back either inline (the handler responded inside Serve: no queue, no
// wake-up) or through the loop's completion queue plus an eventfd write,
// done at most once per loop wake-up. Only the head of the ring is written:
// a completed later slot waits; NoResponse slots are popped in order; a Close
// slot closes the connection when it reaches the head, after the earlier
// responses are written.
//
// Writes. After each batch of events the loop flushes every connection that
// got new completions with one writev of its consecutive completed responses
// (up to 64), handles partial writes with an offset into the head response,
// and registers EPOLLOUT on EAGAIN.
//
// Timeouts. No timer per request: each loop sweeps its connections every
// Config.sweepInterval, comparing three timestamps per connection.
//
// Lock ordering: loop.mu (queues) is a leaf; epollServer.mu is never held
// while taking loop.mu.

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultKind is the engine New uses for kind "". On Linux it is the epoll
// engine, chosen from BenchmarkEngines (2 cores shared with other work,
// -benchtime 0.5s -count 3, medians; loopback, client in the same process).
// Epoll used less CPU per request in every 50-byte case (1.14x to 1.54x less
// than the net engine) and was as fast or faster in wall time in 9 of 12
// cases. The net engine won wall time in 3 (64 KiB requests over 64
// connections, pipelined or not, where its separate reader and writer
// goroutines overlap on the two cores; 50 B unpipelined over 1024) and used
// 6-14% less CPU for pipelined or 1024-connection 64 KiB requests, where
// both are dominated by kernel copies. Epoll is also the engine with an
// enforced zero-allocation request cycle and no goroutines per connection.
const DefaultKind = KindEpoll

const (
	loopReadBuffer = 16 << 10
	maxIovecs      = 64
	maxEvents      = 256
)

// eventfdOne is the 8-byte value written to an eventfd to wake a loop.
var eventfdOne = [8]byte{1}

type epollServer struct {
	// Immutable
	cfg   Config
	h     Handler
	epoch time.Time

	nextID atomic.Uint64
	open   atomic.Int64 // connections accepted and not yet closed
	acc    counters     // acceptor-side counters (refused)

	mu        sync.Mutex
	loops     []*loop // started by the first Serve
	acceptors map[*acceptor]struct{}
	tlsSrv    *netServer // serves TLS listeners; created by the first one
	shutdown  bool
	loopsWG   sync.WaitGroup
	done      chan struct{} // closed when Shutdown has finished
}

// NewEpoll returns the epoll engine (Linux only).
func NewEpoll(cfg Config, h Handler) (Server, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	return &epollServer{
		cfg:       cfg,
		h:         h,
		epoch:     time.Now(),
		acceptors: make(map[*acceptor]struct{}),
		done:      make(chan struct{}),
	}, nil
}

// startLoops creates the loops once. Called with s.mu held.
func (s *epollServer) startLoops() error {
	if s.loops != nil {
		return nil
	}
	loops := make([]*loop, 0, s.cfg.Loops)
	for range s.cfg.Loops {
		l, err := newLoop(s)
		if err != nil {
			for _, l := range loops {
				l.closeFDs()
			}
			return err
		}
		loops = append(loops, l)
	}
	s.loops = loops
	for _, l := range loops {
		s.loopsWG.Add(1)
		go l.run()
	}
	return nil
}

// Serve implements Server. An *engine.Listener names its connections; one
// with TLS set is served by the net engine's goroutines (Listener).
func (s *epollServer) Serve(l net.Listener) error {
	ln, lcfg := listenerOf(l)
	if lcfg.TLS != nil {
		ns, err := s.tlsServer()
		if err != nil {
			return err
		}
		return ns.Serve(l)
	}
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return ErrListener
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return ErrListener
	}
	// A listener's RawConn cannot Read, so dup its fd into an os.File,
	// which the runtime poller can park on.
	lfd := -1
	var derr error
	if err := raw.Control(func(fd uintptr) {
		lfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return err
	}
	if derr != nil {
		return derr
	}
	if err := unix.SetNonblock(lfd, true); err != nil {
		unix.Close(lfd)
		return err
	}
	lf := os.NewFile(uintptr(lfd), "kiggy-listener")
	lraw, err := lf.SyscallConn()
	if err != nil {
		lf.Close()
		return err
	}
	a := &acceptor{s: s, ln: ln, lf: lf, raw: lraw, name: lcfg.Name, authTimeout: lcfg.AuthTimeout}
	a.acceptFn = a.acceptAll
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		lf.Close()
		return ErrServerClosed
	}
	if err := s.startLoops(); err != nil {
		s.mu.Unlock()
		lf.Close()
		return err
	}
	s.acceptors[a] = struct{}{}
	s.mu.Unlock()

	err = a.run()
	s.mu.Lock()
	delete(s.acceptors, a)
	stopped := s.shutdown
	s.mu.Unlock()
	a.stop()
	if !stopped {
		return err
	}
	<-s.done
	return nil
}

// tlsServer returns the net engine serving this server's TLS listeners,
// creating it on first use: same config and handler, and this server's id
// and open-connection counters.
func (s *epollServer) tlsServer() (*netServer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return nil, ErrServerClosed
	}
	if s.tlsSrv == nil {
		s.tlsSrv = newNet(s.cfg, s.h)
		s.tlsSrv.nextID, s.tlsSrv.open = &s.nextID, &s.open
	}
	return s.tlsSrv, nil
}

// Shutdown implements Server.
func (s *epollServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return awaitDone(ctx, s.done)
	}
	s.shutdown = true
	for a := range s.acceptors {
		a.stop()
	}
	loops := s.loops
	ns := s.tlsSrv
	s.mu.Unlock()
	var nsErr chan error
	if ns != nil {
		nsErr = make(chan error, 1)
		go func() { nsErr <- ns.Shutdown(ctx) }()
	}

	for _, l := range loops {
		l.command(cmd{kind: cmdDrain})
	}
	var err error
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for s.open.Load() > 0 && err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-tick.C:
		}
	}
	for _, l := range loops {
		l.command(cmd{kind: cmdQuit})
	}
	s.loopsWG.Wait()
	if nsErr != nil {
		if e := <-nsErr; err == nil {
			err = e
		}
	}
	close(s.done)
	return err
}

// Stats implements Server.
func (s *epollServer) Stats() Stats {
	var st Stats
	s.acc.addTo(&st)
	s.mu.Lock()
	loops, ns := s.loops, s.tlsSrv
	s.mu.Unlock()
	for _, l := range loops {
		l.n.addTo(&st)
	}
	if ns != nil {
		ns.n.addTo(&st)
	}
	st.Open = s.open.Load()
	return st
}

// pickLoop returns the loop with the fewest connections.
func (s *epollServer) pickLoop() *loop {
	best := s.loops[0]
	for _, l := range s.loops[1:] {
		if l.n.open.Load() < best.n.open.Load() {
			best = l
		}
	}
	return best
}

// acceptor accepts connections for one Serve call on a dup of the
// listener's socket wrapped in an os.File: the runtime's poller parks the
// goroutine until the socket is readable, so no thread is blocked waiting
// for connections.
type acceptor struct {
	s        *epollServer
	ln       net.Listener
	lf       *os.File
	raw      syscall.RawConn
	acceptFn func(fd uintptr) bool
	err      error
	name     string // the listener's name (ConnInfo.Listener)
	// authTimeout is the listener's AuthTimeout.
	authTimeout time.Duration
}

// stop makes run return: closing the dup wakes the parked Read, and closing
// both descriptors makes the kernel refuse new connections.
func (a *acceptor) stop() {
	a.ln.Close()
	a.lf.Close()
}

// run accepts until the listener closes. It returns the error that stopped
// it (nil after stop).
func (a *acceptor) run() error {
	for {
		err := a.raw.Read(a.acceptFn)
		if a.err != nil {
			return a.err
		}
		if err != nil {
			if errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
	}
}

// acceptAll accepts every pending connection; false means "wait until the
// listener is readable again", true ends the Read with a.err set.
func (a *acceptor) acceptAll(lfd uintptr) bool {
	s := a.s
	for {
		fd, sa, err := unix.Accept4(int(lfd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch err {
		case nil:
		case unix.EAGAIN:
			return false
		case unix.EINTR, unix.ECONNABORTED, unix.EPERM, unix.EPROTO:
			continue
		case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
			// Out of descriptors or memory: back off and retry; the
			// backlog holds the peers meanwhile.
			s.cfg.Logger.Warn("engine: accept failed; backing off", "err", err)
			time.Sleep(10 * time.Millisecond)
			return true
		default:
			a.err = err
			return true
		}
		if int(s.open.Add(1)) > s.cfg.MaxConnections {
			// Counted before the close, so that a peer that sees the
			// connection end also sees it counted.
			s.acc.refused.Add(1)
			s.acc.closes[ReasonMaxConnections].Add(1)
			s.open.Add(-1)
			unix.Close(fd)
			continue
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		info := &ConnInfo{ID: s.nextID.Add(1), RemoteAddr: sockaddrString(sa), Listener: a.name}
		info.startAuthClock(a.authTimeout)
		if lsa, err := unix.Getsockname(fd); err == nil {
			info.LocalAddr = sockaddrString(lsa)
		}
		l := s.pickLoop()
		c := &econn{fd: fd, info: info, l: l, slots: newSlots(s.cfg.MaxInFlight)}
		c.fr.max = s.cfg.MaxFrameSize
		l.n.open.Add(1) // counted now so pickLoop spreads a burst
		l.command(cmd{kind: cmdAdd, c: c})
	}
}

func sockaddrString(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrUnix:
		return a.Name
	}
	return ""
}

// econn is one connection of the epoll engine.
type econn struct {
	// Immutable
	fd   int
	info *ConnInfo
	l    *loop

	// Owned by the loop
	fr         framer
	slots      slots   // requests from dispatch until written
	stash      *[]byte // unconsumed read bytes while reads are paused
	stashOff   int
	stashEnd   int
	woff       int    // bytes of the head response already written
	outBytes   int    // bytes of completed responses not yet written
	inBytes    int    // frame bytes of requests not yet completed
	events     uint32 // registered epoll interest
	blocked    bool   // a write hit EAGAIN; EPOLLOUT is wanted
	lastActive int64
	frameStart int64
	writeStart int64 // 0, or when the head response started waiting
	closing    bool  // no more reads; close once the slots drain
	closeWhy   CloseReason
	closed     bool
	dirty      bool
	idx        int // position in loop.list
}

// tag identifies c in epoll event data next to its fd, so an event fetched
// before c's fd was closed and reused in the same round is not applied to
// the new connection.
func (c *econn) tag() int32 { return int32(c.info.ID) }

// complete is called by Request.finish off the loop: queue and wake.
func (c *econn) complete(r *Request) { c.l.post(r) }

type cmdKind uint8

const (
	cmdAdd cmdKind = iota
	cmdDrain
	cmdQuit
)

type cmd struct {
	kind cmdKind
	c    *econn
}

// loop is one event loop.
type loop struct {
	// Immutable
	s      *epollServer
	epfd   int
	evfd   int
	file   *os.File        // epfd, registered with the runtime poller
	raw    syscall.RawConn // file's RawConn: parks the loop until epfd is readable
	pollFn func(fd uintptr) bool

	// Shared with other goroutines, under mu.
	mu          sync.Mutex
	compQ       []*Request
	cmds        []cmd
	exited      bool
	wakePending atomic.Bool
	n           counters

	// Owned by the loop
	events    []unix.EpollEvent
	rbuf      []byte
	iov       []unix.Iovec
	segs      [][]byte // scratch of flush: a response's pieces (Request.segments)
	conns     map[int32]*econn
	list      []*econn
	dirty     []*econn
	compSpare []*Request
	cmdSpare  []cmd
	nready    int
	pollErr   error
	now       int64
	nextSweep int64
	draining  bool
	quit      bool
}

func newLoop(s *epollServer) (*loop, error) {
	l := &loop{
		s:      s,
		events: make([]unix.EpollEvent, maxEvents),
		rbuf:   make([]byte, loopReadBuffer),
		iov:    make([]unix.Iovec, 0, maxIovecs),
		segs:   make([][]byte, 0, maxIovecs),
		conns:  make(map[int32]*econn),
		epfd:   -1,
		evfd:   -1,
	}
	var err error
	if l.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, err
	}
	if l.evfd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		unix.Close(l.epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.evfd)}
	if err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, l.evfd, &ev); err != nil {
		l.closeFDs()
		return nil, err
	}
	// A non-blocking fd makes os.NewFile register epfd with the runtime's
	// poller, which is what lets the loop park without blocking a thread.
	if err = unix.SetNonblock(l.epfd, true); err != nil {
		l.closeFDs()
		return nil, err
	}
	l.file = os.NewFile(uintptr(l.epfd), "kiggy-epoll")
	if l.raw, err = l.file.SyscallConn(); err != nil {
		l.closeFDs()
		return nil, err
	}
	l.pollFn = l.poll
	return l, nil
}

func (l *loop) closeFDs() {
	if l.file != nil {
		l.file.Close()
	} else {
		unix.Close(l.epfd)
	}
	unix.Close(l.evfd)
}

// poll is the RawConn.Read callback: collect ready events without blocking;
// false parks the loop in the runtime poller until epfd is readable.
func (l *loop) poll(fd uintptr) bool {
	n, err := unix.EpollWait(int(fd), l.events, 0)
	if err != nil && err != unix.EINTR {
		l.pollErr = err
		return true
	}
	l.nready = max(n, 0)
	return l.nready > 0
}

// setSweepDeadline makes the parked poll return at the next sweep.
func (l *loop) setSweepDeadline() {
	l.file.SetReadDeadline(l.s.epoch.Add(time.Duration(l.nextSweep)))
}

func (l *loop) clock() int64 { return int64(time.Since(l.s.epoch)) }

// wakeLocked writes the eventfd unless a wake-up is already pending.
// Called with l.mu held so it never writes an eventfd the loop has closed.
func (l *loop) wakeLocked() {
	if !l.exited && l.wakePending.CompareAndSwap(false, true) {
		unix.Write(l.evfd, eventfdOne[:])
	}
}

// post queues a completion from another goroutine.
func (l *loop) post(r *Request) {
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		putRequest(r) // its connection is long closed
		return
	}
	l.compQ = append(l.compQ, r)
	l.wakeLocked()
	l.mu.Unlock()
}

// command queues a command for the loop.
func (l *loop) command(c cmd) {
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		if c.kind == cmdAdd {
			unix.Close(c.c.fd)
			l.s.open.Add(-1)
			l.n.open.Add(-1)
			l.n.closes[ReasonShutdown].Add(1)
		}
		return
	}
	l.cmds = append(l.cmds, c)
	l.wakeLocked()
	l.mu.Unlock()
}

func (l *loop) run() {
	defer l.s.loopsWG.Done()
	sweep := int64(l.s.cfg.sweepInterval())
	l.now = l.clock()
	l.nextSweep = l.now + sweep
	l.setSweepDeadline()
	for !l.quit {
		l.nready, l.pollErr = 0, nil
		err := l.raw.Read(l.pollFn)
		l.now = l.clock()
		if err == nil {
			err = l.pollErr
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			l.s.cfg.Logger.Error("engine: epoll_wait failed", "err", err)
			time.Sleep(time.Millisecond)
		}
		for i := range l.nready {
			ev := &l.events[i]
			if ev.Fd == int32(l.evfd) {
				l.drainQueues()
				continue
			}
			c := l.conns[ev.Fd]
			if c == nil || c.closed || ev.Pad != c.tag() {
				continue // stale event of a closed connection whose fd was reused
			}
			switch {
			case ev.Events&unix.EPOLLERR != 0:
				l.closeConn(c, ReasonIOError, "")
				continue
			case ev.Events&(unix.EPOLLIN|unix.EPOLLHUP) != 0 && c.events&unix.EPOLLIN != 0:
				l.read(c)
			case ev.Events&unix.EPOLLHUP != 0:
				l.closeConn(c, ReasonPeerClosed, "")
				continue
			}
			if ev.Events&unix.EPOLLOUT != 0 && !c.closed {
				c.blocked = false
				l.markDirty(c)
			}
		}
		l.serviceDirty()
		if l.now >= l.nextSweep {
			l.sweep()
			l.nextSweep = l.now + sweep
			l.setSweepDeadline()
		}
	}
	for len(l.list) > 0 {
		l.closeConn(l.list[len(l.list)-1], ReasonShutdown, "")
	}
	l.mu.Lock()
	l.exited = true
	q := l.compQ
	l.compQ = nil
	cmds := l.cmds
	l.cmds = nil
	l.mu.Unlock()
	for _, r := range q {
		putRequest(r)
	}
	for _, c := range cmds {
		if c.kind == cmdAdd {
			unix.Close(c.c.fd)
			l.s.open.Add(-1)
			l.n.open.Add(-1)
			l.n.closes[ReasonShutdown].Add(1)
		}
	}
	l.closeFDs()
}

// drainQueues processes completions and commands posted by other goroutines.
func (l *loop) drainQueues() {
	var buf [8]byte
	unix.Read(l.evfd, buf[:])
	// Clear before swapping: a post after the swap then wakes us again.
	l.wakePending.Store(false)
	l.mu.Lock()
	q, cmds := l.compQ, l.cmds
	l.compQ, l.cmds = l.compSpare[:0], l.cmdSpare[:0]
	l.mu.Unlock()
	for i, c := range cmds {
		l.handleCmd(c)
		cmds[i] = cmd{}
	}
	for i, r := range q {
		l.completed(r.owner.(*econn), r)
		q[i] = nil
	}
	l.compSpare, l.cmdSpare = q[:0], cmds[:0]
}

func (l *loop) handleCmd(c cmd) {
	switch c.kind {
	case cmdAdd:
		l.add(c.c)
	case cmdDrain:
		l.draining = true
		for _, c := range l.list {
			l.startClosing(c, ReasonShutdown)
		}
	case cmdQuit:
		l.quit = true
	}
}

// add registers a new connection.
func (l *loop) add(c *econn) {
	l.n.accepted.Add(1)
	if l.draining || l.quit {
		c.closed = true
		unix.Close(c.fd)
		l.s.open.Add(-1)
		l.n.open.Add(-1)
		l.n.closes[ReasonShutdown].Add(1)
		return
	}
	c.events = unix.EPOLLIN
	ev := unix.EpollEvent{Events: c.events, Fd: int32(c.fd), Pad: c.tag()}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
		c.closed = true
		unix.Close(c.fd)
		l.s.open.Add(-1)
		l.n.open.Add(-1)
		l.n.closes[ReasonIOError].Add(1)
		return
	}
	c.lastActive = l.now
	c.idx = len(l.list)
	l.list = append(l.list, c)
	l.conns[int32(c.fd)] = c
}

// startClosing stops reading c and closes it once its slots drain.
func (l *loop) startClosing(c *econn, why CloseReason) {
	if c.closing {
		return
	}
	c.closing, c.closeWhy = true, why
	c.fr.reset()
	l.dropStash(c)
	l.markDirty(c)
}

func (l *loop) markDirty(c *econn) {
	if !c.dirty {
		c.dirty = true
		l.dirty = append(l.dirty, c)
	}
}

// serviceDirty flushes and re-arms every connection touched this round.
// Servicing may dispatch stashed frames, which may mark more connections.
func (l *loop) serviceDirty() {
	for len(l.dirty) > 0 {
		c := l.dirty[len(l.dirty)-1]
		l.dirty[len(l.dirty)-1] = nil
		l.dirty = l.dirty[:len(l.dirty)-1]
		c.dirty = false
		if !c.closed {
			l.service(c)
		}
	}
}

func (l *loop) service(c *econn) {
	if !c.blocked {
		l.flush(c)
	}
	if c.closed {
		return
	}
	if c.closing && c.slots.empty() {
		l.closeConn(c, c.closeWhy, "")
		return
	}
	if c.stash != nil && !l.mustPause(c) {
		c.frameStart = l.now
		k := l.feedFrames(c, (*c.stash)[c.stashOff:c.stashEnd])
		c.stashOff += k
		if c.stashOff == c.stashEnd {
			l.dropStash(c)
		}
		if c.closed {
			return
		}
	}
	l.setInterest(c)
}

// mustPause reports whether c may not start another frame now.
func (l *loop) mustPause(c *econn) bool {
	return c.closing || c.slots.full() || c.outBytes > l.s.cfg.MaxOutputBytes ||
		(c.inBytes > l.s.cfg.MaxInFlightBytes && !c.slots.empty())
}

// setInterest registers the epoll events c needs now.
func (l *loop) setInterest(c *econn) {
	var want uint32
	if c.stash == nil && !l.mustPause(c) {
		want |= unix.EPOLLIN
		if c.events&unix.EPOLLIN == 0 && c.fr.inFrame() {
			c.frameStart = l.now // the peer was paused by us, not slow
		}
	}
	if c.blocked {
		want |= unix.EPOLLOUT
	}
	if want == c.events {
		return
	}
	if c.events&unix.EPOLLIN != 0 && want&unix.EPOLLIN == 0 && !c.closing && l.mustPause(c) {
		// Reads stop at a limit (with or without a stash of bytes read
		// past it).
		l.n.pauses[pauseCause(c.outBytes > l.s.cfg.MaxOutputBytes, c.slots.full())].Add(1)
	}
	c.events = want
	ev := unix.EpollEvent{Events: want, Fd: int32(c.fd), Pad: c.tag()}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		l.closeConn(c, ReasonIOError, "")
	}
}

// readBudget bounds the bytes one connection may read per loop iteration:
// a bulk sender gets a few reads per wake-up instead of one epoll round per
// 64 KiB, without starving the loop's other connections.
const readBudget = 256 << 10

// read serves a readable connection: read(2) calls until the socket is
// drained (a short read), the budget is spent, or reads must pause.
func (l *loop) read(c *econn) {
	for budget := readBudget; budget > 0; {
		n, full := l.readOnce(c)
		if !full || c.closed || c.closing || c.stash != nil || l.mustPause(c) {
			return
		}
		budget -= n
	}
}

// readOnce does one read(2) and reports the bytes read and whether they
// filled the buffer (more may be waiting).
func (l *loop) readOnce(c *econn) (int, bool) {
	if !c.fr.inFrame() {
		c.frameStart = l.now
	}
	var n, want int
	var err error
	if c.fr.wantsRoom() {
		// SIOCINQ: bytes received and not yet read, so a large frame grows
		// to what has arrived in one step (framer.avail).
		if q, qerr := unix.IoctlGetInt(c.fd, unix.SIOCINQ); qerr == nil && q > 0 {
			c.fr.avail = q
		}
	}
	if t := c.fr.tail(); t != nil {
		want = len(t)
		n, err = unix.Read(c.fd, t)
		if n > 0 {
			l.n.bytesIn.Add(uint64(n))
			if c.fr.filled(n) {
				l.dispatch(c)
			}
		}
	} else {
		want = len(l.rbuf)
		n, err = unix.Read(c.fd, l.rbuf)
		if n > 0 {
			l.n.bytesIn.Add(uint64(n))
			k := l.feedFrames(c, l.rbuf[:n])
			if k < n && !c.closed && !c.closing {
				// Paused mid-buffer: keep the unconsumed tail, the only
				// bytes ever copied twice.
				c.stash = getBuf(n - k)
				c.stashOff, c.stashEnd = 0, copy(*c.stash, l.rbuf[k:n])
			}
		}
	}
	switch {
	case c.closed:
	case err == nil && n == 0:
		l.closeConn(c, ReasonPeerClosed, "")
	case err == nil || err == unix.EAGAIN || err == unix.EINTR:
		l.markDirty(c)
	case err == unix.ECONNRESET:
		l.closeConn(c, ReasonPeerClosed, "")
	default:
		l.closeConn(c, ReasonIOError, "")
	}
	return max(n, 0), err == nil && n == want
}

// feedFrames feeds p to c's framer, dispatching each complete frame, until p
// is used up, reads must pause, or c closes. It returns the bytes used.
func (l *loop) feedFrames(c *econn, p []byte) int {
	used := 0
	for used < len(p) && !c.closed && !l.mustPause(c) {
		k, done, bad := c.fr.feed(p[used:])
		used += k
		if bad != reasonNone {
			l.closeConn(c, bad, "")
			break
		}
		if done {
			l.dispatch(c)
		}
	}
	return used
}

// dispatch hands c's completed frame to the handler.
func (l *loop) dispatch(c *econn) {
	fb, size := c.fr.take()
	r := getRequest()
	r.fbuf, r.frame = fb, (*fb)[:size:size]
	r.conn, r.owner = c.info, c
	c.slots.push(r)
	c.inBytes += size
	c.lastActive, c.frameStart = l.now, l.now
	l.n.requests.Add(1)
	l.serve(r)
	if r.served() {
		l.completed(c, r)
	}
	l.markDirty(c)
}

// serve calls the handler, turning a panic into a protocol_error close of
// this connection only (docs/design/style.md habit 12).
func (l *loop) serve(r *Request) {
	defer func() {
		if p := recover(); p != nil {
			l.s.cfg.Logger.Error("engine: handler panicked", "conn", r.conn.ID, "panic", p, "stack", string(debug.Stack()))
			r.Close(ReasonProtocolError, "engine: handler panicked")
		}
	}()
	l.s.h.Serve(r)
}

// completed processes a request's completion on the loop.
func (l *loop) completed(c *econn, r *Request) {
	if c.closed {
		putRequest(r)
		return
	}
	c.inBytes -= len(r.frame)
	r.releaseFrame()
	r.done = true
	switch r.kind {
	case compRespond:
		c.outBytes += r.outLen
		if r.closeAfter && !c.closing {
			// RespondThenClose: read nothing more; close once written.
			c.closing, c.closeWhy = true, r.reason
			c.fr.reset()
			l.dropStash(c)
		}
	case compClose:
		if !c.closing {
			c.closing, c.closeWhy = true, r.reason
			c.fr.reset()
			l.dropStash(c)
		}
	}
	l.markDirty(c)
}

// flush writes c's consecutive completed responses from the head, in order.
func (l *loop) flush(c *econn) {
	for !c.slots.empty() {
		head := c.slots.at(0)
		if !head.done {
			return
		}
		switch head.kind {
		case compNoResponse:
			putRequest(c.slots.pop())
			c.lastActive = l.now
			continue
		case compClose:
			why, msg := head.reason, head.msg
			l.closeConn(c, why, msg)
			return
		}
		iov := l.iov[:0]
		total := 0
		for i := 0; i < c.slots.len() && len(iov) < maxIovecs; i++ {
			r := c.slots.at(i)
			if !r.done || r.kind == compClose {
				break
			}
			if r.kind != compRespond {
				continue
			}
			off := 0
			if i == 0 {
				off = c.woff
			}
			segs := r.segments(l.segs[:0], off, maxIovecs-len(iov))
			for _, b := range segs {
				v := unix.Iovec{Base: &b[0]}
				v.SetLen(len(b))
				iov = append(iov, v)
				total += len(b)
			}
			clear(segs)
		}
		n, errno := writev(c.fd, iov)
		clear(iov)
		if errno != 0 {
			if errno == unix.EAGAIN || errno == unix.EINTR {
				c.blocked = true
				if c.writeStart == 0 {
					c.writeStart = l.now
				}
				return
			}
			l.closeConn(c, ReasonIOError, "")
			return
		}
		l.n.bytesOut.Add(uint64(n))
		l.advance(c, n)
		if n < total {
			// Short write: the socket buffer is full. The clock starts
			// now unless the head response was already waiting.
			c.blocked = true
			if c.writeStart == 0 {
				c.writeStart = l.now
			}
			return
		}
	}
}

// advance pops the requests whose responses n written bytes completed.
func (l *loop) advance(c *econn, n int) {
	popped := false
	for !c.slots.empty() {
		r := c.slots.at(0)
		if !r.done || r.kind == compClose {
			break
		}
		if r.kind == compRespond {
			left := r.outLen - c.woff
			if n < left {
				c.woff += n
				c.outBytes -= n
				break
			}
			n -= left
			c.outBytes -= left
			c.woff = 0
		}
		putRequest(c.slots.pop())
		popped = true
	}
	if popped {
		c.lastActive = l.now
		c.writeStart = 0
		if c.woff > 0 || (!c.slots.empty() && c.slots.at(0).done) {
			c.writeStart = l.now
		}
	}
}

func (l *loop) dropStash(c *econn) {
	if c.stash != nil {
		putBuf(c.stash)
		c.stash, c.stashOff, c.stashEnd = nil, 0, 0
	}
}

// closeConn closes c now and releases what the loop owns. Requests still
// owned by handlers are released when they complete.
func (l *loop) closeConn(c *econn, why CloseReason, msg string) {
	if c.closed {
		return
	}
	c.closed = true
	c.info.closed.Store(true)
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	unix.Close(c.fd)
	delete(l.conns, int32(c.fd))
	last := l.list[len(l.list)-1]
	l.list[c.idx] = last
	last.idx = c.idx
	l.list[len(l.list)-1] = nil
	l.list = l.list[:len(l.list)-1]
	for !c.slots.empty() {
		if r := c.slots.pop(); r.done {
			putRequest(r)
		}
	}
	c.fr.reset()
	l.dropStash(c)
	l.s.open.Add(-1)
	l.n.open.Add(-1)
	l.n.closes[why].Add(1)
	if lg := l.s.cfg.Logger; lg.Enabled(context.Background(), slog.LevelDebug) {
		lg.Debug("engine: connection closed", "conn", c.info.ID, "remote", c.info.RemoteAddr,
			"reason", why.String(), "detail", msg)
	}
}

// sweep closes connections whose timeouts expired.
func (l *loop) sweep() {
	cfg := &l.s.cfg
	wall := time.Now().UnixNano()
	for i := len(l.list) - 1; i >= 0; i-- {
		c := l.list[i]
		switch {
		case c.info.authExpired(wall):
			l.closeConn(c, ReasonIdleTimeout, "not authenticated within the listener's AuthTimeout")
		case c.writeStart != 0 && l.now-c.writeStart > int64(cfg.WriteTimeout):
			l.closeConn(c, ReasonWriteTimeout, "")
		case c.events&unix.EPOLLIN != 0 && c.fr.inFrame() && l.now-c.frameStart > int64(cfg.ReadTimeout):
			l.closeConn(c, ReasonReadTimeout, "")
		case !c.fr.inFrame() && c.slots.empty() && c.stash == nil && l.now-c.lastActive > int64(cfg.IdleTimeout):
			l.closeConn(c, ReasonIdleTimeout, "")
		}
	}
}
