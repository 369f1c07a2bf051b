package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
