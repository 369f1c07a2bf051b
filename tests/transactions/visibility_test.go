package transactions

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestTxnVisibility proves, with franz-go, what read_committed and
// read_uncommitted consumers see of aborted and committed transactions, and
// the last stable offset. On a one-partition topic a transactional producer
// writes txn A (five records) and aborts it, then txn B (three records) and
// commits it:
//
//   - while each transaction is open, ListOffsets with read_committed (the
//     LSO) stays at the transaction's first offset while ListOffsets with
//     read_uncommitted (the high watermark) moves with every write;
//   - a read_committed consumer fetching meanwhile gets none of the open
//     transaction's records (nor of the aborted one), and B's once it is
//     committed;
//   - once it has ended the two agree, one past the transaction's end
//     marker (which takes an offset of its own);
//   - a read_committed consumer sees exactly B's records, a
//     read_uncommitted consumer exactly A's and B's, in order, and neither
//     ever returns a control record; a consumer that keeps control records
//     finds exactly an ABORT marker after A and a COMMIT marker after B.
func TestTxnVisibility(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg target) {
		topic := uniqueName(t, "vis")
		createTopic(t, tg, topic, 1)
		pr := client(t, tg, kgo.TransactionalID(uniqueName(t, "txn")), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(60*time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()

		var committedSoFar []string
		// txn writes vals in two ProduceSyncs within one transaction,
		// checking the ends after each, and ends it with commit.
		txn := func(name string, vals []string, commit bool) {
			if err := pr.BeginTransaction(); err != nil {
				t.Fatalf("%s: begin %s: %v", tg.name, name, err)
			}
			first := int64(-1)
			for _, part := range [][]string{vals[:2], vals[2:]} {
				var recs []*kgo.Record
				for _, v := range part {
					recs = append(recs, &kgo.Record{Value: []byte(v)})
				}
				if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					t.Fatalf("%s: producing %s in txn %s: %v", tg.name, part, name, err)
				}
				if first < 0 {
					first = recs[0].Offset
				}
				last := recs[len(recs)-1].Offset
				e := endOffsets(t, tg, topic)[0]
				if e.lso != first || e.hw != last+1 {
					t.Errorf("%s: txn %s open, written at offsets %d..%d: %v, want LSO %d (the open transaction's first offset) and HW %d",
						tg.name, name, first, last, e, first, last+1)
				}
			}
			// A read_committed consumer fetching from the start now gets
			// nothing of the open transaction (nor of an aborted one).
			if got := pollFor(t, tg, topic, kgo.ReadCommitted(), time.Second); len(got) != len(committedSoFar) {
				t.Errorf("%s: txn %s open: a read_committed consumer read %s, want only the committed %q", tg.name, name, offsetsOf(got), committedSoFar)
			}
			last := first + int64(len(vals)) - 1
			if err := pr.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatalf("%s: ending txn %s (commit %v): %v", tg.name, name, commit, err)
			}
			// Kafka's coordinator answers EndTxn once the decision is in
			// its log and writes the markers after: the ends move soon.
			var e ends
			if !testtools.EventuallyEvery(10*time.Second, 20*time.Millisecond, func() bool {
				e = endOffsets(t, tg, topic)[0]
				return e.lso == last+2 && e.hw == last+2
			}) {
				t.Errorf("%s: txn %s (offsets %d..%d) ended (commit %v): %v 10 s later, want both %d (past the end marker at %d)",
					tg.name, name, first, last, commit, e, last+2, last+1)
			}
		}
		a := []string{"A1", "A2", "A3", "A4", "A5"}
		b := []string{"B1", "B2", "B3"}
		txn("A", a, false)
		txn("B", b, true)
		committedSoFar = b
		if got := pollFor(t, tg, topic, kgo.ReadCommitted(), time.Second); !slices.Equal(values(got), b) {
			t.Errorf("%s: after the commit a read_committed consumer read %s, want %q", tg.name, offsetsOf(got), b)
		}

		rc := readAll(t, tg, topic, 1, kgo.ReadCommitted())
		ru := readAll(t, tg, topic, 1, kgo.ReadUncommitted())
		if got := values(rc); !slices.Equal(got, b) {
			t.Errorf("%s: read_committed consumer read %q, want %q (only the committed txn B)", tg.name, got, b)
		}
		if got, want := values(ru), append(slices.Clone(a), b...); !slices.Equal(got, want) {
			t.Errorf("%s: read_uncommitted consumer read %q, want %q (both transactions' records)", tg.name, got, want)
		}
		for _, r := range append(controls(rc), controls(ru)...) {
			t.Errorf("%s: a consumer returned a control record at offset %d (key %x value %x)", tg.name, r.Offset, r.Key, r.Value)
		}
		// The markers themselves, kept: a control batch after each
		// transaction, its key (version 0, type 0 ABORT or 1 COMMIT).
		var marks []string
		for _, r := range controls(readAll(t, tg, topic, 1, kgo.ReadUncommitted(), kgo.KeepControlRecords())) {
			kind := fmt.Sprintf("key %x", r.Key)
			switch string(r.Key) {
			case "\x00\x00\x00\x00":
				kind = "ABORT"
			case "\x00\x00\x00\x01":
				kind = "COMMIT"
			}
			marks = append(marks, fmt.Sprintf("%s@%d", kind, r.Offset))
		}
		if want := []string{"ABORT@5", "COMMIT@9"}; !slices.Equal(marks, want) {
			t.Errorf("%s: control records (kept by the consumer) %q, want %q: an abort marker after txn A, a commit marker after B", tg.name, marks, want)
		}
		t.Logf("%s: read_committed %s, read_uncommitted %s", tg.name, offsetsOf(rc), offsetsOf(ru))
	})
}

// offsetsOf describes records as value@offset.
func offsetsOf(recs []*kgo.Record) string {
	var s []string
	for _, r := range recs {
		s = append(s, fmt.Sprintf("%s@%d", r.Value, r.Offset))
	}
	return fmt.Sprint(s)
}

// TestTxnVisibilityPython is TestTxnVisibility with confluent-kafka-python
// (librdkafka) as producer, admin client and consumers
// (tests/python/txn_visibility.py), with the same assertions on what it
// reports: the LSO at the open transaction's first offset while the high
// watermark moves, the two agreeing past the end marker once it has ended,
// read_committed seeing exactly txn B and read_uncommitted A and B, in
// order, and no record that is not one of them (librdkafka must skip the
// control records).
func TestTxnVisibilityPython(t *testing.T) {
	t.Parallel()
	py := pythonWith(t, "confluent_kafka")
	script := filepath.Join(testtools.Root(t), "tests", "python", "txn_visibility.py")
	forEachTarget(t, func(t *testing.T, tg target) {
		topic := uniqueName(t, "pyvis")
		createTopic(t, tg, topic, 1)
		p := startProc(t, py, script, tg.addr, topic, uniqueName(t, "pytxn"))
		start := time.Now()
		if err := p.wait(100 * time.Second); err != nil {
			t.Fatalf("%s: txn_visibility.py failed: %v\n%s", tg.name, err, p.describe())
		}
		out := p.output()
		var res struct {
			Txns []struct {
				Name   string
				Commit bool
				Parts  []struct{ First, Last, LSO, HW int64 }
				After  struct{ LSO, HW int64 }
			}
			ReadCommitted   [][2]any `json:"read_committed"`
			ReadUncommitted [][2]any `json:"read_uncommitted"`
		}
		if len(out) == 0 || json.Unmarshal([]byte(out[len(out)-1]), &res) != nil {
			t.Fatalf("%s: txn_visibility.py printed no JSON result\n%s", tg.name, p.describe())
		}
		t.Logf("%s: txn_visibility.py ran %v: %s", tg.name, time.Since(start).Round(time.Millisecond), out[len(out)-1])
		if len(res.Txns) != 2 {
			t.Fatalf("%s: %d transactions reported, want 2", tg.name, len(res.Txns))
		}
		for _, x := range res.Txns {
			first, last := x.Parts[0].First, x.Parts[len(x.Parts)-1].Last
			for _, pt := range x.Parts {
				if pt.LSO != first || pt.HW != pt.Last+1 {
					t.Errorf("%s: txn %s open, written at offsets %d..%d: LSO %d, HW %d, want LSO %d (the open transaction's first offset) and HW %d",
						tg.name, x.Name, first, pt.Last, pt.LSO, pt.HW, first, pt.Last+1)
				}
			}
			if x.After.LSO != last+2 || x.After.HW != last+2 {
				t.Errorf("%s: txn %s (offsets %d..%d) ended (commit %v): LSO %d, HW %d 10 s later, want both %d (past the end marker at %d)",
					tg.name, x.Name, first, last, x.Commit, x.After.LSO, x.After.HW, last+2, last+1)
			}
		}
		vals := func(rs [][2]any) []string {
			var s []string
			for _, r := range rs {
				s = append(s, fmt.Sprint(r[0]))
			}
			return s
		}
		a := []string{"A1", "A2", "A3", "A4", "A5"}
		b := []string{"B1", "B2", "B3"}
		if got := vals(res.ReadCommitted); !slices.Equal(got, b) {
			t.Errorf("%s: librdkafka read_committed consumer read %q, want %q (only the committed txn B)", tg.name, got, b)
		}
		if got, want := vals(res.ReadUncommitted), append(slices.Clone(a), b...); !slices.Equal(got, want) {
			t.Errorf("%s: librdkafka read_uncommitted consumer read %q, want %q (both transactions' records)", tg.name, got, want)
		}
	})
}

// pollFor consumes topic from the start with the given isolation level for
// d and returns the records it got, without waiting for any end.
func pollFor(t testing.TB, tg target, topic string, level kgo.IsolationLevel, d time.Duration) []*kgo.Record {
	t.Helper()
	cl := client(t, tg, kgo.FetchIsolationLevel(level), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []*kgo.Record
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) {
			if ctx.Err() == nil {
				t.Errorf("%s: fetching %s/%d (%s): %v", tg.name, tp, p, isolationName(level), err)
			}
		})
		out = append(out, fs.Records()...)
	}
	return out
}
