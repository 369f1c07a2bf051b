package bridge_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

func TestFranzProduceRoundTrip(t *testing.T) {
	for _, engine := range []string{"epoll", "net"} {
		for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
			t.Run(fmt.Sprintf("%s/%v", engine, codec), func(t *testing.T) {
				gw := kiggytest.Start(t, kiggytest.Options{Engine: engine})
				gw.CreateTopic(t, "t", 3)
				cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ProducerBatchCompression(codec),
					kgo.RecordPartitioner(kgo.ManualPartitioner()))
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				var sent []*kgo.Record
				for i := range 300 {
					r := &kgo.Record{Topic: "t", Partition: int32(i % 3), Key: []byte(fmt.Sprintf("k%d", i)),
						Value:     bytes.Repeat([]byte{byte(i)}, i%50+1),
						Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte("v")}},
						Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i))}
					sent = append(sent, r)
				}
				if err := cl.ProduceSync(ctx, sent...).FirstErr(); err != nil {
					t.Fatalf("produce: %v", err)
				}
				for p := int32(0); p < 3; p++ {
					got := gw.Records(t, "t", p)
					var want []*kgo.Record
					for _, r := range sent {
						if r.Partition == p {
							want = append(want, r)
						}
					}
					if len(got) != len(want) {
						t.Fatalf("partition %d: %d records, want %d", p, len(got), len(want))
					}
					for i := range got {
						if got[i].Offset != int64(i) || !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) ||
							got[i].Timestamp != want[i].Timestamp.UnixMilli() || len(got[i].Headers) != 1 {
							t.Fatalf("partition %d record %d: %+v, want key %q", p, i, got[i], want[i].Key)
						}
					}
				}
			})
		}
	}
}
