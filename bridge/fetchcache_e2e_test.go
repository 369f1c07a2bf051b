package bridge_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// Shared Fetch batches (bridge/fetchcache; docs/IGGY.md, "Fetches share
// encoded batches").

// dialKafka opens a raw Kafka connection to addr, closed with the test.
func dialKafka(t *testing.T, addr string) *kafkawire.Conn {
	t.Helper()
	kc, err := kafkawire.Dial(addr, "raw", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kc.Close() })
	return kc
}

// samePartitions compares two Fetch responses partition by partition: error,
// watermarks and the record batches byte for byte.
func samePartitions(t *testing.T, what string, a, b *kmsg.FetchResponse) {
	t.Helper()
	if len(a.Topics) != len(b.Topics) {
		t.Fatalf("%s: %d topics against %d", what, len(a.Topics), len(b.Topics))
	}
	for i := range a.Topics {
		pa, pb := a.Topics[i].Partitions, b.Topics[i].Partitions
		if len(pa) != len(pb) {
			t.Fatalf("%s: %d partitions against %d", what, len(pa), len(pb))
		}
		for j := range pa {
			x, y := pa[j], pb[j]
			if x.Partition != y.Partition || x.ErrorCode != y.ErrorCode || x.HighWatermark != y.HighWatermark ||
				x.LastStableOffset != y.LastStableOffset || x.LogStartOffset != y.LogStartOffset {
				t.Errorf("%s: partition %d: code %d hw %d lso %d start %d against partition %d: code %d hw %d lso %d start %d", what,
					x.Partition, x.ErrorCode, x.HighWatermark, x.LastStableOffset, x.LogStartOffset,
					y.Partition, y.ErrorCode, y.HighWatermark, y.LastStableOffset, y.LogStartOffset)
			}
			if !bytes.Equal(x.RecordBatches, y.RecordBatches) {
				t.Errorf("%s: partition %d: %d record bytes differ from the other %d", what, x.Partition, len(x.RecordBatches), len(y.RecordBatches))
			}
		}
	}
}

// TestFetchCacheSameBytes: Fetches answered from batches an earlier Fetch
// encoded are byte for byte what a gateway without the fetch cache answers
// over the same Iggy data: every codec, whole partitions and a walk through
// them with small limits (compressed continuation reads), Fetch v12 and v9
// (zstd refused); the cached answers decode with kmsg; and the cache served
// them (hits), the other gateway had none.
func TestFetchCacheSameBytes(t *testing.T) {
	on := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	codecs := append([]struct {
		name  string
		codec batch.Codec
	}{{"", batch.NoCompression}}, fetchCodecs...)
	for _, c := range codecs {
		topic := "same-" + c.name
		createCodecTopic(t, on, topic, 3, c.name)
		codecRecords(t, on.Addr, topic, 3, 240)
	}
	// Started after the topics exist, so it loads their configs.
	off := kiggytest.Start(t, on.SameIggy(kiggytest.Options{Iggy: true, IggyFetchCacheBytes: -1}))
	kon, koff := dialKafka(t, on.Addr), dialKafka(t, off.Addr)
	for _, c := range codecs {
		topic := "same-" + c.name
		for _, v := range []int16{12, 9} {
			for _, shape := range []struct {
				offsets          []int64
				partMax, maxSize int32
			}{{[]int64{0, 0, 0}, 1 << 20, 4 << 20}, {[]int64{5, 17, 0}, 64 << 10, 1 << 20}, {[]int64{0, 3, 1}, 1, 100}} {
				what := fmt.Sprintf("%s v%d %v/%d/%d", topic, v, shape.offsets, shape.partMax, shape.maxSize)
				first := rawFetch(t, kon, v, topic, shape.offsets, shape.partMax, shape.maxSize)
				second := rawFetch(t, kon, v, topic, shape.offsets, shape.partMax, shape.maxSize)
				ref := rawFetch(t, koff, v, topic, shape.offsets, shape.partMax, shape.maxSize)
				samePartitions(t, what+" first", first, ref)
				samePartitions(t, what+" cached", second, ref)
				for _, p := range second.Topics[0].Partitions {
					if p.ErrorCode == 0 && len(p.RecordBatches) > 0 {
						batchesOf(t, p.RecordBatches, c.codec)
					}
				}
			}
		}
		// A consumer's walk: each step starts where the last ended.
		for p := range int32(3) {
			next := int64(0)
			for steps := 0; steps < 100; steps++ {
				offsets := []int64{-1, -1, -1}
				offsets[p] = next
				got := rawFetch(t, kon, 12, topic, offsets[:p+1], 20<<10, 50<<10)
				ref := rawFetch(t, koff, 12, topic, offsets[:p+1], 20<<10, 50<<10)
				samePartitions(t, fmt.Sprintf("%s walk p%d at %d", topic, p, next), got, ref)
				rp := got.Topics[0].Partitions[p]
				if rp.ErrorCode != 0 || len(rp.RecordBatches) == 0 {
					break
				}
				var rb kmsg.RecordBatch
				raw := rp.RecordBatches
				for len(raw) > 0 {
					if err := rb.ReadFrom(raw); err != nil {
						t.Fatalf("%s walk: %v", topic, err)
					}
					raw = raw[12+rb.Length:]
				}
				next = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
			}
			if next != 80 {
				t.Errorf("%s partition %d: the walk ended at %d, want 80", topic, p, next)
			}
		}
	}
	mon, moff := on.Metrics(), off.Metrics()
	if hits := metricValue(t, mon, "kiggy_fetch_cache_hits_total"); hits == 0 {
		t.Errorf("no Fetch was answered from the fetch cache:\n%s", mon)
	}
	if hits := metricValue(t, moff, "kiggy_fetch_cache_hits_total"); hits != 0 || !containsLine(moff, "kiggy_fetch_cache_limit_bytes 0") {
		t.Errorf("the gateway without the cache: %v hits", hits)
	}
}

// fetchValues fetches one partition from offset with a raw Fetch v12 and
// returns the error code, the high watermark and the records' values.
func fetchValues(t *testing.T, kc *kafkawire.Conn, topic string, offset int64) (int16, int64, []string) {
	t.Helper()
	return fetchValuesMax(t, kc, topic, offset, 1<<20)
}

// fetchValuesMax is fetchValues with a partition limit.
func fetchValuesMax(t *testing.T, kc *kafkawire.Conn, topic string, offset int64, partMax int32) (int16, int64, []string) {
	t.Helper()
	resp := rawFetch(t, kc, 12, topic, []int64{offset}, partMax, 4<<20)
	p := resp.Topics[0].Partitions[0]
	var vals []string
	for _, r := range kgoRecords(t, p.RecordBatches) {
		vals = append(vals, string(r.value))
	}
	return p.ErrorCode, p.HighWatermark, vals
}

// produceValues produces one record per value to partition 0 of topic.
func produceValues(t *testing.T, cl *kgo.Client, topic string, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFetchCacheInvalidation: what a shared Fetch answers follows every
// change of what the partition holds: a topic deleted and created again
// through the gateway, a topic deleted and refilled by another client (seen
// by the next poll), new records after a read that reached the tail, and a
// log start DeleteRecords moved. (A reconnect changes the generation the
// entries are checked against: bridge/iggy TestReadGeneration.)
func TestFetchCacheInvalidation(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	other := kiggytest.Start(t, gw.SameIggy(kiggytest.Options{Iggy: true, IggyFetchCacheBytes: -1, IggyReadCacheBytes: -1}))
	kc := dialKafka(t, gw.Addr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ocl, err := kgo.NewClient(kgo.SeedBrokers(other.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer ocl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, oadm := kadm.NewClient(cl), kadm.NewClient(ocl)
	create := func(a *kadm.Client, topic string) {
		t.Helper()
		if r, err := a.CreateTopic(ctx, 1, -1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	remove := func(a *kadm.Client, topic string) {
		t.Helper()
		if rs, err := a.DeleteTopics(ctx, topic); err != nil || rs[topic].Err != nil {
			t.Fatalf("delete %s: %v %v", topic, err, rs[topic].Err)
		}
	}
	want := func(what, topic string, offset int64, code int16, values ...string) {
		t.Helper()
		// Twice: the second is answered from the cache when it may be.
		for range 2 {
			gotCode, _, got := fetchValues(t, kc, topic, offset)
			if gotCode != code || fmt.Sprint(got) != fmt.Sprint(values) {
				t.Fatalf("%s: fetch %s at %d: code %d values %q, want code %d %q", what, topic, offset, gotCode, got, code, values)
			}
		}
	}
	// eventually: the read cache may answer a read that started before an
	// append with what it held (a short answer, as Kafka may give); the
	// full answer must come well within the fetch cache's 5 s, then stay.
	eventually := func(what, topic string, offset int64, values ...string) {
		t.Helper()
		var code int16
		var got []string
		if !testtools.Eventually(2*time.Second, func() bool {
			code, _, got = fetchValues(t, kc, topic, offset)
			return code == 0 && fmt.Sprint(got) == fmt.Sprint(values)
		}) {
			t.Fatalf("%s: fetch %s at %d: code %d values %q, want %q", what, topic, offset, code, got, values)
		}
		want(what, topic, offset, 0, values...)
	}
	hits := func() float64 { return metricValue(t, gw.Metrics(), "kiggy_fetch_cache_hits_total") }

	create(adm, "re")
	produceValues(t, cl, "re", "a0", "a1", "a2", "a3")
	h := hits()
	want("before", "re", 0, 0, "a0", "a1", "a2", "a3")
	if hits() == h {
		t.Fatal("the repeated Fetch was not answered from the fetch cache")
	}
	remove(adm, "re")
	create(adm, "re")
	// A new producer: franz-go, as the Java client, fails one that held
	// the deleted topic's id with UNKNOWN_TOPIC_ID (KIP-516).
	rcl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer rcl.Close()
	produceValues(t, rcl, "re", "b0", "b1")
	want("recreated through the gateway", "re", 0, 0, "b0", "b1")

	// Another client deletes and refills the topic with fewer records: the
	// gateway's next poll (at the old end) sees it, and the shared Fetch at
	// 0 no longer answers the old records. The Fetch with a 1-byte limit
	// ends at its budget (one record), not at the high watermark: only the
	// generation tells its entry is void.
	create(adm, "ext")
	produceValues(t, cl, "ext", "c0", "c1", "c2", "c3", "c4", "c5")
	want("before", "ext", 0, 0, "c0", "c1", "c2", "c3", "c4", "c5")
	h = hits()
	for range 2 {
		if code, _, got := fetchValuesMax(t, kc, "ext", 0, 1); code != 0 || fmt.Sprint(got) != "[c0]" {
			t.Fatalf("fetch ext at 0 with limit 1: code %d values %q", code, got)
		}
	}
	if hits() == h {
		t.Fatal("the repeated Fetch with limit 1 was not answered from the fetch cache")
	}
	remove(oadm, "ext")
	create(oadm, "ext")
	produceValues(t, ocl, "ext", "d0", "d1")
	// Until Iggy has torn the deleted topic's partitions down, it may
	// answer the recycled ids' polls from them, and this gateway, which did
	// not see the delete, cannot tell them from its topic (docs/IGGY.md,
	// "Topic incarnations"): the refill is seen once the server has.
	var code int16
	var hw int64
	if !testtools.Eventually(5*time.Second, func() bool {
		code, hw, _ = fetchValues(t, kc, "ext", 6)
		return code != 0 || hw == 2
	}) {
		t.Fatalf("fetch at the old end: code %d high watermark %d", code, hw)
	}
	if code, _, got := fetchValuesMax(t, kc, "ext", 0, 1); code != 0 || fmt.Sprint(got) != "[d0]" {
		t.Fatalf("refilled by another client: fetch ext at 0 with limit 1: code %d values %q, want [d0]", code, got)
	}
	want("refilled by another client", "ext", 0, 0, "d0", "d1")

	// A read that reached the high watermark is not answered again once
	// more records exist.
	create(adm, "tail")
	produceValues(t, cl, "tail", "e0", "e1")
	want("at the tail", "tail", 0, 0, "e0", "e1")
	produceValues(t, cl, "tail", "e2")
	eventually("after an append", "tail", 0, "e0", "e1", "e2")

	// DeleteRecords: the log start is checked on every Fetch.
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "tail", Partition: 0, At: 1})
	if rs, err := adm.DeleteRecords(ctx, os); err != nil {
		t.Fatal(err)
	} else if r, _ := rs.Lookup("tail", 0); r.Err != nil {
		t.Fatal(r.Err)
	}
	want("below the log start", "tail", 0, 1) // OFFSET_OUT_OF_RANGE
	want("at the log start", "tail", 1, 0, "e1", "e2")
}

// shortReads is a networked backend whose Reads stop after a few messages,
// as the Iggy read cache's stop where it has nothing more in memory.
type shortReads struct {
	store.Log
	per int
}

func (s shortReads) Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int, fn func(*message.Message) bool) (store.Watermarks, error) {
	n := 0
	return s.Log.Read(ctx, topic, partition, offset, maxBytes, func(m *message.Message) bool {
		n++
		return fn(m) && n < s.per
	})
}

// TestFetchReadsOnToBudget: on a networked backend a partition read whose
// Read stops early, short of its budget and the high watermark, reads on
// into the same batch: the answer is the one a backend that delivers
// everything at once gives (so consumer groups step through the same
// offsets, whatever each found in memory), for every limit and codec.
func TestFetchReadsOnToBudget(t *testing.T) {
	backend := memlog.New(memlog.Config{})
	whole := kiggytest.Start(t, kiggytest.Options{Log: networked{backend}})
	short := kiggytest.Start(t, kiggytest.Options{Log: shortReads{backend, 7}})
	kw, ks := dialKafka(t, whole.Addr), dialKafka(t, short.Addr)
	for _, codec := range []string{"", "lz4"} {
		topic := "fill-" + codec
		createCodecTopic(t, whole, topic, 2, codec)
		if codec != "" {
			// Each gateway keeps its own configs here (no shared system
			// store over the wrappers): tell the other one too.
			setCompression(t, short.Addr, topic, codec)
		}
		codecRecords(t, whole.Addr, topic, 2, 60)
		for _, shape := range []struct{ partMax, maxBytes int32 }{{1 << 20, 4 << 20}, {3000, 1 << 20}, {1, 100}, {40 << 10, 50 << 10}} {
			for _, off := range []int64{0, 3, 26} {
				what := fmt.Sprintf("%s at %d, %d/%d", topic, off, shape.partMax, shape.maxBytes)
				ref := rawFetch(t, kw, 12, topic, []int64{off, off}, shape.partMax, shape.maxBytes)
				got := rawFetch(t, ks, 12, topic, []int64{off, off}, shape.partMax, shape.maxBytes)
				samePartitions(t, what, got, ref)
			}
		}
	}
	// The reference does read more than one short Read's worth, and the
	// lz4 topic is served lz4 by both.
	resp := rawFetch(t, kw, 12, "fill-", []int64{0, 0}, 1<<20, 4<<20)
	if n := len(kgoRecords(t, resp.Topics[0].Partitions[0].RecordBatches)); n <= 7 {
		t.Fatalf("the whole read holds %d records", n)
	}
	resp = rawFetch(t, ks, 12, "fill-lz4", []int64{0, 0}, 1<<20, 4<<20)
	batchesOf(t, resp.Topics[0].Partitions[0].RecordBatches, batch.LZ4)
}

// setCompression sets topic's compression.type through the gateway at addr.
func setCompression(t *testing.T, addr, topic, codec string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "compression.type", Value: &codec}}, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("alter %s: %v", topic, r.Err)
		}
	}
}
