package bridge_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestCoalescedProduceKeepsOrderAndOffsets: several producers (idempotent and
// not) write to the same partitions at once through an Iggy server whose
// replies take 2 ms, so their appends queue behind each other and share round
// trips (kiggy_produce_coalesced_total grows), or wait for a round and lead
// the next (kiggy_produce_round_waits_total). Every acknowledged record is
// stored once, at the offset its producer was told, each producer's records
// in the order it sent them, and the offsets are dense.
func TestCoalescedProduceKeepsOrderAndOffsets(t *testing.T) {
	gw := gatewayOnSlowIggy(t, 2*time.Millisecond)
	const partitions, producers, perProducer = 2, 6, 300
	gw.CreateTopic(t, "co", partitions)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var all []producerAck
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		opts := []kgo.Opt{kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(time.Millisecond)}
		if p%2 == 1 {
			opts = append(opts, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Rounds of a few records each: many appends per partition.
			for round := range perProducer / 10 {
				var recs []*kgo.Record
				for i := round * 10; i < round*10+10; i++ {
					recs = append(recs, &kgo.Record{Topic: "co", Partition: int32(i % partitions), Value: fmt.Appendf(nil, "p%d-%d", p, i)})
				}
				res := cl.ProduceSync(ctx, recs...)
				if err := res.FirstErr(); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, r := range res {
					var pr, seq int
					fmt.Sscanf(string(r.Record.Value), "p%d-%d", &pr, &seq)
					all = append(all, producerAck{pr, seq, r.Record.Partition, r.Record.Offset})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("produce: %v", err)
	}
	if len(all) != producers*perProducer {
		t.Fatalf("%d acknowledged, want %d", len(all), producers*perProducer)
	}
	checkAcked(t, gw, "co", partitions, producers, "", all)
	m := gw.Metrics()
	coalesced, trips := metricValue(t, m, "kiggy_produce_coalesced_total"), metricValue(t, m, "kiggy_produce_appends_total")
	waits := metricValue(t, m, "kiggy_produce_round_waits_total")
	t.Logf("%v appends in %v round trips (%v coalesced, %v led a round after waiting for one)", trips+coalesced, trips, coalesced, waits)
	if coalesced == 0 {
		t.Fatal("no append shared a round trip")
	}
	// An idempotent producer's next batch of a partition never joins the
	// round trip already running with its previous batch: it waits for it,
	// and the oldest of the appends waiting then leads the next round.
	if waits == 0 || waits > trips {
		t.Fatalf("kiggy_produce_round_waits_total %v: want 1 to %v (the round trips)", waits, trips)
	}
}

// producerAck is a record its producer was told is stored at offset: value
// "p<producer>-<seq>" and a pad.
type producerAck struct {
	producer, seq int
	partition     int32
	offset        int64
}

// checkAcked checks topic's partitions against all, every record its
// producers had acknowledged: each partition holds its share, at dense
// offsets, each acknowledged record at the offset its producer was told,
// and each producer's records in the order it sent them.
func checkAcked(t *testing.T, gw *kiggytest.Gateway, topic string, partitions int32, producers int, pad string, all []producerAck) {
	t.Helper()
	for part := range partitions {
		recs := gw.Records(t, topic, part)
		if want := len(all) / int(partitions); len(recs) != want {
			t.Fatalf("partition %d holds %d records, want %d", part, len(recs), want)
		}
		at := map[int64]string{}
		last := make([]int, producers)
		for i := range last {
			last[i] = -1
		}
		for i, r := range recs {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d at offset %d", part, i, r.Offset)
			}
			at[r.Offset] = string(r.Value)
			var p, seq int
			if _, err := fmt.Sscanf(string(r.Value), "p%d-%d", &p, &seq); err != nil {
				t.Fatalf("record %q: %v", r.Value, err)
			}
			if seq <= last[p] {
				t.Fatalf("partition %d: producer %d's record %d stored after its record %d", part, p, seq, last[p])
			}
			last[p] = seq
		}
		for _, a := range all {
			if want := fmt.Sprintf("p%d-%d%s", a.producer, a.seq, pad); a.partition == part && at[a.offset] != want {
				t.Fatalf("partition %d offset %d holds %q, acknowledged as %q", part, a.offset, at[a.offset], want)
			}
		}
	}
}

// TestProducerBatchesFollowInOneRound: an idempotent producer's batches
// that queue behind a running round of their partition go out in one round
// trip when each is the next in sequence after the one before it; a batch
// out of sequence waits for them to be recorded and is refused as Kafka
// refuses it (45), and a retry of one of them is answered as the duplicate
// it is. Every stored record is at the offset its producer was told.
func TestProducerBatchesFollowInOneRound(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyModel: true})
	gw.CreateTopic(t, "follow", 1)
	blocker, rc := dialRaw(t, gw.Addr), dialRaw(t, gw.Addr)

	// The blocker's round trip is held for a second once it reached the
	// server: the producer's batches sent meanwhile all queue behind it.
	gw.Iggy.InjectFault(iggytest.Fault{Op: 160, Count: 1, Delay: time.Second})
	const pid = 5150
	blockCorr := blocker.send(produceReqTo("follow", 0, idemBatch(pid+1, 0, 0, 1)))
	for deadline := time.Now().Add(10 * time.Second); gw.Iggy.PendingFaults() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the blocker's append never reached the server")
		}
	}
	steps := []produceStep{
		{"first batch", 0, 0, 0, 1},
		{"next in sequence", 0, 3, 0, 4},
		{"next again", 0, 6, 0, 7},
		{"a gap: waits for the three, refused", 0, 20, 45, -1},
		{"a retry of the second: its duplicate", 0, 3, 0, 4},
		{"next after the third", 0, 9, 0, 10},
		{"a new epoch at 0: checked after the round", 1, 0, 0, 13},
	}
	var corrs []int32
	for _, s := range steps {
		corrs = append(corrs, rc.send(produceReqTo("follow", 0, idemBatch(pid, s.epoch, s.seq, 3))))
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	blocker.recv(blockCorr, resp)
	wantProduce(t, "blocker", resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[0].BaseOffset, 0, 0)
	for i, s := range steps {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		rc.recv(corrs[i], resp)
		p := resp.Topics[0].Partitions[0]
		wantProduce(t, s.what, p.ErrorCode, p.BaseOffset, s.code, s.base)
	}

	got := gw.Records(t, "follow", 0)
	want := []string{"p5151-e0-s0"}
	for _, s := range []struct {
		epoch int16
		seq   int
	}{{0, 0}, {0, 3}, {0, 6}, {0, 9}, {1, 0}} {
		for i := range 3 {
			want = append(want, fmt.Sprintf("p%d-e%d-s%d", pid, s.epoch, s.seq+i))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("stored %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		if string(r.Value) != want[i] || r.Offset != int64(i) {
			t.Fatalf("record %d: offset %d value %q, want %q", i, r.Offset, r.Value, want[i])
		}
	}
	// The blocker's round trip; the first three batches in one (two
	// followed); the one after the duplicate in the next, as the gap and
	// the retry are checked against the window the three left; the new
	// epoch alone, after it was recorded. Each batch in a round trip of its
	// own (before checkInRound) made it six.
	m := gw.Metrics()
	if follows, trips := metricValue(t, m, "kiggy_produce_followed_in_round_total"), metricValue(t, m, "kiggy_produce_appends_total"); follows != 2 || trips != 4 {
		t.Fatalf("%v batches followed in a round, %v round trips; want 2 and 4:\n%s", follows, trips, grepLines(m, "kiggy_produce"))
	}
	t.Logf("%s", grepLines(m, "kiggy_produce"))
}

// TestProducerBatchesFollowLostReply: two batches of one producer that went
// in one round trip whose reply was lost (stored, as after a dropped
// connection) are both answered REQUEST_TIMED_OUT; their resends are
// answered as the duplicates they are, with their original offsets, from
// the window read back from the log. Nothing is stored twice.
func TestProducerBatchesFollowLostReply(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyModel: true})
	gw.CreateTopic(t, "lost", 1)
	blocker, rc := dialRaw(t, gw.Addr), dialRaw(t, gw.Addr)
	gw.Iggy.InjectFault(iggytest.Fault{Op: 160, Count: 1, Delay: time.Second})
	gw.Iggy.InjectFault(iggytest.Fault{Op: 160, Count: 1, Drop: true, Apply: true})
	const pid = 6160
	blockCorr := blocker.send(produceReqTo("lost", 0, idemBatch(pid+1, 0, 0, 1)))
	for deadline := time.Now().Add(10 * time.Second); gw.Iggy.PendingFaults() > 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the blocker's append never reached the server")
		}
	}
	produce := func(seq int32) int32 {
		req := produceReqTo("lost", 0, idemBatch(pid, 0, seq, 3))
		req.TimeoutMillis = 1500
		return rc.send(req)
	}
	recv := func(what string, corr int32, code int16, base int64) {
		t.Helper()
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		rc.recv(corr, resp)
		p := resp.Topics[0].Partitions[0]
		wantProduce(t, what, p.ErrorCode, p.BaseOffset, code, base)
	}
	first, second := produce(0), produce(3)
	recv("first, its reply lost", first, 7, -2)
	recv("second, in the same round trip", second, 7, -2)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	blocker.recv(blockCorr, resp)
	recv("first resent: a duplicate", produce(0), 0, 1)
	recv("second resent: a duplicate", produce(3), 0, 4)
	recv("next in sequence", produce(6), 0, 7)
	got := gw.Records(t, "lost", 0)
	if len(got) != 10 {
		t.Fatalf("stored %d records, want 10", len(got))
	}
	m := gw.Metrics()
	if follows := metricValue(t, m, "kiggy_produce_followed_in_round_total"); follows != 1 {
		t.Fatalf("kiggy_produce_followed_in_round_total %v, want 1", follows)
	}
	if !containsLine(m, "kiggy_idempotent_duplicate_batches_total 2") {
		t.Fatalf("duplicates not counted:\n%s", grepLines(m, "idempotent"))
	}
}
