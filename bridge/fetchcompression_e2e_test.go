package bridge_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// Compressed Fetch (docs/design/record-mapping.md §3.5): a topic's
// compression.type decides the codec of the batches Fetch serves.

// fetchCodecs are the compression.type values with a codec, and the codec.
var fetchCodecs = []struct {
	name  string
	codec batch.Codec
}{{"gzip", batch.Gzip}, {"snappy", batch.Snappy}, {"lz4", batch.LZ4}, {"zstd", batch.Zstd}}

// networked hides memlog's Capabilities, so the gateway drives it as it
// drives Iggy: no inline requests, every partition of a Fetch read
// concurrently into its own scratch batch (fetchFanout).
type networked struct{ store.Log }

// codecGateway starts a gateway on the embedded log, driven as the embedded
// log (inline reads) or, with fan, as a networked backend.
func codecGateway(t testing.TB, fan bool) *kiggytest.Gateway {
	t.Helper()
	var backend store.Log = memlog.New(memlog.Config{})
	if fan {
		backend = networked{backend}
	}
	return kiggytest.Start(t, kiggytest.Options{Log: backend})
}

// words is the vocabulary of letters' payloads.
var words = func() [][]byte {
	rng := rand.New(rand.NewPCG(5, 6))
	ws := make([][]byte, 256)
	for i := range ws {
		w := make([]byte, 2+rng.IntN(9))
		for j := range w {
			w[j] = 'a' + byte(rng.IntN(26))
		}
		ws[i] = w
	}
	return ws
}()

// letters returns n bytes of random words from a 256-word vocabulary:
// compressible by every codec (about 2:1 to 3:1), as text is, but not to
// nothing.
func letters(rng *rand.Rand, n int) []byte {
	b := make([]byte, 0, n+11)
	for len(b) < n {
		b = append(b, words[rng.IntN(len(words))]...)
		b = append(b, ' ')
	}
	return b[:n]
}

// codecRecords produces n records over partitions with franz-go, without
// compression: a few large ones (300 KiB) among small ones with keys and
// headers.
func codecRecords(t *testing.T, addr, topic string, partitions int32, n int) []*kgo.Record {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []*kgo.Record
	for i := range n {
		size := 100 + rng.IntN(900)
		if i%97 == 50 {
			size = 300 << 10
		}
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i) % partitions,
			Key: fmt.Appendf(nil, "k%d", i), Value: letters(rng, size),
			Headers:   []kgo.RecordHeader{{Key: "i", Value: fmt.Append(nil, i)}},
			Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i))})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return recs
}

// consumeAll reads n records of topic from the start with franz-go and
// checks them against sent, offsets in order.
func consumeAll(t *testing.T, addr, topic string, sent []*kgo.Record, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string]*kgo.Record{}
	next := map[int32]int64{}
	for len(got) < len(sent) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch: %v (have %d of %d)", err, len(got), len(sent))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			got[string(r.Key)] = r
		})
	}
	for _, s := range sent {
		r := got[string(s.Key)]
		if r == nil || !bytes.Equal(r.Value, s.Value) || r.Partition != s.Partition || !r.Timestamp.Equal(s.Timestamp) ||
			len(r.Headers) != 1 || !bytes.Equal(r.Headers[0].Value, s.Headers[0].Value) {
			t.Fatalf("record %q: got %v", s.Key, r)
		}
	}
}

// rawFetch sends one Fetch at version v of partitions 0..n-1 of topic from
// offsets, with the given limits, and returns the response.
func rawFetch(t *testing.T, kc *kafkawire.Conn, v int16, topic string, offsets []int64, partMax, maxBytes int32) *kmsg.FetchResponse {
	t.Helper()
	resp, err := kc.RoundTrip(fetchRequest(v, topic, offsets, partMax, maxBytes))
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.FetchResponse)
}

// batchesOf splits a partition's records into batches and checks each: the
// codec in attributes bits 0–2 (docs/design/kafka-protocol.md §5), the CRC-32C
// over attributes to the end, and that it decodes. It returns the batches'
// record counts.
func batchesOf(t *testing.T, records []byte, codec batch.Codec) []int {
	t.Helper()
	var counts []int
	dec := batch.AcquireDecoder()
	defer batch.ReleaseDecoder(dec)
	for len(records) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(records); err != nil {
			t.Fatalf("batch: %v", err)
		}
		size := 12 + int(rb.Length)
		if got := batch.Codec(rb.Attributes & 7); got != codec {
			t.Fatalf("batch at offset %d: codec %s, want %s", rb.FirstOffset, got, codec)
		}
		if crc := crc32.Checksum(records[21:size], castagnoli); crc != uint32(rb.CRC) {
			t.Fatalf("batch at offset %d: CRC %08x, computed %08x", rb.FirstOffset, uint32(rb.CRC), crc)
		}
		h, err := batch.Validate(records[:size])
		if err != nil {
			t.Fatal(err)
		}
		rs, err := dec.Records(records[:size], h, nil)
		if err != nil {
			t.Fatalf("batch at offset %d: %v", rb.FirstOffset, err)
		}
		n := 0
		var rec batch.Record
		for rs.Next(&rec) {
			n++
		}
		if rs.Err() != nil || n != int(rb.NumRecords) {
			t.Fatalf("batch at offset %d: %d of %d records (%v)", rb.FirstOffset, n, rb.NumRecords, rs.Err())
		}
		counts = append(counts, n)
		records = records[size:]
	}
	return counts
}

// TestFetchCompressed: franz-go consumes each codec's topic (small records,
// 300 KiB ones, keys, headers) correctly, on the embedded log read inline
// and read as a networked backend; a raw Fetch shows the codec in every
// batch's attributes, with a valid CRC.
func TestFetchCompressed(t *testing.T) {
	for _, fan := range []bool{false, true} {
		gw := codecGateway(t, fan)
		for _, c := range fetchCodecs {
			t.Run(fmt.Sprintf("%s/fan=%v", c.name, fan), func(t *testing.T) {
				topic := "z-" + c.name
				createCodecTopic(t, gw, topic, 3, c.name)
				sent := codecRecords(t, gw.Addr, topic, 3, 400)
				consumeAll(t, gw.Addr, topic, sent)
				consumeAll(t, gw.Addr, topic, sent, kgo.FetchMaxPartitionBytes(20<<10), kgo.FetchMaxBytes(50<<10))

				kc, err := kafkawire.Dial(gw.Addr, "raw", 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer kc.Close()
				resp := rawFetch(t, kc, 12, topic, []int64{0, 0, 0}, 1<<20, 4<<20)
				for _, p := range resp.Topics[0].Partitions {
					if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
						t.Fatalf("partition %d: error %d, %d bytes", p.Partition, p.ErrorCode, len(p.RecordBatches))
					}
					batchesOf(t, p.RecordBatches, c.codec)
				}
			})
		}
	}
}

// TestFetchUncompressedConfigs: compression.type producer (the default),
// "" and uncompressed serve uncompressed batches, as before.
func TestFetchUncompressedConfigs(t *testing.T) {
	gw := codecGateway(t, false)
	kc, err := kafkawire.Dial(gw.Addr, "raw", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	for _, name := range []string{"", "producer", "uncompressed"} {
		topic := "u-" + name
		createCodecTopic(t, gw, topic, 1, name)
		produceN(t, gw.Addr, topic, 1, 50)
		p := rawFetch(t, kc, 12, topic, []int64{0}, 1<<20, 1<<20).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("%q: error %d", name, p.ErrorCode)
		}
		if n := batchesOf(t, p.RecordBatches, batch.NoCompression); len(n) != 1 || n[0] != 50 {
			t.Fatalf("%q: batches %v, want one of 50", name, n)
		}
	}
}

// TestFetchZstdBelowV10: docs/design/kafka-protocol.md §5: "zstd ... only
// with Produce ≥ 7 and Fetch ≥ 10 (KIP-110)". A Fetch v9 of a zstd topic's
// records is answered UNSUPPORTED_COMPRESSION_TYPE (76), as Kafka does; an
// empty partition has nothing to refuse; v10 reads the zstd batches, and
// v9 of a gzip topic reads gzip.
func TestFetchZstdBelowV10(t *testing.T) {
	for _, fan := range []bool{false, true} {
		t.Run(fmt.Sprintf("fan=%v", fan), func(t *testing.T) {
			gw := codecGateway(t, fan)
			createCodecTopic(t, gw, "zs", 2, "zstd")
			createCodecTopic(t, gw, "gz", 1, "gzip")
			produceN(t, gw.Addr, "gz", 1, 10)
			cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "zs", Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			kc, err := kafkawire.Dial(gw.Addr, "raw", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer kc.Close()
			ps := rawFetch(t, kc, 9, "zs", []int64{0, 0}, 1<<20, 1<<20).Topics[0].Partitions
			if ps[0].ErrorCode != 76 || len(ps[0].RecordBatches) != 0 || ps[0].HighWatermark != 1 {
				t.Fatalf("v9, zstd partition with a record: error %d, %d bytes, HW %d; want 76, none, 1", ps[0].ErrorCode, len(ps[0].RecordBatches), ps[0].HighWatermark)
			}
			if ps[1].ErrorCode != 0 {
				t.Fatalf("v9, empty zstd partition: error %d, want 0", ps[1].ErrorCode)
			}
			p := rawFetch(t, kc, 10, "zs", []int64{0, 0}, 1<<20, 1<<20).Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				t.Fatalf("v10: error %d", p.ErrorCode)
			}
			batchesOf(t, p.RecordBatches, batch.Zstd)
			p = rawFetch(t, kc, 9, "gz", []int64{0}, 1<<20, 1<<20).Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				t.Fatalf("v9 gzip: error %d", p.ErrorCode)
			}
			batchesOf(t, p.RecordBatches, batch.Gzip)
		})
	}
}

// TestFetchCompressedBudgets: the limits count the bytes sent
// (docs/design/record-mapping.md §3.5). A compressible partition answers with
// more records than its limit holds uncompressed, in several batches, yet
// at most the limit in bytes; the response limit holds across partitions;
// a record larger than the limits is still served, alone (KIP-74).
func TestFetchCompressedBudgets(t *testing.T) {
	for _, fan := range []bool{false, true} {
		gw := codecGateway(t, fan)
		for _, c := range fetchCodecs {
			t.Run(fmt.Sprintf("%s/fan=%v", c.name, fan), func(t *testing.T) {
				topic := "b-" + c.name
				createCodecTopic(t, gw, topic, 2, c.name)
				rng := rand.New(rand.NewPCG(3, 4))
				var recs []*kgo.Record
				for p := range int32(2) {
					recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: letters(rng, 200<<10)})
					for range 2000 {
						recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: letters(rng, 1000)})
					}
				}
				cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
				kc, err := kafkawire.Dial(gw.Addr, "raw", 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer kc.Close()

				// From offset 0: the 200 KiB record alone is over the 64 KiB
				// partition limit, and sent whole in partition 0 only.
				const partMax = 64 << 10
				ps := rawFetch(t, kc, 12, topic, []int64{0, 0}, partMax, 100<<10).Topics[0].Partitions
				if n := batchesOf(t, ps[0].RecordBatches, c.codec); len(n) != 1 || n[0] != 1 {
					t.Fatalf("first partition from 0: batches %v, want one of the large record", n)
				}
				if len(ps[1].RecordBatches) != 0 {
					t.Fatalf("second partition: %d bytes past a full response", len(ps[1].RecordBatches))
				}

				// From offset 1: 1000-byte records, 62 of which fill 64 KiB
				// uncompressed; compressed, more fit, within the limit.
				ps = rawFetch(t, kc, 12, topic, []int64{1, 1}, partMax, 1<<20).Topics[0].Partitions
				total, counts := 0, []int{}
				for _, p := range ps {
					n := batchesOf(t, p.RecordBatches, c.codec)
					records := 0
					for _, k := range n {
						records += k
					}
					if len(p.RecordBatches) > partMax {
						t.Errorf("partition %d: %d bytes over the %d limit", p.Partition, len(p.RecordBatches), partMax)
					}
					if records <= partMax/1000 || len(n) < 2 {
						t.Errorf("partition %d: %d records in %d batches: the limit was not filled with compressed batches", p.Partition, records, len(n))
					}
					total += len(p.RecordBatches)
					counts = append(counts, records)
				}
				t.Logf("%s: %d bytes for 2 partitions at a %d limit, %v records (uncompressed: %d each)", c.name, total, partMax, counts, partMax/1000)

				// A response limit below the partition limit caps the sum.
				ps = rawFetch(t, kc, 12, topic, []int64{1, 1}, partMax, 80<<10).Topics[0].Partitions
				if sum := len(ps[0].RecordBatches) + len(ps[1].RecordBatches); sum > 80<<10 {
					t.Errorf("response of %d bytes over its 80 KiB limit", sum)
				}
			})
		}
	}
}
