package multinode

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// BenchmarkClusterAggregate measures aggregate produce and consume
// throughput through 1, 2 and 3 instances over one in-process iggytest:
// one franz-go producer and one consumer bootstrapped from every instance,
// 12 partitions spread over the instances, 1 KiB records, acks=all.
// Everything runs in this process, so on a small machine the instances
// share its cores with the Iggy server and the clients (docs/BENCHMARKS.md
// "Several instances").
func BenchmarkClusterAggregate(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			isrv := iggytest.New(iggytest.Config{})
			a, err := isrv.Start("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer isrv.Close()
			rec := &appends{}
			var ins []*instance
			var live []int32
			var seeds []string
			for i := range n {
				in := startInstance(b, a.String(), int32(i+1), "127.0.0.1:0", rec)
				defer in.stop()
				ins, live, seeds = append(ins, in), append(live, in.id), append(seeds, in.addr)
			}
			const topic, parts = "bench", int32(12)
			if _, err := ins[0].log.CreateTopic(context.Background(), topic, parts, store.TopicConfig{}); err != nil {
				b.Fatal(err)
			}
			waitSettled(b, ins, live, topic, parts)
			prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(2*time.Millisecond),
				kgo.MaxBufferedRecords(100_000), kgo.ProducerBatchMaxBytes(1<<20))
			if err != nil {
				b.Fatal(err)
			}
			defer prod.Close()
			value := make([]byte, 1024)
			var failed atomic.Int64
			b.SetBytes(int64(len(value)))
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				prod.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
					}
				})
			}
			if err := prod.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			produceTime := time.Since(start)
			if failed.Load() > 0 {
				b.Fatalf("%d records failed", failed.Load())
			}
			cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(4<<20))
			if err != nil {
				b.Fatal(err)
			}
			defer cons.Close()
			start = time.Now()
			got := 0
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			for got < b.N {
				fs := cons.PollFetches(ctx)
				if ctx.Err() != nil {
					b.Fatalf("consumed %d of %d", got, b.N)
				}
				got += fs.NumRecords()
			}
			consumeTime := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/produceTime.Seconds(), "produced/s")
			b.ReportMetric(float64(b.N)/consumeTime.Seconds(), "consumed/s")
		})
	}
}
