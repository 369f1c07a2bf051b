package bridge_test

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/kiggytest"
)

// budgetFetch is a Fetch v12 of every partition of topic at offsets, up
// to partMax bytes each and maxBytes in all.
func budgetFetch(topic string, offsets []int64, partMax, maxBytes int32) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, -1, 0, 1, maxBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p, off := range offsets {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), off, partMax
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return requestFrame(req, 4)
}

// TestFetchReadsWithinBudgetIggy: a Fetch whose partitions hold far more
// than its max_bytes reads (from Iggy, and encodes) about what the response
// can carry, not every partition's limit; the partitions past the budget
// are answered with their high watermark and no records, as the read
// partitions are; and a reader stepping through the topic with that budget
// gets every record once (issue #20).
func TestFetchReadsWithinBudgetIggy(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	gw.CreateTopic(t, "waves", benchPartitions)
	bc := dialBench(t, gw.Addr)
	pf := produceFrame("waves")
	const rounds = 16 // 16 × 16 KiB per partition
	for range rounds {
		checkProduce(t, bc.roundTrip(t, pf))
	}
	const want = rounds * benchRecords // records per partition
	offsets := make([]int64, benchPartitions)
	mapped := metricValue(t, gw.Metrics(), "kiggy_records_fetched_total")
	body := bc.roundTrip(t, budgetFetch("waves", offsets, 128<<10, 512<<10))
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	if err := resp.ReadFrom(body[5:]); err != nil {
		t.Fatal(err)
	}
	withRecords, sent := 0, 0
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.HighWatermark != want {
			t.Fatalf("partition %d: error %d, high watermark %d (want %d)", p.Partition, p.ErrorCode, p.HighWatermark, want)
		}
		if len(p.RecordBatches) > 0 {
			withRecords++
			sent += len(kgoRecords(t, p.RecordBatches))
		}
	}
	if withRecords < 3 || withRecords > 5 {
		t.Fatalf("%d partitions with records in a 512 KiB response of 128 KiB partitions", withRecords)
	}
	// Mapped beyond what was sent: the last wave's small reads of the
	// partitions after the budget (the response's last few KiB each).
	read := int(metricValue(t, gw.Metrics(), "kiggy_records_fetched_total") - mapped)
	if read > sent+benchPartitions*16 {
		t.Fatalf("the Fetch mapped %d records to send %d", read, sent)
	}

	// Step through the topic with the same budget: every record once.
	got := make([]int, benchPartitions)
	for fetches := 0; ; fetches++ {
		done := true
		for _, off := range offsets {
			done = done && off == want
		}
		if done {
			break
		}
		if fetches > 200 {
			t.Fatalf("stuck at offsets %v", offsets)
		}
		before := append([]int64(nil), offsets...)
		step(t, bc.roundTrip(t, budgetFetch("waves", offsets, 128<<10, 512<<10)), offsets)
		for p := range offsets {
			if offsets[p] < before[p] {
				t.Fatalf("partition %d went back from %d to %d", p, before[p], offsets[p])
			}
			got[p] += int(offsets[p] - before[p])
		}
	}
	for p, n := range got {
		if n != want {
			t.Fatalf("partition %d: %d records read, want %d", p, n, want)
		}
	}
}

// step moves offsets past the whole record batches of a Fetch v12
// response, checking each partition's first batch starts at its offset.
func step(t *testing.T, body []byte, offsets []int64) {
	t.Helper()
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	if err := resp.ReadFrom(body[5:]); err != nil {
		t.Fatal(err)
	}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
			// baseOffset i64, length i32, …, lastOffsetDelta i32 at byte 23.
			for rb := p.RecordBatches; len(rb) >= 61; {
				size := 12 + int(binary.BigEndian.Uint32(rb[8:]))
				if size > len(rb) {
					break
				}
				base := int64(binary.BigEndian.Uint64(rb))
				if base != offsets[p.Partition] {
					t.Fatalf("partition %d: a batch at %d, the reader is at %d", p.Partition, base, offsets[p.Partition])
				}
				offsets[p.Partition] = base + int64(int32(binary.BigEndian.Uint32(rb[23:]))) + 1
				rb = rb[size:]
			}
		}
	}
}
