//go:build linux

// An epoll event loop: its epoll instance and eventfd, parking in the
// runtime poller, the queues other goroutines post completions and commands
// to, and the round that turns ready events into reads and flushes.

package engine

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	loopReadBuffer = 16 << 10
	maxIovecs      = 64
	maxEvents      = 256
)

// eventfdOne is the 8-byte value written to an eventfd to wake a loop.
var eventfdOne = [8]byte{1}

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

	// muted are the connections paused by a Throttle (econn.muted), and
	// muteNext the loop clock when the earliest of them may end; 0 = none.
	muted    []*econn
	muteNext int64
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
			l.discard(c.c, ReasonShutdown)
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
	l.setWaitDeadline()
	for !l.quit {
		l.wait()
		l.handleEvents()
		if l.muteNext != 0 && l.now >= l.muteNext {
			l.unmuteEnded()
		}
		l.serviceDirty()
		if l.now >= l.nextSweep {
			l.sweep()
			l.nextSweep = l.now + sweep
			l.setWaitDeadline()
		}
	}
	l.exit()
}

// wait parks until events are ready (or the wait deadline passes: the next
// sweep or throttle end) and reads the clock.
func (l *loop) wait() {
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
}

// handleEvents applies the ready events: the eventfd drains the queues, a
// readable connection is read, a writable one is marked for a flush.
func (l *loop) handleEvents() {
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
			t0 := l.clock()
			l.read(c)
			c.info.engineNanos.Add(l.clock() - t0)
		case ev.Events&unix.EPOLLHUP != 0:
			l.closeConn(c, ReasonPeerClosed, "")
			continue
		}
		if ev.Events&unix.EPOLLOUT != 0 && !c.closed {
			c.blocked = false
			l.markDirty(c)
		}
	}
}

// exit closes every connection and what was queued for the loop, then its
// descriptors; later posts and commands find it exited.
func (l *loop) exit() {
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
			l.discard(c.c, ReasonShutdown)
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
		l.discard(c, ReasonShutdown)
		return
	}
	c.events = unix.EPOLLIN
	ev := unix.EpollEvent{Events: c.events, Fd: int32(c.fd), Pad: c.tag()}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
		l.discard(c, ReasonIOError)
		return
	}
	c.lastActive = l.now
	c.idx = len(l.list)
	l.list = append(l.list, c)
	l.conns[int32(c.fd)] = c
}

// discard closes a connection the loop never registered (it was accepted
// as the loop drained or exited, or epoll refused it), counted under why.
func (l *loop) discard(c *econn, why CloseReason) {
	c.closed = true
	unix.Close(c.fd)
	c.info.releaseIP()
	l.s.open.Add(-1)
	l.n.open.Add(-1)
	l.n.closes[why].Add(1)
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
			t0 := l.clock()
			l.service(c)
			c.info.engineNanos.Add(l.clock() - t0)
		}
	}
}
