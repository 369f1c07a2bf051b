package multinode

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// Transactions across the instances of a cluster
// (docs/design/transactions.md §7): the transaction's coordinator, its
// partitions' leaders and its group's coordinator are different instances.

// txnClient is a transactional franz-go producer bootstrapped from every
// instance.
func txnClient(t *testing.T, ins []*instance, id string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	var seeds []string
	for _, in := range ins {
		if in != nil {
			seeds = append(seeds, in.addr)
		}
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(10 * time.Second), kgo.MetadataMinAge(50 * time.Millisecond), kgo.MetadataMaxAge(time.Second),
		kgo.ProducerLinger(0), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.RequestTimeoutOverhead(5 * time.Second)}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// readAll reads topic at the isolation level through the instances until
// it has read total records and then nothing more for a second: what it
// read, counted by value.
func readAll(t *testing.T, ins []*instance, topic string, committed bool, total int) map[string]int {
	t.Helper()
	var seeds []string
	for _, in := range ins {
		seeds = append(seeds, in.addr)
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := map[string]int{}
	n := 0
	var quietSince time.Time
	for {
		pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("reading %s (read_committed %v): read %d of %d records", topic, committed, n, total)
		}
		got := 0
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			got++
		})
		n += got
		switch {
		case got > 0 || n < total:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		case time.Since(quietSince) > time.Second:
			return seen
		}
	}
}

// TestTransactionsAcrossInstances: three instances; transactions whose
// coordinator, partition leaders and group coordinator are different
// instances commit and abort as on one: read_committed sees exactly the
// committed records, read_uncommitted every one; the group's offsets
// committed in a transaction read back once it commits.
func TestTransactionsAcrossInstances(t *testing.T) {
	iggyAddr := startIggytest(t)
	rec := &appends{}
	const topic, parts = "txn-across", int32(6)
	var ins []*instance
	for id := int32(1); id <= 3; id++ {
		in := startInstance(t, iggyAddr, id, "127.0.0.1:0", rec)
		t.Cleanup(in.stop)
		ins = append(ins, in)
	}
	if _, err := ins[0].log.CreateTopic(context.Background(), topic, parts, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, ins, []int32{1, 2, 3}, topic, parts)
	leaders := map[int32]bool{}
	for p := range parts {
		leaders[ins[0].m.Leader(topic, p).Leader] = true
	}
	if len(leaders) < 2 {
		t.Fatalf("the partitions are led by %v: want several instances", leaders)
	}

	// A transactional id whose coordinator is not the group's.
	const group = "across-group"
	gnode, _ := ins[0].m.Coordinator(group)
	id := pickTxnID(t, ins[0], "across", func(node int32) bool { return node != gnode })
	cl := txnClient(t, ins, id)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := map[string]int{}
	all := map[string]int{}
	for txnNo := range 10 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := range parts {
			v := fmt.Sprintf("t%d-p%d", txnNo, p)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("transaction %d, partition %d: %v", txnNo, p, err)
			}
			all[v]++
			if txnNo%2 == 0 {
				want[v]++
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(txnNo%2 == 0)); err != nil {
			t.Fatalf("ending transaction %d: %v", txnNo, err)
		}
	}
	if got := readAll(t, ins, topic, true, len(want)); !equalCounts(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
	if got := readAll(t, ins, topic, false, len(all)); !equalCounts(got, all) {
		t.Fatalf("read_uncommitted read %v, want %v", got, all)
	}

	// The coordinator of id and of the group are instances of their own;
	// the offsets committed in a transaction read back after it commits,
	// through every instance.
	id2 := pickTxnID(t, ins[0], "offsets", func(node int32) bool { return node != gnode })
	cl2 := txnClient(t, ins, id2)
	if err := cl2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl2.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("with-offsets")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commitTxnOffsets(t, ctx, cl2, group, topic, 3, 42)
	if err := cl2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("committing the transaction with offsets: %v", err)
	}
	for _, in := range ins {
		adm := kadm.NewClient(kgoClient(t, in.addr))
		os, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			err = os.Error()
		}
		if err != nil {
			t.Fatalf("offsets through node %d: %v", in.id, err)
		}
		if o, ok := os.Lookup(topic, 3); !ok || o.At != 42 {
			t.Fatalf("through node %d the group's offset of %s/3 is %+v (%v), want 42", in.id, topic, o, ok)
		}
	}
}

// commitTxnOffsets sends offset at of topic/partition for group in cl's
// open transaction (AddOffsetsToTxn, then TxnOffsetCommit at the group's
// coordinator), as sendOffsetsToTransaction does for a consumer outside a
// group session.
func commitTxnOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, partition int32, at int64) {
	t.Helper()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: at, LeaderEpoch: -1})
	var err error
	for range 50 {
		if err = sendOffsets(ctx, cl, group, os); err == nil {
			return
		}
		if !errors.Is(err, kerr.CoordinatorLoadInProgress) && !errors.Is(err, kerr.CoordinatorNotAvailable) && !errors.Is(err, kerr.NotCoordinator) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("TxnOffsetCommit: %v", err)
}

// kgoClient is a plain client of one instance.
func kgoClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// sendOffsets is one AddOffsetsToTxn and TxnOffsetCommit for cl's
// transaction; franz-go routes each to its coordinator.
func sendOffsets(ctx context.Context, cl *kgo.Client, group string, os kadm.Offsets) error {
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	id := cl.OptValue(kgo.TransactionalID).(string)
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, pid, epoch, group
	resp, err := add.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("AddOffsetsToTxn: %w", err)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.ProducerID, commit.ProducerEpoch, commit.Group, commit.Generation = id, pid, epoch, group, -1
	os.Each(func(o kadm.Offset) {
		var rt *kmsg.TxnOffsetCommitRequestTopic
		for i := range commit.Topics {
			if commit.Topics[i].Topic == o.Topic {
				rt = &commit.Topics[i]
			}
		}
		if rt == nil {
			commit.Topics = append(commit.Topics, kmsg.TxnOffsetCommitRequestTopic{Topic: o.Topic})
			rt = &commit.Topics[len(commit.Topics)-1]
		}
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = o.Partition, o.At, o.LeaderEpoch
		rt.Partitions = append(rt.Partitions, rp)
	})
	cresp, err := commit.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range cresp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("TxnOffsetCommit %s/%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

// txnCoordinator is the node that coordinates transactional id in in's
// view: the leader of Kafka's partition of __transaction_state for it
// (docs/design/transactions.md §7).
func txnCoordinator(in *instance, id string) int32 {
	var h int32
	for _, r := range id { // ASCII ids: Java's String.hashCode
		h = 31*h + r
	}
	if h < 0 {
		h = -h
	}
	return in.m.Leader("__transaction_state", h%50).Leader
}

// pickTxnID returns the first of prefix-0, prefix-1, … whose coordinator
// want accepts.
func pickTxnID(t *testing.T, in *instance, prefix string, want func(node int32) bool) string {
	t.Helper()
	for i := range 1000 {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if want(txnCoordinator(in, id)) {
			return id
		}
	}
	t.Fatal("no transactional id with the coordinator wanted")
	return ""
}

// TestTransactionCoordinatorKilled: a producer runs transactions over every
// partition without pause while the instance coordinating its id is killed
// abruptly (no leave, no drain) and later restarted. The transaction open
// at the kill completes or aborts on the instance that takes the id over;
// under read_committed every transaction is all or nothing, every one whose
// commit was answered is there, none twice, and the last stable offsets
// move on.
func TestTransactionCoordinatorKilled(t *testing.T) {
	iggyAddr := startIggytest(t)
	rec := &appends{}
	const topic, parts = "txn-kill", int32(6)
	ins := make([]*instance, 3)
	for i := range ins {
		ins[i] = startInstance(t, iggyAddr, int32(i+1), "127.0.0.1:0", rec)
	}
	t.Cleanup(func() {
		for _, in := range ins {
			if in != nil {
				in.stop()
			}
		}
	})
	if _, err := ins[0].log.CreateTopic(context.Background(), topic, parts, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, ins, []int32{1, 2, 3}, topic, parts)
	// The victim coordinates the id and leads some of the partitions.
	id := pickTxnID(t, ins[0], "killed", func(node int32) bool {
		for p := range parts {
			if ins[0].m.Leader(topic, p).Leader == node {
				return true
			}
		}
		return false
	})
	t.Logf("transactional id %s: coordinator node %d", id, txnCoordinator(ins[0], id))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var (
		committed = map[int]bool{} // answered committed
		attempted = 0
	)
	newClient := func() *kgo.Client { return txnClient(t, ins, id) }
	cl := newClient()
	// run runs n transactions; a failure aborts (or replaces the
	// producer, as an application does when franz-go calls it fatal).
	run := func(n int) {
		for range n {
			no := attempted
			attempted++
			if err := cl.BeginTransaction(); err != nil {
				t.Fatalf("transaction %d: begin: %v", no, err)
			}
			var perr error
			for p := range parts {
				r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("t%d-p%d", no, p))}
				if perr = cl.ProduceSync(ctx, r).FirstErr(); perr != nil {
					break
				}
			}
			end := kgo.TryCommit
			if perr != nil {
				end = kgo.TryAbort
			}
			err := cl.EndTransaction(ctx, end)
			switch {
			case err == nil && perr == nil:
				committed[no] = true
			case err != nil:
				t.Logf("transaction %d: produce %v, end %v: a new producer", no, perr, err)
				cl.Close()
				cl = newClient()
			default:
				t.Logf("transaction %d: produce %v: aborted", no, perr)
			}
		}
	}
	// killDuring kills the coordinator with a transaction open (its
	// records written, its end not), waits for the others to take over and
	// ends it there, then restarts the victim.
	aborted := map[int]bool{}
	killDuring := func(end kgo.TransactionEndTry) {
		victim := txnCoordinator(ins[0], id) - 1
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		open := attempted
		attempted++
		for p := range parts {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("t%d-p%d", open, p))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		ins[victim].kill()
		ins[victim] = nil
		var live []*instance
		var liveIDs []int32
		for _, in := range ins {
			if in != nil {
				live = append(live, in)
				liveIDs = append(liveIDs, in.id)
			}
		}
		// The end goes to the instance that took the id over; its state
		// was stored before each answer, so it has it.
		waitSettled(t, live, liveIDs, topic, parts)
		if err := cl.EndTransaction(ctx, end); err != nil {
			t.Errorf("the transaction open at the kill of node %d: %v", victim+1, err)
			cl.Close()
			cl = newClient()
		} else if end == kgo.TryCommit {
			committed[open] = true
		} else {
			aborted[open] = true
		}
		t.Logf("transaction %d, open at the kill of node %d, ended (commit %v) on node %d", open, victim+1, end == kgo.TryCommit, txnCoordinator(live[0], id))
		run(15)
		ins[victim] = startInstance(t, iggyAddr, int32(victim+1), "127.0.0.1:0", rec)
		waitSettled(t, ins, []int32{1, 2, 3}, topic, parts)
		run(15)
	}
	run(15)
	killDuring(kgo.TryCommit)
	killDuring(kgo.TryAbort)

	got := readAll(t, ins, topic, true, len(committed)*int(parts))
	byTxn := map[int]int{}
	for v, n := range got {
		if n != 1 {
			t.Errorf("%s read %d times", v, n)
		}
		var no, p int
		if _, err := fmt.Sscanf(v, "t%d-p%d", &no, &p); err != nil {
			t.Fatalf("value %q", v)
		}
		byTxn[no]++
	}
	for no, n := range byTxn {
		if n != int(parts) {
			t.Errorf("transaction %d: %d of its %d records visible under read_committed", no, n, parts)
		}
	}
	for no := range aborted {
		if byTxn[no] != 0 {
			t.Errorf("transaction %d was aborted but %d of its records are visible under read_committed", no, byTxn[no])
		}
	}
	for no := range committed {
		if byTxn[no] != int(parts) {
			t.Errorf("transaction %d was answered committed but %d of its records are visible", no, byTxn[no])
		}
	}
	if overlaps := rec.overlaps(); len(overlaps) > 0 {
		t.Errorf("appends of two instances overlapped: %v", overlaps)
	}
	t.Logf("%d transactions, %d committed, %d visible", attempted, len(committed), len(byTxn))
}
