package bridge_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// backends runs f once on the embedded log and once on Iggy (iggytest).
func backends(t *testing.T, f func(t *testing.T, iggy bool)) {
	for _, iggy := range []bool{false, true} {
		name := "memlog"
		if iggy {
			name = "iggy"
		}
		t.Run(name, func(t *testing.T) { f(t, iggy) })
	}
}

func startBackend(t *testing.T, iggy bool) *kiggytest.Gateway {
	return kiggytest.Start(t, kiggytest.Options{Iggy: iggy, Embedded: !iggy})
}

// idemBatch builds an idempotent batch of n records with sequences
// seq … seq+n-1; the values name the producer, epoch and sequence.
func idemBatch(pid int64, epoch int16, seq int32, n int) []byte {
	var b batch.Builder
	b.Reset(nil, 0, 1_700_000_000_000, batch.NoCompression)
	b.SetProducer(pid, epoch, seq)
	for i := range n {
		b.Append(int32(i), int64(i), nil, fmt.Appendf(nil, "p%d-e%d-s%d", pid, epoch, int(seq)+i))
	}
	return b.Finish()
}

// produceTo sends one batch to topic/partition and returns the partition's
// code and base offset.
func produceTo(t *testing.T, rc *rawConn, topic string, partition int32, records []byte) (int16, int64) {
	t.Helper()
	corr := rc.send(produceReqTo(topic, partition, records))
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	rc.recv(corr, resp)
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

func produceReqTo(topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = partition, records
	rt.Partitions = append(rt.Partitions, pp)
	req.Topics = append(req.Topics, rt)
	return req
}

func wantProduce(t *testing.T, what string, code int16, base int64, wantCode int16, wantBase int64) {
	t.Helper()
	if code != wantCode || (wantBase != -2 && base != wantBase) {
		t.Fatalf("%s: code %d base %d, want code %d base %d", what, code, base, wantCode, wantBase)
	}
}

// wantCount checks how many records a partition holds, by its watermarks
// (reading records back mid-test would race, for the race detector, with
// the embedded log's later appends under the epoll engine, which it cannot
// see ordered through raw socket syscalls).
func wantCount(t *testing.T, gw *kiggytest.Gateway, topic string, partition int32, n int) {
	t.Helper()
	wm, err := gw.Log.Watermarks(context.Background(), topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	if got := wm.High - wm.LogStart; got != int64(n) {
		t.Fatalf("%s/%d holds %d records, want %d", topic, partition, got, n)
	}
}

// TestIdempotentDuplicatesOfLastFive: a retry of each of a producer's last
// five batches is answered with success and its original base offset and
// stores nothing; a sixth-oldest batch is out of the window and out of
// order (45), as on a Kafka broker.
func TestIdempotentDuplicatesOfLastFive(t *testing.T) {
	backends(t, func(t *testing.T, iggy bool) {
		gw := startBackend(t, iggy)
		gw.CreateTopic(t, "idem", 2)
		rc := dialRaw(t, gw.Addr)
		const pid = 4242
		for k := range 6 {
			code, base := produceTo(t, rc, "idem", 1, idemBatch(pid, 0, int32(3*k), 3))
			wantProduce(t, fmt.Sprintf("batch %d", k), code, base, 0, int64(3*k))
		}
		for k := 1; k < 6; k++ {
			code, base := produceTo(t, rc, "idem", 1, idemBatch(pid, 0, int32(3*k), 3))
			wantProduce(t, fmt.Sprintf("duplicate of batch %d", k), code, base, 0, int64(3*k))
		}
		code, base := produceTo(t, rc, "idem", 1, idemBatch(pid, 0, 0, 3))
		wantProduce(t, "batch 0, out of the window", code, base, 45, -1)
		wantCount(t, gw, "idem", 1, 18)

		// Partitions are independent; another producer is independent.
		code, base = produceTo(t, rc, "idem", 0, idemBatch(pid, 0, 0, 3))
		wantProduce(t, "same producer, other partition", code, base, 0, 0)
		code, base = produceTo(t, rc, "idem", 1, idemBatch(pid+1, 0, 0, 3))
		wantProduce(t, "other producer", code, base, 0, 18)

		// A duplicate inside a pipelined burst, and from another connection.
		rc2 := dialRaw(t, gw.Addr)
		var corrs []int32
		for _, seq := range []int32{18, 21, 18, 24, 21} {
			corrs = append(corrs, rc.send(produceReqTo("idem", 1, idemBatch(pid, 0, seq, 3))))
		}
		wantBases := []int64{21, 24, 21, 27, 24}
		for i, corr := range corrs {
			resp := kmsg.NewPtrProduceResponse()
			resp.Version = 9
			rc.recv(corr, resp)
			p := resp.Topics[0].Partitions[0]
			wantProduce(t, fmt.Sprintf("pipelined %d", i), p.ErrorCode, p.BaseOffset, 0, wantBases[i])
		}
		code, base = produceTo(t, rc2, "idem", 1, idemBatch(pid, 0, 24, 3))
		wantProduce(t, "duplicate from another connection", code, base, 0, 27)
		wantCount(t, gw, "idem", 1, 30)
		if m := gw.Metrics(); !containsLine(m, "kiggy_idempotent_duplicate_batches_total 8") {
			t.Errorf("duplicates not counted:\n%s", m)
		}
	})
}

// produceStep is one batch a scripted idempotent producer sends (its epoch
// and first sequence) and the code and base offset it must be answered
// with (base -1: none).
type produceStep struct {
	what  string
	epoch int16
	seq   int32
	code  int16
	base  int64
}

// TestIdempotentSequenceAndEpochErrors: a gap answers 45, an older epoch 47,
// a new epoch must start at sequence 0, and an unknown producer may start
// at any sequence (Kafka 4 ProducerAppendInfo.checkSequence: no state, no
// check). Refused batches store nothing.
func TestIdempotentSequenceAndEpochErrors(t *testing.T) {
	backends(t, func(t *testing.T, iggy bool) {
		gw := startBackend(t, iggy)
		gw.CreateTopic(t, "idem", 1)
		rc := dialRaw(t, gw.Addr)
		const pid = 77
		steps := []produceStep{
			{"unknown producer at sequence 1000", 0, 1000, 0, 0},
			{"next in sequence", 0, 1002, 0, 2},
			{"gap", 0, 1005, 45, -1},
			{"lower sequence, not a duplicate", 0, 1001, 45, -1},
			{"new epoch at a non-zero sequence", 1, 5, 45, -1},
			{"new epoch at 0", 1, 0, 0, 4},
			{"old epoch", 0, 1004, 47, -1},
			{"old epoch, a duplicate of its own last batch", 0, 1002, 47, -1},
			{"current epoch continues", 1, 2, 0, 6},
		}
		for _, s := range steps {
			code, base := produceTo(t, rc, "idem", 0, idemBatch(pid, s.epoch, s.seq, 2))
			wantProduce(t, s.what, code, base, s.code, s.base)
		}
		wantCount(t, gw, "idem", 0, 8)
		// Sequences wrap from MaxInt32 to 0 (ProducerAppendInfo.inSequence).
		code, base := produceTo(t, rc, "idem", 0, idemBatch(pid+1, 0, 2147483646, 2))
		wantProduce(t, "up to MaxInt32", code, base, 0, 8)
		code, base = produceTo(t, rc, "idem", 0, idemBatch(pid+1, 0, 0, 2))
		wantProduce(t, "wrapped to 0", code, base, 0, 10)

		// Non-idempotent batches are untouched: the same batch twice is
		// stored twice.
		plain := buildBatch(t, batch.NoCompression, 2, 5)
		for range 2 {
			code, _ := produceTo(t, rc, "idem", 0, plain)
			wantProduce(t, "non-idempotent", code, 0, 0, -2)
		}
		wantCount(t, gw, "idem", 0, 16)
		m := gw.Metrics()
		for _, want := range []string{
			`kiggy_api_errors_total{api="Produce",code="OUT_OF_ORDER_SEQUENCE_NUMBER"} 3`,
			`kiggy_api_errors_total{api="Produce",code="INVALID_PRODUCER_EPOCH"} 2`,
		} {
			if !containsLine(m, want) {
				t.Errorf("metrics lack %q:\n%s", want, m)
			}
		}
	})
}

// TestIdempotentStateSurvivesRestart: batches appended through one gateway
// are deduplicated by a new gateway over the same data, whose window is
// rebuilt from the producer stamps in the partition's tail; the sequence
// and epoch checks continue too.
func TestIdempotentStateSurvivesRestart(t *testing.T) {
	backends(t, func(t *testing.T, iggy bool) {
		var opts kiggytest.Options
		if iggy {
			opts.Iggy = true
		} else {
			opts.Log = memlog.New(memlog.Config{})
		}
		gw := kiggytest.Start(t, opts)
		gw.CreateTopic(t, "idem", 1)
		rc := dialRaw(t, gw.Addr)
		// Two producers interleaved, the second at a bumped epoch, plus
		// non-idempotent records in between.
		produceTo(t, rc, "idem", 0, idemBatch(1, 0, 0, 4))                    // 0..3
		produceTo(t, rc, "idem", 0, idemBatch(2, 3, 10, 2))                   // 4..5
		produceTo(t, rc, "idem", 0, buildBatch(t, batch.NoCompression, 3, 5)) // 6..8
		produceTo(t, rc, "idem", 0, idemBatch(1, 0, 4, 4))                    // 9..12
		produceTo(t, rc, "idem", 0, idemBatch(2, 3, 12, 2))                   // 13..14
		gw.Stop()

		if iggy {
			opts = gw.SameIggy(kiggytest.Options{})
		}
		gw = kiggytest.Start(t, opts)
		rc = dialRaw(t, gw.Addr)
		for _, s := range []struct {
			what  string
			pid   int64
			epoch int16
			seq   int32
			n     int
			code  int16
			base  int64
		}{
			{"duplicate of producer 1's first batch", 1, 0, 0, 4, 0, 0},
			{"duplicate of producer 1's last batch", 1, 0, 4, 4, 0, 9},
			{"duplicate of producer 2's first batch", 2, 3, 10, 2, 0, 4},
			{"old epoch of producer 2", 2, 2, 14, 2, 47, -1},
			{"gap for producer 1", 1, 0, 9, 1, 45, -1},
			{"producer 1 continues", 1, 0, 8, 1, 0, 15},
			{"duplicate of the batch appended after the restart", 1, 0, 8, 1, 0, 15},
		} {
			code, base := produceTo(t, rc, "idem", 0, idemBatch(s.pid, s.epoch, s.seq, s.n))
			wantProduce(t, s.what, code, base, s.code, s.base)
		}
		wantCount(t, gw, "idem", 0, 16)
		if m := gw.Metrics(); !containsLine(m, "kiggy_idempotent_window_rebuilds_total 1") {
			t.Errorf("rebuild not counted:\n%s", m)
		}
	})
}

func initPID(t *testing.T, rc *rawConn, version int16, id int64, epoch int16) (int16, int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.ProducerID, req.ProducerEpoch = version, id, epoch
	corr := rc.send(req)
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.Version = version
	rc.recv(corr, resp)
	return resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch
}

// TestInitProducerIDEpochBump: a producer that sends its current id and
// epoch (InitProducerId v3+, KIP-360) keeps its id at the next epoch; the
// retry of a bump gets the same answer; an older epoch is fenced
// (PRODUCER_FENCED from v4, INVALID_PRODUCER_EPOCH before); an unknown id
// gets a fresh one. Produce then fences the old epoch and accepts the new
// one from sequence 0.
func TestInitProducerIDEpochBump(t *testing.T) {
	backends(t, func(t *testing.T, iggy bool) {
		gw := startBackend(t, iggy)
		gw.CreateTopic(t, "idem", 1)
		rc := dialRaw(t, gw.Addr)
		code, id, epoch := initPID(t, rc, 0, -1, -1)
		if code != 0 || id < 0 || epoch != 0 {
			t.Fatalf("fresh id: code %d id %d epoch %d", code, id, epoch)
		}
		c, b := produceTo(t, rc, "idem", 0, idemBatch(id, 0, 0, 3))
		wantProduce(t, "epoch 0", c, b, 0, 0)

		type step struct {
			what     string
			version  int16
			epoch    int16
			code     int16
			newEpoch int16
		}
		for _, s := range []step{
			{"bump 0 → 1", 3, 0, 0, 1},
			{"retry of the bump", 5, 0, 0, 1},
			{"bump 1 → 2", 4, 1, 0, 2},
			{"fenced at v4", 4, 0, 90, -1},
			{"fenced at v3", 3, 0, 47, -1},
			{"locally bumped epoch 5 → 6", 5, 5, 0, 6},
		} {
			code, gotID, gotEpoch := initPID(t, rc, s.version, id, s.epoch)
			wantID := id
			if s.code != 0 {
				wantID = -1
			}
			if code != s.code || gotID != wantID || gotEpoch != s.newEpoch {
				t.Fatalf("%s: code %d id %d epoch %d, want code %d id %d epoch %d", s.what, code, gotID, gotEpoch, s.code, wantID, s.newEpoch)
			}
		}
		c, b = produceTo(t, rc, "idem", 0, idemBatch(id, 6, 0, 2))
		wantProduce(t, "bumped epoch from 0", c, b, 0, 3)
		c, b = produceTo(t, rc, "idem", 0, idemBatch(id, 0, 3, 2))
		wantProduce(t, "old epoch after the bump", c, b, 47, -1)

		code, other, epoch := initPID(t, rc, 5, 123456789, 4)
		if code != 0 || other == id || other == 123456789 || epoch != 0 {
			t.Fatalf("unknown id: code %d id %d epoch %d, want a fresh id at 0", code, other, epoch)
		}
		code, next, epoch := initPID(t, rc, 5, other, 32767)
		if code != 0 || next == other || epoch != 0 {
			t.Fatalf("exhausted epoch: code %d id %d epoch %d, want a fresh id at 0", code, next, epoch)
		}
	})
}

func describeProducers(t *testing.T, rc *rawConn, topic string, partitions ...int32) []kmsg.DescribeProducersResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	req.Topics = append(req.Topics, rt)
	corr := rc.send(req)
	resp := kmsg.NewPtrDescribeProducersResponse()
	rc.recv(corr, resp)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic {
		t.Fatalf("DescribeProducers answered %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions
}

// TestDescribeProducers: DescribeProducers (key 61) lists each partition's
// producers with their epoch and last sequence, also from the rebuilt
// window after a restart; unknown partitions answer 3.
func TestDescribeProducers(t *testing.T) {
	backends(t, func(t *testing.T, iggy bool) {
		var opts kiggytest.Options
		if iggy {
			opts.Iggy = true
		} else {
			opts.Log = memlog.New(memlog.Config{})
		}
		gw := kiggytest.Start(t, opts)
		gw.CreateTopic(t, "idem", 2)
		rc := dialRaw(t, gw.Addr)
		produceTo(t, rc, "idem", 0, idemBatch(9, 0, 0, 4))
		produceTo(t, rc, "idem", 0, idemBatch(3, 2, 7, 2))
		produceTo(t, rc, "idem", 0, idemBatch(9, 0, 4, 1))
		check := func(when string) {
			t.Helper()
			ps := describeProducers(t, rc, "idem", 0, 1, 7)
			if len(ps) != 3 || ps[0].ErrorCode != 0 || ps[1].ErrorCode != 0 || ps[2].ErrorCode != 3 || len(ps[1].ActiveProducers) != 0 {
				t.Fatalf("%s: partitions %+v", when, ps)
			}
			a := ps[0].ActiveProducers
			if len(a) != 2 || a[0].ProducerID != 3 || a[0].ProducerEpoch != 2 || a[0].LastSequence != 8 ||
				a[1].ProducerID != 9 || a[1].ProducerEpoch != 0 || a[1].LastSequence != 4 ||
				a[0].LastTimestamp <= 0 || a[0].CoordinatorEpoch != -1 || a[0].CurrentTxnStartOffset != -1 {
				t.Fatalf("%s: producers %+v", when, a)
			}
		}
		check("live")
		if ps := describeProducers(t, rc, "missing", 0); len(ps) != 1 || ps[0].ErrorCode != 3 {
			t.Fatalf("missing topic: %+v", ps)
		}
		gw.Stop()
		if iggy {
			opts = gw.SameIggy(kiggytest.Options{})
		}
		gw = kiggytest.Start(t, opts)
		rc = dialRaw(t, gw.Addr)
		check("after a restart")
		if m := gw.Metrics(); !containsLine(m, `kiggy_api_errors_total{api="DescribeProducers",code="UNKNOWN_TOPIC_OR_PARTITION"} 1`) {
			t.Errorf("errors not counted:\n%s", m)
		}
	})
}

// TestIdempotentConcurrentRetries: several connections send the same batch
// at once (a producer's retries racing its original), round after round:
// each batch is stored once, and every answer carries the offset it was
// stored at.
func TestIdempotentConcurrentRetries(t *testing.T) {
	backends(t, func(t *testing.T, iggy bool) {
		gw := startBackend(t, iggy)
		gw.CreateTopic(t, "idem", 1)
		const conns, batches = 6, 20
		rcs := make([]*rawConn, conns)
		for c := range rcs {
			rcs[c] = dialRaw(t, gw.Addr)
		}
		for k := range batches {
			var wg sync.WaitGroup
			codes, bases := make([]int16, conns), make([]int64, conns)
			for c, rc := range rcs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					corr := rc.send(produceReqTo("idem", 0, idemBatch(5, 0, int32(2*k), 2)))
					resp := kmsg.NewPtrProduceResponse()
					resp.Version = 9
					rc.recv(corr, resp)
					p := resp.Topics[0].Partitions[0]
					codes[c], bases[c] = p.ErrorCode, p.BaseOffset
				}()
			}
			wg.Wait()
			for c := range conns {
				if codes[c] != 0 || bases[c] != int64(2*k) {
					t.Fatalf("batch %d, connection %d: code %d base %d, want 0 and %d", k, c, codes[c], bases[c], 2*k)
				}
			}
		}
		wantCount(t, gw, "idem", 0, 2*batches)
	})
}

// TestIdempotentSlowRebuild: after a restart on an Iggy that answers each
// request 300 ms late, rebuilding the window takes longer than the retried
// request's 500 ms timeout. The first attempt times out (7) but the rebuild
// completes anyway, so the next attempt is recognised as a duplicate.
func TestIdempotentSlowRebuild(t *testing.T) {
	srv := iggytest.New(iggytest.Config{Latency: 300 * time.Millisecond})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	gw := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	gw.CreateTopic(t, "idem", 1)
	rc := dialRaw(t, gw.Addr)
	code, base := produceTo(t, rc, "idem", 0, idemBatch(8, 0, 0, 3))
	wantProduce(t, "first", code, base, 0, 0)
	gw.Stop()

	gw = kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	rc = dialRaw(t, gw.Addr)
	retry := func() (int16, int64) {
		req := produceReqTo("idem", 0, idemBatch(8, 0, 0, 3))
		req.TimeoutMillis = 500
		corr := rc.send(req)
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		rc.recv(corr, resp)
		p := resp.Topics[0].Partitions[0]
		return p.ErrorCode, p.BaseOffset
	}
	code, base = retry()
	wantProduce(t, "retry during the slow rebuild", code, base, 7, -1)
	code, base = retry()
	wantProduce(t, "retry after it", code, base, 0, 0)
	wantCount(t, gw, "idem", 0, 3)
}

// TestIdempotentRebuildScanBound: the rebuild reads only the last
// ProducerStateScan messages. A batch stamped inside them is recognised; one
// stamped further back is not, and its retry is out of order (45) because
// the producer has a later batch in the scanned tail.
func TestIdempotentRebuildScanBound(t *testing.T) {
	log := memlog.New(memlog.Config{})
	gw := kiggytest.Start(t, kiggytest.Options{Log: log})
	gw.CreateTopic(t, "idem", 1)
	rc := dialRaw(t, gw.Addr)
	for k := range 3 {
		produceTo(t, rc, "idem", 0, idemBatch(4, 0, int32(3*k), 3)) // offsets 3k … 3k+2
	}
	gw.Stop()
	gw = kiggytest.Start(t, kiggytest.Options{Log: log, Bridge: bridge.Config{ProducerStateScan: 4}}) // offsets 5–8
	rc = dialRaw(t, gw.Addr)
	code, base := produceTo(t, rc, "idem", 0, idemBatch(4, 0, 6, 3))
	wantProduce(t, "batch stamped at 6, inside the scan", code, base, 0, 6)
	code, base = produceTo(t, rc, "idem", 0, idemBatch(4, 0, 3, 3))
	wantProduce(t, "batch stamped at 3, before the scan", code, base, 45, -1)
	wantCount(t, gw, "idem", 0, 9)
}
