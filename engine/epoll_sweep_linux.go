//go:build linux

// The epoll engine's timeouts and throttles: no timer per request; each
// loop sweeps its connections every Config.sweepInterval, comparing
// timestamps, and its parked poll wakes for the sweep through the epoll
// file's read deadline. The same deadline wakes it when the earliest quota
// throttle (ConnInfo.Throttle) of its connections ends: the sweep interval
// is far coarser than a throttle's precision, and a throttled connection
// has no other event to wake it.

package engine

import (
	"time"

	"golang.org/x/sys/unix"
)

func (l *loop) clock() int64 { return int64(time.Since(l.s.epoch)) }

// setWaitDeadline makes the parked poll return at the next sweep, or when
// the earliest throttle ends if that is sooner.
func (l *loop) setWaitDeadline() {
	at := l.nextSweep
	if l.muteNext != 0 {
		at = min(at, l.muteNext)
	}
	l.file.SetReadDeadline(l.s.epoch.Add(time.Duration(at)))
}

// watchThrottle puts c, whose reads are off for a Throttle ending at end
// (mutedUntil, nonzero), on the loop's list of muted connections, so that
// the loop wakes at its end. The caller passes the end it decided on: were
// it read again here, a throttle ending in between would be seen as none,
// and c would be left paused with nothing to wake it.
func (l *loop) watchThrottle(c *econn, end int64) {
	if c.muted {
		return
	}
	c.muted = true
	l.muted = append(l.muted, c)
	if at := l.loopTime(end); l.muteNext == 0 || at < l.muteNext {
		l.muteNext = at
		l.setWaitDeadline()
	}
}

// loopTime converts a throttle's wall-clock end (Unix nanoseconds) to the
// loop's monotonic clock, which the wait deadline and l.now use: a wake-up
// is then never early by the loop's own reckoning, so the deadline never
// stays behind, spinning the poll. (The wall clock, which Throttle uses,
// decides when the throttle actually ends: unmuteEnded checks it again.)
func (l *loop) loopTime(end int64) int64 {
	return l.clock() + max(end-time.Now().UnixNano(), 1)
}

// unwatchThrottle takes c off the muted list (its throttle ended, or it
// closed).
func (l *loop) unwatchThrottle(c *econn) {
	if !c.muted {
		return
	}
	for i, m := range l.muted {
		if m == c {
			l.dropMuted(i)
			return
		}
	}
}

// dropMuted takes the i-th connection off the muted list.
func (l *loop) dropMuted(i int) {
	l.muted[i].muted = false
	last := len(l.muted) - 1
	l.muted[i] = l.muted[last]
	l.muted[last] = nil
	l.muted = l.muted[:last]
}

// unmuteEnded resumes the muted connections whose throttle ended: marked
// dirty, service re-arms EPOLLIN and feeds a stash (the peer may send
// nothing more). The others, whose throttle a handler extended or whose end
// the wall clock has not reached yet, stay, and set the next wake-up.
func (l *loop) unmuteEnded() {
	l.muteNext = 0
	for i := len(l.muted) - 1; i >= 0; i-- {
		c := l.muted[i]
		if end := c.info.mutedUntil(); end != 0 {
			if at := l.loopTime(end); l.muteNext == 0 || at < l.muteNext {
				l.muteNext = at
			}
			continue
		}
		l.dropMuted(i) // moves only an entry already seen
		// The idle clock restarts: the silence was our pause, not the peer's.
		c.lastActive = max(c.lastActive, l.now)
		l.markDirty(c)
	}
	l.setWaitDeadline()
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
		case !c.fr.inFrame() && c.slots.empty() && c.stash == nil && !c.muted && l.now-c.lastActive > int64(cfg.IdleTimeout):
			l.closeConn(c, ReasonIdleTimeout, "")
		}
	}
}
