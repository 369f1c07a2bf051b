package txn

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/wire"
)

// clusterNode is one instance's coordinator over a store shared with
// others: markers for partitions it does not lead go to the leader's
// coordinator (as WriteTxnMarkers would carry them), and resolutions of
// groups it does not coordinate to the group's.
type clusterNode struct {
	*env
	id      int32
	leaders func(topic string, partition int32) *clusterNode
	groups  func(group string) *clusterNode
	owns    func(id string) bool
	sent    atomic.Int32 // markers sent to another node
}

func newClusterNodes(t *testing.T, n int) []*clusterNode {
	t.Helper()
	shared := newEnv(t)
	var nodes []*clusterNode
	for i := range n {
		e := &env{be: shared.be, st: shared.st, clk: shared.clk, cfg: shared.cfg}
		node := &clusterNode{env: e, id: int32(i + 1)}
		nodes = append(nodes, node)
	}
	for _, node := range nodes {
		node.cfg.Cluster = &Cluster{
			SendMarker: func(ctx context.Context, topic string, partition int32, m mapping.Control) (bool, error) {
				l := node.leaders(topic, partition)
				if l == node {
					return false, nil
				}
				node.sent.Add(1)
				return true, l.c.ApplyMarker(ctx, topic, partition, m)
			},
			ResolveGroup: func(_ context.Context, group string, m mapping.Control) (bool, error) {
				g := node.groups(group)
				g.c.ResolvePending(m.ProducerID, group)
				return g == node, nil
			},
			Own: func(id string) (func(), bool) { return func() {}, node.owns(id) },
		}
		node.c = New(node.cfg, node.be, node.st)
	}
	return nodes
}

// TestClusterMarkersAtLeaders: the coordinator's markers are applied by
// each partition's leader, whose index the transaction opened at its first
// append there; an abort lands in the leader's aborted index, which a
// leader taking the partition over loads.
func TestClusterMarkersAtLeaders(t *testing.T) {
	nodes := newClusterNodes(t, 2)
	a, b := nodes[0], nodes[1]
	for _, n := range nodes {
		n.leaders = func(_ string, p int32) *clusterNode { return nodes[p%2] }
		n.groups = func(string) *clusterNode { return b }
		n.owns = func(string) bool { return n == a }
	}
	a.be.setHW("t", 0, 10)
	a.be.setHW("t", 1, 20)
	pid, epoch := a.init(t, "x")
	a.add(t, "x", pid, epoch, parts("t/0", "t/1")...)
	if _, open := b.c.Index.OpenFirst("t", 1, pid); open {
		t.Fatal("the leader knew of the transaction before its first append there")
	}
	// The first append at each leader opens the transaction there.
	for p, n := range []*clusterNode{a, b} {
		check := func() (Produce, wire.ErrorCode) { return a.c.CheckProduce(pid, epoch, "t", int32(p)) }
		if n != a {
			check = nil
		}
		pr, code := n.c.AdmitAppend(ctx, pid, epoch, "t", int32(p), check)
		if code != wire.NoError {
			t.Fatalf("partition %d: AdmitAppend: %v", p, code)
		}
		a.be.produce("t", int32(p), 3)
		pr.Done()
	}
	if f, open := b.c.Index.OpenFirst("t", 1, pid); !open || f != 20 {
		t.Fatalf("leader b: open from %d (%v), want 20", f, open)
	}
	a.end(t, "x", pid, epoch, false)
	if a.sent.Load() != 1 {
		t.Fatalf("%d markers sent to the other leader, want 1", a.sent.Load())
	}
	if got := b.c.Index.AbortedList("t", 1); len(got) != 1 || got[0].ProducerID != pid || got[0].First != 20 {
		t.Fatalf("leader b's aborted index %+v", got)
	}
	if got := a.c.Index.AbortedList("t", 0); len(got) != 1 || got[0].First != 10 {
		t.Fatalf("leader a's aborted index %+v", got)
	}
	if _, touched := a.c.Index.Touched("t", 1); touched {
		t.Fatal("the coordinator holds state of a partition another instance leads")
	}
	// A third instance takes partition 1 over: it loads b's aborted index.
	c := newClusterNodes(t, 1)[0]
	c.env.st, c.env.be = a.st, a.be
	c.c = New(c.cfg, c.be, c.st)
	snap, err := c.c.LoadSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.c.SyncPartitions(snap, func(string, int32) bool { return true }, func(_ string, p int32) bool { return p == 1 })
	if got := c.c.Index.AbortedList("t", 1); len(got) != 1 || got[0].First != 20 {
		t.Fatalf("the new leader's aborted index %+v", got)
	}
	if _, touched := c.c.Index.Touched("t", 0); touched {
		t.Fatal("the new leader loaded a partition that did not move to it")
	}
}

// TestClusterFencedZombie: once a marker of a newer epoch ended the
// producer's transaction at a leader (its coordinator fenced it), the
// leader refuses the old epoch's batches; the new epoch's open a new
// transaction there.
func TestClusterFencedZombie(t *testing.T) {
	nodes := newClusterNodes(t, 1)
	l := nodes[0]
	m := mapping.Control{ProducerID: 7, ProducerEpoch: 3}
	pr, code := l.c.AdmitAppend(ctx, 7, 2, "t", 0, nil)
	if code != wire.NoError {
		t.Fatal(code)
	}
	pr.Done()
	if err := l.c.ApplyMarker(ctx, "t", 0, m); err != nil {
		t.Fatal(err)
	}
	if _, code := l.c.AdmitAppend(ctx, 7, 2, "t", 0, nil); code != wire.InvalidProducerEpoch {
		t.Fatalf("a zombie's batch: %v, want INVALID_PRODUCER_EPOCH", code)
	}
	pr, code = l.c.AdmitAppend(ctx, 7, 3, "t", 0, nil)
	if code != wire.NoError {
		t.Fatalf("the new epoch: %v", code)
	}
	pr.Done()
	if _, open := l.c.Index.OpenFirst("t", 0, 7); !open {
		t.Fatal("the new epoch's transaction is not open")
	}
}

// TestClusterMarkerWaitsForAppends: a marker applied at a leader waits for
// the transaction's appends admitted before it.
func TestClusterMarkerWaitsForAppends(t *testing.T) {
	l := newClusterNodes(t, 1)[0]
	pr, code := l.c.AdmitAppend(ctx, 9, 0, "t", 0, nil)
	if code != wire.NoError {
		t.Fatal(code)
	}
	var applied atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := l.c.ApplyMarker(ctx, "t", 0, mapping.Control{ProducerID: 9, Commit: true}); err != nil {
			t.Error(err)
		}
		applied.Store(true)
	})
	time.Sleep(50 * time.Millisecond)
	if applied.Load() {
		t.Fatal("the marker was applied while an append of its transaction was in flight")
	}
	pr.Done()
	wg.Wait()
	if !applied.Load() {
		t.Fatal("the marker was not applied")
	}
}

// TestClusterAdoptAfterMove: the instance that takes an id over loads its
// stored state, completes a prepared transaction, and the instance that
// lost it drops it.
func TestClusterAdoptAfterMove(t *testing.T) {
	nodes := newClusterNodes(t, 2)
	a, b := nodes[0], nodes[1]
	owner := a
	for _, n := range nodes {
		n.leaders = func(string, int32) *clusterNode { return a }
		n.groups = func(string) *clusterNode { return a }
		n.owns = func(string) bool { return owner == n }
	}
	pid, epoch := a.init(t, "y")
	a.add(t, "y", pid, epoch, parts("t/0")...)
	// a prepares a commit and dies before its markers: its state is
	// PrepareCommit in the store.
	e := a.c.lockEntry("y")
	next := e.t.clone()
	next.State = PrepareCommit
	if err := a.c.persist(ctx, &next); err != nil {
		t.Fatal(err)
	}
	e.mu.Unlock()
	owner = b
	snap, err := b.c.LoadSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if loaded := b.c.Adopt(snap, b.owns, func(string) bool { return true }); len(loaded) != 1 || loaded[0] != "y" {
		t.Fatalf("adopted %v, want [y]", loaded)
	}
	b.c.Recover(ctx)
	if got := b.describe(t, "y"); got.State != CompleteCommit {
		t.Fatalf("after the takeover: %v, want CompleteCommit", got.State)
	}
	a.c.Adopt(snap, a.owns, func(string) bool { return false })
	if _, ok := a.c.Describe("y"); ok {
		t.Fatal("the instance that lost the id still holds it")
	}
}

// TestClusterPendingOffsets: a group's coordinator holds the offsets it
// forwarded as pending until the transaction's coordinator resolves them;
// a sync resolves what a lost notice left and notes what moved here.
func TestClusterPendingOffsets(t *testing.T) {
	g := newClusterNodes(t, 1)[0]
	g.c.NotePending("z", 5, "grp", []Offset{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}})
	if !g.c.PendingOffset("grp", "t", 1) || g.c.PendingOffset("grp", "t", 2) {
		t.Fatal("pending offsets not as noted")
	}
	g.c.ResolvePendingWhere(5, func(group string) bool { return group == "other" })
	if !g.c.PendingOffset("grp", "t", 0) {
		t.Fatal("resolved for another group")
	}
	g.c.ResolvePendingWhere(5, func(group string) bool { return group == "grp" })
	if g.c.PendingOffset("grp", "t", 0) || g.c.RemotePending() {
		t.Fatal("not resolved")
	}
	// A sync: z is complete in the store, w is ongoing with offsets for a
	// group that moved here.
	g.c.NotePending("z", 5, "grp", []Offset{{Topic: "t", Partition: 0}})
	snap := &Snapshot{Txns: map[string]Txn{
		"z": {ID: "z", ProducerID: 5, State: CompleteCommit},
		"w": {ID: "w", ProducerID: 6, State: Ongoing, Groups: []GroupOffsets{{Group: "moved", Offsets: []Offset{{Topic: "u", Partition: 3}}}}},
	}}
	g.c.SyncPending(snap, func(string) bool { return false }, func(string) bool { return true })
	if g.c.PendingOffset("grp", "t", 0) {
		t.Fatal("a completed transaction's offsets are still pending")
	}
	if !g.c.PendingOffset("moved", "u", 3) {
		t.Fatal("a moved group's open transaction's offsets are not pending")
	}
}
