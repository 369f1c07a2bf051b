//go:build !race

package bridge_test

import (
	"testing"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestFetchSessionIncrementalAllocs: an incremental Fetch of a session of
// 1,000 cached partitions at their tail (it names none; every one is read
// and left out) allocates nothing per request once warm, like a full
// Fetch (TestFetchRoundTripAllocs).
func TestFetchSessionIncrementalAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 partitions")
	}
	tf := newTailFetcher(t, kiggytest.Options{Embedded: true})
	if tf.start(t) == 0 {
		t.Fatal("no session")
	}
	for range 50 {
		tf.incremental(t)
	}
	n := testing.AllocsPerRun(100, func() { tf.incremental(t) })
	t.Logf("%.3f allocations per incremental Fetch of %d session partitions (%d response bytes)", n, sessionParts, tf.lastLen)
	if n > 0.1 {
		t.Fatalf("%.2f allocations per incremental Fetch", n)
	}
}
