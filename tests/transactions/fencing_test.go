package transactions

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// fencingErrs are the errors a fenced producer may get: the coordinator's
// PRODUCER_FENCED and the partition leader's INVALID_PRODUCER_EPOCH.
var fencingErrs = []error{kerr.ProducerFenced, kerr.InvalidProducerEpoch}

// abortableErrs are what a producer whose transaction the coordinator
// aborted may also get for its next operation (KIP-890's
// TRANSACTION_ABORTABLE, or an EndTxn in a state that no longer matches).
var abortableErrs = append(slices.Clone(fencingErrs), kerr.TransactionAbortable, kerr.InvalidTxnState)

func isOneOf(err error, errs []error) bool {
	for _, e := range errs {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// TestTxnFencing proves zombie fencing: producer 1 opens a transaction with
// a transactional.id and writes a record; producer 2 starts with the same
// transactional.id, and its InitProducerId fences producer 1 (the
// coordinator aborts producer 1's open transaction and bumps the epoch);
// producer 2 writes and commits. Producer 1's next produce must fail with
// PRODUCER_FENCED or INVALID_PRODUCER_EPOCH (the partition refuses the old
// epoch) and its commit must not succeed. Then the same once more with the
// commit straight after the fence: producer 2 opens a transaction, producer
// 3 fences it, and producer 2's EndTxn must fail with PRODUCER_FENCED or
// INVALID_PRODUCER_EPOCH (the coordinator refuses the old epoch). A
// read_committed consumer must see exactly the records of producers 2 and
// 3's committed transactions: nothing a fenced producer wrote, before its
// fence (aborted) or after it (refused), and read_uncommitted must not hold
// the write after the fence either.
func TestTxnFencing(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg target) {
		topic := uniqueName(t, "fence")
		createTopic(t, tg, topic, 1)
		id := uniqueName(t, "zombie")
		opts := []kgo.Opt{kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
			kgo.TransactionTimeout(60 * time.Second), kgo.RecordRetries(3)}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()

		p1 := client(t, tg, opts...)
		if err := p1.BeginTransaction(); err != nil {
			t.Fatalf("%s: producer 1 begin: %v", tg.name, err)
		}
		if err := p1.ProduceSync(ctx, kgo.StringRecord("p1-before-fence")).FirstErr(); err != nil {
			t.Fatalf("%s: producer 1 producing before the fence: %v", tg.name, err)
		}

		p2 := client(t, tg, opts...)
		if err := p2.BeginTransaction(); err != nil {
			t.Fatalf("%s: producer 2 begin: %v", tg.name, err)
		}
		// The first produce runs InitProducerId, which fences producer 1.
		if err := p2.ProduceSync(ctx, kgo.StringRecord("p2-committed")).FirstErr(); err != nil {
			t.Fatalf("%s: producer 2 (same transactional.id) producing: %v", tg.name, err)
		}
		if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("%s: producer 2 commit: %v", tg.name, err)
		}

		perr := p1.ProduceSync(ctx, kgo.StringRecord("p1-after-fence")).FirstErr()
		t.Logf("%s: the fenced producer's produce: %v", tg.name, perr)
		if !isOneOf(perr, fencingErrs) {
			t.Errorf("%s: the fenced producer's produce returned %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", tg.name, perr)
		}
		// franz-go does not send the commit of a transaction with a
		// failed record (OPERATION_NOT_ATTEMPTED): it must not succeed.
		if err := p1.EndTransaction(ctx, kgo.TryCommit); err == nil {
			t.Errorf("%s: the fenced producer's commit succeeded", tg.name)
		}

		// The coordinator's own fencing of EndTxn: producer 2 opens a
		// transaction, producer 3 with the same transactional.id fences
		// it, and producer 2 commits straight away.
		if err := p2.BeginTransaction(); err != nil {
			t.Fatalf("%s: producer 2 begin: %v", tg.name, err)
		}
		if err := p2.ProduceSync(ctx, kgo.StringRecord("p2-before-fence")).FirstErr(); err != nil {
			t.Fatalf("%s: producer 2 producing before its fence: %v", tg.name, err)
		}
		p3 := client(t, tg, opts...)
		if err := p3.BeginTransaction(); err != nil {
			t.Fatalf("%s: producer 3 begin: %v", tg.name, err)
		}
		if err := p3.ProduceSync(ctx, kgo.StringRecord("p3-committed")).FirstErr(); err != nil {
			t.Fatalf("%s: producer 3 (same transactional.id) producing: %v", tg.name, err)
		}
		cerr := p2.EndTransaction(ctx, kgo.TryCommit)
		t.Logf("%s: the fenced producer's commit: %v", tg.name, cerr)
		if !isOneOf(cerr, fencingErrs) {
			t.Errorf("%s: the fenced producer's commit (EndTxn) returned %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", tg.name, cerr)
		}
		if err := p3.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("%s: producer 3 commit: %v", tg.name, err)
		}

		rc := readAll(t, tg, topic, 1, kgo.ReadCommitted())
		if got, want := values(rc), []string{"p2-committed", "p3-committed"}; !slices.Equal(got, want) {
			t.Errorf("%s: read_committed consumer read %q (%s), want %q: only the records committed by the producer that fenced the other", tg.name, got, offsetsOf(rc), want)
		}
		ru := readAll(t, tg, topic, 1, kgo.ReadUncommitted())
		if slices.Contains(values(ru), "p1-after-fence") {
			t.Errorf("%s: the fenced producer's write after the fence was stored: read_uncommitted reads %s", tg.name, offsetsOf(ru))
		}
	})
}

// TestTxnTimeout proves the transaction timeout: a producer with
// transaction.timeout.ms = 3000 writes five records and never ends its
// transaction. The coordinator must abort it on its own, not before the 3 s
// are up (the LSO still sits at the transaction's first offset 1.5 s after
// the write) and soon after (Kafka checks every second here,
// transaction.abort.timed.out.transaction.cleanup.interval.ms = 1000; the
// test allows 3 s + 12 s): the LSO moves past the transaction, a
// read_committed consumer sees none of its records, and the producer's next
// produce or its commit fails with a fencing or abortable error instead of
// committing.
func TestTxnTimeout(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg target) {
		const timeout = 3 * time.Second
		topic := uniqueName(t, "timeout")
		createTopic(t, tg, topic, 1)
		p := client(t, tg, kgo.TransactionalID(uniqueName(t, "slow")), kgo.DefaultProduceTopic(topic),
			kgo.TransactionTimeout(timeout), kgo.RecordRetries(3))
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		// InitProducerId first, in its own committed transaction, so that
		// the clock below starts at the transaction under test.
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, kgo.StringRecord("committed-before")).FirstErr(); err != nil {
			t.Fatalf("%s: producing: %v", tg.name, err)
		}
		if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("%s: commit: %v", tg.name, err)
		}

		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var recs []*kgo.Record
		for _, v := range []string{"T1", "T2", "T3", "T4", "T5"} {
			recs = append(recs, kgo.StringRecord(v))
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("%s: producing the transaction that times out: %v", tg.name, err)
		}
		first, last := recs[0].Offset, recs[len(recs)-1].Offset
		time.Sleep(time.Until(start.Add(timeout / 2)))
		if e := endOffsets(t, tg, topic)[0]; e.lso != first {
			t.Errorf("%s: %v after the first write of a transaction with a %v timeout: %v, want the LSO still at its first offset %d",
				tg.name, time.Since(start).Round(time.Millisecond), timeout, e, first)
		}
		var e ends
		var abortedAfter time.Duration
		if !testtools.EventuallyEvery(timeout+12*time.Second, 50*time.Millisecond, func() bool {
			e = endOffsets(t, tg, topic)[0]
			abortedAfter = time.Since(start)
			return e.lso > last
		}) {
			t.Fatalf("%s: the transaction at offsets %d..%d (timeout %v) still holds the LSO %v after its first write: %v",
				tg.name, first, last, timeout, abortedAfter.Round(time.Millisecond), e)
		}
		t.Logf("%s: the timed-out transaction was aborted %v after its first write (%v)", tg.name, abortedAfter.Round(time.Millisecond), e)
		if abortedAfter < timeout-100*time.Millisecond {
			t.Errorf("%s: the transaction was aborted %v after its first write, before its %v timeout", tg.name, abortedAfter.Round(time.Millisecond), timeout)
		}

		perr := p.ProduceSync(ctx, kgo.StringRecord("after-timeout")).FirstErr()
		cerr := p.EndTransaction(ctx, kgo.TryCommit)
		t.Logf("%s: the timed-out producer's next produce: %v; its commit: %v", tg.name, perr, cerr)
		if !isOneOf(perr, abortableErrs) && !isOneOf(cerr, abortableErrs) {
			t.Errorf("%s: after the coordinator aborted its transaction the producer's next produce returned %v and its commit %v, want a fencing or abortable error",
				tg.name, perr, cerr)
		}

		rc := readAll(t, tg, topic, 1, kgo.ReadCommitted())
		if got, want := values(rc), []string{"committed-before"}; !slices.Equal(got, want) {
			t.Errorf("%s: read_committed consumer read %q (%s), want %q: nothing of the timed-out transaction", tg.name, got, offsetsOf(rc), want)
		}
	})
}
