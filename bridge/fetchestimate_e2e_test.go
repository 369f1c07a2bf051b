package bridge_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// countedReads is an Iggy client whose Reads are counted; every other
// method (the read estimates among them) is the client's.
type countedReads struct {
	*iggy.Client
	reads atomic.Int64
}

func (c *countedReads) Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int,
	fn func(*message.Message) bool) (store.Watermarks, error) {
	c.reads.Add(1)
	return c.Client.Read(ctx, topic, partition, offset, maxBytes, fn)
}

func (c *countedReads) ReadAt(ctx context.Context, now time.Time, topic string, partition int32, offset int64, maxBytes int,
	fn func(*message.Message) bool) (store.Watermarks, error) {
	c.reads.Add(1)
	return c.Client.ReadAt(ctx, now, topic, partition, offset, maxBytes, fn)
}

// TestFetchAtHighTakesTheEstimate: a Fetch of partitions at their high
// watermarks, which the Iggy client knows from memory, reads none of them:
// the estimate that plans the Fetch's wave answered each (store.Estimate),
// with the right high watermark. Once records are appended past the fetch
// offsets, the same Fetch reads and returns them.
func TestFetchAtHighTakesTheEstimate(t *testing.T) {
	const parts = 2 * benchPartitions // produceFrame writes the first half
	ic := openIggyModel(t, iggy.Config{SoleWriter: true})
	log := &countedReads{Client: ic}
	gw := kiggytest.Start(t, kiggytest.Options{Log: log})
	gw.CreateTopic(t, "answered", parts)
	bc := dialBench(t, gw.Addr)

	kc, err := kafkawire.Dial(gw.Addr, "raw", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kc.Close() })

	offsets := make([]int64, parts)
	fetch := func() *kmsg.FetchResponse {
		resp := rawFetch(t, kc, 12, "answered", offsets, 1<<20, 64<<20)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != parts {
			t.Fatalf("Fetch: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
		}
		return resp
	}
	fetch() // a reader: the client learns every partition's end and keeps their appends
	checkProduce(t, bc.roundTrip(t, produceFrame("answered")))
	for p := range benchPartitions {
		offsets[p] = benchRecords
	}
	for round := range 3 {
		before := log.reads.Load()
		resp := fetch()
		if n := log.reads.Load() - before; n != 0 {
			t.Fatalf("round %d: a Fetch of %d partitions at their high watermarks read %d of them", round, parts, n)
		}
		for _, p := range resp.Topics[0].Partitions {
			want := int64(0)
			if p.Partition < benchPartitions {
				want = benchRecords
			}
			if p.ErrorCode != 0 || p.HighWatermark != want || len(p.RecordBatches) != 0 {
				t.Fatalf("round %d, partition %d: error %d, high watermark %d (want %d), %d record bytes",
					round, p.Partition, p.ErrorCode, p.HighWatermark, want, len(p.RecordBatches))
			}
		}
	}
	checkProduce(t, bc.roundTrip(t, produceFrame("answered")))
	before := log.reads.Load()
	resp := fetch()
	if n := log.reads.Load() - before; n < benchPartitions {
		t.Errorf("after an append to %d partitions, the Fetch read %d", benchPartitions, n)
	}
	for _, p := range resp.Topics[0].Partitions {
		got := len(p.RecordBatches) != 0
		if p.ErrorCode != 0 || got != (p.Partition < benchPartitions) {
			t.Errorf("after the append, partition %d: error %d, high watermark %d, %d record bytes",
				p.Partition, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
		}
	}
}
