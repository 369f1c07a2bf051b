package interop

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kiggy-io/kiggy/batch"
)

// TestTxnProtocolErrors sends the transaction APIs as a client does, one
// request at a time, and checks each error code against the same sequence
// on Kafka 4.4 (KIGGY_INTEROP_TARGET=kafka): a timeout above the maximum,
// EndTxn with no transaction, a wrong producer id, a stale epoch, an
// unknown topic beside a known one, a transactional batch to a partition
// not added, the retry of an answered EndTxn, the other outcome after it,
// fencing by a second InitProducerId, and what DescribeTransactions and
// ListTransactions report.
func TestTxnProtocolErrors(t *testing.T) {
	tg := newTarget(t)
	topic := topicName(t)
	tg.CreateTopic(t, topic, 2)
	txnID := "txn-errors-" + topic
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produceCl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer produceCl.Close()

	initPID := func(timeoutMs int32) (int64, int16, int16) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = &txnID, timeoutMs
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("InitProducerId: %v", err)
		}
		return resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode
	}
	addParts := func(pid int64, epoch int16, topics map[string][]int32) map[string]map[int32]int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = txnID, pid, epoch
		for name, ps := range topics {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = name, ps
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("AddPartitionsToTxn: %v", err)
		}
		out := map[string]map[int32]int16{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = map[int32]int16{}
			for _, p := range rt.Partitions {
				out[rt.Topic][p.Partition] = p.ErrorCode
			}
		}
		return out
	}
	// Kafka completes a transaction after answering EndTxn and answers
	// CONCURRENT_TRANSACTIONS (51) meanwhile; clients retry it, and so do
	// these requests (kiggy completes before it answers).
	retry := func(what string, f func() int16) int16 {
		t.Helper()
		for {
			code := f()
			if code != 51 {
				return code
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: CONCURRENT_TRANSACTIONS until the test's deadline", what)
			}
			time.Sleep(50 * time.Millisecond) // the client's retry backoff
		}
	}
	endTxn := func(pid int64, epoch int16, commit bool) int16 {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = 4
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txnID, pid, epoch, commit
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("EndTxn: %v", err)
		}
		return resp.ErrorCode
	}
	produce := func(pid int64, epoch int16, partition int32, seq int32) int16 {
		var b batch.Builder
		b.Reset(nil, 0, time.Now().UnixMilli(), batch.NoCompression)
		b.SetProducer(pid, epoch, seq)
		b.SetAttributes(0x10) // transactional
		b.Append(0, 0, nil, []byte("v"))
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 9, -1, 5000, &txnID
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = partition, b.Finish()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// A Produce goes to the partition's leader, which the client finds;
		// by topic name (v12 and below: franz-go sends the highest version
		// both sides have unless capped).
		resps := produceCl.RequestSharded(ctx, req)
		if len(resps) != 1 || resps[0].Err != nil {
			t.Fatalf("Produce: %d responses, %v", len(resps), resps)
		}
		return resps[0].Resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	want := func(what string, got, want int16) {
		t.Helper()
		if got != want {
			t.Errorf("%s: code %d, want %d", what, got, want)
		}
	}

	_, _, code := initPID(int32((time.Hour).Milliseconds()))
	want("InitProducerId with a timeout above transaction.max.timeout.ms", code, 50) // INVALID_TRANSACTION_TIMEOUT
	pid, epoch, code := initPID(60_000)
	want("InitProducerId", code, 0)
	want("EndTxn with no transaction", endTxn(pid, epoch, true), 48) // INVALID_TXN_STATE
	want("AddPartitionsToTxn with another producer id", addParts(pid+1, epoch, map[string][]int32{topic: {0}})[topic][0], 49)
	want("AddPartitionsToTxn with another epoch", addParts(pid, epoch+1, map[string][]int32{topic: {0}})[topic][0], 90)
	mixed := addParts(pid, epoch, map[string][]int32{topic: {0}, "no-such-topic-" + topic: {0}})
	want("AddPartitionsToTxn: the unknown topic", mixed["no-such-topic-"+topic][0], 3) // UNKNOWN_TOPIC_OR_PARTITION
	want("AddPartitionsToTxn: the known topic beside it", mixed[topic][0], 55)         // OPERATION_NOT_ATTEMPTED
	want("AddPartitionsToTxn", addParts(pid, epoch, map[string][]int32{topic: {0}})[topic][0], 0)
	want("transactional Produce to the added partition", produce(pid, epoch, 0, 0), 0)
	// Produce v11 (KIP-890): TRANSACTION_ABORTABLE for a partition the
	// transaction does not hold.
	want("transactional Produce to a partition not added", produce(pid, epoch, 1, 0), 120)
	want("EndTxn abort", endTxn(pid, epoch, false), 0)
	want("EndTxn abort again (a retry)", retry("EndTxn", func() int16 { return endTxn(pid, epoch, false) }), 0)
	want("EndTxn commit after the abort", retry("EndTxn", func() int16 { return endTxn(pid, epoch, true) }), 48)

	var pid2 int64
	var epoch2 int16
	code = retry("InitProducerId", func() int16 {
		var c int16
		pid2, epoch2, c = initPID(60_000)
		return c
	})
	want("a second InitProducerId", code, 0)
	if pid2 != pid || epoch2 <= epoch {
		// Kafka 4.4 bumps the epoch twice here (its abort of a
		// transaction a verification failed); the number is its own.
		t.Errorf("a second InitProducerId gave %d/%d, want %d at an epoch above %d", pid2, epoch2, pid, epoch)
	}
	want("AddPartitionsToTxn with the fenced epoch", addParts(pid, epoch, map[string][]int32{topic: {0}})[topic][0], 90)

	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{txnID, "never-used-" + topic}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range dresp.TransactionStates {
		switch s.TransactionalID {
		case txnID:
			if s.ErrorCode != 0 || s.ProducerID != pid || s.ProducerEpoch != epoch2 || s.State != "Empty" && s.State != "CompleteAbort" {
				t.Errorf("DescribeTransactions %s: %+v", txnID, s)
			}
			t.Logf("%s: DescribeTransactions state %s, timeout %d", tg.Name(), s.State, s.TimeoutMillis)
		default:
			want("DescribeTransactions of an unknown id", s.ErrorCode, 105) // TRANSACTIONAL_ID_NOT_FOUND
		}
	}
	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.StateFilters = []string{"Ongoing", "NoSuchState"}
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.UnknownStateFilters) != 1 || lresp.UnknownStateFilters[0] != "NoSuchState" {
		t.Errorf("ListTransactions unknown state filters %v, want [NoSuchState]", lresp.UnknownStateFilters)
	}
	for _, s := range lresp.TransactionStates {
		if s.TransactionalID == txnID {
			t.Errorf("ListTransactions(Ongoing) lists %s, which has no transaction open", txnID)
		}
	}
}
