//go:build linux

// The epoll engine's read path: read(2) under a per-round budget, framing
// (through the loop's read buffer or straight into a large frame's buffer),
// and dispatch of each frame to the handler.

package engine

import (
	"golang.org/x/sys/unix"
)

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
	r := takeRequest(&c.fr, c.info, c)
	c.admit(r)
	c.lastActive, c.frameStart = l.now, l.now
	l.n.requests.Add(1)
	serveRequest(l.s.h, l.s.cfg.Logger, r)
	if r.served() {
		l.completed(c, r)
	}
	l.markDirty(c)
}
