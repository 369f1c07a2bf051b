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
