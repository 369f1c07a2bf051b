package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestIggyFanoutGroups: three franz-go consumer groups read one topic at
// the same time while a producer is still writing to it, on the Iggy
// backend with the read cache on; each group gets every record exactly
// once, in offset order per partition, and most of their partition reads
// are served from the cache (docs/IGGY.md, "The read cache and
// read-ahead"), some with the batches another group's Fetch encoded.
func TestIggyFanoutGroups(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	gw.CreateTopic(t, "fanout", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const total = 4000
	value := strings.Repeat("v", 512)
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			prod.Produce(ctx, &kgo.Record{Topic: "fanout", Key: fmt.Appendf(nil, "k%05d", i), Value: []byte(value)}, nil)
		}
		if err := prod.Flush(ctx); err != nil {
			t.Error(err)
		}
	}
	produce(0, total/2)

	var wg sync.WaitGroup
	wg.Go(func() { produce(total/2, total) })
	for g := range 3 {
		wg.Go(func() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumerGroup(fmt.Sprintf("g%d", g)),
				kgo.ConsumeTopics("fanout"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchMaxPartitionBytes(64<<10))
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			seen := map[string]bool{}
			next := map[int32]int64{}
			for len(seen) < total && ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				fs.EachError(func(_ string, _ int32, err error) { t.Errorf("group %d: %v", g, err) })
				fs.EachRecord(func(r *kgo.Record) {
					if r.Offset != next[r.Partition] {
						t.Errorf("group %d partition %d: offset %d, want %d", g, r.Partition, r.Offset, next[r.Partition])
					}
					next[r.Partition] = r.Offset + 1
					if seen[string(r.Key)] {
						t.Errorf("group %d: %s twice", g, r.Key)
					}
					if string(r.Value) != value {
						t.Errorf("group %d: %s: wrong value", g, r.Key)
					}
					seen[string(r.Key)] = true
				})
			}
			if len(seen) != total {
				t.Errorf("group %d: %d of %d records", g, len(seen), total)
			}
		})
	}
	wg.Wait()

	var m strings.Builder
	gw.Log.(store.MetricsWriter).WriteMetrics(&m)
	hits, misses := metricValue(t, m.String(), "kiggy_iggy_read_cache_hits_total"), metricValue(t, m.String(), "kiggy_iggy_read_cache_misses_total")
	fm := gw.Metrics()
	t.Logf("read cache: %v hits, %v misses; fetch cache: %v hits, %v misses, %v waits", hits, misses,
		metricValue(t, fm, "kiggy_fetch_cache_hits_total"), metricValue(t, fm, "kiggy_fetch_cache_misses_total"),
		metricValue(t, fm, "kiggy_fetch_cache_shared_waits_total"))
	if hits <= misses {
		t.Errorf("three groups of one topic: %v hits, %v misses; want most reads from the cache", hits, misses)
	}
	// The groups read the same offsets with the same limits: some of their
	// partition reads are answered with batches another group's Fetch
	// encoded (docs/IGGY.md, "Fetches share encoded batches").
	if metricValue(t, fm, "kiggy_fetch_cache_hits_total") == 0 {
		t.Error("three groups of one topic: no partition read answered from the fetch cache")
	}
}
