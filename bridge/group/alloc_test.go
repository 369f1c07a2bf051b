//go:build !race

package group

import (
	"fmt"
	"testing"
)

// TestSteadyStateAllocs: the requests a stable consumer sends all the time —
// Heartbeat, an OffsetCommit's validation and a Sync in Stable — allocate
// nothing.
func TestSteadyStateAllocs(t *testing.T) {
	for _, await := range []bool{false, true} {
		steadyStateAllocs(t, Config{AwaitStore: await})
	}
}

func steadyStateAllocs(t *testing.T, cfg Config) {
	h := newHarness(t, cfg)
	ids := h.stableGroup("g", 3)
	done := func(SyncResult) {}
	sync := SyncRequest{GroupID: "g", GenerationID: 1, MemberID: ids[1]}
	tests := []struct {
		name string
		f    func()
	}{
		{"Heartbeat", func() {
			if h.c.Heartbeat("g", ids[1], "", false, 1) != 0 {
				t.Fatal("heartbeat failed")
			}
		}},
		{"ValidateCommit", func() {
			if h.c.ValidateCommit("g", ids[2], "", false, 1) != 0 {
				t.Fatal("commit rejected")
			}
		}},
		{"Sync in Stable", func() { h.c.Sync(sync, done) }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(100, tt.f); n != 0 {
			t.Errorf("%s (AwaitStore %v): %v allocations, want 0", tt.name, cfg.AwaitStore, n)
		}
	}
}

// TestSteadyConsumerHeartbeatAllocs: the keep-alive ConsumerGroupHeartbeat
// a member of a stable consumer group sends every heartbeat interval
// allocates nothing and changes nothing to store, by names or by regex, in
// a group of 3 or of 300.
func TestSteadyConsumerHeartbeatAllocs(t *testing.T) {
	for _, regex := range []bool{false, true} {
		for _, n := range []int{3, 300} {
			snap := snapshotOf(fakeTopics{"t": 8, "u": 4, "v": 2})
			c := newCoordinator(Config{}, newFakeClock())
			ms := make([]*cmemberClient, n)
			for i := range ms {
				ms[i] = &cmemberClient{t: t, c: c, topics: snap, group: "g", id: fmt.Sprintf("m%03d", i), names: []string{"t", "u"}}
				if regex {
					ms[i].names, ms[i].regex = nil, "t|u"
				}
			}
			converge(t, ms...)
			c.DirtyConsumerGroups()
			req := ms[n/2].req(ms[n/2].epoch, false)
			if got := testing.AllocsPerRun(100, func() {
				if res := c.ConsumerGroupHeartbeat(req); res.Error != 0 || res.HasAssignment {
					t.Fatalf("heartbeat: error %d, assignment sent %v", res.Error, res.HasAssignment)
				}
			}); got != 0 {
				t.Errorf("regex %v, %d members: %v allocations per heartbeat, want 0", regex, n, got)
			}
			// Nor does it change anything to store.
			if d := c.DirtyConsumerGroups(); len(d) != 0 {
				t.Errorf("regex %v, %d members: keep-alive heartbeats left %d groups to store", regex, n, len(d))
			}
			c.Close()
		}
	}
}

func BenchmarkHeartbeat(b *testing.B) {
	h := newHarness(b, Config{})
	ids := h.stableGroup("g", 100)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.c.Heartbeat("g", ids[i%len(ids)], "", false, 1)
	}
}

// BenchmarkConsumerHeartbeat: the steady ConsumerGroupHeartbeat of one
// member of a converged consumer group of n members (what every member
// sends each heartbeat interval), the members subscribed by name to one
// topic of 100 partitions, or by regex to 1,000 topics of one.
func BenchmarkConsumerHeartbeat(b *testing.B) {
	for _, sub := range []string{"names", "regex"} {
		for _, n := range []int{10, 1000} {
			b.Run(fmt.Sprintf("subscription=%s/members=%d", sub, n), func(b *testing.B) {
				topics := fakeTopics{"t": 100}
				if sub == "regex" {
					topics = fakeTopics{}
					for i := range 1000 {
						topics[fmt.Sprintf("r%04d", i)] = 1
					}
				}
				snap := snapshotOf(topics)
				c := newCoordinator(Config{}, newFakeClock())
				defer c.Close()
				ms := make([]*cmemberClient, n)
				for i := range ms {
					ms[i] = &cmemberClient{t: b, c: c, topics: snap, group: "g", id: fmt.Sprintf("m%05d", i)}
					if sub == "regex" {
						ms[i].regex = "r.*"
					} else {
						ms[i].names = []string{"t"}
					}
					ms[i].beat()
				}
				for range 3 {
					for _, m := range ms {
						m.beat()
					}
				}
				reqs := make([]*ConsumerHeartbeat, n)
				for i, m := range ms {
					reqs[i] = m.req(m.epoch, false)
				}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if res := c.ConsumerGroupHeartbeat(reqs[i%n]); res.Error != 0 {
						b.Fatalf("error %d", res.Error)
					}
				}
			})
		}
	}
}
