package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestIdempotentRetryAfterLostReply: Iggy stores some sends but their
// replies are lost (as after a dropped connection), so kiggy answers
// REQUEST_TIMED_OUT for batches that are in fact stored; franz-go resends
// them with the same sequences and kiggy, having re-read the partition tail,
// answers the resends with their original offsets. Exactly the records sent
// are stored, once each, in order.
func TestIdempotentRetryAfterLostReply(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyModel: true})
	// SendMessages (160) is applied, its reply dropped.
	produceThroughFaults(t, gw, "flaky", iggytest.Fault{Op: 160, Count: 1, Drop: true, Apply: true})
	m := gw.Metrics()
	if !strings.Contains(m, `kiggy_api_errors_total{api="Produce",code="REQUEST_TIMED_OUT"}`) || containsLine(m, "kiggy_idempotent_duplicate_batches_total 0") {
		t.Fatalf("no lost reply was retried and deduplicated:\n%s", grepLines(m, "idempotent", "REQUEST_TIMED_OUT"))
	}
	t.Logf("%s", grepLines(m, "idempotent_duplicate", "REQUEST_TIMED_OUT"))
}

// produceThroughFaults produces 30 rounds of 10 records to a new
// one-partition topic through an idempotent franz-go producer, injecting
// fault before rounds 5, 15 and 25, and checks that exactly the records
// sent are stored, once each, in order.
func produceThroughFaults(t *testing.T, gw *kiggytest.Gateway, topic string, fault iggytest.Fault) {
	t.Helper()
	gw.CreateTopic(t, topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ProduceRequestTimeout(time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const rounds, per = 30, 10
	for r := range rounds {
		if r%10 == 5 {
			gw.Iggy.InjectFault(fault)
		}
		var recs []*kgo.Record
		for i := range per {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%04d", r*per+i)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	got := gw.Records(t, topic, 0)
	for i, r := range got {
		if want := fmt.Sprintf("v%04d", i); string(r.Value) != want || r.Offset != int64(i) {
			t.Fatalf("record %d: offset %d value %q, want %q (%d stored, %d sent)", i, r.Offset, r.Value, want, len(got), rounds*per)
		}
	}
	if len(got) != rounds*per {
		t.Fatalf("stored %d records, sent %d", len(got), rounds*per)
	}
}

// grepLines returns the sample lines of metrics containing any of words.
func grepLines(metrics string, words ...string) string {
	var b strings.Builder
	for line := range strings.Lines(metrics) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, w := range words {
			if strings.Contains(line, w) {
				b.WriteString(line)
				break
			}
		}
	}
	return b.String()
}

// TestIdempotentRetryAfterInheritedWrite: Iggy takes some sends but the
// connection breaks before their replies, and they become visible only
// when a later partition write is committed behind them — as a new Iggy
// primary, after the old one was killed, commits the writes it took over
// once it has accepted newer ones, while reads show only what is committed
// (iggytest Fault.Inherit). On protocol 0.11 kiggy answers
// REQUEST_TIMED_OUT, and before it reads the partition's tail for the
// resend it settles the partition (bridge/iggy Settle: a quorum
// StoreConsumerOffset behind the held write), so the resend finds the
// original and is answered with its offset; without the settle the tail
// read misses it and the resend is stored a second time. On 0.12 kiggy
// sends the write again under its request number on a new connection
// bound to the session, which the server answers with the original's
// receipt. Either way exactly the records sent are stored, once each, in
// order.
func TestIdempotentRetryAfterInheritedWrite(t *testing.T) {
	for _, dialect := range []string{"0.11", "0.12"} {
		t.Run(dialect, func(t *testing.T) {
			t.Setenv(iggytest.DialectEnv, dialect)
			gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyModel: true})
			produceThroughFaults(t, gw, "inherited", iggytest.Fault{Op: 160, Count: 1, Drop: true, Inherit: true, Close: true})
			m := gw.Metrics()
			if dialect == "0.11" && (containsLine(m, "kiggy_idempotent_duplicate_batches_total 0") || containsLine(m, "kiggy_idempotent_partition_settles_total 0")) {
				t.Fatalf("no resend of an inherited write was settled and deduplicated:\n%s", grepLines(m, "idempotent", "REQUEST_TIMED_OUT"))
			}
			t.Logf("%s", grepLines(m, "idempotent_duplicate", "settle", "REQUEST_TIMED_OUT"))
		})
	}
}
