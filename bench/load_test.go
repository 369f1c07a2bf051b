package bench

import (
	"context"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLoadInProcess drives the franz-go load against an in-process kiggy
// gateway (no Java, no child processes): as fast as it goes and
// rate-limited, then reads everything back and compares it with what was
// acknowledged, partition by partition. It runs under -race in CI.
func TestLoadInProcess(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := Load{RecordSize: 200, Partitions: 3, Acks: -1, Compression: "zstd", Producers: 2, InFlight: 5,
		Linger: time.Millisecond, BufferBytes: 1 << 20}
	if err := l.validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topic string
		rate  float64
	}{{"max", 0}, {"rate", 2000}} {
		t.Run(tc.topic, func(t *testing.T) {
			if err := createTopic(ctx, gw.Addr, tc.topic, l.Partitions, ""); err != nil {
				t.Fatal(err)
			}
			begun, ended := 0, 0
			hooks := windowHooks{onBegin: func() { begun++ }, onEnd: func() { ended++ }}
			pr, err := runProduce(ctx, gw.Addr, tc.topic, l, 500*time.Millisecond, 500*time.Millisecond, tc.rate, cpuMeter{}, hooks)
			if err != nil {
				t.Fatal(err)
			}
			if begun != 1 || ended != 1 {
				t.Fatalf("window hooks called %d/%d times", begun, ended)
			}
			// A busy machine (or -race) can stall the gateway for the whole
			// half-second window, so the window's figures are only logged;
			// what must hold is that everything acknowledged is read back.
			t.Logf("%d records acknowledged in %v, %d latencies, p99 %v", pr.records, pr.window, pr.hist.Count(), pr.hist.Quantile(0.99))
			if pr.window < 500*time.Millisecond {
				t.Fatalf("window of %v, want ≥ 500ms", pr.window)
			}
			if tc.rate > 0 {
				// Latencies are recorded for records whose slot fell in the
				// window: never more than the schedule has slots, however
				// the acknowledgements bunch up.
				if slots := tc.rate*pr.window.Seconds() + float64(l.Producers); float64(pr.hist.Count()) > slots {
					t.Fatalf("rate-limited run timed %d records due in the window, the schedule has %.0f", pr.hist.Count(), slots)
				}
			}
			ends, err := endOffsets(ctx, gw.Addr, tc.topic, l.Partitions)
			if err != nil {
				t.Fatal(err)
			}
			cr, err := runConsume(ctx, gw.Addr, tc.topic, ends, 2, l.RecordSize, kgo.ReadUncommitted(), cpuMeter{}, windowHooks{})
			if err != nil {
				t.Fatal(err)
			}
			var acked int64
			defer func() {
				if acked == 0 {
					t.Error("nothing acknowledged")
				}
			}()
			for p := range pr.acked {
				acked += pr.acked[p]
				if pr.acked[p] != cr.byPartition[p] || pr.acked[p] != ends[p] {
					t.Errorf("partition %d: acknowledged %d, end offset %d, read back %d", p, pr.acked[p], ends[p], cr.byPartition[p])
				}
			}
			if cr.records != acked || cr.badValues != 0 || cr.bytes != acked*int64(l.RecordSize) {
				t.Fatalf("read back %d records (%d bytes, %d bad) of %d acknowledged", cr.records, cr.bytes, cr.badValues, acked)
			}
			if err := deleteTopic(ctx, gw.Addr, tc.topic); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCreateLargeTopic: a topic above maxCreatePartitions is created with
// that many and grown by CreatePartitions to its full count, every
// partition with a leader, and the phase can produce to its last partition.
func TestCreateLargeTopic(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const parts = maxCreatePartitions + 24
	if err := createTopic(ctx, gw.Addr, "large", parts, ""); err != nil {
		t.Fatal(err)
	}
	ends, err := endOffsets(ctx, gw.Addr, "large", parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ends) != parts {
		t.Fatalf("%d end offsets, want %d", len(ends), parts)
	}
}
