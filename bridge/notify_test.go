package bridge

import "testing"

// woken reports whether w was woken.
func woken(w *waiter) bool {
	select {
	case <-w.ch:
		return true
	default:
		return false
	}
}

// TestNotifierNoLostWakeUp: an append signalled after a Fetch took its
// mark (before reading) and before it parked wakes it at park time; one
// signalled before the mark, or to another partition, does not; a waiter
// registered before a signal is woken by it; prune keeps what a mark may
// still need.
func TestNotifierNoLostWakeUp(t *testing.T) {
	var n notifier
	n.init()
	n.signal("t", 0) // before the Fetch's mark: its read saw this append
	since := n.mark()
	n.signal("t", 1) // between the read and the park, another partition
	w := newWaiter()
	n.watch("t", 0, w, since)
	if woken(w) {
		t.Fatal("woken by an append its read saw, or by another partition's")
	}
	n.signal("t", 0)
	if !woken(w) {
		t.Fatal("a registered waiter was not woken by an append")
	}
	n.unwatch("t", 0, w)

	since = n.mark()
	n.signal("t", 0) // the race: between the read and the park
	w = newWaiter()
	n.watch("t", 0, w, since)
	if !woken(w) {
		t.Fatal("an append between the read and the park was lost")
	}
	n.unwatch("t", 0, w)

	// A partition signalled since the last prune stays; one that was not,
	// with nobody waiting, goes; one with a waiter stays.
	n.prune()
	n.signal("t", 2)
	w = newWaiter()
	n.watch("u", 0, w, n.mark())
	n.prune()
	if _, ok := n.parts[partitionKey{"t", 2}]; !ok {
		t.Fatal("pruned a partition signalled since the last prune")
	}
	if _, ok := n.parts[partitionKey{"t", 0}]; ok {
		t.Fatal("kept an idle partition nobody waits on")
	}
	if _, ok := n.parts[partitionKey{"u", 0}]; !ok {
		t.Fatal("pruned a partition a Fetch waits on")
	}
}
