package testtools

import (
	"testing"
	"time"
)

// PollInterval is how often WaitFor and Eventually check their condition.
const PollInterval = 10 * time.Millisecond

// Eventually polls cond every PollInterval until it holds or timeout passes,
// and reports whether it held. cond is checked once more at the deadline, so
// a condition that becomes true at the last moment still counts.
func Eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(PollInterval) // the poll interval: this is the one sleep tests wait with
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
