//go:build linux

// The epoll engine's write path: completions recorded on the loop, then
// one writev per connection of its consecutive completed responses, partial
// writes resumed from an offset.

package engine

import "golang.org/x/sys/unix"

// completed processes a request's completion on the loop.
func (l *loop) completed(c *econn, r *Request) {
	if c.closed {
		putRequest(r)
		return
	}
	if c.settle(r) {
		c.fr.reset()
		l.dropStash(c)
	}
	l.markDirty(c)
}

// flush writes c's consecutive completed responses from the head, in order.
func (l *loop) flush(c *econn) {
	for {
		if c.popNoResponses() > 0 {
			c.lastActive = l.now
		}
		if head := c.closeAtHead(); head != nil {
			l.closeConn(c, head.reason, head.msg)
			return
		}
		segs := c.gather(l.segs[:0], maxIovecs, false)
		if len(segs) == 0 {
			return // nothing in flight, or the head is not completed yet
		}
		iov := l.iov[:0]
		total := 0
		for _, b := range segs {
			v := unix.Iovec{Base: &b[0]}
			v.SetLen(len(b))
			iov = append(iov, v)
			total += len(b)
		}
		clear(segs)
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

// advance pops the requests whose responses n written bytes completed and
// restarts c's write clock.
func (l *loop) advance(c *econn, n int) {
	if c.inflight.advance(n) {
		c.lastActive = l.now
		c.writeStart = 0
		if c.woff > 0 || (!c.slots.empty() && c.slots.at(0).done) {
			c.writeStart = l.now
		}
	}
}
