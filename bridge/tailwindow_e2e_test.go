package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pollCount is how many PollMessages the gateway's Iggy client sent.
func pollCount(t *testing.T, gw *kiggytest.Gateway) float64 {
	t.Helper()
	m := gw.Metrics()
	const name = `kiggy_iggy_request_duration_seconds_count{command="PollMessages"}`
	if !strings.Contains(m, name+" ") {
		return 0 // none yet
	}
	return metricValue(t, m, name)
}

// isoFetch is rawFetch at an isolation level.
func isoFetch(t *testing.T, kc interface {
	RoundTrip(kmsg.Request) (kmsg.Response, error)
}, v int16, iso int8, topic string, offsets []int64, partMax, maxBytes int32) *kmsg.FetchResponse {
	t.Helper()
	req := fetchRequest(v, topic, offsets, partMax, maxBytes)
	req.IsolationLevel = iso
	resp, err := kc.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.FetchResponse)
}

// TestTailWindowSameBytes: Fetches of what a gateway appended, answered
// from its tail window without polling Iggy, are byte for byte the
// answers of a gateway over the same Iggy server that polls for them (no
// tail window, no fetch cache): every codec, Fetch v12, v9 and v4, both
// isolation levels, over committed and aborted transactions.
func TestTailWindowSameBytes(t *testing.T) {
	// The gateway with the window is its topics' sole writer
	// (--iggy-sole-writer): without it, a read that reaches the high
	// watermark 100 ms or more after a poll or append told it polls Iggy
	// again for other writers' appends (docs/IGGY.md, "The tail window"),
	// and how many reads do depends on the machine's speed (the race
	// detector's, in CI).
	on := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyFetchCacheBytes: -1, IggySoleWriter: true})
	kon := dialKafka(t, on.Addr)
	var koff interface {
		RoundTrip(kmsg.Request) (kmsg.Response, error)
	}
	compare := func(topic string, partitions int) {
		t.Helper()
		for _, v := range []int16{12, 9, 4} {
			for _, iso := range []int8{0, 1} {
				for _, shape := range []struct {
					offsets          []int64
					partMax, maxSize int32
				}{{[]int64{0, 0, 0}, 1 << 20, 4 << 20}, {[]int64{5, 17, 0}, 64 << 10, 1 << 20}, {[]int64{0, 3, 1}, 1, 100}} {
					offsets := shape.offsets[:partitions]
					what := fmt.Sprintf("%s v%d isolation %d %v/%d/%d", topic, v, iso, offsets, shape.partMax, shape.maxSize)
					got := isoFetch(t, kon, v, iso, topic, offsets, shape.partMax, shape.maxSize)
					ref := isoFetch(t, koff, v, iso, topic, offsets, shape.partMax, shape.maxSize)
					samePartitions(t, what, got, ref)
					for i := range got.Topics[0].Partitions {
						a, b := got.Topics[0].Partitions[i].AbortedTransactions, ref.Topics[0].Partitions[i].AbortedTransactions
						if !slices.EqualFunc(a, b, func(x, y kmsg.FetchResponseTopicPartitionAbortedTransaction) bool {
							return x.ProducerID == y.ProducerID && x.FirstOffset == y.FirstOffset
						}) {
							t.Errorf("%s: partition %d: aborted transactions %v, the polling gateway's %v", what, i, a, b)
						}
					}
				}
			}
		}
	}

	// The codec topics are created first, the transactional topic written
	// next: the reference gateway learns their configs and the aborted
	// transactions when it starts.
	codecs := append([]struct {
		name  string
		codec batch.Codec
	}{{"", batch.NoCompression}}, fetchCodecs...)
	var codecTopics []string
	for _, c := range codecs {
		topic := "tail-" + c.name
		createCodecTopic(t, on, topic, 3, c.name)
		codecTopics = append(codecTopics, topic)
	}
	// The transactional topic: the reference gateway learns
	// the aborted transactions when it starts. Its partitions take more
	// appends (one a record, and the markers) than a partition's window
	// keeps: its first reads poll, and the rest must still match.
	const txnTopic = "tail-txn"
	createCodecTopic(t, on, txnTopic, 2, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(on.Addr), kgo.TransactionalID("tail-txn"), kgo.DefaultProduceTopic(txnTopic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i, commit := range []bool{true, false, true, false, false, true} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 5 {
			if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("t%d-%d", i, j))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	off := kiggytest.Start(t, on.SameIggy(kiggytest.Options{Iggy: true, IggyFetchCacheBytes: -1, IggyTailWindowBytes: -1}))
	koff = dialKafka(t, off.Addr)
	compare(txnTopic, 2)

	// Each codec topic is appended (one Produce a partition) right before
	// it is read: a window chunk is served for the read cache's TTL only,
	// so appending every topic first would let a slow machine outlive it.
	for _, topic := range codecTopics {
		skips, evictions := metricValue(t, on.Metrics(), "kiggy_iggy_tail_window_skips_total"), metricValue(t, on.Metrics(), "kiggy_iggy_read_cache_evictions_total")
		isoFetch(t, kon, 12, 0, topic, []int64{0, 0, 0}, 1<<20, 4<<20) // a consumer at the tail: the window keeps what follows
		codecRecords(t, on.Addr, topic, 3, 120)
		polls := pollCount(t, on)
		compare(topic, 3)
		// Every Fetch of what this gateway appended was answered from
		// its window, unless the window did not keep it all: on a
		// loaded machine (the race detector's in CI) a producer may send
		// a partition's records in more batches, retry one whose outcome
		// the gateway did not learn (its fill is skipped), or outlive
		// the window's TTL; then polls are the design, and are logged.
		n := pollCount(t, on) - polls
		skipped := metricValue(t, on.Metrics(), "kiggy_iggy_tail_window_skips_total") - skips
		evicted := metricValue(t, on.Metrics(), "kiggy_iggy_read_cache_evictions_total") - evictions
		switch {
		case n == 0:
		case skipped > 0 || evicted > 0:
			t.Logf("reading %s polled Iggy %v times: the window skipped %v appends and the cache dropped %v chunks meanwhile", topic, n, skipped, evicted)
		default:
			t.Errorf("the gateway with the tail window polled Iggy %v times reading %s, which it appended (the window skipped and dropped nothing)", n, topic)
		}
	}
	fills := metricValue(t, on.Metrics(), "kiggy_iggy_tail_window_fills_total")
	if fills == 0 {
		t.Fatal("no append was kept in the tail window")
	}

	if pollCount(t, off) == 0 {
		t.Error("the reference gateway never polled: the comparison compared nothing")
	}
}

// TestTailWindowIdleConsumer: with --iggy-sole-writer a consumer waiting at
// the tail costs Iggy no poll, and gets a new record from the window as
// soon as it is appended; without it the parked Fetch's re-reads every
// 100 ms (0.11; on 0.12 it waits on the server's readiness wait) are
// answered by one GetTopic of the topic each (a tail check), not a poll
// per partition: before the checks they polled 88 times in this test's 2 s.
func TestTailWindowIdleConsumer(t *testing.T) {
	for _, sole := range []bool{true, false} {
		t.Run(fmt.Sprintf("sole=%v", sole), func(t *testing.T) {
			gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggySoleWriter: sole})
			const topic = "idle"
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			adm, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer adm.Close()
			if _, err := kadm.NewClient(adm).CreateTopic(ctx, 4, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			for i := range 8 { // partition 3 stays empty
				if err := adm.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			cons, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			got := 0
			for got < 8 {
				fs := cons.PollFetches(ctx)
				if err := fs.Err(); err != nil {
					t.Fatal(err)
				}
				got += fs.NumRecords()
			}
			// The consumer now waits at the tail of every partition.
			before := pollCount(t, gw)
			idle, stop := context.WithTimeout(ctx, 2*time.Second)
			fs := cons.PollFetches(idle)
			stop()
			if n := fs.NumRecords(); n != 0 {
				t.Fatalf("%d records while nothing was produced", n)
			}
			polls := pollCount(t, gw) - before
			if err := adm.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 2, Value: []byte("late")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			for {
				fs := cons.PollFetches(ctx)
				if err := fs.Err(); err != nil {
					t.Fatal(err)
				}
				if fs.NumRecords() > 0 {
					if v := string(fs.Records()[0].Value); v != "late" {
						t.Fatalf("read %q, want late", v)
					}
					break
				}
			}
			after := pollCount(t, gw) - before
			checks := metricValue(t, gw.Metrics(), "kiggy_iggy_tail_checks_total")
			t.Logf("sole writer %v: %v polls in 2 s idle, %v until the new record was read; %v tail checks", sole, polls, after, checks)
			switch {
			case sole && after != 0:
				t.Fatalf("an idle consumer and a record read from the window cost %v polls of Iggy, want 0", after)
			case !sole && polls > 4:
				t.Fatalf("2 s idle at the tail of 4 partitions without --iggy-sole-writer: %v polls, want the tail checks to spare them", polls)
			}
		})
	}
}

// TestTailCheckSeesOtherWriter: without --iggy-sole-writer, a consumer
// idle at the tail of a gateway whose tail checks renew its partitions
// still reads what another gateway (another writer to the same Iggy
// stream) appends meanwhile, in order: a check that finds a partition's
// end past what is cached renews nothing there, and the Read polls.
func TestTailCheckSeesOtherWriter(t *testing.T) {
	a := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	b := kiggytest.Start(t, a.SameIggy(kiggytest.Options{Iggy: true}))
	const topic = "other-writer"
	a.CreateTopic(t, topic, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cons, err := kgo.NewClient(kgo.SeedBrokers(a.Addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	idle, stop := context.WithTimeout(ctx, time.Second)
	cons.PollFetches(idle) // at the tail of every (empty) partition
	stop()
	for round := range 3 {
		want := fmt.Sprintf("from b %d", round)
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(round % 4), Value: []byte(want)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		if got := fs.Records(); len(got) != 1 || string(got[0].Value) != want {
			t.Fatalf("round %d: read %d records (%v), want %q", round, len(got), fs.Records(), want)
		}
		// Idle at the tail again (franz-go keeps fetching) until a check
		// renews its partitions: the next record is appended after that.
		renewals := metricValue(t, a.Metrics(), "kiggy_iggy_tail_check_renewals_total")
		if !testtools.Eventually(5*time.Second, func() bool {
			return metricValue(t, a.Metrics(), "kiggy_iggy_tail_check_renewals_total") > renewals
		}) {
			t.Fatalf("round %d: no tail check renewed a partition in 5 s at the tail: the test would test polls only", round)
		}
	}
}

// TestTailWindowTwoGateways: two gateways over one Iggy server (not a kiggy
// cluster: both take writes for the same partition) produce in turns, and a
// consumer of each reads every record of both exactly once, in offset
// order: neither window hides or reorders what the other gateway wrote.
func TestTailWindowTwoGateways(t *testing.T) {
	a := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	b := kiggytest.Start(t, a.SameIggy(kiggytest.Options{Iggy: true}))
	const topic = "two"
	a.CreateTopic(t, topic, 1)
	// A consumer at the tail of each: the windows keep what follows.
	for _, gw := range []*kiggytest.Gateway{a, b} {
		isoFetch(t, dialKafka(t, gw.Addr), 12, 0, topic, []int64{0}, 1<<20, 4<<20)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var producers []*kgo.Client
	for _, gw := range []*kiggytest.Gateway{a, b} {
		p, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		producers = append(producers, p)
	}
	var want []string
	for i := range 60 {
		v := fmt.Sprintf("%c%d", 'a'+i%2, i)
		if err := producers[i%2].ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
	}
	for _, gw := range []*kiggytest.Gateway{a, b} {
		if got := readValues(t, gw.Addr, topic, kgo.ReadUncommitted(), len(want)); !slices.Equal(got, want) {
			t.Fatalf("gateway %s read %q, want %q", gw.Addr, got, want)
		}
	}
	if metricValue(t, a.Metrics(), "kiggy_iggy_tail_window_fills_total") == 0 {
		t.Fatal("nothing was kept in the window")
	}
}

// TestFetchAtHighSkipsFetchCache: a partition read the Iggy client answers
// "nothing past the offset" from memory (a consumer at the tail between two
// appends) does not go through the fetch cache, which has nothing to share
// for it and whose lock and maps it would cost per partition and Fetch;
// reads below the high watermark still do.
func TestFetchAtHighSkipsFetchCache(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggySoleWriter: true})
	gw.CreateTopic(t, "athigh", benchPartitions)
	bc := dialBench(t, gw.Addr)
	checkProduce(t, bc.roundTrip(t, produceFrame("athigh")))
	misses := func() float64 { return metricValue(t, gw.Metrics(), "kiggy_fetch_cache_misses_total") }
	below := make([]int64, benchPartitions) // offset 0: records to read
	high := make([]int64, benchPartitions)
	for p := range high {
		high[p] = benchRecords // one batch of benchRecords each, at offset 0
	}
	before := misses()
	bc.roundTrip(t, requestFrame(fetchRequest(12, "athigh", below, 1<<20, 64<<20), 2))
	if got := misses() - before; got != benchPartitions {
		t.Fatalf("a Fetch of %d partitions below their high watermarks: %v fetch cache misses, want %d", benchPartitions, got, benchPartitions)
	}
	atHigh := requestFrame(fetchRequest(12, "athigh", high, 1<<20, 64<<20), 2)
	before = misses()
	for range 20 {
		resp := bc.roundTrip(t, atHigh)
		var r kmsg.FetchResponse
		r.Version = 12
		if err := r.ReadFrom(resp[5:]); err != nil { // after the correlation id and the header's tags
			t.Fatal(err)
		}
		for _, p := range r.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.HighWatermark != benchRecords || len(p.RecordBatches) != 0 {
				t.Fatalf("partition %d: error %d, high watermark %d, %d bytes of records; want 0, %d, none",
					p.Partition, p.ErrorCode, p.HighWatermark, len(p.RecordBatches), benchRecords)
			}
		}
	}
	if got := misses() - before; got != 0 {
		t.Fatalf("20 Fetches of %d partitions at their high watermarks: %v fetch cache misses, want 0", benchPartitions, got)
	}
}

// TestFetchCacheKeepsTailReads: a consumer's small reads at the tail, after
// a large read grew the readers' buffers, are kept by the fetch cache for
// the other groups without a copy (fetchcache.Resize, StoreOwned): the
// reads get buffers of their size, whose batches fill them. The second
// Fetch of each offset (another group's) is answered from the cache,
// byte for byte the first.
func TestFetchCacheKeepsTailReads(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggySoleWriter: true})
	const topic = "keeptail"
	gw.CreateTopic(t, topic, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 1024)
	produce := func(n int) {
		t.Helper()
		var rs []*kgo.Record
		for p := range int32(2) {
			for range n {
				rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: value})
			}
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	kc := dialKafka(t, gw.Addr)
	fetch := func(offsets []int64) *kmsg.FetchResponse {
		return isoFetch(t, kc, 12, 0, topic, offsets, 1<<20, 64<<20)
	}
	copied := func() float64 { return metricValue(t, gw.Metrics(), "kiggy_fetch_cache_copied_bytes_total") }
	hits := func() float64 { return metricValue(t, gw.Metrics(), "kiggy_fetch_cache_hits_total") }

	produce(600)
	fetch([]int64{0, 0}) // 600 KiB a partition: the readers' buffers grow to hold it
	copied0, hits0 := copied(), hits()
	off := int64(600)
	const rounds, n = 20, 8
	for range rounds {
		produce(n)
		offsets := []int64{off, off}
		first, second := fetch(offsets), fetch(offsets)
		samePartitions(t, fmt.Sprintf("offset %d", off), first, second)
		for _, p := range first.Topics[0].Partitions {
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				t.Fatalf("offset %d: partition %d: error %d, %d bytes of records", off, p.Partition, p.ErrorCode, len(p.RecordBatches))
			}
		}
		off += n
	}
	if got := hits() - hits0; got < rounds*2 {
		t.Fatalf("%v fetch cache hits in %d rounds of two partitions read twice, want %d", got, rounds, rounds*2)
	}
	if got := copied() - copied0; got != 0 {
		t.Fatalf("%v bytes copied into the fetch cache for %d tail reads of %d records: their buffers were not taken over", got, rounds*2, n)
	}
}
