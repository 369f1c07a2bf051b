package iggy

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// fuzzTopics names each FuzzTailWindow input's topic.
var fuzzTopics atomic.Int64

// FuzzTailWindow interleaves appends through a client with the tail window
// (single and joined, some with ServerTime), appends by another writer,
// appends of unknown outcome, and Reads at any offset with any budget, on
// one partition of an in-process iggytest server. The model is the
// partition as a client without a cache reads it: every Read must deliver
// a non-empty prefix of what the model holds from its offset on (never
// another message, never a gap), and with sole set (no other writer) a
// Read at the high watermark must answer exactly it, with no message.
func FuzzTailWindow(f *testing.F) {
	f.Add(false, []byte{0, 3, 2, 0, 40, 1, 2, 2, 1, 9, 0, 1, 2, 5, 3})
	f.Add(true, []byte{0, 3, 2, 0, 40, 3, 2, 2, 1, 9, 4, 0, 1, 2, 5, 3, 2, 200})
	f.Add(false, []byte{1, 5, 0, 2, 2, 0, 0, 1, 1, 2, 3, 1, 2, 7, 8})
	fuzzTail(f, false)
}

// FuzzTailCheck is FuzzTailWindow with a seventh operation, a tail check of
// the topic (tailcheck.go) run at once, and, without sole, a client that
// trusts an exact high watermark for an hour: a Read at the tail may then
// miss what the other writer appended since the last poll or check (no
// message), but never gets a wrong message or a gap, and right after a
// check every Read below the log's end delivers.
func FuzzTailCheck(f *testing.F) {
	f.Add(false, []byte{0, 3, 2, 6, 1, 2, 2, 6, 3, 9, 0, 5, 6, 1, 4, 3, 2})
	f.Add(false, []byte{1, 5, 0, 6, 3, 1, 2, 6, 0, 2, 2, 3, 0, 1, 6, 4, 2, 7})
	f.Add(true, []byte{0, 3, 2, 6, 3, 2, 2, 1, 9, 6, 4, 0, 1})
	fuzzTail(f, true)
}

// fuzzTail runs the tail fuzz, with the tail check operation and client
// when checks.
func fuzzTail(f *testing.F, checks bool) {
	// Each input makes a topic and deletes it after: with the model's
	// stale incarnation window (a recycled topic id polled from its deleted
	// predecessor for 300 ms, TestIncarnationFence covers it) every input
	// would wait that long on its first Read; without it the fuzzer runs
	// hundreds of inputs a second instead of one or two.
	_, addr := startServer(f, iggytest.Config{StaleIncarnationPolls: -1})
	win := open(f, Config{Addr: addr, Stream: "kafka", PoolSize: 2, TailWindowBytes: 1 << 20})
	// Another writer's appends are seen at once (no recheck interval,
	// TestTailWindowRecheck covers it), so every Read has one answer.
	win.cache.recheck = 0
	sole := open(f, Config{Addr: addr, Stream: "kafka", PoolSize: 2, TailWindowBytes: 1 << 20, SoleWriter: true})
	other := open(f, Config{Addr: addr, Stream: "kafka", PoolSize: 2, ReadCacheBytes: -1})
	numOps := byte(6)
	if checks {
		numOps = 7
		win = open(f, Config{Addr: addr, Stream: "kafka", PoolSize: 2, TailWindowBytes: 1 << 20})
		win.cache.recheck = time.Hour
	}
	f.Fuzz(func(t *testing.T, soleWriter bool, ops []byte) {
		if len(ops) > 96 {
			ops = ops[:96]
		}
		c := win
		if soleWriter {
			c = sole
		}
		cx := ctx(t)
		topic := fmt.Sprintf("fz%d", fuzzTopics.Add(1))
		if _, err := c.CreateTopic(cx, topic, 1, store.TopicConfig{}); err != nil {
			t.Fatal(err)
		}
		defer c.DeleteTopic(cx, topic)
		high := int64(0)
		// fresh: a check ran since the other writer's last append, so
		// the client knows the log's end.
		fresh := true
		next := func() byte {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		batch := func(n int, size byte, serverTime bool) *message.Batch {
			b := message.Batch{Checksums: true}
			b.Reset(1_700_000_000_000_000)
			for i := range n {
				b.Begin(b.Origin + uint64(i))
				b.AppendPayloadString(fmt.Sprintf("%d:", high+int64(i)))
				b.AppendPayloadString(strings.Repeat("p", int(size)*37))
				b.MarkHeaders()
				b.AppendHeader(message.KindString, "h", message.KindRaw, []byte{size})
				b.End()
			}
			b.ServerTime = serverTime
			return &b
		}
		for len(ops) > 0 {
			switch op := next() % numOps; op {
			case 0, 1: // an append here, or by the other writer
				w := c
				if op == 1 && !soleWriter {
					w = other
				}
				n, size := 1+int(next()%8), next()
				base, err := w.Append(cx, topic, 0, batch(n, size, size%7 == 0))
				if err != nil {
					t.Fatal(err)
				}
				high = base + int64(n)
				if w == other {
					fresh = false
				}
			case 2: // a joined append
				n1, n2, size := 1+int(next()%4), 1+int(next()%4), next()
				a := batch(n1, size, false)
				b := batch(n2, size, false)
				b.Rebase(a.Origin, a.Count)
				base, err := c.AppendJoined(cx, topic, 0, []*message.Batch{a, b})
				if err != nil {
					t.Fatal(err)
				}
				high = base + int64(n1+n2)
			case 3, 4: // a Read
				from := int64(0)
				if high > 0 {
					from = int64(next()) % (high + 1)
				}
				budget := 1 + int(next())*97
				var got []tailMsg
				wm, err := c.Read(cx, topic, 0, from, budget, func(m *message.Message) bool {
					got = append(got, tailMsg{m.Offset, m.OriginTimestamp, m.ID, string(m.Payload), string(m.Headers)})
					return true
				})
				if err != nil {
					t.Fatal(err)
				}
				if from == high {
					if len(got) != 0 || ((soleWriter || checks && fresh) && wm.High != high) {
						t.Fatalf("read at the high watermark %d: %d messages, high %d", high, len(got), wm.High)
					}
					continue
				}
				want := readTail(t, other, topic, 0, from, high)
				if len(got) == 0 && checks && !soleWriter && !fresh {
					continue // the other writer's appends, unseen within the recheck
				}
				if len(got) == 0 || len(got) > len(want) {
					t.Fatalf("read at %d (budget %d): %d messages, the log holds %d from there", from, budget, len(got), len(want))
				}
				sameMessages(t, fmt.Sprintf("read at %d", from), got, want[:len(got)])
			case 5: // an append of unknown outcome (its effect on the cache)
				c.cache.unsure(topic, 0)
			case 6: // a tail check of the topic
				c.cache.check(&topicCheck{topic: topic})
				fresh = true
			}
		}
	})
}
