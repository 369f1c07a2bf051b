//go:build linux

// The epoll engine's timeouts: no timer per request; each loop sweeps its
// connections every Config.sweepInterval, comparing timestamps, and its
// parked poll wakes for the sweep through the epoll file's read deadline.

package engine

import (
	"time"

	"golang.org/x/sys/unix"
)

func (l *loop) clock() int64 { return int64(time.Since(l.s.epoch)) }

// setSweepDeadline makes the parked poll return at the next sweep.
func (l *loop) setSweepDeadline() {
	l.file.SetReadDeadline(l.s.epoch.Add(time.Duration(l.nextSweep)))
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
