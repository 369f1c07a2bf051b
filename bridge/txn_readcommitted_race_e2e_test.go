package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestReadCommittedWhileTransactionsEnd: read_committed consumers wait at
// the tail of a partition (its last stable offset) while a transactional
// producer writes transaction after transaction into it, aborting every
// other one, and a second producer opens its transactions in the same
// partition between them. A consumer woken by a marker's append reads
// while the transaction ends; one reading as a transaction opens may meet
// its records; one whose read is held up (two cores, three consumers, two
// producers, and on the iggytest model a transaction that takes about a
// millisecond) may span a whole transaction, opened, written and aborted
// while it reads.
// None may ever deliver a record of an aborted transaction, nor one twice,
// nor miss a committed one.
func TestReadCommittedWhileTransactionsEnd(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	const topic, rounds, per = "rc-race", 300, 4
	gw.CreateTopic(t, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var committed []string
	producer := func(name string, abortEvery int) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.TransactionalID("rc-race-"+name), kgo.DefaultProduceTopic(topic))
		if err != nil {
			return err
		}
		defer cl.Close()
		for i := range rounds {
			if err := cl.BeginTransaction(); err != nil {
				return err
			}
			var vals []string
			for j := range per {
				v := fmt.Sprintf("%s-%03d-%d", name, i, j)
				vals = append(vals, v)
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
					return err
				}
			}
			commit := abortEvery == 0 || i%abortEvery != 0
			if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				return err
			}
			if commit {
				mu.Lock()
				committed = append(committed, vals...)
				mu.Unlock()
			}
		}
		return nil
	}
	// Consumers at the tail from the start, long-polling.
	type seen struct {
		mu   sync.Mutex
		vals map[string]int
	}
	consumers := make([]*seen, 3)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range consumers {
		s := &seen{vals: map[string]int{}}
		consumers[i] = s
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer cl.Close()
			for {
				pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
				fs := cl.PollFetches(pctx)
				pcancel()
				fs.EachRecord(func(r *kgo.Record) {
					s.mu.Lock()
					s.vals[string(r.Value)]++
					s.mu.Unlock()
				})
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- producer("a", 2) }()
	go func() { errs <- producer("b", 3) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	want := append([]string(nil), committed...)
	mu.Unlock()
	// Every consumer reads every committed record.
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range consumers {
		for {
			s.mu.Lock()
			n := 0
			for _, v := range want {
				if s.vals[v] > 0 {
					n++
				}
			}
			s.mu.Unlock()
			if n == len(want) || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	close(stop)
	wg.Wait()
	isCommitted := map[string]bool{}
	for _, v := range want {
		isCommitted[v] = true
	}
	for i, s := range consumers {
		var aborted, twice, missing []string
		for v, n := range s.vals {
			switch {
			case !isCommitted[v]:
				aborted = append(aborted, v)
			case n > 1:
				twice = append(twice, v)
			}
		}
		for _, v := range want {
			if s.vals[v] == 0 {
				missing = append(missing, v)
			}
		}
		if len(aborted)+len(twice)+len(missing) > 0 {
			t.Errorf("consumer %d: %d records of aborted transactions delivered (%s), %d twice, %d committed missing (of %d)",
				i, len(aborted), strings.Join(aborted[:min(len(aborted), 8)], " "), len(twice), len(missing), len(want))
		}
	}
	t.Logf("%d committed records; stable re-reads: %s, aborted relists: %s", len(want), metricLine(gw.Metrics(), "kiggy_fetch_stable_rereads_total"), metricLine(gw.Metrics(), "kiggy_fetch_aborted_relists_total"))
}

// metricLine is the value of a metric without labels, "" when absent.
func metricLine(metrics, name string) string {
	for _, l := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return ""
}

// heldReads is a backend whose next Read of a partition, once armed, waits
// until released before it reads: a read held up for as long as a test
// needs.
type heldReads struct {
	store.Log
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (h *heldReads) Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int, fn func(*message.Message) bool) (store.Watermarks, error) {
	if h.armed.CompareAndSwap(true, false) {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.Log.Read(ctx, topic, partition, offset, maxBytes, fn)
}

// TestReadCommittedReadSpanningAbort: a read_committed Fetch whose read is
// held up while a whole transaction opens, writes and aborts below where
// it ends lists that transaction among the aborted ones, so the consumer
// skips its records. Before the aborted list was taken again after the
// read, the response listed none: the list was written before the
// transaction ended, and once the read was done nothing was open any more.
// Run on the embedded log as itself and as a networked backend, after a
// committed transaction and with the aborted one the gateway's first (no
// transaction had been seen when the read began).
func TestReadCommittedReadSpanningAbort(t *testing.T) {
	for _, c := range []struct {
		fan   bool
		first bool // the aborted transaction is the gateway's first
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		fan := c.fan
		t.Run(fmt.Sprintf("networked=%v/first=%v", c.fan, c.first), func(t *testing.T) {
			var inner store.Log = memlog.New(memlog.Config{})
			if fan {
				inner = networked{inner}
			}
			held := &heldReads{Log: inner, entered: make(chan struct{}), release: make(chan struct{})}
			gw := kiggytest.Start(t, kiggytest.Options{Log: held})
			const topic = "held"
			gw.CreateTopic(t, topic, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.TransactionalID("held-txn"), kgo.DefaultProduceTopic(topic))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			txn := func(commit bool, vals ...string) {
				t.Helper()
				if err := cl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				for _, v := range vals {
					if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
				if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					t.Fatal(err)
				}
			}
			if c.first {
				// Plain records: no transaction before the aborted one.
				plain, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.DefaultProduceTopic(topic))
				if err != nil {
					t.Fatal(err)
				}
				if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("c0")}, &kgo.Record{Value: []byte("c1")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
				plain.Close()
			} else {
				txn(true, "c0", "c1") // offsets 0, 1; its marker at 2
			}

			kc := dialKafka(t, gw.Addr)
			req := fetchRequest(12, topic, []int64{0}, 1<<20, 4<<20)
			req.IsolationLevel = 1
			held.armed.Store(true)
			type result struct {
				resp kmsg.Response
				err  error
			}
			got := make(chan result, 1)
			go func() {
				resp, err := kc.RoundTrip(req)
				got <- result{resp, err}
			}()
			<-held.entered
			txn(false, "a0", "a1", "a2") // aborted while the Fetch reads
			close(held.release)
			r := <-got
			if r.err != nil {
				t.Fatal(r.err)
			}
			p := r.resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				t.Fatalf("error %d", p.ErrorCode)
			}
			aborted := map[int64]int64{}
			for _, a := range p.AbortedTransactions {
				aborted[a.ProducerID] = a.FirstOffset
			}
			var values []string
			for records := p.RecordBatches; len(records) > 0; {
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(records); err != nil {
					t.Fatal(err)
				}
				raw := records[:12+int(rb.Length)]
				records = records[len(raw):]
				if rb.Attributes&0x20 != 0 {
					continue // a marker
				}
				first, listed := aborted[rb.ProducerID]
				skipped := rb.Attributes&0x10 != 0 && listed && rb.FirstOffset >= first
				for _, rec := range kgoRecords(t, raw) {
					if !skipped {
						values = append(values, string(rec.value))
					}
				}
			}
			if got := strings.Join(values, " "); got != "c0 c1" {
				t.Fatalf("a read_committed consumer reads %q (aborted transactions listed: %v), want \"c0 c1\"", got, p.AbortedTransactions)
			}
		})
	}
}
