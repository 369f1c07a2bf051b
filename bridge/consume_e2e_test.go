package bridge_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

func TestFetchRoundTrip(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	gw.CreateTopic(t, "c", 4)
	sent := produceN(t, gw.Addr, "c", 4, 2000)
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumeTopics("c"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := map[string]*kgo.Record{}
	next := map[int32]int64{}
	for len(got) < len(sent) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch: %v (have %d)", err, len(got))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			got[string(r.Key)] = r
		})
	}
	for _, s := range sent {
		r := got[string(s.Key)]
		if r == nil || !bytes.Equal(r.Value, s.Value) || r.Partition != s.Partition || !r.Timestamp.Equal(s.Timestamp) ||
			len(r.Headers) != 1 || r.Headers[0].Key != "i" || !bytes.Equal(r.Headers[0].Value, s.Headers[0].Value) {
			t.Fatalf("record %q: got %+v", s.Key, r)
		}
	}
}

func TestListOffsets(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	gw.CreateTopic(t, "lo", 1)
	produceN(t, gw.Addr, "lo", 1, 10)
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	start, err := adm.ListStartOffsets(ctx, "lo")
	if err != nil || start["lo"][0].Offset != 0 {
		t.Fatalf("start offsets: %v %+v", err, start)
	}
	end, err := adm.ListEndOffsets(ctx, "lo")
	if err != nil || end["lo"][0].Offset != 10 {
		t.Fatalf("end offsets: %v %+v", err, end)
	}
	after, err := adm.ListOffsetsAfterMilli(ctx, 1_700_000_000_004, "lo")
	if err != nil || after["lo"][0].Offset != 4 || after["lo"][0].Timestamp != 1_700_000_000_004 {
		t.Fatalf("offset after time: %v %+v", err, after)
	}
	late, err := adm.ListOffsetsAfterMilli(ctx, 1_800_000_000_000, "lo")
	if err != nil || late["lo"][0].Offset != 10 {
		// kadm maps "no such offset" (-1) to the end offset.
		t.Fatalf("offset after the last record: %v %+v", err, late)
	}
	if _, err := adm.ListEndOffsets(ctx, "nope"); err != nil {
		t.Fatalf("unknown topic: %v", err)
	}
}

// TestLongPollWakesOnAppend: a Fetch parked with max wait 5 s returns as soon
// as a record is produced, not when the wait expires.
func TestLongPollWakesOnAppend(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	gw.CreateTopic(t, "lp", 1)
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"lp": {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(5*time.Second))
	defer cl.Close()
	done := make(chan time.Time, 1)
	go func() {
		fs := cl.PollFetches(context.Background())
		if fs.NumRecords() > 0 {
			done <- time.Now()
		}
		close(done)
	}()
	waitParked(t, gw, 1)
	sentAt := time.Now()
	produceN(t, gw.Addr, "lp", 1, 1)
	select {
	case at, ok := <-done:
		if !ok {
			t.Fatal("poll returned without records")
		}
		if d := at.Sub(sentAt); d > 2*time.Second {
			t.Fatalf("long poll returned %v after the produce: it waited for its timeout", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("poll never returned")
	}
}

// waitParked polls the kiggy_fetches_parked gauge until at least n Fetch
// requests are parked in a long poll (or fails the test after 10 s).
func waitParked(t *testing.T, gw *kiggytest.Gateway, n int) {
	t.Helper()
	var parked int
	if !testtools.Eventually(10*time.Second, func() bool {
		for _, line := range strings.Split(gw.Metrics(), "\n") {
			if v, ok := strings.CutPrefix(line, "kiggy_fetches_parked "); ok {
				parked, _ = strconv.Atoi(v)
			}
		}
		return parked >= n
	}) {
		t.Fatalf("%d fetches parked after 10 s, want %d", parked, n)
	}
}

func TestOffsetOutOfRangeResets(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	gw.CreateTopic(t, "oor", 1)
	produceN(t, gw.Addr, "oor", 1, 5)
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"oor": {0: kgo.NewOffset().At(100)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fs := cl.PollFetches(ctx)
	if fs.NumRecords() == 0 || fs.Records()[0].Offset != 0 {
		t.Fatalf("out-of-range offset did not reset to the start: %v", fs.Errors())
	}
}

// TestParkedFetchesDoNotHoldLoops: 500 long-polling Fetches on 500
// connections park without holding an event loop or a worker: other clients
// are served meanwhile, and one append wakes every fetch of its partition.
func TestParkedFetchesDoNotHoldLoops(t *testing.T) {
	// The engine's loops are the point, not the backend: on the Iggy
	// backend this runs on iggytest, since 500 fetches parking at once on a
	// real iggy-server parked only 63 within 10 s in 2 of 3 runs (not yet
	// explained: docs/IGGY.md, "Testing against a real iggy-server").
	gw := kiggytest.Start(t, kiggytest.Options{IggyModel: true})
	gw.CreateTopic(t, "park", 1)
	const n = 500
	conns := make([]*rawConn, n)
	corrs := make([]int32, n)
	for i := range conns {
		conns[i] = dialRaw(t, gw.Addr)
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, 10_000, 1, 1<<20
		req.SessionEpoch = -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "park"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, 0, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		corrs[i] = conns[i].send(req)
	}
	waitParked(t, gw, n)
	// Another client is served while they wait.
	start := time.Now()
	produceN(t, gw.Addr, "park", 1, 1)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("a produce took %v while %d fetches were parked", d, n)
	}
	// Every parked fetch wakes with the record, well before its 10 s wait.
	for i, rc := range conns {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		rc.recv(corrs[i], resp)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 1 {
			t.Fatalf("fetch %d: code %d, %d record bytes, HW %d", i, p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
		}
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("parked fetches answered %v after the produce: they waited for their timeout", d)
	}
}
