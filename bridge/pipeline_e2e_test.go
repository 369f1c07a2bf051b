package bridge_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// gateLog is the embedded log declaring no capabilities (the Iggy-style
// worker, fan-out and coalesced paths), whose appends to topic "gate" wait
// until the test lets them through; every append is recorded in order.
type gateLog struct {
	store.Log
	entered chan struct{} // a "gate" Append started
	release chan struct{} // one receive lets one "gate" Append through

	mu      sync.Mutex
	appends []string // "topic/partition", in the order the log stored them
}

func (l *gateLog) Capabilities() store.Capabilities { return store.Capabilities{} }

func (l *gateLog) Append(ctx context.Context, topic string, p int32, b *message.Batch) (int64, error) {
	if topic == "gate" {
		l.entered <- struct{}{}
		<-l.release
	}
	base, err := l.Log.Append(ctx, topic, p, b)
	l.mu.Lock()
	l.appends = append(l.appends, fmt.Sprintf("%s/%d", topic, p))
	l.mu.Unlock()
	return base, err
}

func (l *gateLog) stored() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.appends...)
}

// startGateLog serves a gateway over a gateLog with topics "gate" and
// "free" (2 partitions each) on a socket.
func startGateLog(t *testing.T) (*gateLog, *bridge.Gateway, string) {
	t.Helper()
	l := &gateLog{Log: memlog.New(memlog.Config{}), entered: make(chan struct{}, 16), release: make(chan struct{})}
	for _, name := range []string{"gate", "free"} {
		if _, err := l.CreateTopic(context.Background(), name, 2, store.TopicConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	gw := bridge.New(bridge.Config{Logger: slog.New(slog.DiscardHandler)}, l)
	srv, err := engine.New(os.Getenv("KIGGY_TEST_ENGINE"), engine.Config{Logger: slog.New(slog.DiscardHandler)}, gw)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		close(l.release) // no append waits for ever
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-served
		gw.Close()
	})
	return l, gw, ln.Addr().String()
}

// produceOneEach is an acks=-1 Produce v9 of one one-record batch (value v) to
// each of topic's partitions ps.
func produceOneEach(topic, v string, ps ...int32) *kmsg.ProduceRequest {
	req := produceRequestTo(topic)
	for _, p := range ps {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = p, batchOf(batch.NoCompression, v)
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, pp)
	}
	return req
}

// waitStored waits until the log has stored n appends.
func waitStored(t *testing.T, l *gateLog, n int) []string {
	t.Helper()
	if !testtools.Eventually(10*time.Second, func() bool { return len(l.stored()) >= n }) {
		t.Fatalf("the log stored %v, want %d appends", l.stored(), n)
	}
	return l.stored()
}

// TestProducePipelined: on a backend with round trips, a Produce pipelined
// behind a Produce whose append is still running starts as soon as the
// first has queued its appends. Its append to another partition is stored
// meanwhile, its append to the same partition waits for the first's (the
// partition's order), and the responses come back in request order. A
// request of any other kind waits for every Produce before it: a
// ListOffsets behind them sees both appends.
func TestProducePipelined(t *testing.T) {
	l, gw, addr := startGateLog(t)
	rc := dialRaw(t, addr)

	first := rc.send(produceOneEach("gate", "a", 0)) // held in the log
	<-l.entered
	second := rc.send(produceOneEach("free", "b", 0)) // another partition: stored while the first waits
	third := rc.send(produceOneEach("gate", "c", 0))  // the first's partition: waits for it
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 4
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "gate"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = 0, -1 // latest
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	fourth := rc.send(lo)

	if got := waitStored(t, l, 1); got[0] != "free/0" {
		t.Fatalf("stored %v while the first Produce waits, want the second's free/0: it was not pipelined", got)
	}
	time.Sleep(50 * time.Millisecond)
	if got := l.stored(); len(got) != 1 {
		t.Fatalf("stored %v while the first Produce waits: only free/0 may be", got)
	}
	l.release <- struct{}{} // the first's append
	<-l.entered             // the third's, in the next round
	if got := l.stored(); len(got) != 2 || got[1] != "gate/0" {
		t.Fatalf("stored %v, want free/0 then the first's gate/0", got)
	}
	l.release <- struct{}{}

	for i, corr := range []int32{first, second, third} {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		rc.recv(corr, resp) // recv checks the correlation id: request order
		p := resp.Topics[0].Partitions[0]
		if want := []int64{0, 0, 1}[i]; p.ErrorCode != 0 || p.BaseOffset != want {
			t.Fatalf("Produce %d: code %d base %d, want 0 and %d", i+1, p.ErrorCode, p.BaseOffset, want)
		}
	}
	lresp := kmsg.NewPtrListOffsetsResponse()
	lresp.Version = 4
	rc.recv(fourth, lresp)
	if p := lresp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 2 {
		t.Fatalf("ListOffsets behind the Produces: code %d offset %d, want 0 and 2 (it started before they finished)", p.ErrorCode, p.Offset)
	}
	if got := l.stored(); fmt.Sprint(got) != "[free/0 gate/0 gate/0]" {
		t.Fatalf("stored %v", got)
	}
	var m strings.Builder
	gw.WriteMetrics(&m)
	if n := metricValue(t, m.String(), "kiggy_produce_pipelined_total"); n < 2 {
		t.Fatalf("kiggy_produce_pipelined_total %v, want at least 2", n)
	}
}

// TestProducePipelinedAfterQueueing: a Produce pipelined behind another
// starts only once the first has queued every append. The first writes
// 2,000 partitions of "wide" and then "free"/0, so queueing its appends
// takes a while; the second, read meanwhile, writes "free"/0 alone. Were it
// started before the first had queued, its append would take "free"/0's
// first offset.
func TestProducePipelinedAfterQueueing(t *testing.T) {
	l, _, addr := startGateLog(t)
	const wide = 2000
	if _, err := l.CreateTopic(context.Background(), "wide", wide, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, addr)
	for round := range 3 {
		first := produceOneEach("wide", "w")
		for p := range int32(wide) {
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition, pp.Records = p, batchOf(batch.NoCompression, "w")
			first.Topics[0].Partitions = append(first.Topics[0].Partitions, pp)
		}
		first.Topics = append(first.Topics, produceOneEach("free", "first", 0).Topics[0])
		c1 := rc.send(first)
		c2 := rc.send(produceOneEach("free", "second", 0))
		r1, r2 := kmsg.NewPtrProduceResponse(), kmsg.NewPtrProduceResponse()
		r1.Version, r2.Version = 9, 9
		rc.recv(c1, r1)
		rc.recv(c2, r2)
		got1, got2 := r1.Topics[1].Partitions[0], r2.Topics[0].Partitions[0]
		if want := int64(2 * round); got1.ErrorCode != 0 || got2.ErrorCode != 0 || got1.BaseOffset != want || got2.BaseOffset != want+1 {
			t.Fatalf("round %d: free/0 at %d (code %d) for the first Produce, %d (code %d) for the second; want %d and %d",
				round, got1.BaseOffset, got1.ErrorCode, got2.BaseOffset, got2.ErrorCode, want, want+1)
		}
	}
}

// TestProducePipelinedIdempotent: franz-go producers with five requests in
// flight, one idempotent and one not, through an Iggy server whose replies take 3 ms, so
// their requests are pipelined: every record is acknowledged once, stored
// once at the offset its producer was told, each producer's records in the
// order it sent them, with no sequence error.
func TestProducePipelinedIdempotent(t *testing.T) {
	gw := gatewayOnSlowIggy(t, 3*time.Millisecond)
	const partitions, producers, perProducer = 3, 2, 1500
	gw.CreateTopic(t, "pipe", partitions)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var all []producerAck
	var firstErr error
	var wg sync.WaitGroup
	pad := "-" + strings.Repeat("x", 200)
	for p := range producers {
		opts := []kgo.Opt{kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			// Batches of a few records: many requests, five in flight
			// (idempotent producers' default).
			kgo.ProducerLinger(0), kgo.MaxBufferedRecords(10_000), kgo.ProducerBatchMaxBytes(1024)}
		if p%2 == 1 {
			opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := range perProducer {
			wg.Add(1)
			r := &kgo.Record{Topic: "pipe", Partition: int32(i % partitions), Value: fmt.Appendf(nil, "p%d-%d%s", p, i, pad)}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					firstErr = err
					return
				}
				var pr, seq int
				fmt.Sscanf(string(r.Value), "p%d-%d", &pr, &seq)
				all = append(all, producerAck{pr, seq, r.Partition, r.Offset})
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
	if len(all) != producers*perProducer {
		t.Fatalf("%d acknowledged, want %d", len(all), producers*perProducer)
	}
	checkAcked(t, gw, "pipe", partitions, producers, pad, all)
	m := gw.Metrics()
	pipelined := metricValue(t, m, "kiggy_produce_pipelined_total")
	t.Logf("%v Produce requests pipelined", pipelined)
	if pipelined == 0 {
		t.Fatal("no Produce was pipelined")
	}
}

// TestProducePipelinedTransactional: a transactional franz-go producer with
// five requests in flight through an Iggy server whose replies take 3 ms:
// its Produce requests are pipelined too (each admitted by the coordinator
// under one hold of the transaction before it queues). Two transactions
// committed and one aborted in between; a read_committed consumer then reads
// exactly the committed records, once each, in the order they were sent.
func TestProducePipelinedTransactional(t *testing.T) {
	gw := gatewayOnSlowIggy(t, 3*time.Millisecond)
	const partitions, perTxn = 3, 600
	gw.CreateTopic(t, "tpipe", partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.TransactionalID("tpipe-producer"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(10_000), kgo.ProducerBatchMaxBytes(1024))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	before := metricValue(t, gw.Metrics(), "kiggy_produce_pipelined_total")
	began := time.Now()
	var committed []string
	for txn, commit := range []bool{true, false, true} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var firstErr error
		var values []string
		for i := range perTxn {
			v := fmt.Sprintf("t%d-%04d-%s", txn, i, strings.Repeat("x", 200))
			values = append(values, v)
			cl.Produce(ctx, &kgo.Record{Topic: "tpipe", Partition: int32(i % partitions), Value: []byte(v)}, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if firstErr != nil {
			t.Fatalf("transaction %d: produce: %v", txn, firstErr)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("transaction %d: end: %v", txn, err)
		}
		if commit {
			committed = append(committed, values...)
		}
	}
	pipelined := metricValue(t, gw.Metrics(), "kiggy_produce_pipelined_total") - before
	t.Logf("%v transactional Produce requests pipelined; the three transactions took %v", pipelined, time.Since(began))
	if pipelined == 0 {
		t.Fatal("no transactional Produce was pipelined")
	}

	rc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumeTopics("tpipe"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[int32][]string{}
	n := 0
	for n < len(committed) {
		fs := rc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after %d of %d: %v", n, len(committed), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	want := map[int32][]string{}
	for i, v := range committed {
		p := int32((i % perTxn) % partitions)
		want[p] = append(want[p], v)
	}
	for p := range int32(partitions) {
		if !slices.Equal(got[p], want[p]) {
			t.Fatalf("partition %d: read_committed read %d records, want the %d committed ones in order", p, len(got[p]), len(want[p]))
		}
	}
}
