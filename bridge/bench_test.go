package bridge_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// Gateway micro-benchmarks: one client connection over loopback, one request
// in flight, the embedded log behind the gateway. They measure the whole
// server path (engine framing, decode, CRC, mapping, store; or read, map
// back, build, write) per request; the client side is a pre-encoded frame
// and a raw read. Compare runs with benchstat (make bench-micro).

const (
	benchPartitions = 16
	benchRecords    = 16   // records per partition batch
	benchValue      = 1024 // bytes per record value
)

// BenchmarkGatewayProduce: Produce of 16 partitions × 16 × 1 KiB records
// per request. Partitions are capped at 64 MiB so the benchmark measures a
// steady state (old chunks recycled) rather than the machine's page faults.
func BenchmarkGatewayProduce(b *testing.B) {
	benchProduce(b, kiggytest.Start(b, kiggytest.Options{Embedded: true, Memlog: memlog.Config{PartitionBytes: 64 << 20}}))
}

// BenchmarkGatewayProduceIggy: the same Produce on the Iggy backend (our
// client and an in-process iggytest server over loopback), with the
// server's replies delayed by 0 and by 500 µs, as a remote Iggy's round
// trip would be.
func BenchmarkGatewayProduceIggy(b *testing.B) {
	for _, latency := range []time.Duration{0, 500 * time.Microsecond} {
		b.Run(fmt.Sprintf("latency=%v", latency), func(b *testing.B) {
			benchProduce(b, kiggytest.Start(b, kiggytest.Options{IggyServer: latencyServer(b, latency)}))
		})
	}
}

// latencyServer starts an iggytest server whose replies are delayed.
func latencyServer(b *testing.B, latency time.Duration) *iggytest.Server {
	srv := iggytest.New(iggytest.Config{Latency: latency})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	return srv
}

// benchProduce measures the 16-partition Produce round trip against gw.
func benchProduce(b *testing.B, gw *kiggytest.Gateway) {
	gw.CreateTopic(b, "bench", benchPartitions)
	bc := dialBench(b, gw.Addr)
	frame := produceFrame("bench")
	checkProduce(b, bc.roundTrip(b, frame))
	b.SetBytes(benchPartitions * benchRecords * benchValue)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bc.roundTrip(b, frame)
	}
}

// BenchmarkGatewayFetch: Fetch v12 of 16 partitions from offset 0, up to
// 1 MiB each (16 MiB responses of 1 KiB records mapped back from the log).
func BenchmarkGatewayFetch(b *testing.B) {
	gw := kiggytest.Start(b, kiggytest.Options{Embedded: true})
	benchFetch(b, gw, 2)
}

// BenchmarkGatewayFetchIggy: the same Fetch on the Iggy backend, with the
// server's replies delayed by 0 and by 500 µs, the Iggy client's read cache
// off (every Fetch polls) and on (the same offsets fetched again are served
// from memory; BenchmarkGatewayFanoutIggy measures sequential readers).
func BenchmarkGatewayFetchIggy(b *testing.B) {
	for _, latency := range []time.Duration{0, 500 * time.Microsecond} {
		for _, cache := range []int64{-1, 0} {
			name := fmt.Sprintf("latency=%v/cache=%s", latency, map[bool]string{true: "off", false: "on"}[cache < 0])
			b.Run(name, func(b *testing.B) {
				benchFetch(b, kiggytest.Start(b, kiggytest.Options{IggyServer: latencyServer(b, latency), IggyReadCacheBytes: cache}), 1)
			})
		}
	}
}

// benchFetch preloads mib MiB per partition and measures the Fetch of all.
func benchFetch(b *testing.B, gw *kiggytest.Gateway, mib int) {
	gw.CreateTopic(b, "bench", benchPartitions)
	bc := dialBench(b, gw.Addr)
	pf := produceFrame("bench")
	for range (1 << 20) / (benchRecords * benchValue) * mib {
		checkProduce(b, bc.roundTrip(b, pf))
	}
	frame := fetchFrame("bench", 1<<20)
	body := bc.roundTrip(b, frame)
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	if err := resp.ReadFrom(body[5:]); err != nil {
		b.Fatal(err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				b.Fatalf("partition %d: error %d, %d record bytes", p.Partition, p.ErrorCode, len(p.RecordBatches))
			}
		}
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bc.roundTrip(b, frame)
	}
}

// idemFrame is produceFrame with idempotent batches (producer 1, epoch 0):
// next advances every batch's base sequence by benchRecords and re-stamps
// its CRC in place, so each round trip is a fresh, in-sequence batch per
// partition, as a steady idempotent producer sends.
type idemFrame struct {
	frame   []byte
	batches []int // offset of each batch in frame
}

func newIdemFrame(topic string) *idemFrame {
	value := make([]byte, benchValue)
	for i := range value {
		value[i] = 'A' + byte(i%26)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	var bld batch.Builder
	var recs [][]byte
	for p := range int32(benchPartitions) {
		bld.Reset(nil, 0, time.Now().UnixMilli(), batch.NoCompression)
		bld.SetProducer(1, 0, 0)
		for i := range int32(benchRecords) {
			bld.Append(i, 0, nil, value)
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, bld.Finish()
		recs = append(recs, rp.Records)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	f := &idemFrame{frame: requestFrame(req, 1)}
	from := 0
	for _, r := range recs {
		at := from + bytes.Index(f.frame[from:], r)
		f.batches = append(f.batches, at)
		from = at + len(r)
	}
	return f
}

// next moves every batch to the following sequence range.
func (f *idemFrame) next() {
	for _, at := range f.batches {
		b := f.frame[at:]
		size := int(binary.BigEndian.Uint32(b[8:])) + 12
		b = b[:size]
		binary.BigEndian.PutUint32(b[53:], binary.BigEndian.Uint32(b[53:])+benchRecords)
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	}
}

// BenchmarkGatewayProduceIdempotence: BenchmarkGatewayProduce with
// idempotence off (producer id -1) and on (one producer, every batch in
// sequence: the window check, the stamp and the per-partition lock). The
// "on" client also re-stamps 16 batch CRCs per request.
func BenchmarkGatewayProduceIdempotence(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("idempotent=%v", on), func(b *testing.B) {
			gw := kiggytest.Start(b, kiggytest.Options{Embedded: true, Memlog: memlog.Config{PartitionBytes: 64 << 20}})
			if !on {
				benchProduce(b, gw)
				return
			}
			gw.CreateTopic(b, "bench", benchPartitions)
			bc := dialBench(b, gw.Addr)
			f := newIdemFrame("bench")
			checkProduce(b, bc.roundTrip(b, f.frame))
			b.SetBytes(benchPartitions * benchRecords * benchValue)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				f.next()
				bc.roundTrip(b, f.frame)
			}
		})
	}
}

// BenchmarkIdemFrameNext is the client-side share of
// BenchmarkGatewayProduceIdempotence/idempotent=true: re-stamping 16 batch
// sequences and CRCs per request.
func BenchmarkIdemFrameNext(b *testing.B) {
	f := newIdemFrame("bench")
	b.ReportAllocs()
	for b.Loop() {
		f.next()
	}
}
