package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestParkedFetchWaitsOnIggy: on Iggy 0.10 (protocol 0.12, the model) a
// Fetch parked at the tail waits on the server's readiness wait
// (WaitForMessages) instead of re-reading its partitions every 100 ms: a
// consumer idle for 2 s costs at most one PollMessages a partition (when
// its Fetch starts again), and a record another writer
// appends straight to Iggy (not through this gateway, so no local wake-up)
// reaches it. On 0.9 (protocol 0.11) the parked Fetch re-reads every
// 100 ms, each re-read answered by a GetTopic of the topic (a tail check)
// rather than a poll a partition, and the record arrives too.
func TestParkedFetchWaitsOnIggy(t *testing.T) {
	for _, d := range []proto.Dialect{proto.Dialect012, proto.Dialect011} {
		t.Run(d.String(), func(t *testing.T) {
			srv := iggytest.New(iggytest.Config{Dialects: []proto.Dialect{d}})
			if _, err := srv.Start("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			gw := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
			const topic = "waits"
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			adm, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
			if err != nil {
				t.Fatal(err)
			}
			defer adm.Close()
			if _, err := kadm.NewClient(adm).CreateTopic(ctx, 4, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			cons, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(3*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			// Let the consumer reach the tail and park.
			idle, stop := context.WithTimeout(ctx, time.Second)
			cons.PollFetches(idle)
			stop()
			before := pollCount(t, gw)
			checks := metricValue(t, gw.Metrics(), "kiggy_iggy_tail_checks_total")
			idle, stop = context.WithTimeout(ctx, 2*time.Second)
			if n := cons.PollFetches(idle).NumRecords(); n != 0 {
				t.Fatalf("%d records while nothing was appended", n)
			}
			stop()
			polls := pollCount(t, gw) - before
			checks = metricValue(t, gw.Metrics(), "kiggy_iggy_tail_checks_total") - checks

			// Another writer appends straight to Iggy.
			other := kiggytest.Start(t, gw.SameIggy(kiggytest.Options{}))
			var b message.Batch
			b.Checksums = true
			b.Reset(uint64(time.Now().UnixMicro()))
			b.Begin(b.Origin)
			b.AppendPayloadString("native")
			b.MarkHeaders()
			b.End()
			if _, err := other.Log.Append(ctx, topic, 2, &b); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			for {
				fs := cons.PollFetches(ctx)
				if err := fs.Err(); err != nil {
					t.Fatal(err)
				}
				if fs.NumRecords() > 0 {
					if v := string(fs.Records()[0].Value); v != "native" {
						t.Fatalf("read %q, want native", v)
					}
					break
				}
			}
			t.Logf("%s: %v polls and %v tail checks in 2 s idle; the native record read %v after its append", d, polls, checks, time.Since(sent).Round(time.Millisecond))
			// On 0.12 the parked Fetch polls nothing while it waits; a
			// Fetch whose 3 s max wait ends inside the 2 s reads each of
			// the 4 partitions once as it starts again.
			if d == proto.Dialect012 && polls > 4 {
				t.Fatalf("a consumer parked on Iggy 0.10 polled %v times in 2 s", polls)
			}
			if d == proto.Dialect011 && (polls > 4 || checks < 5) {
				t.Fatalf("a consumer parked on Iggy 0.9 (no readiness wait): %v polls and %v tail checks in 2 s; want its 100 ms re-reads answered by checks, not polls", polls, checks)
			}
		})
	}
}
