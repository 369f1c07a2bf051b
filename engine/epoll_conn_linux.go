//go:build linux

// An epoll connection: its loop-owned state, the epoll interest that is
// its backpressure, its servicing after each round, and its close.

package engine

import (
	"golang.org/x/sys/unix"
)

// econn is one connection of the epoll engine.
type econn struct {
	// Immutable
	fd   int
	info *ConnInfo
	l    *loop

	// Owned by the loop
	inflight   // requests from dispatch until written (conn.go)
	fr         framer
	stash      *[]byte // unconsumed read bytes while reads are paused
	stashOff   int
	stashEnd   int
	events     uint32 // registered epoll interest
	blocked    bool   // a write hit EAGAIN; EPOLLOUT is wanted
	lastActive int64
	frameStart int64
	writeStart int64 // 0, or when the head response started waiting
	closed     bool
	dirty      bool
	muted      bool // on loop.muted: paused by a Throttle, resumed at its end
	idx        int  // position in loop.list
}

// tag identifies c in epoll event data next to its fd, so an event fetched
// before c's fd was closed and reused in the same round is not applied to
// the new connection.
func (c *econn) tag() int32 { return int32(c.info.ID) }

// complete is called by Request.finish off the loop: queue and wake.
func (c *econn) complete(r *Request) { c.l.post(r) }

// startClosing stops reading c and closes it once its slots drain.
func (l *loop) startClosing(c *econn, why CloseReason) {
	if c.inflight.startClosing(why) {
		c.fr.reset()
		l.dropStash(c)
		l.markDirty(c)
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

// mustPause reports whether c may not start another frame now: it closes,
// it is at a limit, or a quota's Throttle is in force (tested last: one
// atomic load when none was set).
func (l *loop) mustPause(c *econn) bool {
	return c.closing || c.overLimit(&l.s.cfg) || c.info.mutedUntil() != 0
}

// setInterest registers the epoll events c needs now.
func (l *loop) setInterest(c *econn) {
	// The throttle is read once for the whole decision: read twice, it
	// could end in between, leaving reads off with no wake-up armed and
	// the connection stalled for good (a lost wake-up seen under load).
	end := c.info.mutedUntil()
	pause := c.closing || c.overLimit(&l.s.cfg) || end != 0
	if hook := l.s.cfg.hookPaused; hook != nil && end != 0 {
		hook(c.info)
	}
	var want uint32
	if c.stash == nil && !pause {
		want |= unix.EPOLLIN
		if c.events&unix.EPOLLIN == 0 && c.fr.inFrame() {
			c.frameStart = l.now // the peer was paused by us, not slow
		}
	}
	if c.blocked {
		want |= unix.EPOLLOUT
	}
	if want&unix.EPOLLIN == 0 && !c.closing {
		switch {
		case end != 0:
			// No completion is bound to come for a throttled connection:
			// the loop must wake by itself when the throttle ends.
			l.watchThrottle(c, end)
		case c.stash != nil && !pause:
			// The throttle that kept the stash ended since service looked:
			// nothing else would feed it.
			l.markDirty(c)
		}
	}
	if want == c.events {
		return
	}
	if c.events&unix.EPOLLIN != 0 && want&unix.EPOLLIN == 0 && pause && !c.closing {
		// Reads stop at a limit or a throttle (with or without a stash of
		// bytes read past it).
		l.n.pauses[c.pauseCause(&l.s.cfg, end != 0)].Add(1)
	}
	c.events = want
	ev := unix.EpollEvent{Events: want, Fd: int32(c.fd), Pad: c.tag()}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		l.closeConn(c, ReasonIOError, "")
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
	l.unwatchThrottle(c)
	c.release()
	c.fr.reset()
	l.dropStash(c)
	countClose(&l.s.open, &l.n, l.s.cfg.Logger, c.info, why, msg)
}
