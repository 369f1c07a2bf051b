//go:build !race

package group

import "testing"

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

func BenchmarkHeartbeat(b *testing.B) {
	h := newHarness(b, Config{})
	ids := h.stableGroup("g", 100)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.c.Heartbeat("g", ids[i%len(ids)], "", false, 1)
	}
}
