package bridge_test

import (
	"runtime"
	"testing"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// manyParts is the partition count of the many-partition Fetch tests: most
// of them empty, as in a large topic's Fetch.
const manyParts = 256

// fetchFrameN is a Fetch v12 of partitions 0..n-1 of topic from offset 0,
// up to partMax bytes each.
func fetchFrameN(topic string, n int32, partMax int32) []byte {
	return requestFrame(fetchRequest(12, topic, make([]int64, n), partMax, 64<<20), 2)
}

// startManyParts starts an Iggy-backed gateway with a topic of manyParts
// partitions, the first benchPartitions of which hold 16 × 16 KiB.
func startManyParts(tb testing.TB) (*benchConn, []byte) {
	// Sole writer: the tail checks of a gateway that shares its stream
	// (about one GetTopic of the topic every 50–100 ms, tailcheck.go) are
	// timed work apart from the Fetch, whose allocations (the 256
	// partitions' reply, on the in-process model too) a window of 50
	// Fetches would catch.
	gw := kiggytest.Start(tb, kiggytest.Options{Iggy: true, IggySoleWriter: true})
	gw.CreateTopic(tb, "many", manyParts)
	bc := dialBench(tb, gw.Addr)
	pf := produceFrame("many")
	for range 16 {
		checkProduce(tb, bc.roundTrip(tb, pf))
	}
	return bc, fetchFrameN("many", manyParts, 1<<20)
}

// BenchmarkFetchManyPartitionsIggy: the Fetch of TestFetchManyPartitionsAllocsIggy.
func BenchmarkFetchManyPartitionsIggy(b *testing.B) {
	bc, frame := startManyParts(b)
	bc.roundTrip(b, frame)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		bc.roundTrip(b, frame)
	}
}

// testingMemStats reads the process's total allocated bytes.
type testingMemStats struct{ bytes uint64 }

func (m *testingMemStats) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.bytes = s.TotalAlloc
}
