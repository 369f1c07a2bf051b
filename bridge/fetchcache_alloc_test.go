//go:build !race

package bridge_test

import (
	"testing"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// The shared Fetch batches keep the Iggy Fetch path free of allocations:
// TestFetchRoundTripAllocsIggy (alloc_test.go) runs with them on, so its
// repeated Fetch is answered from them; these run the other two cases.

// TestFetchRoundTripAllocsIggyUnshared: with --iggy-fetch-cache-bytes 0
// the Fetch served from the read cache maps every partition again, and
// allocates nothing either.
func TestFetchRoundTripAllocsIggyUnshared(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyNoKeepAlive: true, IggyFetchCacheBytes: -1})
	checkFetchAllocsIggy(t, gw)
	if m := gw.Metrics(); !containsLine(m, "kiggy_fetch_cache_limit_bytes 0") {
		t.Fatal("the fetch cache is on")
	}
}

// TestFetchRoundTripAllocsIggySharedMisses: Fetches that each miss the
// fetch cache and store their partitions' batches in it (eight offsets in
// turn against a bound that holds two Fetches' worth, so each evicts an
// older one) allocate nothing in steady state: entries and their buffers
// are recycled, topic names interned.
func TestFetchRoundTripAllocsIggySharedMisses(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyNoKeepAlive: true, IggyFetchCacheBytes: 3 << 20})
	gw.CreateTopic(t, "allocs", benchPartitions)
	bc := dialBench(t, gw.Addr)
	pf := produceFrame("allocs")
	for range 16 {
		checkProduce(t, bc.roundTrip(t, pf))
	}
	var frames [][]byte
	for i := range 8 {
		offsets := make([]int64, benchPartitions)
		for p := range offsets {
			offsets[p] = int64(8 * i)
		}
		frames = append(frames, fanoutFetch("allocs", offsets, 64<<10))
	}
	next := 0
	fetch := func() {
		bc.roundTrip(t, frames[next%len(frames)])
		next++
	}
	for range 80 {
		fetch()
	}
	misses := metricValue(t, gw.Metrics(), "kiggy_fetch_cache_misses_total")
	n := testing.AllocsPerRun(100, fetch)
	m := gw.Metrics()
	t.Logf("%.3f allocations per Fetch round trip; fetch cache misses %v → %v, hits %v, evictions %v", n, misses,
		metricValue(t, m, "kiggy_fetch_cache_misses_total"), metricValue(t, m, "kiggy_fetch_cache_hits_total"),
		metricValue(t, m, "kiggy_fetch_cache_evictions_total"))
	if got := metricValue(t, m, "kiggy_fetch_cache_misses_total") - misses; got < 100*benchPartitions {
		t.Fatalf("%v partition reads missed the fetch cache during the measurement, want every one of %d", got, 101*benchPartitions)
	}
	if n >= 1 {
		t.Fatalf("%.2f allocations per Fetch round trip", n)
	}
}
