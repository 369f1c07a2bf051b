package realiggy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestTransactionsIggyClusterPrimaryKilled runs transactions through
// kiggy on a real 3-node Iggy cluster at "written" and kills (SIGKILL) the
// Iggy primary while a transaction is open: every transaction is atomic
// to a read_committed consumer (all of its records or none, each once),
// every transaction whose commit was answered is visible, every aborted
// one is not, and transactions commit again on the new primary. The
// transaction open at the kill may fail: a retried batch met
// OUT_OF_ORDER_SEQUENCE_NUMBER after the failover in 2 of 4 runs when this
// test was written, though in none of 12 since (docs/LIMITS.md, "Delivery
// guarantees"), which franz-go's transactional producer takes as fatal;
// the test then replaces the producer, as an application does, and that
// transaction must be invisible.
func TestTransactionsIggyClusterPrimaryKilled(t *testing.T) {
	iggyserver.Require(t)
	kiggyproc.Binary(t)
	c := iggyserver.StartClusterT(t, 3)
	byAddr := map[string]*iggyserver.Node{}
	for _, n := range c.Nodes {
		byAddr[n.Addr] = n
	}
	k := startKiggy(t, "kiggy", append(iggyFlags(c.Seeds(), "written"), "--admin-addr", "127.0.0.1:0")...)
	keepLogs(t, []*kiggyProc{k}, c.Nodes)
	testtools.WaitFor(t, stepTimeout, "kiggy to name a primary", func() bool { return k.primary() != "" })
	const topic, txns, perTxn = "txn-cluster", 12, 40
	createTopic(t, k.Addr, topic, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	newProducer := func() *kgo.Client {
		p, err := kgo.NewClient(kgo.SeedBrokers(k.Addr), kgo.TransactionalID("txn-cluster"), kgo.DefaultProduceTopic(topic),
			kgo.TransactionTimeout(60*time.Second), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := newProducer()
	defer func() { p.Close() }()
	outcome := map[int]string{} // "commit", "abort" or "unknown"
	began := time.Now()
	for i := range txns {
		if err := p.BeginTransaction(); err != nil {
			// A producer with a fatal error (a sequence the log lost in
			// the failover: docs/LIMITS.md, "Delivery guarantees") is
			// replaced, as an application does: the new one's
			// InitProducerId fences it and aborts what it left open.
			t.Logf("txn %d: begin: %v; a new producer", i, err)
			p.Close()
			p = newProducer()
			if err := p.BeginTransaction(); err != nil {
				t.Fatalf("txn %d: begin with a new producer: %v", i, err)
			}
		}
		failed := false
		produce := func(from, to int) {
			for j := from; j < to; j++ {
				p.Produce(ctx, kgo.StringRecord(fmt.Sprintf("t%d-r%d", i, j)), func(r *kgo.Record, err error) {
					if err != nil {
						t.Logf("txn %d: %s: %v", i, r.Value, err)
					}
				})
			}
			if err := p.Flush(ctx); err != nil {
				t.Logf("txn %d: flush: %v", i, err)
				failed = true
			}
		}
		if i == txns/2 {
			produce(0, perTxn/2)
			victim := k.primary()
			t.Logf("txn %d: killing the Iggy primary %s mid-transaction", i, victim)
			byAddr[victim].Kill()
			produce(perTxn/2, perTxn)
		} else {
			produce(0, perTxn)
		}
		commit := i%3 != 2 && !failed
		err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit))
		t.Logf("txn %d ended at %v", i, time.Since(began).Round(time.Millisecond))
		switch {
		case err == nil && commit:
			outcome[i] = "commit"
		case err == nil:
			outcome[i] = "abort"
		default:
			// franz-go commits nothing after a failed record
			// (OPERATION_NOT_ATTEMPTED); a commit that failed at the
			// coordinator may or may not have committed: either way the
			// transaction must be all or nothing.
			t.Logf("txn %d: end (commit %v): %v", i, commit, err)
			outcome[i] = "unknown"
			if err := p.EndTransaction(ctx, kgo.TryAbort); err != nil {
				t.Logf("txn %d: abort after the failed end: %v", i, err)
			}
		}
	}
	committedAfterKill := 0
	for i := txns/2 + 1; i < txns; i++ {
		if outcome[i] == "commit" {
			committedAfterKill++
		}
	}
	if committedAfterKill == 0 {
		t.Fatalf("no transaction committed after the primary was killed: %v", outcome)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := 0
	for _, o := range outcome {
		if o == "commit" {
			want += perTxn
		}
	}
	seen := map[string]int{}
	quiet := time.Time{}
	for ctx.Err() == nil {
		pollCtx, pollCancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pollCtx)
		pollCancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; n++ })
		if n > 0 {
			quiet = time.Time{}
			continue
		}
		if len(seen) >= want {
			if quiet.IsZero() {
				quiet = time.Now()
			} else if time.Since(quiet) > 2*time.Second {
				break
			}
		}
	}
	perTxnSeen := map[int]int{}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("%s read %d times", v, n)
		}
		var i, j int
		if _, err := fmt.Sscanf(strings.ReplaceAll(v, "-", " "), "t%d r%d", &i, &j); err != nil {
			t.Fatalf("unexpected record %q", v)
		}
		perTxnSeen[i]++
	}
	for i := range txns {
		got := perTxnSeen[i]
		switch o := outcome[i]; {
		case got != 0 && got != perTxn:
			t.Errorf("txn %d (%s): %d of its %d records visible to read_committed: not atomic", i, o, got, perTxn)
		case o == "commit" && got != perTxn:
			t.Errorf("txn %d: commit answered, %d of %d records visible", i, got, perTxn)
		case o == "abort" && got != 0:
			t.Errorf("txn %d: aborted, %d records visible", i, got)
		}
	}
	t.Logf("outcomes %v; %d records read_committed at %v", outcome, len(seen), time.Since(began).Round(time.Millisecond))
}
