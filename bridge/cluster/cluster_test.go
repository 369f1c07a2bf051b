package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

func TestRecordRoundTrip(t *testing.T) {
	r := record{kind: kindHeartbeat, node: 7, incarnation: 99, applied: 3,
		endpoints: []store.Endpoint{{Listener: "", Host: "127.0.0.1", Port: 9092}, {Listener: "SASL_SSL", Host: "kiggy-7.example", Port: 9093}}}
	got, err := decodeRecord(appendRecord(nil, r))
	if err != nil {
		t.Fatal(err)
	}
	if got.kind != r.kind || got.node != r.node || got.incarnation != r.incarnation || got.applied != r.applied || !slices.Equal(got.endpoints, r.endpoints) {
		t.Fatalf("round trip: got %+v, want %+v", got, r)
	}
	b := appendRecord(nil, r)
	for i := range len(b) {
		if _, err := decodeRecord(b[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: decoded", i)
		}
	}
	if _, err := decodeRecord(append(b, 0)); err == nil {
		t.Fatal("trailing byte: decoded")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, record{kind: kindHeartbeat, node: 1, endpoints: []store.Endpoint{{Host: "h", Port: 1}}}))
	f.Add(appendRecord(nil, record{kind: kindLeave, node: 2, incarnation: 5}))
	f.Add(appendRecord(nil, record{kind: kindSwitch, node: 3, incarnation: 6, applied: 2}))
	f.Add(appendRecord(nil, record{kind: kindNotice, node: 4, incarnation: 7}))
	st := newState(1000)
	st.apply(1, record{kind: kindHeartbeat, node: 1, incarnation: 1, endpoints: []store.Endpoint{{Host: "h", Port: 1}}})
	st.apply(2, record{kind: kindHeartbeat, node: 4, incarnation: 2, endpoints: []store.Endpoint{{Listener: "L", Host: "h4", Port: 4}}})
	f.Add(appendRecord(nil, record{kind: kindSnapshot, snap: st.snapshot(1, 7)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes.
		if again := appendRecord(nil, r); string(again) != string(b) {
			t.Fatalf("re-encoded %x, decoded from %x", again, b)
		}
	})
}

// TestStateDeterministic: the same records give the same views, and a
// member silent for longer than the timeout in log time drops out.
func TestStateDeterministic(t *testing.T) {
	hb := func(n int32) record { return record{kind: kindHeartbeat, node: n, incarnation: uint64(n)} }
	s := newState(1000)
	s.apply(10, hb(1))
	s.apply(20, hb(2))
	s.apply(30, hb(3))
	if got := s.live(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("live = %v", got)
	}
	// Nodes 1 and 2 heartbeat more often than half the timeout (a longer
	// gap is a log outage, TestOutageCredit).
	for _, ts := range []uint64{400, 800} {
		s.apply(ts, hb(1))
		s.apply(ts, hb(2))
	}
	if vc, _ := s.apply(1031, hb(1)); !vc {
		t.Fatal("node 3 silent for 1001 µs is still live")
	}
	if got := s.live(); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("live = %v", got)
	}
	s.apply(1040, record{kind: kindLeave, node: 2, incarnation: 2})
	if got := s.live(); !slices.Equal(got, []int32{1}) || s.view() != 5 {
		t.Fatalf("after leave: live %v view %d", s.live(), s.view())
	}
}

// TestOutageCredit: a gap in the log longer than half the timeout, ended
// by a survivor's heartbeat, is an outage of the log (an Iggy election):
// nobody dies of it (docs/design/cluster.md §3 "Outages"). A restart after
// the gap, or a gap of a stopped cluster, gets no credit, and a member that
// stays silent after the outage still dies.
func TestOutageCredit(t *testing.T) {
	hb := func(n int32, inc uint64) record { return record{kind: kindHeartbeat, node: n, incarnation: inc} }
	three := func() *state {
		s := newState(1000)
		for _, n := range []int32{1, 2, 3} {
			s.apply(10, hb(n, 1))
		}
		return s
	}
	// An outage of 3,000 µs (3 timeouts): the survivor's heartbeat keeps
	// everyone; node 3, silent afterwards, dies half a timeout later.
	s := three()
	if vc, _ := s.apply(3010, hb(1, 1)); vc {
		t.Fatalf("an outage of the log killed members: live %v", s.live())
	}
	s.apply(3200, hb(2, 1))
	if got := s.live(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("after the outage: live %v", got)
	}
	if vc, _ := s.apply(3511, hb(1, 1)); !vc || !slices.Equal(s.live(), []int32{1, 2}) {
		t.Fatalf("node 3 silent for half a timeout after the outage: live %v", s.live())
	}
	// The same gap ended by a restarted node 1 (a new incarnation): a cold
	// start, the others are dead.
	s = three()
	if s.apply(3010, hb(1, 2)); !slices.Equal(s.live(), []int32{1}) {
		t.Fatalf("a restart after the gap: live %v, want [1]", s.live())
	}
	// A stopped cluster: longer than maxOutageTimeouts timeouts.
	s = three()
	if s.apply(10+maxOutageTimeouts*1000+1, hb(1, 1)); !slices.Equal(s.live(), []int32{1}) {
		t.Fatalf("a gap of a stopped cluster: live %v, want [1]", s.live())
	}
	// Every instance applies the rule alike: the same records give the same
	// views.
	a, b := three(), three()
	for _, r := range []struct {
		ts uint64
		n  int32
	}{{3010, 2}, {3100, 1}, {9000, 3}, {9400, 1}} {
		a.apply(r.ts, hb(r.n, 1))
		b.apply(r.ts, hb(r.n, 1))
	}
	if !slices.EqualFunc(a.views, b.views, slices.Equal) {
		t.Fatalf("views differ: %v vs %v", a.views, b.views)
	}
}

// TestRendezvousMovesFew: a node leaving moves only its own partitions, and
// only the moved partitions' epochs change.
func TestRendezvousMovesFew(t *testing.T) {
	views := [][]int32{nil, {1}, {1, 2}, {1, 2, 3}, {1, 2}}
	moved, kept := 0, 0
	for p := range int32(300) {
		k := partitionKey("t", p)
		before, after := pick(views[3], k), pick(views[4], k)
		e3, e4 := epochOf(views, 0, 3, k), epochOf(views, 0, 4, k)
		if before == after {
			kept++
			if e3 != e4 {
				t.Fatalf("partition %d stayed on %d but its epoch went %d → %d", p, after, e3, e4)
			}
		} else {
			moved++
			if before != 3 {
				t.Fatalf("partition %d moved from %d, not from the node that left", p, before)
			}
			if e4 != 4 || e4 <= e3 {
				t.Fatalf("moved partition %d: epoch %d → %d", p, e3, e4)
			}
		}
	}
	if moved < 60 || moved > 140 {
		t.Fatalf("%d of 300 partitions moved off one of 3 nodes; want about 100", moved)
	}
	_ = kept
}

func startNode(t *testing.T, log store.Log, id int32) *Membership {
	t.Helper()
	return startNodeCompacting(t, log, id, 0)
}

// startNodeCompacting is startNode with Config.CompactRecords set to
// records (0 = the default).
func startNodeCompacting(t *testing.T, log store.Log, id int32, records int) *Membership {
	t.Helper()
	m, err := Start(context.Background(), Config{NodeID: id, Log: log, Heartbeat: 40 * time.Millisecond, Timeout: 400 * time.Millisecond,
		Endpoints: []store.Endpoint{{Host: "127.0.0.1", Port: 9000 + id}}, CompactRecords: records})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitSettled waits until every membership sees live as its live set and
// every partition is served.
func waitSettled(t *testing.T, ms []*Membership, live []int32) {
	t.Helper()
	var err error
	if !testtools.Eventually(10*time.Second, func() bool { err = settled(ms, live); return err == nil }) {
		t.Fatal(err)
	}
}

func settled(ms []*Membership, live []int32) error {
	var view uint64
	for i, m := range ms {
		v, l := m.View()
		if !slices.Equal(l, live) {
			return fmt.Errorf("instance %d sees %v, want %v", i, l, live)
		}
		if i > 0 && v != view {
			return fmt.Errorf("views differ: %d and %d", view, v)
		}
		view = v
	}
	for p := range int32(64) {
		serving := 0
		var first store.Route
		for i, m := range ms {
			r := m.Leader("t", p)
			if i == 0 {
				first = r
			} else if r.Leader != first.Leader || r.Epoch != first.Epoch {
				return fmt.Errorf("partition %d: routes differ %+v %+v", p, first, r)
			}
			if r.Serving {
				serving++
			}
		}
		if serving != 1 {
			return fmt.Errorf("partition %d served by %d instances", p, serving)
		}
	}
	return nil
}

// TestMembershipFailover: three instances agree; one vanishes without a
// word and the others take its partitions once the timeout passes; a
// graceful leave hands over at once; no partition is served twice.
func TestMembershipFailover(t *testing.T) {
	log := memlog.New(memlog.Config{})
	ms := []*Membership{startNode(t, log, 1), startNode(t, log, 2), startNode(t, log, 3)}
	waitSettled(t, ms, []int32{1, 2, 3})
	epochs := map[int32]store.Route{}
	for p := range int32(64) {
		epochs[p] = ms[0].Leader("t", p)
	}
	ms[2].Abandon()
	for p := range int32(64) {
		if ms[2].Leader("t", p).Serving {
			t.Fatalf("abandoned instance still serves partition %d", p)
		}
	}
	waitSettled(t, ms[:2], []int32{1, 2})
	for p := range int32(64) {
		before, after := epochs[p], ms[0].Leader("t", p)
		if before.Leader == after.Leader && before.Epoch != after.Epoch {
			t.Errorf("partition %d stayed on %d, epoch %d → %d", p, after.Leader, before.Epoch, after.Epoch)
		}
		if before.Leader != after.Leader && after.Epoch <= before.Epoch {
			t.Errorf("partition %d moved %d → %d, epoch %d → %d", p, before.Leader, after.Leader, before.Epoch, after.Epoch)
		}
	}
	// Node 3 comes back (a new incarnation) and takes its partitions back.
	ms[2] = startNode(t, log, 3)
	waitSettled(t, ms, []int32{1, 2, 3})
	if err := ms[1].Close(); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, []*Membership{ms[0], ms[2]}, []int32{1, 3})
	ms[0].Close()
	ms[2].Close()
}

// TestStateNotices: a notice written by one instance reaches the others
// (a value on StateNotices), not itself; notices written before an instance
// started do not; and notices do not change the view.
func TestStateNotices(t *testing.T) {
	log := memlog.New(memlog.Config{})
	a, b := startNode(t, log, 1), startNode(t, log, 2)
	defer a.Close()
	waitSettled(t, []*Membership{a, b}, []int32{1, 2})
	received := func(m *Membership, within time.Duration) bool {
		select {
		case <-m.StateNotices():
			return true
		case <-time.After(within):
			return false
		}
	}
	a.NoticeStateChange()
	if !received(b, 5*time.Second) {
		t.Fatal("node 2 did not receive node 1's notice")
	}
	if received(a, 300*time.Millisecond) {
		t.Fatal("node 1 received its own notice")
	}
	if a.noticesSent.Load() != 1 || b.noticesRead.Load() != 1 || a.noticesRead.Load() != 0 {
		t.Fatalf("notices: node 1 sent %d, read %d; node 2 read %d; want 1, 0, 1",
			a.noticesSent.Load(), a.noticesRead.Load(), b.noticesRead.Load())
	}
	// A node started after the notice reads it in its first tail: no
	// value (its views are read whole at start anyway).
	c := startNode(t, log, 3)
	defer c.Close()
	waitSettled(t, []*Membership{a, b, c}, []int32{1, 2, 3})
	if received(c, 300*time.Millisecond) {
		t.Fatal("node 3 received a notice written before it started")
	}
	// Notices change nothing in the membership: the view stays.
	settledView, _ := a.View()
	for range 20 {
		a.NoticeStateChange()
		time.Sleep(5 * time.Millisecond)
	}
	if !received(c, 5*time.Second) {
		t.Fatal("node 3 did not receive node 1's notices")
	}
	for _, m := range []*Membership{a, b, c} {
		if v, _ := m.View(); v != settledView {
			t.Errorf("view %d after notices, was %d", v, settledView)
		}
	}
	b.Close()
}

// TestHoldDelaysHandover: an append in flight on the old leader keeps the
// new leader from serving the partition until it ends.
func TestHoldDelaysHandover(t *testing.T) {
	log := memlog.New(memlog.Config{})
	a := startNode(t, log, 1)
	waitSettled(t, []*Membership{a}, []int32{1})
	tok := a.Hold()
	b := startNode(t, log, 2)
	var moved int32 = -1
	for p := range int32(64) {
		if pick([]int32{1, 2}, partitionKey("t", p)) == 2 {
			moved = p
			break
		}
	}
	// Once node 2 leads the partition, for 300 ms (7 heartbeats) it must
	// not serve it while node 1 holds an append.
	testtools.WaitFor(t, 10*time.Second, "node 2 to lead the moved partition", func() bool { return b.Leader("t", moved).Leader == 2 })
	if !testtools.Consistently(300*time.Millisecond, func() bool { r := b.Leader("t", moved); return r.Leader == 2 && !r.Serving }) {
		t.Fatalf("partition %d while node 1 holds an append: %+v, want led by 2, not served yet", moved, b.Leader("t", moved))
	}
	a.Release(tok)
	waitSettled(t, []*Membership{a, b}, []int32{1, 2})
	a.Close()
	b.Close()
}

// TestCloseWaitsForAppends: a graceful leave is written only once the
// appends in flight have ended, so the next leader never overlaps them.
func TestCloseWaitsForAppends(t *testing.T) {
	log := memlog.New(memlog.Config{})
	a := startNode(t, log, 1)
	b := startNode(t, log, 2)
	waitSettled(t, []*Membership{a, b}, []int32{1, 2})
	tok := a.Hold()
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(100 * time.Millisecond) // the append in flight lasts 100 ms
		released <- time.Now()
		a.Release(tok)
	}()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	if r := <-released; closed.Before(r) {
		t.Fatalf("Close returned at %v, before the append ended at %v", closed, r)
	}
	waitSettled(t, []*Membership{b}, []int32{2})
	b.Close()
}

// TestStatic: a fixed peer list spreads partitions and groups like the
// membership does, with epoch 0, and refuses a bad list.
func TestStatic(t *testing.T) {
	peers := []store.Broker{{NodeID: 2, Endpoints: []store.Endpoint{{Host: "b", Port: 2}}}, {NodeID: 1, Endpoints: []store.Endpoint{{Host: "a", Port: 1}}}}
	s1, err := NewStatic(1, peers)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := NewStatic(2, peers)
	if b := s1.Brokers(); len(b) != 2 || b[0].NodeID != 1 {
		t.Fatalf("brokers %+v", b)
	}
	for p := range int32(32) {
		r1, r2 := s1.Leader("t", p), s2.Leader("t", p)
		if r1.Leader != r2.Leader || r1.Epoch != 0 || r1.Serving == r2.Serving || r1.Leader != pick([]int32{1, 2}, partitionKey("t", p)) {
			t.Fatalf("partition %d: %+v and %+v", p, r1, r2)
		}
	}
	if n1, l1 := s1.Coordinator("g"); func() bool { n2, l2 := s2.Coordinator("g"); return n1 != n2 || l1 == l2 }() {
		t.Fatal("coordinators disagree")
	}
	if _, err := NewStatic(3, peers); err == nil {
		t.Error("a node outside the list was accepted")
	}
	if _, err := NewStatic(1, append(peers, peers[0])); err == nil {
		t.Error("a duplicate node id was accepted")
	}
}
