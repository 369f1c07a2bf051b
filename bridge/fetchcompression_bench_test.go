package bridge_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// BenchmarkGatewayFetchCodec: BenchmarkGatewayFetch's Fetch (16 partitions,
// up to 1 MiB each) of a topic with each compression.type, the records 1 KiB
// of random words from a 256-word vocabulary (text-like: every codec
// compresses it, none to nothing). MB/s counts the records' uncompressed value bytes, so the
// codecs compare on records served; wire-B/op is the response size, and
// cpu-s/GB the process's CPU seconds (gateway and the benchmark's client)
// per GB (10^9 bytes) of record values served.
func BenchmarkGatewayFetchCodec(b *testing.B) {
	for _, c := range append([]struct {
		name  string
		codec batch.Codec
	}{{"none", batch.NoCompression}}, fetchCodecs...) {
		b.Run("codec="+c.name, func(b *testing.B) {
			gw := codecGateway(b, false)
			createCodecTopic(b, gw, "bench", benchPartitions, c.name)
			bc := dialBench(b, gw.Addr)
			rng := rand.New(rand.NewPCG(7, 8))
			for range (2 << 20) / (benchRecords * benchValue) {
				checkProduce(b, bc.roundTrip(b, wordsProduceFrame(rng, "bench")))
			}
			frame := fetchFrame("bench", 1<<20)
			body := bc.roundTrip(b, frame)
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = 12
			if err := resp.ReadFrom(body[5:]); err != nil {
				b.Fatal(err)
			}
			records := 0
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
						b.Fatalf("partition %d: error %d, %d record bytes", p.Partition, p.ErrorCode, len(p.RecordBatches))
					}
					for rb := p.RecordBatches; len(rb) > 0; {
						var h kmsg.RecordBatch
						if err := h.ReadFrom(rb); err != nil {
							b.Fatal(err)
						}
						if batch.Codec(h.Attributes&7) != c.codec {
							b.Fatalf("codec %d, want %s", h.Attributes&7, c.codec)
						}
						records += int(h.NumRecords)
						rb = rb[12+int(h.Length):]
					}
				}
			}
			wire := len(body)
			b.SetBytes(int64(records * benchValue))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, ok0 := testtools.SelfCPU()
			for range b.N {
				bc.roundTrip(b, frame)
			}
			cpu1, ok1 := testtools.SelfCPU()
			b.ReportMetric(float64(wire), "wire-B/op")
			b.ReportMetric(float64(records), "records/op")
			if ok0 && ok1 {
				// The client's share (reading the response) is small.
				gb := float64(b.N) * float64(records*benchValue) / 1e9
				b.ReportMetric((cpu1-cpu0).Seconds()/gb, "cpu-s/GB")
			}
		})
	}
}

// wordsProduceFrame is produceFrame with values of random words, new ones
// each call (a repeated frame would compress as one).
func wordsProduceFrame(rng *rand.Rand, topic string) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	var bld batch.Builder
	for p := range int32(benchPartitions) {
		bld.Reset(nil, 0, time.Now().UnixMilli(), batch.NoCompression)
		for i := range int32(benchRecords) {
			bld.Append(i, 0, nil, letters(rng, benchValue))
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, bld.Finish()
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return requestFrame(req, 1)
}
