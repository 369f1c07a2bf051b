package bridge_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// slowReads is a networked backend (every read a round trip) whose Reads
// take a millisecond and note how many ran at once.
type slowReads struct {
	store.Log
	now, most atomic.Int64
}

func (s *slowReads) Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int, fn func(*message.Message) bool) (store.Watermarks, error) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	time.Sleep(time.Millisecond)
	return s.Log.Read(ctx, topic, partition, offset, maxBytes, fn)
}

// TestFetchRoundTripsBounded: a Fetch of 200 partitions whose every read
// is a round trip has at most MaxFetchRoundTrips of them in flight at once,
// reads them beside each other all the same, and answers every partition
// with its records. Without the bound the 200 reads ran together: on Iggy,
// queued for the sessions ahead of every other client's requests.
func TestFetchRoundTripsBounded(t *testing.T) {
	const parts = 200
	backend := &slowReads{Log: memlog.New(memlog.Config{})}
	gw := kiggytest.Start(t, kiggytest.Options{Log: backend})
	gw.CreateTopic(t, "wide", parts)
	produceN(t, gw.Addr, "wide", parts, 2*parts)
	kc := dialKafka(t, gw.Addr)
	backend.most.Store(0)
	resp := rawFetch(t, kc, 12, "wide", make([]int64, parts), 1<<10, 1<<20)
	if most := backend.most.Load(); most > bridge.MaxFetchRoundTrips || most < 2 {
		t.Errorf("%d reads of one Fetch in flight at once, want 2..%d", most, bridge.MaxFetchRoundTrips)
	}
	records := 0
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
		}
		records += len(kgoRecords(t, p.RecordBatches))
	}
	if records != 2*parts {
		t.Errorf("the Fetch returned %d records, want %d", records, 2*parts)
	}
}
