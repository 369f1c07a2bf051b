package group

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a manual clock: time moves only in Advance, which runs the
// timers that fall due, in deadline order, on the calling goroutine.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c    *fakeClock
	at   time.Time
	f    func()
	done bool // fired or stopped; guarded by c.mu
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) afterFunc(d time.Duration, f func()) stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.t.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	return true
}

// Advance moves the clock by d, firing due timers at their own times.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.t.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		c.timers = slices.DeleteFunc(c.timers, func(t *fakeTimer) bool { return t.done })
		var next *fakeTimer
		for _, t := range c.timers {
			if !t.at.After(target) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			c.t = target
			c.mu.Unlock()
			return
		}
		if next.at.After(c.t) {
			c.t = next.at
		}
		next.done = true
		c.mu.Unlock()
		next.f()
	}
}

// harness drives a Coordinator on a fake clock.
type harness struct {
	t     testing.TB
	clock *fakeClock
	c     *Coordinator
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	clk := newFakeClock()
	h := &harness{t: t, clock: clk, c: newCoordinator(cfg, clk)}
	t.Cleanup(h.c.Close)
	return h
}

// joinCall records a Join's callback and fails the test on a second call.
type joinCall struct {
	t    testing.TB
	mu   sync.Mutex
	n    int
	res  JoinResult
	done chan struct{}
}

func (h *harness) join(req JoinRequest) *joinCall {
	h.t.Helper()
	jc := &joinCall{t: h.t, done: make(chan struct{})}
	h.c.Join(req, func(r JoinResult) {
		jc.mu.Lock()
		defer jc.mu.Unlock()
		jc.n++
		if jc.n > 1 {
			jc.t.Errorf("join callback called %d times (result %+v)", jc.n, r)
			return
		}
		jc.res = r
		close(jc.done)
	})
	return jc
}

func (jc *joinCall) isDone() bool {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return jc.n > 0
}

// result returns the join's result, failing if it has not completed.
func (jc *joinCall) result() JoinResult {
	jc.t.Helper()
	jc.mu.Lock()
	defer jc.mu.Unlock()
	if jc.n == 0 {
		jc.t.Fatalf("join has not completed")
	}
	return jc.res
}

// syncCall records a Sync's callback and fails the test on a second call.
type syncCall struct {
	t    testing.TB
	mu   sync.Mutex
	n    int
	res  SyncResult
	done chan struct{}
}

func (h *harness) sync(req SyncRequest) *syncCall {
	h.t.Helper()
	sc := &syncCall{t: h.t, done: make(chan struct{})}
	h.c.Sync(req, func(r SyncResult) {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		sc.n++
		if sc.n > 1 {
			sc.t.Errorf("sync callback called %d times (result %+v)", sc.n, r)
			return
		}
		sc.res = r
		close(sc.done)
	})
	return sc
}

func (sc *syncCall) isDone() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.n > 0
}

func (sc *syncCall) result() SyncResult {
	sc.t.Helper()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.n == 0 {
		sc.t.Fatalf("sync has not completed")
	}
	return sc.res
}

// consumerJoin is a typical consumer JoinGroup (v3-like: no KIP-394 round trip).
func consumerJoin(groupID, memberID, clientID string, protos ...string) JoinRequest {
	if len(protos) == 0 {
		protos = []string{"range"}
	}
	ps := make([]Protocol, len(protos))
	for i, p := range protos {
		ps[i] = Protocol{Name: p, Metadata: []byte("meta-" + clientID + "-" + p)}
	}
	return JoinRequest{
		GroupID:          groupID,
		MemberID:         memberID,
		ClientID:         clientID,
		ClientHost:       "/127.0.0.1",
		ProtocolType:     "consumer",
		Protocols:        ps,
		SessionTimeout:   10 * time.Second,
		RebalanceTimeout: 30 * time.Second,
	}
}

// stableGroup forms a Stable group of n dynamic members (client ids c0, c1,
// ...) and returns their member ids in join order (the first is the leader).
func (h *harness) stableGroup(groupID string, n int) []string {
	h.t.Helper()
	calls := make([]*joinCall, n)
	for i := range n {
		calls[i] = h.join(consumerJoin(groupID, "", clientName(i)))
	}
	h.clock.Advance(2 * h.c.cfg.InitialRebalanceDelay)
	ids := make([]string, n)
	var gen int32
	for i, jc := range calls {
		r := jc.result()
		if r.Error != 0 {
			h.t.Fatalf("join %d: error %d", i, r.Error)
		}
		ids[i] = r.MemberID
		gen = r.GenerationID
	}
	h.syncAll(groupID, gen, ids)
	return ids
}

// syncAll syncs every member, the leader ids[0] assigning "assign-<id>".
func (h *harness) syncAll(groupID string, gen int32, ids []string) {
	h.t.Helper()
	var calls []*syncCall
	for _, id := range ids[1:] {
		calls = append(calls, h.sync(SyncRequest{GroupID: groupID, GenerationID: gen, MemberID: id}))
	}
	as := make([]Assignment, len(ids))
	for i, id := range ids {
		as[i] = Assignment{MemberID: id, Assignment: []byte("assign-" + id)}
	}
	calls = append(calls, h.sync(SyncRequest{GroupID: groupID, GenerationID: gen, MemberID: ids[0], Assignments: as}))
	if h.c.cfg.AwaitStore {
		h.c.ClassicGroupsStored(slices.Collect(maps.Keys(h.c.DirtyClassicGroups()))) // as the gateway's writer does
	}
	for _, sc := range calls {
		if r := sc.result(); r.Error != 0 {
			h.t.Fatalf("sync: error %d", r.Error)
		}
	}
	if d := h.c.Describe(groupID); d.State != "Stable" {
		h.t.Fatalf("state after sync = %s, want Stable", d.State)
	}
}

func clientName(i int) string {
	return "c" + string(rune('0'+i))
}

func (h *harness) state(groupID string) string {
	return h.c.Describe(groupID).State
}

// fakeStore is a consumer-group namespace of the owner's system store: it
// applies changes as the owner writes them.
type fakeStore map[string][]byte

// apply writes chs, each whole and in order.
func (s fakeStore) apply(chs []*ConsumerGroupChange) {
	for _, ch := range chs {
		for _, e := range ch.Entries {
			if e.Value == nil {
				delete(s, e.Key)
			} else {
				s[e.Key] = slices.Clone(e.Value)
			}
		}
	}
}

// group returns what s holds of group id.
func (s fakeStore) group(id string) StoredConsumerGroup {
	groups, _ := SplitConsumerGroups(s)
	return groups[id]
}

func TestMain(m *testing.M) {
	checkTouched = true // every change checks the members it skips
	code := m.Run()
	if msg := checkTouchFailed.Load(); msg != nil {
		fmt.Fprintln(os.Stderr, "FAIL: checkTouched:", *msg)
		code = 1
	}
	os.Exit(code)
}
