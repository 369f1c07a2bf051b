package iggy

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

func startCluster(t *testing.T, n int) *iggytest.Cluster {
	t.Helper()
	c := iggytest.NewCluster(n, iggytest.Config{})
	c.ElectionDelay = 300 * time.Millisecond
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// refuseForASecond kills node 2 of c and makes it the primary of topic's
// partition 0, so that every live node answers its appends 58, as an Iggy
// 0.9 cluster whose replica 0 is down answers for a topic created while it
// is; a second after the first refusal, the partition goes back to the
// metadata primary.
func refuseForASecond(c *iggytest.Cluster, topic string) {
	c.Kill(2)
	c.SetPartitionPrimary(topic, 0, 2)
	go func() {
		testtools.Eventually(10*time.Second, func() bool { return c.Refusals(0)+c.Refusals(1) > 0 })
		time.Sleep(time.Second) // how long the partition has no live primary
		c.SetPartitionPrimary(topic, 0, -1)
	}()
}

// TestClusterStartOnBackup: pointed at a backup, the client finds the
// primary from the cluster metadata and writes there (a backup answers
// writes with 58).
func TestClusterStartOnBackup(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: cl.Addr(2), PoolSize: 2})
	if addr, _ := c.target(); !sameAddr(addr, cl.Addr(0)) {
		t.Fatalf("sessions go to %s, want the primary %s", addr, cl.Addr(0))
	}
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "t", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if base, err := c.Append(cx, "t", 0, batchOf(1, "m", 3)); err != nil || base != 0 {
		t.Fatalf("append: %d %v", base, err)
	}
	// A dead seed first is skipped.
	c2 := open(t, Config{Addr: "127.0.0.1:1," + cl.Addr(1), PoolSize: 1})
	if _, err := c2.Append(cx, "t", 0, batchOf(1, "n", 1)); err != nil {
		t.Fatal(err)
	}
}

// TestClusterFailoverFromOneSeed: a client given one seed, the primary,
// knows the other nodes from the cluster metadata, and when the primary is
// killed it finds the new one among them: its seed is dead.
func TestClusterFailoverFromOneSeed(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: cl.Addr(cl.Primary()), PoolSize: 1, RequestTimeout: 2 * time.Second,
		ReconnectBackoffMax: 200 * time.Millisecond})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "s", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	old := cl.Primary()
	cl.Kill(old)
	var err error
	if !testtools.Eventually(15*time.Second, func() bool {
		_, err = c.Append(cx, "s", 0, batchOf(1, "after", 1))
		return err == nil
	}) {
		t.Fatalf("no append taken after the primary (node %d) was killed: %v", old, err)
	}
	if addr, _ := c.target(); !sameAddr(addr, cl.Addr(cl.Primary())) || cl.Primary() == old {
		t.Fatalf("sessions go to %s; primary is node %d, old %d", addr, cl.Primary(), old)
	}
}

// TestClusterFailover kills the primary under a steady append load: the
// client finds the new primary by itself, appends resume, every append it
// confirmed is stored where it was confirmed, and the restarted old primary
// rejoins without the client noticing.
func TestClusterFailover(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 4, RequestTimeout: 2 * time.Second,
		ReconnectBackoffMax: 200 * time.Millisecond})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "f", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	type confirmed struct {
		p    int32
		base int64
		tag  string
	}
	var mu sync.Mutex
	var acks []confirmed
	var failed int
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := int32(i % 2)
				tag := string(rune('a'+w)) + "-" + time.Now().Format("150405.000000000") + "-"
				base, err := c.Append(cx, "f", p, batchOf(1, tag, 2))
				mu.Lock()
				if err == nil {
					acks = append(acks, confirmed{p, base, tag})
				} else {
					failed++
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // paces the load: an append every 2 ms per writer
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acks) }
	waitAcks := func(n int) {
		t.Helper()
		if !testtools.Eventually(15*time.Second, func() bool { return count() >= n }) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("only %d appends confirmed (%d failed)", len(acks), failed)
		}
	}
	waitAcks(50)
	old := cl.Primary()
	killed := time.Now()
	cl.Kill(old)
	at := count()
	waitAcks(at + 50)
	resumed := time.Since(killed)
	if err := cl.Restart(old); err != nil {
		t.Fatal(err)
	}
	waitAcks(count() + 50)
	close(stop)
	wg.Wait()

	if addr, _ := c.target(); !sameAddr(addr, cl.Addr(cl.Primary())) || cl.Primary() == old {
		t.Fatalf("sessions go to %s; primary is node %d (%s), old %d", addr, cl.Primary(), cl.Addr(cl.Primary()), old)
	}
	for _, a := range acks {
		got, _ := readAll(t, c, "f", a.p, a.base, 1<<20)
		if len(got) < 2 || got[0].off != a.base || got[0].payload != a.tag+"0" || got[1].payload != a.tag+"1" {
			t.Fatalf("append confirmed at %d/%d (%s) reads back %+v", a.p, a.base, a.tag, got[:min(2, len(got))])
		}
	}
	var m strings.Builder
	c.WriteMetrics(&m)
	for _, want := range []string{"kiggy_iggy_failovers_total 1\n", "kiggy_iggy_primary_changes_total 1\n", "kiggy_iggy_cluster_nodes 3\n",
		"kiggy_iggy_failover_duration_seconds_count 1\n", "kiggy_iggy_primary_unknown 0\n"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(m.String(), "kiggy_iggy_primary", "kiggy_iggy_fail", "kiggy_iggy_cluster"))
		}
	}
	t.Logf("confirmed %d, failed %d, resumed %v after the kill", len(acks), failed, resumed.Round(time.Millisecond))
}

func grepLines(s string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestClusterReadRetried: a read whose session still points at the killed
// primary is sent again to the new primary within its deadline instead of
// failing.
func TestClusterReadRetried(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 1, RequestTimeout: 2 * time.Second})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "r", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "r", 0, batchOf(1, "m", 3)); err != nil {
		t.Fatal(err)
	}
	cl.Kill(cl.Primary())
	got, wm := readAll(t, c, "r", 0, 0, 1<<20)
	if len(got) != 3 || wm.High != 3 {
		t.Fatalf("read after the kill: %d messages, high %d", len(got), wm.High)
	}
	if w, err := c.Watermarks(cx, "r", 0); err != nil || w.High != 3 {
		t.Fatalf("watermarks after the failover: %+v %v", w, err)
	}
}

// TestClusterNotReadyWithoutPrimary: while no primary is reachable (the
// primary killed, the survivors not yet agreed on a new one) Ready fails and
// kiggy_iggy_primary_unknown is 1; once the new primary is found Ready
// succeeds again.
func TestClusterNotReadyWithoutPrimary(t *testing.T) {
	cl := iggytest.NewCluster(3, iggytest.Config{})
	cl.ElectionDelay = 1500 * time.Millisecond
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 1, RequestTimeout: 500 * time.Millisecond})
	cx := ctx(t)
	// The fresh cluster's election may still be settling at the first
	// request: ready once it has a primary.
	testtools.WaitFor(t, 10*time.Second, "ready after the start", func() bool { return c.Ready(cx) == nil })
	cl.Kill(cl.Primary())
	// The next request finds the primary gone and starts looking.
	_ = c.Ready(cx)
	if err := c.Ready(cx); err == nil {
		t.Fatal("ready while no primary is known")
	}
	var m strings.Builder
	c.WriteMetrics(&m)
	if !strings.Contains(m.String(), "kiggy_iggy_primary_unknown 1\n") {
		t.Fatalf("primary_unknown not set:\n%s", grepLines(m.String(), "kiggy_iggy_primary"))
	}
	testtools.WaitFor(t, 10*time.Second, "ready again after the election", func() bool { return c.Ready(cx) == nil })
}

// TestMetadataWritesAfterViewChange: a view change the old primary
// survives turns it into a backup that answers metadata writes with 58;
// CreateTopic, CreatePartitions and DeleteTopic are sent again to the new
// primary instead of failing (seen on a real cluster: a CreateTopics that
// met a view change was answered UNKNOWN_SERVER_ERROR).
func TestMetadataWritesAfterViewChange(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 1, RequestTimeout: 5 * time.Second,
		ReconnectBackoffMax: 200 * time.Millisecond})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "before", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	cl.MoveView()
	if _, err := c.CreateTopic(cx, "after", 2, store.TopicConfig{}); err != nil {
		t.Fatalf("CreateTopic after a view change: %v", err)
	}
	cl.MoveView()
	if err := c.CreatePartitions(cx, "after", 3); err != nil {
		t.Fatalf("CreatePartitions after a view change: %v", err)
	}
	cl.MoveView()
	if err := c.DeleteTopic(cx, "before"); err != nil {
		t.Fatalf("DeleteTopic after a view change: %v", err)
	}
	if info, err := c.Topic(cx, "after"); err != nil || info.Partitions != 3 {
		t.Fatalf("after: %+v %v, want 3 partitions", info, err)
	}
	if _, err := c.Topic(cx, "before"); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("before: %v, want deleted", err)
	}
}
