package group

import "time"

// clock is the coordinator's source of time and timers. Production uses the
// wall clock; tests substitute a manual clock so that session and rebalance
// timeouts can be driven deterministically.
type clock interface {
	now() time.Time
	// afterFunc calls f in its own goroutine once d has elapsed.
	afterFunc(d time.Duration, f func()) stopper
}

// stopper cancels a pending afterFunc. Stop may race with the call already
// under way; callers must tolerate one late, stale call.
type stopper interface {
	Stop() bool
}

// realClock reads now from nowFn (time.Now when nil) and arms real timers.
type realClock struct {
	nowFn func() time.Time
}

func (c realClock) now() time.Time {
	if c.nowFn != nil {
		return c.nowFn()
	}
	return time.Now()
}

func (realClock) afterFunc(d time.Duration, f func()) stopper {
	return time.AfterFunc(d, f)
}
