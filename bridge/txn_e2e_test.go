package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// readValues reads topic from the start at isolation iso until it has
// want records, then a little longer for any it should not have, and
// returns the values in offset order.
func readValues(t *testing.T, addr, topic string, iso kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	deadline := time.Now().Add(15 * time.Second)
	extra := time.Time{}
	for {
		now := time.Now()
		if len(out) >= want && extra.IsZero() {
			extra = now.Add(500 * time.Millisecond)
		}
		if !extra.IsZero() && now.After(extra) || now.After(deadline) {
			return out
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if err != context.DeadlineExceeded {
				t.Fatalf("fetch: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
}

// TestTransactionsCommitAbort: a transactional producer's aborted
// transaction is invisible to read_committed and visible to
// read_uncommitted; a committed one is visible to both; while a
// transaction is open the read_committed end offset (the last stable
// offset) stays at its start; on both backends.
func TestTransactionsCommitAbort(t *testing.T) {
	backends(t, func(t *testing.T, iggy bool) {
		gw := startBackend(t, iggy)
		const topic = "txn-visibility"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
		if err != nil {
			t.Fatal(err)
		}
		defer admc.Close()
		adm := kadm.NewClient(admc)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		p, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.TransactionalID("txn-a"), kgo.DefaultProduceTopic(topic),
			kgo.TransactionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		run := func(prefix string, n int, commit bool) {
			if err := p.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i))).FirstErr(); err != nil {
					t.Fatalf("produce %s-%d: %v", prefix, i, err)
				}
			}
			if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatalf("end %s: %v", prefix, err)
			}
		}
		run("a", 5, false)
		run("b", 3, true)

		// An open transaction holds the last stable offset back.
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, kgo.StringRecord("open-0")).FirstErr(); err != nil {
			t.Fatal(err)
		}
		hw, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := hw.Lookup(topic, 0)
		l, _ := lso.Lookup(topic, 0)
		// a: 5 records + marker (0–5), b: 3 + marker (6–9), open-0 at 10.
		if h.Offset != 11 || l.Offset != 10 {
			t.Fatalf("with a transaction open: high watermark %d, last stable %d; want 11, 10", h.Offset, l.Offset)
		}
		committed := readValues(t, gw.Addr, topic, kgo.ReadCommitted(), 3)
		if want := []string{"b-0", "b-1", "b-2"}; !slices.Equal(committed, want) {
			t.Fatalf("read_committed read %q, want %q", committed, want)
		}
		uncommitted := readValues(t, gw.Addr, topic, kgo.ReadUncommitted(), 9)
		if want := []string{"a-0", "a-1", "a-2", "a-3", "a-4", "b-0", "b-1", "b-2", "open-0"}; !slices.Equal(uncommitted, want) {
			t.Fatalf("read_uncommitted read %q, want %q", uncommitted, want)
		}
		if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		committed = readValues(t, gw.Addr, topic, kgo.ReadCommitted(), 4)
		if want := []string{"b-0", "b-1", "b-2", "open-0"}; !slices.Equal(committed, want) {
			t.Fatalf("after the commit read_committed read %q, want %q", committed, want)
		}
	})
}

// TestTransactionSurvivesRestart: a transaction left open by a gateway
// that stops (a committed one before it, and its aborted index) is known
// to the next gateway over the same Iggy server: the last stable offset
// still holds at the open transaction's start, DescribeTransactions shows
// it Ongoing, and at its timeout the new gateway aborts it: the last
// stable offset moves past its marker and read_committed never sees its
// records.
func TestTransactionSurvivesRestart(t *testing.T) {
	srv := iggytest.New(iggytest.Config{})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	first := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	const topic = "txn-restart"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first.CreateTopic(t, topic, 1)
	p, err := kgo.NewClient(kgo.SeedBrokers(first.Addr), kgo.TransactionalID("txn-restart"), kgo.DefaultProduceTopic(topic),
		kgo.TransactionTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	txn := func(prefix string, commit bool, end bool) {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i))).FirstErr(); err != nil {
				t.Fatalf("produce %s-%d: %v", prefix, i, err)
			}
		}
		if end {
			if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatalf("end %s: %v", prefix, err)
			}
		}
	}
	txn("committed", true, true) // 0–2, marker 3
	txn("aborted", false, true)  // 4–6, marker 7
	txn("open", false, false)    // 8–10, open
	first.Stop()

	second := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	admc, err := kgo.NewClient(kgo.SeedBrokers(second.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admc.Close()
	adm := kadm.NewClient(admc)
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	// The first gateway's timeout checks are gone with it; the second's
	// may already have aborted the open transaction (3 s): either the
	// last stable offset still holds at 8, or it is past the abort marker.
	if l, _ := lso.Lookup(topic, 0); l.Offset != 8 && l.Offset != 12 {
		t.Fatalf("after the restart the last stable offset is %d, want 8 (the open transaction's start) or 12 (aborted)", l.Offset)
	}
	described, err := adm.DescribeTransactions(ctx, "txn-restart")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := described["txn-restart"]; !ok || (d.State != "Ongoing" && d.State != "CompleteAbort") {
		t.Fatalf("after the restart DescribeTransactions = %+v", described)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		lso, err = adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if l, _ := lso.Lookup(topic, 0); l.Offset == 12 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the open transaction was not aborted at its timeout: last stable offset %d", l.Offset)
		}
		time.Sleep(100 * time.Millisecond) // polling for the new gateway's timeout check (once a second)
	}
	if got, want := readValues(t, second.Addr, topic, kgo.ReadCommitted(), 3), []string{"committed-0", "committed-1", "committed-2"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed after the restart read %q, want %q", got, want)
	}
	// The old producer was fenced by the abort.
	if err := p.BeginTransaction(); err == nil {
		err = p.ProduceSync(ctx, kgo.StringRecord("zombie")).FirstErr()
		if err == nil {
			err = p.EndTransaction(ctx, kgo.TryCommit)
		}
		if err == nil {
			t.Fatal("the producer whose transaction timed out committed another one")
		}
	}
}

// TestReadCommittedSeekIntoAbortedBatch: a read_committed consumer that
// starts inside a batch of an aborted transaction (offset 2 of a 5-record
// batch) skips the rest of that batch, as from Kafka, where the broker
// serves the whole batch with its producer id; it reads only the
// committed records after it. On both backends.
func TestReadCommittedSeekIntoAbortedBatch(t *testing.T) {
	backends(t, func(t *testing.T, iggy bool) {
		gw := startBackend(t, iggy)
		const topic = "txn-seek"
		gw.CreateTopic(t, topic, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.TransactionalID("txn-seek"), kgo.DefaultProduceTopic(topic),
			kgo.ProducerLinger(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		batchOf := func(prefix string, n int, commit bool) {
			if err := p.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				p.Produce(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i)), func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
			}
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatal(err)
			}
		}
		batchOf("aborted", 5, false)  // one batch, offsets 0–4, marker 5
		batchOf("committed", 2, true) // 6–7, marker 8
		if recs := gw.Records(t, topic, 0); len(recs) != 7 {
			t.Fatalf("stored %d records, want 7", len(recs))
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(2)}}))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var got []string
		for len(got) < 2 && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if want := []string{"committed-0", "committed-1"}; !slices.Equal(got, want) {
			t.Fatalf("read_committed from offset 2 read %q, want %q", got, want)
		}
	})
}
