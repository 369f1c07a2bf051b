package iggy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// metricLine returns the value of one unlabelled series of c's metrics.
func metricLine(t *testing.T, c *Client, name string) string {
	t.Helper()
	var m strings.Builder
	c.WriteMetrics(&m)
	for _, l := range strings.Split(m.String(), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	t.Fatalf("no series %s", name)
	return ""
}

// TestPartitionPrimaryReroute: a partition whose own primary is not the
// metadata primary (its backups, the metadata primary included, answer 58)
// takes appends and commits through a reroute to the node that accepts;
// every confirmed append is where it was confirmed; its reads come from its
// route; a second move of the partition primary is followed, and giving it
// back to the metadata primary drops the route. The other partition stays
// on the metadata primary throughout.
func TestPartitionPrimaryReroute(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 2, RequestTimeout: 2 * time.Second, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "p", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	type ack struct {
		p    int32
		base int64
		tag  string
	}
	var acks []ack
	appendTo := func(p int32, tag string) {
		t.Helper()
		base, err := c.Append(cx, "p", p, batchOf(1, tag, 2))
		if err != nil {
			t.Fatalf("append %s to partition %d: %v", tag, p, err)
		}
		acks = append(acks, ack{p, base, tag})
	}
	appendTo(0, "a")
	appendTo(1, "b")
	if got := metricLine(t, c, "kiggy_iggy_routed_partitions"); got != "0" {
		t.Fatalf("routed partitions %s before any move", got)
	}

	cl.SetPartitionPrimary("p", 1, 2) // metadata primary stays node 0
	for i := range 5 {
		appendTo(1, fmt.Sprintf("c%d-", i))
		appendTo(0, fmt.Sprintf("d%d-", i))
	}
	if got := metricLine(t, c, "kiggy_iggy_routed_partitions"); got != "1" {
		t.Fatalf("routed partitions %s, want 1", got)
	}
	if got := metricLine(t, c, "kiggy_iggy_partition_reroutes_total"); got != "1" {
		t.Fatalf("reroutes %s, want 1 (one per move, not per request)", got)
	}
	if err := c.CommitOffset(cx, "g", "p", 1, 3, "m"); err != nil {
		t.Fatalf("commit on the rerouted partition: %v", err)
	}
	reads0, reads2 := cl.PartitionReads(0, "p", 1), cl.PartitionReads(2, "p", 1)
	if off, _, ok, err := c.FetchOffset(cx, "g", "p", 1); err != nil || !ok || off != 3 {
		t.Fatalf("fetch offset: %d %v %v", off, ok, err)
	}
	if got, _ := readAll(t, c, "p", 1, 0, 1<<20); len(got) != 12 {
		t.Fatalf("rerouted partition reads %d messages, want 12", len(got))
	}
	if n0, n2 := cl.PartitionReads(0, "p", 1)-reads0, cl.PartitionReads(2, "p", 1)-reads2; n0 != 0 || n2 < 2 {
		t.Fatalf("reads of the rerouted partition: %d on the metadata primary, %d on its route (want 0 and ≥ 2)", n0, n2)
	}
	topics0, topics2 := cl.Reads(0, proto.CodeGetTopic), cl.Reads(2, proto.CodeGetTopic)
	if wm, err := c.Watermarks(cx, "p", 1); err != nil || wm.High != 12 {
		t.Fatalf("watermarks of the rerouted partition: %+v %v", wm, err)
	}
	if n0, n2 := cl.Reads(0, proto.CodeGetTopic)-topics0, cl.Reads(2, proto.CodeGetTopic)-topics2; n0 != 0 || n2 != 1 {
		t.Fatalf("watermarks of the rerouted partition: %d GetTopic on the metadata primary, %d on its route (want 0 and 1)", n0, n2)
	}

	// 57 on the route is replayed there, as on the primary (§1.8); the
	// route stays.
	cl.Node(2).InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Status: uint32(proto.CodeTransientNotCommitted), Count: 2})
	appendTo(1, "r")
	if got := metricLine(t, c, "kiggy_iggy_partition_reroutes_total"); got != "1" {
		t.Fatalf("reroutes %s after a 57 on the route, want 1", got)
	}

	cl.SetPartitionPrimary("p", 1, 1) // a second move
	appendTo(1, "e")
	if got := metricLine(t, c, "kiggy_iggy_partition_reroutes_total"); got != "2" {
		t.Fatalf("reroutes %s after the second move, want 2", got)
	}
	reads1 := cl.PartitionReads(1, "p", 1)
	readAll(t, c, "p", 1, 0, 1<<20)
	if cl.PartitionReads(1, "p", 1) == reads1 {
		t.Fatal("after the second move the partition is not read from its new primary")
	}

	cl.SetPartitionPrimary("p", 1, -1) // back on the metadata primary
	appendTo(1, "f")
	if got := metricLine(t, c, "kiggy_iggy_routed_partitions"); got != "0" {
		t.Fatalf("routed partitions %s after the partition came back, want 0", got)
	}
	if addr, _ := c.target(); !sameAddr(addr, cl.Addr(0)) {
		t.Fatalf("metadata primary moved to %s", addr)
	}
	for _, a := range acks {
		got, _ := readAll(t, c, "p", a.p, a.base, 1<<20)
		if len(got) < 2 || got[0].off != a.base || got[0].payload != a.tag+"0" || got[1].payload != a.tag+"1" {
			t.Fatalf("append confirmed at %d/%d (%s) reads back %+v", a.p, a.base, a.tag, got[:min(2, len(got))])
		}
	}
}

// TestPartitionRouteAfterFailover: with a partition routed to its own
// primary, the metadata primary is killed: the client follows the new
// metadata primary, the route set under the old view is dropped, and the
// partition, still led by its own node, is rerouted again.
func TestPartitionRouteAfterFailover(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 2, RequestTimeout: 2 * time.Second,
		ReconnectBackoffMax: 200 * time.Millisecond, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "q", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	cl.SetPartitionPrimary("q", 1, 2)
	if _, err := c.Append(cx, "q", 1, batchOf(1, "a", 1)); err != nil {
		t.Fatal(err)
	}
	cl.Kill(0)
	n, ok0, ok1 := 0, false, false
	var err0, err1 error
	if !testtools.Eventually(10*time.Second, func() bool {
		n++
		if !ok0 {
			_, err0 = c.Append(cx, "q", 0, batchOf(1, "b", 1))
			ok0 = err0 == nil
		}
		if !ok1 {
			_, err1 = c.Append(cx, "q", 1, batchOf(1, "c", 1))
			ok1 = err1 == nil
		}
		return ok0 && ok1
	}) {
		t.Fatalf("appends after the metadata failover: %v / %v", err0, err1)
	}
	if addr, _ := c.target(); !sameAddr(addr, cl.Addr(1)) {
		t.Fatalf("sessions go to %s, want the new metadata primary %s", addr, cl.Addr(1))
	}
	if got := metricLine(t, c, "kiggy_iggy_routed_partitions"); got != "1" {
		t.Fatalf("routed partitions %s, want 1", got)
	}
	if got := metricLine(t, c, "kiggy_iggy_partition_reroutes_total"); got != "2" {
		t.Fatalf("reroutes %s, want 2 (once per view)", got)
	}
	if got, wm := readAll(t, c, "q", 1, 0, 1<<20); len(got) != 2 || wm.High != 2 {
		t.Fatalf("partition 1 reads %d messages, high %d", len(got), wm.High)
	}
	t.Logf("%d failed rounds during the failover", n)
}

// TestSingleServerNoReroute: a single server's 58 on a partition write is
// replayed on the same connection as before (§1.8); no route, no routed
// pool, no extra connection.
func TestSingleServerNoReroute(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	c := open(t, Config{Addr: addr, PoolSize: 1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "s", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	connects := metricLine(t, c, "kiggy_iggy_connects_total")
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Status: uint32(proto.CodeTransientNotAccepted), Count: 2})
	if base, err := c.Append(cx, "s", 0, batchOf(1, "x", 2)); err != nil || base != 0 {
		t.Fatalf("append through 58: %d %v", base, err)
	}
	srv.InjectFault(iggytest.Fault{Op: proto.OpStoreConsumerOffset, Status: uint32(proto.CodeTransientNotAccepted), Count: 2})
	if err := c.CommitOffset(cx, "g", "s", 0, 1, ""); err != nil {
		t.Fatalf("commit through 58: %v", err)
	}
	if got := metricLine(t, c, "kiggy_iggy_connects_total"); got != connects {
		t.Fatalf("connects went from %s to %s", connects, got)
	}
	if got := metricLine(t, c, "kiggy_iggy_transient_retries_total"); got != "4" {
		t.Fatalf("%s replays, want 4 (two per 58-answered write)", got)
	}
	c.routes.mu.Lock()
	pools := len(c.routes.pools)
	c.routes.mu.Unlock()
	if pools != 0 || metricLine(t, c, "kiggy_iggy_routed_partitions") != "0" {
		t.Fatalf("%d routed pools on a single server", pools)
	}
}

// TestPartitionRouteNodeKilled: the node a partition is routed to dies (and
// the partition's primaryship returns to the metadata primary, as its
// consensus group elects the next replica): the route is dropped at the
// first failure and the partition's writes go back to the metadata primary.
func TestPartitionRouteNodeKilled(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 2, RequestTimeout: time.Second, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "k", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	cl.SetPartitionPrimary("k", 0, 2)
	if _, err := c.Append(cx, "k", 0, batchOf(1, "a", 1)); err != nil {
		t.Fatal(err)
	}
	cl.Kill(2)
	cl.SetPartitionPrimary("k", 0, -1)
	failed := 0
	for {
		_, err := c.Append(cx, "k", 0, batchOf(1, "b", 1))
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrUnknownOutcome) && !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("append after the routed node died: %v", err)
		}
		if failed++; failed > 2 {
			t.Fatalf("%d appends failed after the routed node died: %v", failed, err)
		}
	}
	if got := metricLine(t, c, "kiggy_iggy_routed_partitions"); got != "0" {
		t.Fatalf("routed partitions %s after the routed node died, want 0", got)
	}
	if addr, _ := c.target(); !sameAddr(addr, cl.Addr(0)) {
		t.Fatalf("metadata primary moved to %s", addr)
	}
}

// TestPartitionRouteTopicAliasesBuffer: a topic name that aliases a
// request buffer (wire's decoded strings do, until the frame is reused)
// must not become the route's key. Seen on the real 3-node cluster
// (docs/MANUAL_TESTING.md, 2026-12-01, late-node runs): the buffer reused
// for the next request changed the stored key, the route was not found
// again, every further append paid a 58 and a new reroute, and
// kiggy_iggy_routed_partitions counted 10 routes for a 6-partition topic.
func TestPartitionRouteTopicAliasesBuffer(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 2, RequestTimeout: 2 * time.Second, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "p", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	cl.SetPartitionPrimary("p", 1, 2)
	for i := range 5 {
		buf := []byte("p") // one request's frame
		topic := unsafe.String(unsafe.SliceData(buf), len(buf))
		if _, err := c.Append(cx, topic, 1, batchOf(1, fmt.Sprintf("a%d-", i), 2)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		buf[0] = 'q' // the frame reused for another request
	}
	if got := metricLine(t, c, "kiggy_iggy_partition_reroutes_total"); got != "1" {
		t.Fatalf("reroutes %s, want 1: the route was lost when the buffer changed", got)
	}
	if got := metricLine(t, c, "kiggy_iggy_routed_partitions"); got != "1" {
		t.Fatalf("routed partitions %s, want 1", got)
	}
}

// TestJoinedAppendReroute: a joined append (AppendJoined, one SendMessages
// written from several batches' buffers) to a partition whose own primary
// is another node is refused with 58 by the metadata primary and sent again,
// as one contiguous copy, to the node that accepts; the next joined append
// goes straight to the route. Both read back whole, in order.
func TestJoinedAppendReroute(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 2, RequestTimeout: 2 * time.Second, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "jr", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	cl.SetPartitionPrimary("jr", 1, 2)
	joined := func(tag string) []*message.Batch {
		bs := []*message.Batch{stampedBatchOf(1_000, tag+"a", 3), stampedBatchOf(1_200, tag+"b", 2)}
		bs[0].Rebase(1_000, 0)
		bs[1].Rebase(1_000, 3)
		return bs
	}
	for i, tag := range []string{"x", "y"} {
		base, err := c.AppendJoined(cx, "jr", 1, joined(tag))
		if err != nil || base != int64(5*i) {
			t.Fatalf("joined append %s = %d, %v; want base %d", tag, base, err, 5*i)
		}
	}
	if got := metricLine(t, c, "kiggy_iggy_partition_reroutes_total"); got != "1" {
		t.Fatalf("reroutes %s, want 1", got)
	}
	got, _ := readAll(t, c, "jr", 1, 0, 1<<20)
	var want []string
	for _, tag := range []string{"x", "y"} {
		want = append(want, tag+"a0", tag+"a1", tag+"a2", tag+"b0", tag+"b1")
	}
	if len(got) != len(want) {
		t.Fatalf("read %d messages, want %d", len(got), len(want))
	}
	for i, m := range got {
		if m.off != int64(i) || m.payload != want[i] {
			t.Fatalf("message %d: offset %d %q, want %q", i, m.off, m.payload, want[i])
		}
	}
}

// TestPartitionRouteAsked: on 0.12 a partition write refused by the
// metadata primary goes straight to the partition's primary that
// GetPartitionRoute names; no other backup is tried. On 0.11 the roster is
// tried in order, the other backup first (which shows the test can fail).
func TestPartitionRouteAsked(t *testing.T) {
	for _, d := range proto.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			cl := iggytest.NewCluster(3, iggytest.Config{Dialects: []proto.Dialect{d}})
			if err := cl.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)
			c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 2, RequestTimeout: 2 * time.Second})
			cx := ctx(t)
			if _, err := c.CreateTopic(cx, "asked", 1, store.TopicConfig{}); err != nil {
				t.Fatal(err)
			}
			primary := cl.Primary()
			other, owner := (primary+1)%3, (primary+2)%3
			cl.SetPartitionPrimary("asked", 0, owner)
			if _, err := c.Append(cx, "asked", 0, batchOf(1, "r", 2)); err != nil {
				t.Fatal(err)
			}
			tried := cl.Refusals(other)
			switch {
			case d == proto.Dialect012 && tried != 0:
				t.Fatalf("0.12: node %d (not the partition's primary) was tried %d times", other, tried)
			case d == proto.Dialect011 && tried == 0:
				t.Fatalf("0.11: node %d was not tried: the roster order changed, so the 0.12 case proves nothing", other)
			}
		})
	}
}

// TestAppendWaitsOutRefusals: an append every live node refuses (58: its
// partition's primary is the dead node, as a new topic's is while an Iggy
// 0.9 cluster's replica 0 is down) is sent again until the partition takes
// it, within the caller's deadline, and is stored once; with no time left
// before the deadline's margin, the refusal is returned at once, as
// store.ErrUnavailable (nothing stored: the gateway answers
// NOT_LEADER_OR_FOLLOWER).
func TestAppendWaitsOutRefusals(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 2, RequestTimeout: 2 * time.Second})
	cx := ctx(t)
	for _, topic := range []string{"waits", "short"} {
		if _, err := c.CreateTopic(cx, topic, 1, store.TopicConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	refuseForASecond(cl, "waits")
	if base, err := c.Append(cx, "waits", 0, stampedBatchOf(1, "w", 2)); err != nil || base != 0 {
		t.Fatalf("append through a second of refusals: %d %v", base, err)
	}
	if cl.Refusals(0)+cl.Refusals(1) < 2 {
		t.Fatalf("refusals %d and %d: the append was not refused everywhere", cl.Refusals(0), cl.Refusals(1))
	}
	if got, wm := readAll(t, c, "waits", 0, 0, 1<<20); len(got) != 2 || wm.High != 2 {
		t.Fatalf("stored %d messages, high %d, want 2 (once)", len(got), wm.High)
	}
	if w, out := metricLine(t, c, "kiggy_iggy_refused_writes_retried_total"), metricLine(t, c, "kiggy_iggy_refused_writes_taken_total"); w != "1" || out != "1" {
		t.Fatalf("refusal waits %s, waited out %s, want 1 and 1", w, out)
	}

	cl.SetPartitionPrimary("short", 0, 2) // node 2 is dead
	short, cancel := context.WithTimeout(cx, refusalMargin/2)
	defer cancel()
	before := cl.Refusals(0) + cl.Refusals(1)
	_, err := c.Append(short, "short", 0, stampedBatchOf(1, "s", 1))
	if !errors.Is(err, store.ErrUnavailable) || codeOf(err) != proto.CodeTransientNotAccepted {
		t.Fatalf("append with no time to wait: %v, want store.ErrUnavailable of a 58", err)
	}
	if tries := cl.Refusals(0) + cl.Refusals(1) - before; tries != 2 {
		t.Fatalf("%d refusals, want 2 (each live node once, not sent again)", tries)
	}
	if w, out := metricLine(t, c, "kiggy_iggy_refused_writes_retried_total"), metricLine(t, c, "kiggy_iggy_refused_writes_taken_total"); w != "2" || out != "1" {
		t.Fatalf("refusal waits %s, waited out %s, want 2 and 1", w, out)
	}
}

// TestOffsetWritesWaitOutRefusals: a consumer offset's store, and its
// deletion (a commit of offset 0), that every live node refuses (for a
// second, and for 300 ms after the first refusal) are sent
// again until the partition takes them, as appends are, and the commits
// read back through a client opened after.
func TestOffsetWritesWaitOutRefusals(t *testing.T) {
	cl := startCluster(t, 3)
	addrs := strings.Join(cl.Addrs(), ",")
	c := open(t, Config{Addr: addrs, PoolSize: 2, RequestTimeout: 2 * time.Second})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "o", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if _, err := c.Append(cx, "o", p, stampedBatchOf(1, "r", 3)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CommitOffset(cx, "g", "o", 1, 1, ""); err != nil {
		t.Fatal(err)
	}
	refuseForASecond(cl, "o")
	if err := c.CommitOffset(cx, "g", "o", 0, 2, "m"); err != nil {
		t.Fatalf("commit through a second of refusals: %v", err)
	}
	cl.SetPartitionPrimary("o", 1, 2) // node 2 is dead
	before := cl.Refusals(0) + cl.Refusals(1)
	go func() {
		testtools.Eventually(10*time.Second, func() bool { return cl.Refusals(0)+cl.Refusals(1) > before })
		time.Sleep(300 * time.Millisecond) // how long the partition has no live primary
		cl.SetPartitionPrimary("o", 1, -1)
	}()
	if err := c.CommitOffset(cx, "g", "o", 1, 0, ""); err != nil {
		t.Fatalf("commit of offset 0 (a deletion) through refusals: %v", err)
	}
	if w, out := metricLine(t, c, "kiggy_iggy_refused_writes_retried_total"), metricLine(t, c, "kiggy_iggy_refused_writes_taken_total"); w != "2" || out != "2" {
		t.Fatalf("refusal waits %s, waited out %s, want 2 and 2", w, out)
	}
	c.Close()
	fresh := open(t, Config{Addr: addrs, PoolSize: 1})
	if off, _, ok, err := fresh.FetchOffset(cx, "g", "o", 0); err != nil || !ok || off != 2 {
		t.Fatalf("partition 0's commit read back: %d %v %v, want 2", off, ok, err)
	}
	if off, _, ok, err := fresh.FetchOffset(cx, "g", "o", 1); err != nil || (ok && off != 0) {
		t.Fatalf("partition 1's commit read back: %d %v %v, want 0 or none (its stored offset deleted)", off, ok, err)
	}
}
