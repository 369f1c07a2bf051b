package iggy

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestIncarnationFence: topics are deleted and others created at once while
// readers poll the new topics' partitions from offset 0 (read cache off
// and on). The real iggy-server recycles the deleted topic's ids and, until
// it has torn the old partitions down, answers those polls with the deleted
// topic's messages; no such message may reach a reader (incarnation.go).
// Against iggy-server 0.9.0-edge.5 without the fence, the first round
// already delivered tens of thousands of them.
func TestIncarnationFence(t *testing.T) {
	for _, rcBytes := range []int64{-1, 0} {
		t.Run(fmt.Sprintf("read-cache=%v", rcBytes >= 0), func(t *testing.T) {
			addr, stream := target(t)
			c := open(t, Config{Addr: addr, Stream: stream, ReadCacheBytes: rcBytes})
			var foreign, own atomic.Int64
			for round := range 4 {
				old, next := fmt.Sprintf("old%d", round), fmt.Sprintf("new%d", round)
				const parts = 32
				if _, err := c.CreateTopic(ctx(t), old, parts, store.TopicConfig{}); err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				for p := range parts {
					wg.Go(func() {
						for i := range 10 {
							if _, err := c.Append(ctx(t), old, int32(p), batchOf(uint64(i*100), "old-", 100)); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				stop := make(chan struct{})
				var readers sync.WaitGroup
				for p := range 8 {
					readers.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							// Errors are expected (the topic does not exist
							// yet, or a stale reply was refused): only what
							// is delivered counts.
							_, _ = c.Read(ctx(t), next, int32(p), 0, 1<<20, func(m *message.Message) bool {
								if strings.HasPrefix(string(m.Payload), "old-") {
									if foreign.Add(1) == 1 {
										e, _ := c.cached(next)
										t.Errorf("round %d: %s/%d offset %d: %q, a deleted topic's message (appended %d, topic created %d)", round, next, p, m.Offset, m.Payload, m.Timestamp, e.created)
									}
								} else {
									own.Add(1)
								}
								return true
							})
						}
					})
				}
				time.Sleep(20 * time.Millisecond) // the readers are polling before the new topic exists
				if err := c.DeleteTopic(ctx(t), old); err != nil {
					t.Fatal(err)
				}
				if _, err := c.CreateTopic(ctx(t), next, parts, store.TopicConfig{}); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Append(ctx(t), next, 0, batchOf(0, "new-", 1)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(500 * time.Millisecond) // the readers poll on through the window in which the server serves the old partitions
				close(stop)
				readers.Wait()
			}
			if n := foreign.Load(); n > 0 {
				t.Fatalf("%d messages of deleted topics read from new ones", n)
			}
			if own.Load() == 0 {
				t.Fatal("the readers never read the new topics' own message")
			}
			var m strings.Builder
			c.WriteMetrics(&m)
			for line := range strings.Lines(m.String()) {
				if strings.HasPrefix(line, "kiggy_iggy_stale_incarnation_polls_total") {
					t.Log(strings.TrimSpace(line))
				}
			}
		})
	}
}

// TestServedIncarnation012: on 0.12 a poll reply served from another
// incarnation of the partition than GetTopic named is dropped (and the
// topic looked up again); one served from the named incarnation, or a 0.11
// reply, is not.
func TestServedIncarnation012(t *testing.T) {
	c := &Client{topics: map[string]topicEntry{}}
	c.remember("t", topicEntry{partitions: 2, incarnations: []uint64{7, 9}})
	head := func(inc uint64) []byte {
		b := proto.AppendU32(nil, 0)
		b = proto.AppendU64(b, 0)
		b = proto.AppendU32(b, 0)
		return proto.AppendPartitionContext(b, proto.PartitionContext{Incarnation: inc})
	}
	if c.staleServed("t", 0, servedIncarnation(proto.Dialect012, head(7))) {
		t.Fatal("the named incarnation refused")
	}
	if c.staleServed("t", 1, servedIncarnation(proto.Dialect011, head(3))) {
		t.Fatal("a 0.11 reply has no incarnation to compare")
	}
	if c.staleServed("t", 1, 0) || c.staleServed("u", 0, 5) || c.staleServed("t", 5, 5) {
		t.Fatal("nothing known to compare with, yet refused")
	}
	if !c.staleServed("t", 1, servedIncarnation(proto.Dialect012, head(3))) {
		t.Fatal("a reply from incarnation 3 of a partition GetTopic named 9 served")
	}
	if _, ok := c.cached("t"); ok {
		t.Fatal("the topic is still cached after a stale reply")
	}
}
