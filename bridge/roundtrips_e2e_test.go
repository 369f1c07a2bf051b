package bridge_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// inFlight notes how many calls run at once, and the most that ever did.
type inFlight struct{ now, most atomic.Int64 }

// enter counts a call that takes a millisecond, until the returned
// function is called.
func (f *inFlight) enter() (leave func()) {
	n := f.now.Add(1)
	for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
	}
	time.Sleep(time.Millisecond)
	return func() { f.now.Add(-1) }
}

// slowReads is a networked backend (every read a round trip) whose Reads
// take a millisecond and note how many ran at once.
type slowReads struct {
	store.Log
	inFlight
}

func (s *slowReads) Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int, fn func(*message.Message) bool) (store.Watermarks, error) {
	defer s.enter()()
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

// slowAppends is a backend with round trips whose Appends take a
// millisecond and note how many ran at once.
type slowAppends struct {
	store.Log
	inFlight
}

func (s *slowAppends) Capabilities() store.Capabilities { return store.Capabilities{} }

func (s *slowAppends) Append(ctx context.Context, topic string, partition int32, b *message.Batch) (int64, error) {
	defer s.enter()()
	return s.Log.Append(ctx, topic, partition, b)
}

// TestProduceRoundTripsBounded: a Produce of 200 partitions on a backend
// with round trips has at most MaxConnRounds appends in flight at once, for
// its connection, sends them beside each other all the same, and stores
// every partition's batch. Without the bound the 200 appends ran together:
// on Iggy, queued for the sessions ahead of every other client's appends.
func TestProduceRoundTripsBounded(t *testing.T) {
	const parts = 200
	backend := &slowAppends{Log: memlog.New(memlog.Config{})}
	gw := kiggytest.Start(t, kiggytest.Options{Log: backend})
	gw.CreateTopic(t, "wide", parts)
	kc := dialKafka(t, gw.Addr)
	batches := make([][]byte, parts)
	for i := range batches {
		batches[i] = batchOf(batch.NoCompression, fmt.Sprint("v", i))
	}
	resp, err := kc.RoundTrip(produceRequestTo("wide", batches...))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
		if p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("partition %d: error %d, base offset %d", p.Partition, p.ErrorCode, p.BaseOffset)
		}
	}
	if most := backend.most.Load(); most > bridge.MaxConnRounds || most < 2 {
		t.Errorf("%d appends of one Produce in flight at once, want 2..%d", most, bridge.MaxConnRounds)
	}
	for p := range int32(parts) {
		if got := gw.Records(t, "wide", p); len(got) != 1 || string(got[0].Value) != fmt.Sprint("v", p) {
			t.Fatalf("partition %d holds %v", p, got)
		}
	}
}
