package bridge_test

import (
	"testing"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// BenchmarkFetchTailIggy: a consumer at the tail of 16 partitions on Iggy,
// as between two appends: one partition has a batch to read (from the tail
// window), the other 15 are at their high watermarks. It measures the
// gateway's fixed cost per partition read of a tail Fetch (docs/IGGY.md,
// "A Fetch reads within its budget"), as CPU time per Fetch.
func BenchmarkFetchTailIggy(b *testing.B) {
	gw := kiggytest.Start(b, kiggytest.Options{Iggy: true, IggySoleWriter: true})
	gw.CreateTopic(b, "tail", benchPartitions)
	bc := dialBench(b, gw.Addr)
	offsets := make([]int64, benchPartitions)
	bc.roundTrip(b, requestFrame(fetchRequest(12, "tail", offsets, 1<<20, 64<<20), 2)) // a reader: the window keeps appends
	checkProduce(b, bc.roundTrip(b, produceFrame("tail")))
	for p := 1; p < len(offsets); p++ {
		offsets[p] = benchRecords
	}
	frame := requestFrame(fetchRequest(12, "tail", offsets, 1<<20, 64<<20), 2)
	bc.roundTrip(b, frame)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, ok0 := testtools.SelfCPU()
	for range b.N {
		bc.roundTrip(b, frame)
	}
	if cpu1, ok1 := testtools.SelfCPU(); ok0 && ok1 {
		// The process's CPU (the gateway's and the client's, which only
		// writes the request and reads the response) per Fetch: on two
		// shared cores the round trip's wall time hides hand-offs that
		// run beside it.
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
