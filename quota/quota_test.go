package quota

import (
	"testing"
	"time"
)

func TestNoQuotaIsNil(t *testing.T) {
	if tr := New(Config{}); tr != nil {
		t.Fatalf("New without a quota = %v, want nil", tr)
	}
	var tr *Tracker
	tr.Expire(time.Now()) // a nil tracker does nothing
	if s := tr.Stats(); s != (Stats{}) {
		t.Fatalf("nil tracker's stats %+v", s)
	}
}

// TestThrottleFollowsKafkasRule: with 11 windows of 100 ms the span is at
// least 1 s; a client using 300 ms in it against a 10 % quota owes
// (0.3−0.1)/0.1 × 1 s, bounded to one window; within its quota it owes
// nothing.
func TestThrottleFollowsKafkasRule(t *testing.T) {
	tr := New(Config{RequestPercentage: 10, Samples: 11, Window: 100 * time.Millisecond})
	t0 := time.Unix(1000, 0)
	m := tr.Meter("alice", "app", t0)
	m.Record(50*time.Millisecond, t0.Add(10*time.Millisecond))
	if d := m.Throttle(t0.Add(20 * time.Millisecond)); d != 0 {
		t.Fatalf("50 ms over a 1 s span (5 %%) against 10 %%: throttle %v, want 0", d)
	}
	m.Record(250*time.Millisecond, t0.Add(30*time.Millisecond))
	if d := m.Throttle(t0.Add(40 * time.Millisecond)); d != 100*time.Millisecond {
		t.Fatalf("300 ms over a 1 s span against 10 %%: throttle %v, want one window (100 ms; 2 s unbounded)", d)
	}
	// Below the bound: 110 ms over the 1 s span is 11 %: (0.11−0.1)/0.1 × 1 s = 100 ms... at 105 ms, 50 ms.
	tr2 := New(Config{RequestPercentage: 10, Samples: 11, Window: 100 * time.Millisecond})
	m2 := tr2.Meter("bob", "app", t0)
	m2.Record(105*time.Millisecond, t0)
	if d := m2.Throttle(t0.Add(time.Millisecond)); d < 49*time.Millisecond || d > 51*time.Millisecond {
		t.Fatalf("105 ms over a 1 s span against 10 %%: throttle %v, want 50 ms", d)
	}
	// Usage ages out: a whole span later the client owes nothing.
	if d := m.Throttle(t0.Add(1200 * time.Millisecond)); d != 0 {
		t.Fatalf("1.2 s later: throttle %v, want 0 (the samples are obsolete)", d)
	}
	if s := tr.Stats(); s.Throttles != 1 || s.ThrottleTime != 100*time.Millisecond || s.Clients != 1 {
		t.Fatalf("stats %+v, want 1 throttle of 100 ms and 1 client", s)
	}
}

// TestSlidingWindow: steady usage at twice the quota over many windows is
// throttled, by about the excess over the span; usage at half is not.
func TestSlidingWindow(t *testing.T) {
	tr := New(Config{RequestPercentage: 10, Samples: 5, Window: 100 * time.Millisecond})
	t0 := time.Unix(2000, 0)
	hot, cool := tr.Meter("u", "hot", t0), tr.Meter("u", "cool", t0)
	for i := range 100 { // 10 s: every 10 ms, hot uses 2 ms (20 %), cool 0.5 ms (5 %)
		now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		hot.Record(2*time.Millisecond, now)
		cool.Record(500*time.Microsecond, now)
	}
	end := t0.Add(time.Second)
	if d := cool.Throttle(end); d != 0 {
		t.Errorf("a client at 5 %% of a 10 %% quota is throttled %v", d)
	}
	if d := hot.Throttle(end); d < 50*time.Millisecond {
		t.Errorf("a client at 20 %% of a 10 %% quota is throttled only %v", d)
	}
}

// TestMetersAreShared: one meter per (user, client id), whatever the
// connection; another user or client id has its own.
func TestMetersAreShared(t *testing.T) {
	tr := New(Config{RequestPercentage: 50})
	now := time.Now()
	a := tr.Meter("alice", "app", now)
	if tr.Meter("alice", "app", now) != a {
		t.Error("the same client got two meters")
	}
	if tr.Meter("bob", "app", now) == a || tr.Meter("alice", "other", now) == a {
		t.Error("another client shares alice/app's meter")
	}
	if got := tr.Stats().Clients; got != 3 {
		t.Errorf("clients = %d, want 3", got)
	}
}

// TestMaxClients: past the cap, new clients share the overflow meter, so
// inventing client ids neither grows the tracker nor escapes the quota.
func TestMaxClients(t *testing.T) {
	tr := New(Config{RequestPercentage: 50, MaxClients: 2})
	now := time.Now()
	tr.Meter("u", "1", now)
	tr.Meter("u", "2", now)
	x, y := tr.Meter("u", "3", now), tr.Meter("v", "4", now)
	if x != y || x != tr.overflow {
		t.Error("clients past the cap do not share the overflow meter")
	}
	if got := tr.Stats().Clients; got != 2 {
		t.Errorf("clients = %d, want the cap 2", got)
	}
}

// TestExpire: a meter unused for a whole span is forgotten and marked, so
// its holder asks again; a used one stays.
func TestExpire(t *testing.T) {
	tr := New(Config{RequestPercentage: 50, Samples: 11, Window: time.Second})
	t0 := time.Unix(3000, 0)
	idle, busy := tr.Meter("u", "idle", t0), tr.Meter("u", "busy", t0)
	busy.Record(time.Millisecond, t0.Add(10*time.Second))
	tr.Expire(t0.Add(12 * time.Second))
	if !idle.Expired() || busy.Expired() {
		t.Fatalf("after 12 s: idle expired %v (want true), busy expired %v (want false)", idle.Expired(), busy.Expired())
	}
	if tr.Meter("u", "idle", t0) == idle {
		t.Error("an expired meter was handed out again")
	}
	if got := tr.Stats().Clients; got != 2 {
		t.Errorf("clients = %d, want 2 (busy and the new idle)", got)
	}
}

// TestMeterAllocs: charging and checking a meter allocates nothing (they
// run for every request of a metered client).
func TestMeterAllocs(t *testing.T) {
	tr := New(Config{RequestPercentage: 10})
	m := tr.Meter("u", "c", time.Now())
	id := "c"
	if n := testing.AllocsPerRun(1000, func() {
		now := time.Now()
		m.Record(time.Microsecond, now)
		m.Throttle(now)
		tr.Meter("u", id, now)
	}); n != 0 {
		t.Fatalf("%v allocations per charge", n)
	}
}

// TestPerSecond: a count quota (a connection creation rate) of 10 a second
// over 11 windows of 100 ms lets a first burst of 10 through (averaged
// over the 1 s least span), throttles the 11th by Kafka's rule, and what
// Add takes back no longer counts.
func TestPerSecond(t *testing.T) {
	tr := New(Config{PerSecond: 10, Samples: 11, Window: 100 * time.Millisecond})
	t0 := time.Unix(3000, 0)
	m := tr.Meter("", "127.0.0.2", t0)
	for i := range 10 {
		m.Add(1, t0)
		if d := m.Throttle(t0); d != 0 {
			t.Fatalf("connection %d of a burst of 10 against 10/s: throttle %v, want 0", i+1, d)
		}
	}
	m.Add(1, t0)
	if d := m.Throttle(t0); d < 99*time.Millisecond || d > 100*time.Millisecond {
		t.Fatalf("the 11th: throttle %v, want (11−10)/10 × 1 s = 100 ms", d)
	}
	m.Add(-1, t0) // refused: un-recorded
	if d := m.Throttle(t0); d != 0 {
		t.Fatalf("after taking the 11th back: throttle %v, want 0", d)
	}
	if New(Config{PerSecond: -1}) != nil {
		t.Fatal("a negative rate makes a tracker")
	}
}
