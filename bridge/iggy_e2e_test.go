package bridge_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestIggyOutageLosesNothingAcknowledged stops the Iggy server in the middle
// of a steady produce load and starts it again: the producer sees retriable
// errors while it is down, kiggy reconnects by itself, and every record the
// producer saw acknowledged is in Iggy afterwards, exactly once: the
// producer is idempotent, so its resends of batches whose outcome was
// unknown are deduplicated, and no record is stored twice.
func TestIggyOutageLosesNothingAcknowledged(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	gw.CreateTopic(t, "fault", 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ProduceRequestTimeout(3*time.Second),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var mu sync.Mutex
	acked := map[string]bool{}
	failed := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("k%06d", i)
			cl.Produce(ctx, &kgo.Record{Topic: "fault", Key: []byte(key), Value: []byte(key)}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					acked[key] = true
				} else {
					failed++
				}
			})
			time.Sleep(2 * time.Millisecond) // paces the load: a record every 2 ms through the outage
		}
	}()

	ackedNow := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitAcks := func(n int, what string) {
		if !testtools.Eventually(30*time.Second, func() bool { return ackedNow() >= n }) {
			t.Fatalf("%s: only %d records acknowledged", what, ackedNow())
		}
	}
	waitAcks(100, "before the outage")
	gw.StopIggy(t)
	time.Sleep(2 * time.Second) // the outage: kiggy must ride it out
	beforeRestart := ackedNow()
	gw.StartIggy(t)
	// kiggy reconnects by itself and the load goes on.
	waitAcks(beforeRestart+100, "after the restart")
	close(stop)
	wg.Wait()
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	stored := map[string]int{}
	for p := int32(0); p < 2; p++ {
		for _, r := range gw.Records(t, "fault", p) {
			stored[string(r.Key)]++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	lost, twice := 0, 0
	for k := range acked {
		if stored[k] == 0 {
			lost++
		}
	}
	for _, n := range stored {
		if n > 1 {
			twice++
		}
	}
	if lost > 0 || twice > 0 {
		t.Fatalf("after the outage %d of %d acknowledged records are missing and %d records are stored more than once", lost, len(acked), twice)
	}
	t.Logf("acknowledged %d, failed %d, stored %d distinct", len(acked), failed, len(stored))
}

// TestRestartResumesFromCommittedOffsets: a group commits, kiggy restarts
// over the same Iggy data, and the group resumes where it left off.
func TestRestartResumesFromCommittedOffsets(t *testing.T) {
	opts := fastGroups
	opts.Iggy = true
	gw := kiggytest.Start(t, opts)
	gw.CreateTopic(t, "restart", 2)
	produceN(t, gw.Addr, "restart", 2, 100)
	readGroup := func(addr string, want int) int {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var seen sync.Map
		var n int64
		var mu sync.Mutex
		go func() {
			defer cancel()
			read := func() bool { mu.Lock(); defer mu.Unlock(); return n >= int64(want) }
			if testtools.Eventually(30*time.Second, func() bool { return read() || ctx.Err() != nil }) && ctx.Err() == nil {
				// A negative check: a record read twice gets a second to show up; one that does ends the wait at once.
				testtools.Consistently(time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return n <= int64(want) })
			}
		}()
		consumeGroup(ctx, t, addr, "restart-g", "restart", &seen, &n, &mu)
		return int(n)
	}
	if n := readGroup(gw.Addr, 100); n != 100 {
		t.Fatalf("first run read %d", n)
	}
	gw.Stop()

	opts = gw.SameIggy(opts)
	opts.Iggy = false
	gw2 := kiggytest.Start(t, opts)
	produceN(t, gw2.Addr, "restart", 2, 10) // keys k0..k9 again, new offsets
	if n := readGroup(gw2.Addr, 10); n != 10 {
		t.Fatalf("after the restart the group read %d records, want only the 10 new ones", n)
	}
}
