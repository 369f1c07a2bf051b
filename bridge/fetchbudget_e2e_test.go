package bridge_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// budgetFetch is a Fetch v12 of every partition of topic at offsets, 128
// KiB each and 512 KiB in all.
func budgetFetch(topic string, offsets []int64) []byte {
	return requestFrame(fetchRequest(12, topic, offsets, 128<<10, 512<<10), 4)
}

// TestFetchReadsWithinBudgetIggy: a Fetch whose partitions hold far more
// than its max_bytes reads (from Iggy, and encodes) about what the response
// can carry, not every partition's limit; the partitions past the budget
// are answered with their high watermark and no records, as the read
// partitions are; and a reader stepping through the topic with that budget
// gets every record once (docs/IGGY.md, "A Fetch reads within its budget").
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
	body := bc.roundTrip(t, budgetFetch("waves", offsets))
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
		advance(t, bc.roundTrip(t, budgetFetch("waves", offsets)), offsets, false)
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
