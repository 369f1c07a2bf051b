package bridge_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// BenchmarkGatewayFanoutIggy: G consumers ("groups", one connection each)
// read the same 16-partition topic at once, each sequentially from offset 0
// with its own offsets (Fetch v12, 256 KiB per partition), on the Iggy
// backend whose replies are delayed by 500 µs, with the Iggy client's read
// cache off, on, and on with the gateway's shared Fetch batches
// (bridge/fetchcache). The figure is the aggregate records/s of all groups;
// 64 MiB of data against 32 MiB caches, so a group that wraps round reads
// from Iggy again (docs/BENCHMARKS.md, "Fan-out with shared Fetch batches").
func BenchmarkGatewayFanoutIggy(b *testing.B) {
	for _, c := range []struct {
		name              string
		cache, fetchCache int64
	}{{"off", -1, -1}, {"on", 32 << 20, -1}, {"on+shared", 32 << 20, 32 << 20}} {
		for _, groups := range []int{1, 3} {
			b.Run(fmt.Sprintf("cache=%s/groups=%d", c.name, groups), func(b *testing.B) {
				gw := kiggytest.Start(b, kiggytest.Options{IggyServer: latencyServer(b, 500*time.Microsecond),
					IggyReadCacheBytes: c.cache, IggyFetchCacheBytes: c.fetchCache})
				benchFanout(b, gw, groups, 4)
			})
		}
	}
}

// fanoutFetch is a Fetch v12 of every partition of topic at offsets.
func fanoutFetch(topic string, offsets []int64, partMax int32) []byte {
	return requestFrame(fetchRequest(12, topic, offsets, partMax, 64<<20), 3)
}

// advance moves offsets past the whole record batches of a Fetch v12
// response, checking that each partition's batches start at its offset,
// and returns how many records it held; with wrap, a partition read to its
// high watermark starts again at 0.
func advance(b testing.TB, body []byte, offsets []int64, wrap bool) int {
	b.Helper()
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	if err := resp.ReadFrom(body[5:]); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
			// Walk the batches: baseOffset i64, length i32, ...,
			// lastOffsetDelta i32 at byte 23.
			for rb := p.RecordBatches; len(rb) >= 61; {
				size := 12 + int(binary.BigEndian.Uint32(rb[8:]))
				if size > len(rb) {
					break
				}
				base := int64(binary.BigEndian.Uint64(rb))
				if base != offsets[p.Partition] {
					b.Fatalf("partition %d: a batch at %d, the reader is at %d", p.Partition, base, offsets[p.Partition])
				}
				last := int64(int32(binary.BigEndian.Uint32(rb[23:])))
				n += int(last + 1)
				offsets[p.Partition] = base + last + 1
				rb = rb[size:]
			}
			if wrap && offsets[p.Partition] >= p.HighWatermark {
				offsets[p.Partition] = 0
			}
		}
	}
	return n
}

// benchFanout preloads mib MiB per partition, then runs groups consumers
// for b.N Fetches each and reports their aggregate records/s.
func benchFanout(b *testing.B, gw *kiggytest.Gateway, groups, mib int) {
	gw.CreateTopic(b, "fan", benchPartitions)
	pc := dialBench(b, gw.Addr)
	pf := produceFrame("fan")
	for range (1 << 20) / (benchRecords * benchValue) * mib {
		checkProduce(b, pc.roundTrip(b, pf))
	}
	conns := make([]*benchConn, groups)
	for i := range conns {
		conns[i] = dialBench(b, gw.Addr)
	}
	var mu sync.Mutex
	records := 0
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, bc := range conns {
		wg.Go(func() {
			offsets := make([]int64, benchPartitions)
			n := 0
			for range b.N {
				n += advance(b, bc.roundTrip(b, fanoutFetch("fan", offsets, 256<<10)), offsets, true)
			}
			mu.Lock()
			records += n
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(records)/float64(b.N*groups), "records/fetch")
}
