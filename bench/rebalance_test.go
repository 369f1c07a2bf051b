package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestRebalanceAnalysis checks the measures of a join worked out by hand:
// members 0 and 1 hold partitions 0–1 and 2–3, member 2 joins at 1 s,
// member 0 gives up partition 1 at 1.2 s and member 2 gets it at 1.5 s.
func TestRebalanceAnalysis(t *testing.T) {
	base := time.Unix(1000, 0)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	tr := newTracker(4)
	tr.own(0, ownAssign, []int32{0, 1, 2, 3}, at(10))
	tr.own(0, ownRevoke, []int32{2, 3}, at(100))
	tr.own(1, ownAssign, []int32{2, 3}, at(150))
	// Records every 50 ms on every partition its owner holds, but member
	// 0's kept partition 0 stalls from 1,100 to 1,400 ms.
	for ms := 200; ms <= 3000; ms += 50 {
		if ms <= 1100 || ms >= 1400 {
			tr.arrived(0, 0, at(ms))
		}
		if ms <= 1150 {
			tr.arrived(0, 1, at(ms))
		}
		tr.arrived(1, 2, at(ms))
		tr.arrived(1, 3, at(ms))
		if ms >= 1550 {
			tr.arrived(2, 1, at(ms))
		}
	}
	tr.own(0, ownRevoke, []int32{1}, at(1200))
	tr.own(2, ownAssign, []int32{1}, at(1500))

	if balanced(tr.owned, []int{0, 1}, 4) {
		t.Error("partition 1 is held outside members 0 and 1: balanced")
	}
	if !balanced(tr.owned, []int{0, 1, 2}, 4) {
		t.Errorf("1, 2, 1 partitions over three members: not balanced (%v)", tr.owned)
	}
	s := tr.snapshot()
	ini := s.initial(at(0), at(900))
	if ini.CoverMs != 10 || ini.SettleMs != 150 {
		t.Errorf("initial cover %v, settle %v ms; want 10 and 150", ini.CoverMs, ini.SettleMs)
	}
	ph := s.change(at(1000), at(3000), at(500), []int{0, 1})
	want := RebalancePhase{
		SettleMs: 500, Moved: 1, UnownedMs: []float64{300}, FlowGapMs: []float64{400},
		// Member 0 kept partition 0 (the 300 ms stall), member 1 kept
		// 2 and 3 (50 ms).
		KeptGapMs: []float64{300, 50}, SteadyGapMs: 50, Members: 2,
	}
	if ph.SettleMs != want.SettleMs || ph.Moved != want.Moved || !slices.Equal(ph.UnownedMs, want.UnownedMs) ||
		!slices.Equal(ph.FlowGapMs, want.FlowGapMs) || !slices.Equal(ph.KeptGapMs, want.KeptGapMs) ||
		ph.SteadyGapMs != want.SteadyGapMs || ph.Members != want.Members || ph.ZeroMembers != 0 {
		t.Errorf("join measured %+v\nwant %+v", ph, want)
	}

	// Member 1 gives everything up and takes it back: it was at 0.
	tr.own(1, ownRevoke, []int32{2, 3}, at(3100))
	tr.own(1, ownAssign, []int32{2, 3}, at(3200))
	if ph := tr.snapshot().change(at(3050), at(4000), at(2500), []int{0, 1}); ph.ZeroMembers != 1 || ph.Moved != 0 {
		t.Errorf("revoke-all and back: %d members at 0, %d moved; want 1, 0", ph.ZeroMembers, ph.Moved)
	}
}

// TestLongestGap checks the gap arithmetic at the window's edges.
func TestLongestGap(t *testing.T) {
	base := time.Unix(0, 0)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	xs := []time.Time{at(0), at(100), at(400), at(450)}
	for _, c := range []struct {
		a, b, end int
		want      time.Duration
	}{
		{a: 150, b: 200, end: 1000, want: 300 * time.Millisecond}, // the gap 100–400 spans the window
		{a: 420, b: 440, end: 1000, want: 50 * time.Millisecond},  // 400–450 spans it
		{a: 460, b: 470, end: 1000, want: 550 * time.Millisecond}, // nothing after 450: up to end
		{a: 0, b: 50, end: 1000, want: 100 * time.Millisecond},
		{a: 500, b: 600, end: 600, want: 150 * time.Millisecond}, // from the last one before the window
	} {
		if got := longestGap(xs, at(c.a), at(c.b), at(c.end)); got != c.want {
			t.Errorf("window [%d, %d] to %d: %v, want %v", c.a, c.b, c.end, got, c.want)
		}
	}
	if got := longestGap(nil, at(10), at(20), at(30)); got != 20*time.Millisecond {
		t.Errorf("no arrivals: %v, want the window to its end, 20ms", got)
	}
}

// TestRebalanceConfig checks the settings both servers get and what
// normalize refuses.
func TestRebalanceConfig(t *testing.T) {
	c := DefaultRebalanceConfig()
	if err := c.normalize(); err != nil {
		t.Fatal(err)
	}
	p := kafkaProps(c.benchConfig())
	for k, v := range map[string]string{
		"group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
		"group.consumer.session.timeout.ms": "10000", "group.consumer.min.session.timeout.ms": "10000",
	} {
		if p[k] != v {
			t.Errorf("Kafka %s = %q, want %q", k, p[k], v)
		}
	}
	if v, ok := p["group.consumer.assignment.interval.ms"]; ok {
		t.Errorf("Kafka's assignment interval set to %q by default", v)
	}
	c.KafkaAssignmentInterval = 0
	if v := kafkaProps(c.benchConfig())["group.consumer.assignment.interval.ms"]; v != "0" {
		t.Errorf("Kafka's assignment interval %q, want 0", v)
	}
	if f := strings.Join(c.benchConfig().GatewayFlags, " "); f != "--group-consumer-heartbeat-interval 500ms --group-consumer-session-timeout 10s" {
		t.Errorf("kiggy flags %q", f)
	}
	for name, mod := range map[string]func(*RebalanceConfig){
		"null target":          func(c *RebalanceConfig) { c.Targets = []string{TargetNull} },
		"members ≥ partitions": func(c *RebalanceConfig) { c.Members = 12 },
		"assignor":             func(c *RebalanceConfig) { c.Assignor = "sticky" },
		"heartbeat ≥ session":  func(c *RebalanceConfig) { c.HeartbeatInterval = c.SessionTimeout },
		"heartbeat too short":  func(c *RebalanceConfig) { c.HeartbeatInterval = 50 * time.Millisecond },
		"no rate":              func(c *RebalanceConfig) { c.Rate = 0 },
	} {
		c := DefaultRebalanceConfig()
		mod(&c)
		if err := c.normalize(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRebalanceSmoke runs the rebalance benchmark's smoke mode against
// kiggy alone: a group of two members on four partitions, a third joins,
// the first leaves. It asserts that every phase produced a result, not what
// the figures are.
func TestRebalanceSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts kiggy and a consumer group (-short)")
	}
	if _, err := testtools.GoTool(); err != nil {
		t.Skipf("skipping: no go tool to build kiggy: %v", err)
	}
	cfg := SmokeRebalanceConfig()
	cfg.Log = testLog{t}
	cfg.WorkDir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := RunRebalance(ctx, cfg)
	if rep != nil {
		var b strings.Builder
		rep.Print(&b)
		t.Logf("report:\n%s", b.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() {
		t.Fatalf("failed:\n%s", strings.Join(rep.Failures, "\n"))
	}
	if len(rep.Targets) != 1 || len(rep.Targets[0].Reps) != 1 {
		t.Fatalf("want one target with one repetition, got %+v", rep.Targets)
	}
	r := rep.Targets[0].Reps[0]
	if r.Initial.CoverMs <= 0 {
		t.Error("start: no time to all partitions owned")
	}
	if r.Join.Moved == 0 || len(r.Join.UnownedMs) != r.Join.Moved || len(r.Join.KeptGapMs) == 0 {
		t.Errorf("join: %+v", r.Join)
	}
	if r.Leave.Moved == 0 || len(r.Leave.UnownedMs) != r.Leave.Moved || r.Leave.Members != cfg.Members {
		t.Errorf("leave: %+v", r.Leave)
	}
	if r.Produced == 0 {
		t.Error("the steady producer sent nothing")
	}
	if len(rep.Targets[0].Measures) != len(rebalanceMeasures) {
		t.Errorf("%d measures, want %d", len(rep.Targets[0].Measures), len(rebalanceMeasures))
	}
}
