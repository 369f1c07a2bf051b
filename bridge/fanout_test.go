package bridge_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/internal/kiggytest"
)

// TestProduceFanout: on the Iggy backend a Produce's partitions are appended
// concurrently; each partition still gets its own outcome, in request order,
// and a partition named twice keeps request order (sequential path).
func TestProduceFanout(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	gw.CreateTopic(t, "fan", 6)
	rc := dialRaw(t, gw.Addr)

	valueBatch := func(tag string, n int) []byte {
		var b batch.Builder
		b.Reset(nil, 0, 1_700_000_000_000, batch.None)
		for i := range n {
			b.Append(int32(i), int64(i), nil, []byte(fmt.Sprintf("%s-%d", tag, i)))
		}
		return b.Finish()
	}
	bad := valueBatch("bad", 1)
	bad[30] ^= 0xff // CRC mismatch

	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "fan"
	for _, p := range []struct {
		index   int32
		records []byte
	}{{0, valueBatch("p0", 3)}, {1, bad}, {9, valueBatch("p9", 1)}, {2, valueBatch("p2", 2)}, {5, valueBatch("p5", 4)}, {3, nil}} {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = p.index, p.records
		rt.Partitions = append(rt.Partitions, pp)
	}
	req.Topics = append(req.Topics, rt)
	for round := range 3 {
		corr := rc.send(req)
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = req.Version
		rc.recv(corr, resp)
		var got []string
		for _, p := range resp.Topics[0].Partitions {
			got = append(got, fmt.Sprintf("%d:%d@%d", p.Partition, p.ErrorCode, p.BaseOffset))
		}
		r := int64(round)
		want := []string{
			fmt.Sprintf("0:0@%d", 3*r), "1:2@-1", "9:3@-1", fmt.Sprintf("2:0@%d", 2*r), fmt.Sprintf("5:0@%d", 4*r), "3:87@-1",
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: %v, want %v", round, got, want)
		}
	}
	if recs := gw.Records(t, "fan", 5); len(recs) != 12 || string(recs[4].Value) != "p5-0" || string(recs[11].Value) != "p5-3" {
		t.Fatalf("partition 5: %d records", len(recs))
	}

	// The same partition twice: appended in request order.
	dup := kmsg.NewPtrProduceRequest()
	dup.Version, dup.Acks, dup.TimeoutMillis = 9, -1, 5000
	dt := kmsg.NewProduceRequestTopic()
	dt.Topic = "fan"
	for _, tag := range []string{"first", "second", "third"} {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = 4, valueBatch(tag, 2)
		dt.Partitions = append(dt.Partitions, pp)
	}
	dup.Topics = append(dup.Topics, dt)
	corr := rc.send(dup)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = dup.Version
	rc.recv(corr, resp)
	for i, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.BaseOffset != int64(2*i) {
			t.Fatalf("duplicate entry %d: code %d base %d", i, p.ErrorCode, p.BaseOffset)
		}
	}
	recs := gw.Records(t, "fan", 4)
	if len(recs) != 6 || string(recs[0].Value) != "first-0" || string(recs[2].Value) != "second-0" || string(recs[5].Value) != "third-1" {
		t.Fatalf("partition 4 order: %d records", len(recs))
	}
}
