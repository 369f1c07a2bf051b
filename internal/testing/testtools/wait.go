package testtools

import (
	"testing"
	"time"
)

// PollInterval is how often WaitFor and Eventually check their condition.
const PollInterval = 10 * time.Millisecond

// Eventually polls cond every PollInterval until it holds or timeout passes,
// and reports whether it held. The last check is at the deadline, so a
// condition that becomes true at the last moment still counts.
func Eventually(timeout time.Duration, cond func() bool) bool {
	return EventuallyEvery(timeout, PollInterval, cond)
}

// EventuallyEvery is Eventually polling every interval: for a condition
// that is expensive to check (it runs a tool or asks a server that should
// not be hammered).
func EventuallyEvery(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(interval, left)) // the poll interval: this is the one sleep tests wait with
	}
}

// WaitFor polls cond until it holds; if it does not within timeout, it fails
// t with "timed out after <timeout> waiting for <what>".
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Eventually(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Consistently polls cond every PollInterval for d and reports whether it
// held every time: a negative check ("nothing more happens for d") that
// looks throughout instead of only at the end of a sleep.
func Consistently(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if !cond() {
			return false
		}
		left := time.Until(deadline)
		if left <= 0 {
			return true
		}
		time.Sleep(min(PollInterval, left)) // the poll interval
	}
}
