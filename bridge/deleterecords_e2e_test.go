package bridge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// fetchAt fetches one partition at offset and returns its error code, log
// start and the offsets of the records served.
func fetchAt(t *testing.T, cl *kgo.Client, topic string, offset int64) (int16, int64, []int64) {
	t.Helper()
	// kgo sends its newest Fetch, which names topics by id.
	td, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes, req.ReplicaID = 10, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, td[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	var offs []int64
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic}, &p, kgo.DefaultDecompressor(), nil)
	for _, b := range fp.Records {
		offs = append(offs, b.Offset)
	}
	return p.ErrorCode, p.LogStartOffset, offs
}

// TestDeleteRecordsWithKadm: DeleteRecords moves the log start; ListOffsets
// earliest and Fetch honour it at once, as Kafka's do; on the Iggy backend
// it survives a gateway restart once the system store is durable there.
func TestDeleteRecordsWithKadm(t *testing.T) {
	opts := kiggytest.Options{}
	gw := kiggytest.Start(t, opts)
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.DefaultProduceTopic("dr"))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 1, -1, nil, "dr"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	del := func(off int64) kadm.DeleteRecordsResponse {
		t.Helper()
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "dr", Partition: 0, At: off})
		rs, err := adm.DeleteRecords(ctx, os)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := rs.Lookup("dr", 0)
		return r
	}
	if r := del(4); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete before 4: %+v", r)
	}
	check := func(gwName string, cl *kgo.Client, adm *kadm.Client, start int64) {
		t.Helper()
		lo, err := adm.ListStartOffsets(ctx, "dr")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := lo.Lookup("dr", 0); o.Offset != start {
			t.Errorf("%s: ListOffsets earliest %d, want %d", gwName, o.Offset, start)
		}
		if code, _, _ := fetchAt(t, cl, "dr", start-1); code != kerr.OffsetOutOfRange.Code {
			t.Errorf("%s: fetch at %d: code %d, want OFFSET_OUT_OF_RANGE", gwName, start-1, code)
		}
		code, ls, offs := fetchAt(t, cl, "dr", start)
		if code != 0 || ls != start || len(offs) != int(10-start) || (len(offs) > 0 && offs[0] != start) {
			t.Errorf("%s: fetch at %d: code %d, log start %d, offsets %v", gwName, start, code, ls, offs)
		}
	}
	check("gateway", cl, adm, 4)
	if r := del(11); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Errorf("delete before 11 (past the high watermark): %+v", r)
	}
	if r := del(2); r.Err != nil || r.LowWatermark != 4 {
		t.Errorf("delete before 2 (below the log start): %+v, want low watermark 4", r)
	}
	if r := del(6); r.Err != nil || r.LowWatermark != 6 {
		t.Fatalf("delete before 6: %+v", r)
	}
	check("gateway", cl, adm, 6)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "missing", Partition: 0, At: 1})
	if rs, err := adm.DeleteRecords(ctx, os); err == nil {
		if r, _ := rs.Lookup("missing", 0); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("missing topic: %+v", r)
		}
	}

	if !gw.OnIggy() {
		return
	}
	if _, durable := gw.Log.(store.SystemStore); !durable {
		t.Skip("restart: the Iggy backend's system store is in memory (store.SystemStore not implemented by the Iggy client yet); the log start cannot survive a restart")
	}
	gw.Stop()
	opts = gw.SameIggy(opts)
	gw2 := kiggytest.Start(t, opts)
	cl2, _ := kgo.NewClient(kgo.SeedBrokers(gw2.Addr))
	defer cl2.Close()
	check("restarted gateway", cl2, kadm.NewClient(cl2), 6)
}

// TestDeleteRecordsHighWatermark: offset −1 deletes up to the high
// watermark, so the partition reads as empty from there on.
func TestDeleteRecordsHighWatermark(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	gw.CreateTopic(t, "hw", 1)
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.DefaultProduceTopic("hw"))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "hw", Partition: 0, At: -1})
	rs, err := kadm.NewClient(cl).DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.Lookup("hw", 0); r.Err != nil || r.LowWatermark != 3 {
		t.Fatalf("delete to the high watermark: %+v", r)
	}
	if code, ls, offs := fetchAt(t, cl, "hw", 3); code != 0 || ls != 3 || len(offs) != 0 {
		t.Errorf("fetch at 3: code %d, log start %d, offsets %v", code, ls, offs)
	}
	if code, _, _ := fetchAt(t, cl, "hw", 0); code != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch at 0: code %d, want OFFSET_OUT_OF_RANGE", code)
	}
	// A topic recreated under the name starts at 0 again.
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopics(ctx, "hw"); err != nil {
		t.Fatal(err)
	}
	if res, err := adm.CreateTopic(ctx, 1, -1, nil, "hw"); err != nil || res.Err != nil {
		t.Fatalf("recreate: %v %v", err, res.Err)
	}
	// A new client: the recreated topic has another id, and franz-go,
	// as the Java client, fails a producer that held the old one with
	// UNKNOWN_TOPIC_ID rather than adopt it (KIP-516), on Kafka as here.
	cl, _ = kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.DefaultProduceTopic("hw"))
	defer cl.Close()
	for range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("y")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if code, ls, offs := fetchAt(t, cl, "hw", 0); code != 0 || ls != 0 || len(offs) != 5 {
		t.Errorf("recreated topic, fetch at 0: code %d, log start %d, offsets %v", code, ls, offs)
	}
}
