package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestSnapshotRoundTrip: a snapshot record decodes to what was encoded,
// refuses every truncation and a trailing byte, and the state it restores
// answers the same views and epochs as the state it was taken from, except
// that a partition whose leader did not change within the views kept gets
// the oldest kept view as its epoch, never a lower one.
func TestSnapshotRoundTrip(t *testing.T) {
	s := newState(1000)
	hb := func(ts uint64, n int32) {
		s.apply(ts, record{kind: kindHeartbeat, node: n, incarnation: uint64(n), applied: 3,
			endpoints: []store.Endpoint{{Host: fmt.Sprintf("h%d", n), Port: 9000 + n}}})
	}
	hb(1, 1)
	hb(2, 2)
	// Node 3 joins and leaves often enough to push the list of views past
	// what a snapshot keeps.
	ts := uint64(3)
	for len(s.views) < maxSnapshotViews+100 {
		hb(ts, 3)
		s.apply(ts+1, record{kind: kindLeave, node: 3, incarnation: 3})
		hb(ts+2, 1)
		hb(ts+3, 2)
		ts += 4
	}
	hb(ts, 3)
	ss := s.snapshot(5, 1234)
	b := appendRecord(nil, record{kind: kindSnapshot, snap: ss})
	r, err := decodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.kind != kindSnapshot || !reflect.DeepEqual(r.snap, ss) {
		t.Fatalf("round trip: got %+v, want %+v", r.snap, ss)
	}
	for i := 0; i < len(b); i += 1 + i/64 {
		if _, err := decodeRecord(b[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: decoded", i)
		}
	}
	if _, err := decodeRecord(b[:len(b)-1]); err == nil {
		t.Fatal("one byte short: decoded")
	}
	if _, err := decodeRecord(append(b, 0)); err == nil {
		t.Fatal("trailing byte: decoded")
	}
	if len(ss.views) != maxSnapshotViews || ss.base != s.view()-maxSnapshotViews+1 {
		t.Fatalf("snapshot keeps %d views from %d; state at view %d", len(ss.views), ss.base, s.view())
	}
	restored := stateFrom(1000, r.snap)
	if restored.view() != s.view() || !slices.Equal(restored.live(), s.live()) || restored.now != s.now {
		t.Fatalf("restored view %d live %v now %d, want %d %v %d", restored.view(), restored.live(), restored.now, s.view(), s.live(), s.now)
	}
	floored := 0
	for p := range int32(300) {
		k := partitionKey("t", p)
		before := epochOf(s.views, s.base, s.view(), k)
		after := epochOf(restored.views, restored.base, restored.view(), k)
		switch {
		case uint64(before) >= restored.base && after != before:
			t.Fatalf("partition %d: epoch %d → %d though its last move is kept", p, before, after)
		case uint64(before) < restored.base && uint64(after) != restored.base:
			t.Fatalf("partition %d: epoch %d → %d, want the floor %d", p, before, after, restored.base)
		case uint64(before) < restored.base:
			floored++
		}
	}
	// The same records applied after the snapshot give the same views.
	for i := range 10 {
		for _, st := range []*state{s, restored} {
			st.apply(ts+uint64(10*i), record{kind: kindLeave, node: 3, incarnation: 3})
			st.apply(ts+uint64(10*i+1), record{kind: kindHeartbeat, node: 3, incarnation: 3})
		}
	}
	if restored.view() != s.view() || !slices.Equal(restored.views[len(restored.views)-1], s.views[len(s.views)-1]) {
		t.Fatalf("after more records: views %d and %d", restored.view(), s.view())
	}
	t.Logf("%d of 300 partitions got the floor epoch %d (their leader never changed with node 3)", floored, restored.base)
}

// iggyLogs opens n clients of one iggytest server and returns their system
// stream logs, as n kiggy instances would use them.
func iggyLogs(t *testing.T, n int) (addr string, logs []*iggy.Client) {
	t.Helper()
	srv := iggytest.New(iggytest.Config{})
	a, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for range n {
		logs = append(logs, openIggy(t, a.String()))
	}
	return a.String(), logs
}

func openIggy(t *testing.T, addr string) *iggy.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := iggy.Open(ctx, iggy.Config{Addr: addr, RequestTimeout: 2 * time.Second, CommitTail: time.Second, Logger: slog.New(slog.DiscardHandler),
		Username: os.Getenv("KIGGY_IGGY_USERNAME"), Password: os.Getenv("KIGGY_IGGY_PASSWORD")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// genOf is the membership log generation m reads.
func genOf(m *Membership) uint32 { return m.snap.Load().gen }

// waitGen waits until every membership reads generation ≥ g.
func waitGen(t *testing.T, ms []*Membership, g uint32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, m := range ms {
		if !testtools.Eventually(time.Until(deadline), func() bool { return genOf(m) >= g }) {
			t.Fatalf("node %d still reads generation %d, want %d", m.cfg.NodeID, genOf(m), g)
		}
	}
}

// epochWatch samples the memberships' epochs and fails when one goes back.
type epochWatch struct {
	mu   sync.Mutex
	last map[[2]int32]int32
	errs []string
}

func (w *epochWatch) sample(ms []*Membership) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range ms {
		for p := range int32(64) {
			r := m.Leader("t", p)
			k := [2]int32{m.cfg.NodeID, p}
			if prev, ok := w.last[k]; ok && r.Epoch < prev {
				w.errs = append(w.errs, fmt.Sprintf("node %d partition %d: epoch %d → %d", m.cfg.NodeID, p, prev, r.Epoch))
			}
			w.last[k] = r.Epoch
		}
	}
}

func generationTopics(t *testing.T, c *iggy.Client) []string {
	t.Helper()
	topics, err := c.SystemLog().Topics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tp := range topics {
		if strings.HasPrefix(tp.Name, "members") {
			out = append(out, tp.Name)
		}
	}
	return out
}

// TestMembershipCompaction: over Iggy, the membership log switches to new
// generations while three instances heartbeat and one leaves and comes
// back; an instance that starts afterwards reads only the newest
// generation (a snapshot and what followed), and derives the same view
// number, live set, leaders and epochs as the ones that lived through the
// switches; no epoch goes back; old generations are deleted.
func TestMembershipCompaction(t *testing.T) {
	const every = 30 // records per generation
	_, cs := iggyLogs(t, 4)
	var w epochWatch
	w.last = map[[2]int32]int32{}
	ms := []*Membership{startNodeCompacting(t, cs[0].SystemLog(), 1, every), startNodeCompacting(t, cs[1].SystemLog(), 2, every), startNodeCompacting(t, cs[2].SystemLog(), 3, every)}
	defer func() {
		for _, m := range ms {
			m.Abandon()
		}
	}()
	stop := make(chan struct{})
	done := make(chan struct{})
	var sampled sync.Mutex
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			sampled.Lock()
			w.sample(ms)
			sampled.Unlock()
		}
	}()
	waitSettled(t, ms, []int32{1, 2, 3})
	waitGen(t, ms, 2)
	// A view change between switches: node 3 leaves and comes back.
	if err := ms[2].Close(); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, ms[:2], []int32{1, 2})
	waitGen(t, ms[:2], genOf(ms[0])+1)
	sampled.Lock()
	ms[2] = startNodeCompacting(t, cs[2].SystemLog(), 3, every)
	sampled.Unlock()
	waitSettled(t, ms, []int32{1, 2, 3})
	g := genOf(ms[0])
	waitGen(t, ms, g+2)
	close(stop)
	<-done
	// A fourth instance starts now: it reads the newest generation only.
	late := startNodeCompacting(t, cs[3].SystemLog(), 4, every)
	ms = append(ms, late)
	if genOf(late) < g+2 || late.replayed > every+20 {
		t.Fatalf("the late instance read %d records from generation %d (switching every %d records)", late.replayed, genOf(late), every)
	}
	waitSettled(t, ms, []int32{1, 2, 3, 4})
	if len(w.errs) > 0 {
		t.Fatalf("epochs went back: %v", w.errs[:min(len(w.errs), 5)])
	}
	if topics := generationTopics(t, cs[0]); len(topics) > 3 {
		t.Fatalf("generations left: %v", topics)
	}
	t.Logf("generation %d; the late instance read %d records", genOf(late), late.replayed)
}

// TestMembershipConcurrentSwitch: two instances write a switch into one
// generation at once, and every instance races to write the next
// generation's snapshot: they all end in the same one next generation
// with the same state, and so does an instance started afterwards.
func TestMembershipConcurrentSwitch(t *testing.T) {
	_, cs := iggyLogs(t, 4)
	ms := []*Membership{startNode(t, cs[0].SystemLog(), 1), startNode(t, cs[1].SystemLog(), 2), startNode(t, cs[2].SystemLog(), 3)}
	defer func() {
		for _, m := range ms {
			m.Abandon()
		}
	}()
	waitSettled(t, ms, []int32{1, 2, 3})
	var wg sync.WaitGroup
	for _, m := range ms[:2] {
		// Generation 0 is named before either write: the other's switch may
		// already have moved this instance on, and a switch written into
		// generation 1 would rightly make a generation 2.
		gen0 := m.genTopic(0)
		wg.Go(func() {
			if _, err := m.write(context.Background(), gen0, record{kind: kindSwitch, node: m.cfg.NodeID, incarnation: m.inc}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	waitGen(t, ms, 1)
	// No second generation follows in 200 ms.
	var bad *Membership
	if !testtools.Consistently(200*time.Millisecond, func() bool {
		for _, m := range ms {
			if genOf(m) != 1 {
				bad = m
				return false
			}
		}
		return true
	}) {
		t.Fatalf("node %d reads generation %d after two switches into generation 0", bad.cfg.NodeID, genOf(bad))
	}
	ms = append(ms, startNode(t, cs[3].SystemLog(), 4))
	waitSettled(t, ms, []int32{1, 2, 3, 4})
	if genOf(ms[3]) != 1 {
		t.Fatalf("the late instance reads generation %d", genOf(ms[3]))
	}
}

// TestMembershipSwitchCrash: the compactor (node 1) dies right after
// writing its switch, before the next generation exists, or after creating
// it but before writing its snapshot (its steps are replayed here on its
// own Iggy client, which is then closed, after its loops stopped without a
// word). The others finish the switch, take node 1's partitions once it
// times out, and an instance started afterwards derives the same views and
// epochs.
func TestMembershipSwitchCrash(t *testing.T) {
	for _, created := range []bool{false, true} {
		t.Run(fmt.Sprintf("created=%v", created), func(t *testing.T) {
			_, cs := iggyLogs(t, 4)
			ms := []*Membership{startNode(t, cs[0].SystemLog(), 1), startNode(t, cs[1].SystemLog(), 2), startNode(t, cs[2].SystemLog(), 3)}
			defer func() {
				for _, m := range ms {
					m.Abandon()
				}
			}()
			waitSettled(t, ms, []int32{1, 2, 3})
			a := ms[0]
			a.Abandon()
			cx := context.Background()
			if _, err := a.write(cx, *a.topic.Load(), record{kind: kindSwitch, node: 1, incarnation: a.inc}); err != nil {
				t.Fatal(err)
			}
			if created {
				if _, err := cs[0].SystemLog().CreateTopic(cx, a.genTopic(1), 1, store.TopicConfig{}); err != nil {
					t.Fatal(err)
				}
			}
			cs[0].Close()
			waitGen(t, ms[1:], 1)
			waitSettled(t, ms[1:], []int32{2, 3})
			ms = append(ms, startNode(t, cs[3].SystemLog(), 4))
			waitSettled(t, ms[1:], []int32{2, 3, 4})
			if genOf(ms[3]) != 1 {
				t.Fatalf("the late instance reads generation %d", genOf(ms[3]))
			}
		})
	}
}

// TestStartAfterCutShortSwitch: an instance that starts while the newest
// generation exists but is empty (its writer died before the snapshot)
// reads the generation before, reaches its switch and writes the snapshot
// itself.
func TestStartAfterCutShortSwitch(t *testing.T) {
	_, cs := iggyLogs(t, 2)
	a := startNode(t, cs[0].SystemLog(), 1)
	waitSettled(t, []*Membership{a}, []int32{1})
	a.Abandon()
	cx := context.Background()
	if _, err := a.write(cx, *a.topic.Load(), record{kind: kindSwitch, node: 1, incarnation: a.inc}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].SystemLog().CreateTopic(cx, a.genTopic(1), 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	b := startNode(t, cs[1].SystemLog(), 2)
	defer b.Abandon()
	if genOf(b) != 1 {
		t.Fatalf("started at generation %d", genOf(b))
	}
	waitSettled(t, []*Membership{b}, []int32{2})
	if v, _ := b.View(); v < 2 {
		t.Fatalf("view %d: node 1's join was not carried over", v)
	}
}

// TestMembershipReplayFigures measures what an instance that starts reads
// from a membership log of 100,000 heartbeats (three nodes, a day of about
// 9 hours at 1 s): all of it before a compaction, the newest generation
// after. Figures for docs/design/cluster.md §12; run with KIGGY_MEASURE=1,
// against a real iggy-server (a fresh one) with KIGGY_IGGY_ADDR,
// KIGGY_IGGY_USERNAME and KIGGY_IGGY_PASSWORD.
func TestMembershipReplayFigures(t *testing.T) {
	if os.Getenv("KIGGY_MEASURE") == "" {
		t.Skip("set KIGGY_MEASURE=1 to measure")
	}
	var cs []*iggy.Client
	if addr := os.Getenv("KIGGY_IGGY_ADDR"); addr != "" {
		cs = []*iggy.Client{openIggy(t, addr), openIggy(t, addr)}
	} else {
		_, cs = iggyLogs(t, 2)
	}
	log := cs[0].SystemLog()
	cx := context.Background()
	if _, err := log.CreateTopic(cx, "members", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	const total = 100_000
	for i := 0; i < total; {
		var b message.Batch
		b.Reset(uint64(time.Now().UnixMicro()))
		for j := 0; j < 1000 && i < total; j, i = j+1, i+1 {
			n := int32(1 + i%3)
			b.Begin(b.Origin)
			b.Buf = appendRecord(b.Buf, record{kind: kindHeartbeat, node: n, incarnation: uint64(n), applied: 3,
				endpoints: []store.Endpoint{{Host: "kiggy-" + strconv.Itoa(int(n)) + ".example", Port: 9092}}})
			b.MarkHeaders()
			b.End()
		}
		if _, err := log.Append(cx, "members", 0, &b); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	a := startNode(t, log, 1)
	before := time.Since(start)
	defer a.Abandon()
	t.Logf("before: Start read %d records in %v", a.replayed, before)
	if _, err := a.write(cx, *a.topic.Load(), record{kind: kindSwitch, node: 1, incarnation: a.inc}); err != nil {
		t.Fatal(err)
	}
	waitGen(t, []*Membership{a}, 1)
	// Some heartbeats in the new generation: five more records (40 ms apart).
	gen := *a.topic.Load()
	high := func() int64 {
		wm, err := log.Watermarks(cx, gen, 0)
		if err != nil {
			return -1
		}
		return wm.High
	}
	switched := high()
	testtools.WaitFor(t, 10*time.Second, "five heartbeats in the new generation", func() bool { return switched >= 0 && high() >= switched+5 })
	start = time.Now()
	b := startNode(t, cs[1].SystemLog(), 2)
	after := time.Since(start)
	defer b.Abandon()
	t.Logf("after: Start read %d records (the snapshot and what followed) in %v", b.replayed, after)
}

// TestCloseAcrossSwitch: a graceful leave written just after a switch (the
// leaving instance had not read it yet) is written again into the next
// generation, so the others see the leave at once, not after the timeout.
func TestCloseAcrossSwitch(t *testing.T) {
	_, cs := iggyLogs(t, 2)
	start := func(c *iggy.Client, id int32) *Membership {
		m, err := Start(context.Background(), Config{NodeID: id, Log: c.SystemLog(), Heartbeat: 250 * time.Millisecond, Timeout: 10 * time.Second,
			Endpoints: []store.Endpoint{{Host: "127.0.0.1", Port: 9000 + id}}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := start(cs[0], 1), start(cs[1], 2)
	defer b.Abandon()
	waitSettled(t, []*Membership{a, b}, []int32{1, 2})
	if _, err := b.write(context.Background(), *b.topic.Load(), record{kind: kindSwitch, node: 2, incarnation: b.inc}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	waitSettled(t, []*Membership{b}, []int32{2})
	if d := time.Since(closed); d > 3*time.Second || genOf(b) != 1 {
		t.Fatalf("the leave was seen after %v at generation %d (timeout 10 s)", d, genOf(b))
	}
}
