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
// Throttles. A handler may mute a connection for a client quota
// (ConnInfo.Throttle, Kafka's KIP-219): mustPause then holds, so reads stop
// like at any limit (EPOLLIN off, bytes read past it stashed). Unlike a
// limit, no completion ends it, so the loop keeps its muted connections in
// a list and its wait deadline is the earlier of the next sweep and the
// earliest throttle end; at that end they are marked dirty and service
// resumes them. A throttle set off the loop is seen on the connection's
// next read or servicing, whichever comes first.
//
// Lock ordering: loop.mu (queues) is a leaf; epollServer.mu is never held
// while taking loop.mu.
//
// Files. This one: the server (Serve, Shutdown, Stats). epoll_accept_linux.go:
// the acceptor. epoll_loop_linux.go: a loop, its poller and its queues.
// epoll_conn_linux.go: a connection's state, interest and close.
// epoll_read_linux.go and epoll_write_linux.go: the read and write paths.
// epoll_sweep_linux.go: timeouts and throttles. conn.go: what a connection's requests go
// through in both engines (the in-flight ring, completions, the writes'
// bookkeeping, close accounting).

import (
	"context"
	"net"
	"os"
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

type epollServer struct {
	// Immutable
	cfg   Config
	h     Handler
	epoch time.Time

	nextID atomic.Uint64
	open   atomic.Int64 // connections accepted and not yet closed
	acc    counters     // acceptor-side counters (refused)
	ips    ipCounts     // MaxConnectionsPerIP; shared with tlsSrv
	rates  *connRates   // the connection creation rates; shared with tlsSrv

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
		ips:       ipCounts{max: cfg.MaxConnectionsPerIP},
		rates:     newConnRates(cfg),
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
	a := &acceptor{s: s, ln: ln, lf: lf, raw: lraw, name: lcfg.Name, authTimeout: lcfg.AuthTimeout,
		maxFrameBeforeAuth: lcfg.MaxFrameBeforeAuth, quit: make(chan struct{})}
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
		s.tlsSrv.nextID, s.tlsSrv.open, s.tlsSrv.ips, s.tlsSrv.rates = &s.nextID, &s.open, &s.ips, s.rates
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
	draining(s.h)
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
	err := awaitClosed(ctx, &s.open)
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
	s.rates.addTo(&st)
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
