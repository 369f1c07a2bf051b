package interop

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionsAbortCommand: a transaction left open (its producer
// neither commits nor aborts) holds the last stable offset at its first
// record; `kafka-transactions describe-producers`, `list` and `describe`
// show it, `find-hanging` does not take it for hanging (its coordinator
// holds it), and `kafka-transactions abort` ends it with a marker at the
// partition's leader (WriteTxnMarkers,
// docs/design/transactions.md §6): the last stable offset moves to the high
// watermark, read_committed reads none of its records and read_uncommitted
// all. The same on Kafka 4.4 (KIGGY_INTEROP_TARGET=kafka).
func TestTransactionsAbortCommand(t *testing.T) {
	tg := newTarget(t)
	topic := topicName(t)
	tg.CreateTopic(t, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The hanging producer: a long timeout, so no coordinator ends it.
	hanging, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.TransactionalID("hanging-"+topic),
		kgo.TransactionTimeout(5*time.Minute), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer hanging.Close()
	if err := hanging.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := hanging.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	lso := func() int64 {
		t.Helper()
		os, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = os.Error()
		}
		if err != nil {
			t.Fatalf("ListOffsets read_committed: %v", err)
		}
		o, _ := os.Lookup(topic, 0)
		return o.Offset
	}
	if got := lso(); got != 0 {
		t.Fatalf("last stable offset with the transaction open: %d, want 0", got)
	}
	d := adminTool(t, tg, transactionsCommand, "describe-producers", "--topic", topic, "--partition", "0")
	// ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp CurrentTransactionStartOffset
	if d.code != 0 || !regexp.MustCompile(`(?m)^\d+\s+\d+\s+-?\d+\s+2\s+\d+\s+0\s*$`).MatchString(d.stdout) {
		t.Fatalf("kafka-transactions describe-producers: want a producer whose transaction starts at 0:\n%s", d)
	}
	// list (ListTransactions) and describe (DescribeTransactions) show it
	// ongoing; find-hanging (DescribeProducers, then the coordinator's view)
	// finds it not hanging while its coordinator still holds it.
	id := "hanging-" + topic
	l := adminTool(t, tg, transactionsCommand, "list")
	// TransactionalId Coordinator ProducerId TransactionState
	if l.code != 0 || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(id)+`\s+\d+\s+\d+\s+Ongoing\s*$`).MatchString(l.stdout) {
		t.Errorf("kafka-transactions list: want %s Ongoing:\n%s", id, l)
	}
	ds := adminTool(t, tg, transactionsCommand, "describe", "--transactional-id", id)
	// CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState
	// TransactionTimeoutMs CurrentTransactionStartTimeMs TransactionDurationMs TopicPartitions
	if ds.code != 0 || !regexp.MustCompile(`(?m)^\d+\s+`+regexp.QuoteMeta(id)+`\s+\d+\s+\d+\s+Ongoing\s+300000\s+\d+\s+\d+\s+`+regexp.QuoteMeta(topic)+`-0\s*$`).MatchString(ds.stdout) {
		t.Errorf("kafka-transactions describe: want %s Ongoing, 300000 ms, on %s-0:\n%s", id, topic, ds)
	}
	fh := adminTool(t, tg, transactionsCommand, "find-hanging", "--broker-id", fmt.Sprint(nodeID), "--max-transaction-timeout", "0")
	// Its header alone, as Kafka 4.4 prints it when none is hanging.
	if fh.code != 0 || strings.Contains(fh.stdout, topic) || !strings.HasPrefix(fh.stdout, "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset") {
		t.Errorf("kafka-transactions find-hanging: want none (the coordinator holds the transaction):\n%s", fh)
	}
	a := adminTool(t, tg, transactionsCommand, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
	if a.code != 0 {
		t.Fatalf("kafka-transactions abort: want exit 0:\n%s", a)
	}
	hw := int64(4) // three records and the abort marker
	if got := lso(); got != hw {
		t.Fatalf("last stable offset after the abort: %d, want %d (the high watermark)", got, hw)
	}
	read := func(iso kgo.IsolationLevel) []string {
		t.Helper()
		c, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var got []string
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := c.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got
	}
	if got := read(kgo.ReadCommitted()); len(got) != 0 {
		t.Fatalf("read_committed read %v of the aborted transaction", got)
	}
	if got := strings.Join(read(kgo.ReadUncommitted()), ""); got != "abc" {
		t.Fatalf("read_uncommitted read %q, want abc", got)
	}
}
