package bridge_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
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
		b.Reset(nil, 0, 1_700_000_000_000, batch.NoCompression)
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

// TestFetchFanoutMatchesSequential: the same Fetch requests against the
// same data answer alike on the embedded log (partitions read one after
// another, straight into the response) and on the Iggy backend (read
// concurrently, then assembled): error codes, watermarks and records per
// partition, under partition and response byte limits.
func TestFetchFanoutMatchesSequential(t *testing.T) {
	type part struct {
		p      int32
		offset int64
		max    int32
	}
	cases := []struct {
		name     string
		maxBytes int32
		parts    []part
	}{
		{"all", 50 << 20, []part{{0, 0, 1 << 20}, {1, 0, 1 << 20}, {2, 0, 1 << 20}, {3, 0, 1 << 20}}},
		{"partition limits", 50 << 20, []part{{0, 3, 1}, {1, 0, 3000}, {2, 5, 0}, {3, 10, 1 << 20}}},
		{"errors", 50 << 20, []part{{0, 999, 1 << 20}, {7, 0, 1 << 20}, {2, 20, 1 << 20}, {1, 2, 1 << 20}}},
		{"response limit", 5000, []part{{0, 0, 4000}, {1, 0, 4000}, {2, 0, 4000}, {3, 0, 4000}}},
		{"response limit first", 10, []part{{3, 1, 1 << 20}, {2, 0, 1 << 20}}},
	}
	run := func(iggy bool) [][]string {
		gw := kiggytest.Start(t, kiggytest.Options{Iggy: iggy, Embedded: !iggy})
		gw.CreateTopic(t, "ff", 4)
		rc := dialRaw(t, gw.Addr)
		var b batch.Builder
		for p := range int32(4) {
			b.Reset(nil, 0, 1_700_000_000_000, batch.NoCompression)
			for i := range 20 {
				b.Append(int32(i), int64(i), []byte(fmt.Sprint(i)), bytes.Repeat([]byte{byte('a' + p)}, 300+i))
			}
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "ff"
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition, pp.Records = p, b.Finish()
			rt.Partitions = append(rt.Partitions, pp)
			req.Topics = append(req.Topics, rt)
			if codes := produceCodes(rc, req); codes[0] != 0 {
				t.Fatalf("produce to %d: %v", p, codes)
			}
		}
		var out [][]string
		for _, c := range cases {
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, -1, 0, 0, c.maxBytes
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "ff"
			for _, p := range c.parts {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.p, p.offset, p.max
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			corr := rc.send(req)
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = req.Version
			rc.recv(corr, resp)
			var got []string
			for _, p := range resp.Topics[0].Partitions {
				desc := fmt.Sprintf("p%d code %d hw %d lso %d start %d:", p.Partition, p.ErrorCode, p.HighWatermark, p.LastStableOffset, p.LogStartOffset)
				fr := kgoRecords(t, p.RecordBatches)
				for _, r := range fr {
					desc += fmt.Sprintf(" %d=%s/%d", r.offset, r.key, len(r.value))
				}
				got = append(got, desc)
			}
			out = append(out, got)
		}
		return out
	}
	seq, fan := run(false), run(true)
	for i := range cases {
		if fmt.Sprint(seq[i]) != fmt.Sprint(fan[i]) {
			t.Errorf("%s:\nembedded log %q\nIggy         %q", cases[i].name, seq[i], fan[i])
		}
	}
	if !strings.Contains(fmt.Sprint(seq[0]), " 19=19/319") || !strings.Contains(fmt.Sprint(seq[2]), "code 1 ") || !strings.Contains(fmt.Sprint(seq[2]), "code 3 ") {
		t.Fatalf("the reference answers are not what the cases were written for: %q", seq)
	}
}

type fetchedRecord struct {
	offset     int64
	key, value []byte
}

// kgoRecords decodes a partition's record batches (ours are uncompressed).
func kgoRecords(t *testing.T, raw []byte) []fetchedRecord {
	var out []fetchedRecord
	for len(raw) > 0 {
		h, err := batch.Validate(raw)
		if err != nil {
			t.Fatalf("fetched batch: %v", err)
		}
		n := h.Size()
		dec := batch.AcquireDecoder()
		it, err := dec.Records(raw[:n], h, &batch.Budget{MaxBytes: 1 << 30, MaxRecords: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		var r batch.Record
		for it.Next(&r) {
			out = append(out, fetchedRecord{offset: h.BaseOffset + int64(r.OffsetDelta), key: r.Key, value: r.Value})
		}
		batch.ReleaseDecoder(dec)
		raw = raw[n:]
	}
	return out
}
