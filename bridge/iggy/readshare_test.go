package iggy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestReadsLeaveSessionsForAppends: polls hold at most Config.ReadSessions
// of the pool's sessions, so an append sent while more polls are in flight
// than the pool has sessions gets one of the others at once (docs/IGGY.md,
// "Sessions"). With the share set to the whole pool the same append waits
// behind the polls, which is what the test tells apart: the server holds
// every poll's reply for 2 s, the append is given 0.7 s. The same holds in
// the pool of a routed node (cluster partitions whose primary is not the
// metadata primary), which keeps a share of its own.
func TestReadsLeaveSessionsForAppends(t *testing.T) {
	const (
		pool  = 4
		parts = 6
	)
	for _, tc := range []struct {
		name     string
		routed   bool
		share    int
		appendOK bool
	}{
		{"default share", false, 0, true},
		{"whole pool", false, pool, false},
		{"routed, default share", true, 0, true},
		{"routed, whole pool", true, pool, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cx := ctx(t)
			var c *Client
			var node *iggytest.Server // the server that answers the partitions
			if tc.routed {
				cl := startCluster(t, 3)
				c = open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: pool, ReadSessions: tc.share, RequestTimeout: 5 * time.Second})
				for _, topic := range []string{"appends", "reads"} {
					n := map[string]int32{"appends": 1, "reads": parts}[topic]
					if _, err := c.CreateTopic(cx, topic, n, store.TopicConfig{}); err != nil {
						t.Fatal(err)
					}
					for p := range n {
						cl.SetPartitionPrimary(topic, int(p), 2) // the metadata primary stays node 0
					}
				}
				node = cl.Node(2)
			} else {
				var addr string
				node, addr = startServer(t, iggytest.Config{})
				c = openConnected(t, Config{Addr: addr, Stream: "kafka", PoolSize: pool, ReadSessions: tc.share}, "appends")
				if _, err := c.CreateTopic(cx, "reads", parts, store.TopicConfig{}); err != nil {
					t.Fatal(err)
				}
			}
			// The first append to a partition finds its route (routed), and
			// gives every poll something to return.
			if _, err := c.Append(cx, "appends", 0, seqBatch("a", 0, 1)); err != nil {
				t.Fatal(err)
			}
			for p := range int32(parts) {
				if _, err := c.Append(cx, "reads", p, seqBatch("r", 0, 1)); err != nil {
					t.Fatal(err)
				}
			}
			slots := c.reads
			if tc.routed {
				p := c.routeOf("reads", 0)
				if p == nil || c.routeOf("appends", 0) != p {
					t.Fatal("the partitions are not routed to node 2")
				}
				slots = p.reads
			}
			node.InjectFault(iggytest.Fault{Op: proto.OpNonReplicated, Code: proto.CodePollMessages, Count: parts, Delay: 2 * time.Second})
			var wg sync.WaitGroup
			errs := make(chan error, parts)
			for p := range int32(parts) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := c.Read(cx, "reads", p, 0, 1<<20, func(*message.Message) bool { return true })
					errs <- err
				}()
			}
			// The reads take every token of their share, and the other
			// reads wait for one.
			want := min(max(tc.share, pool-pool/4), pool)
			testtools.WaitFor(t, 5*time.Second, "the reads to take their share", func() bool {
				return len(slots) == want && c.metrics.readSessionWaits.Load() > 0
			})
			if !tc.routed && c.metrics.inUse.Load() != int64(want) {
				t.Errorf("%d sessions in use, want the reads' %d", c.metrics.inUse.Load(), want)
			}
			actx, cancel := context.WithTimeout(cx, 700*time.Millisecond)
			_, err := c.Append(actx, "appends", 0, seqBatch("a", 1, 1))
			cancel()
			switch {
			case tc.appendOK && err != nil:
				t.Errorf("an append beside %d polls in flight: %v; want it answered from the sessions kept for it", parts, err)
			case !tc.appendOK && !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("an append beside polls holding every session: %v; want it to wait behind them (the test cannot tell the share's effect)", err)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("read: %v", err)
				}
			}
			if got := c.metrics.inUse.Load(); got != 0 {
				t.Errorf("%d sessions in use after every request ended", got)
			}
			if got := len(slots); got != 0 {
				t.Errorf("%d read tokens held after every read ended", got)
			}
		})
	}
}
