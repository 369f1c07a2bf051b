package bridge

import (
	"context"
	"sync"
	"time"
)

// deadlineCtx is a request's deadline as a context.Context that costs no
// allocation, timer or goroutine unless something waits on Done: a Produce
// to Iggy checks Err and Deadline (the client sets the connection deadline
// from it) and only a wait for a free session selects on Done. Done then
// starts a timer that closes the channel at the deadline, or when the
// parent ends. A deadlineCtx is reused across requests (a state's scratch):
// release ends its use, and nothing may keep it beyond the request.
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time

	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	timer *time.Timer
	stop  func() bool // stops the parent's AfterFunc
	once  *sync.Once
}

var _ context.Context = (*deadlineCtx)(nil)

// start begins a use: parent's values and end, and deadline.
func (c *deadlineCtx) start(parent context.Context, deadline time.Time) {
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.parent, c.deadline = parent, deadline
}

// release ends a use: the timer and the parent's hook, if Done started them.
func (c *deadlineCtx) release() {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
		c.stop()
	}
	c.done, c.timer, c.stop, c.once = nil, nil, nil, nil
	c.parent = nil
	c.mu.Unlock()
}

// Deadline implements context.Context.
func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Value implements context.Context.
func (c *deadlineCtx) Value(key any) any { return c.parent.Value(key) }

// Err implements context.Context: the parent's error, else
// context.DeadlineExceeded once the deadline has passed.
func (c *deadlineCtx) Err() error {
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Done implements context.Context; the first call makes the channel and
// the timer that closes it.
func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.doneLocked()
}

func (c *deadlineCtx) doneLocked() chan struct{} {
	if c.done == nil {
		done, once := make(chan struct{}), new(sync.Once)
		end := func() { once.Do(func() { close(done) }) }
		c.done, c.once = done, once
		c.timer = time.AfterFunc(time.Until(c.deadline), end)
		c.stop = context.AfterFunc(c.parent, end)
	}
	return c.done
}

// AfterFunc arranges for f to run once c is done, as context.AfterFunc
// does; stop cancels that. A context derived from c (context.WithTimeout
// and the like) finds this method and hooks its cancellation here instead
// of starting a goroutine that would call Done later, after c's use may have
// ended: every derived context must be cancelled before release.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return context.AfterFunc(doneContext{c.doneLocked()}, f)
}

// doneContext is a context that ends when done closes (for AfterFunc).
type doneContext struct{ done chan struct{} }

func (d doneContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (d doneContext) Done() <-chan struct{}       { return d.done }
func (d doneContext) Value(any) any               { return nil }
func (d doneContext) Err() error {
	select {
	case <-d.done:
		return context.Canceled
	default:
		return nil
	}
}
