package iggy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// bigBatch builds n messages of size bytes whose payloads start with their
// offset from from ("%08d").
func bigBatch(from, n, size int) *message.Batch {
	pad := strings.Repeat("x", size-8)
	var b message.Batch
	b.Reset(1)
	for i := range n {
		b.Begin(uint64(1 + i))
		b.AppendPayloadString(fmt.Sprintf("%08d", from+i) + pad)
		b.MarkHeaders()
		b.End()
	}
	return &b
}

// readBig reads a partition of bigBatch messages from offset 0 until want
// arrived, maxBytes per Read, checking offsets and payloads.
func readBig(t *testing.T, c *Client, topic string, want, maxBytes int) {
	t.Helper()
	cx := ctx(t)
	next := int64(0)
	deadline := time.Now().Add(15 * time.Second)
	for next < int64(want) {
		var bad error
		_, err := c.Read(cx, topic, 0, next, maxBytes, func(m *message.Message) bool {
			if m.Offset != next || len(m.Payload) < 8 || string(m.Payload[:8]) != fmt.Sprintf("%08d", next) {
				bad = fmt.Errorf("message at offset %d (payload %.8q), want offset %d", m.Offset, m.Payload, next)
				return false
			}
			next++
			return true
		})
		if err != nil {
			t.Fatalf("Read at offset %d: %v", next, err)
		}
		if bad != nil {
			t.Fatal(bad)
		}
		if time.Now().After(deadline) {
			t.Fatalf("stuck at offset %d of %d", next, want)
		}
	}
}

// TestReadLargeMessagesOverFrameLimit: Iggy bounds a poll by
// its message count only, so a count sized from small messages asks a
// partition of large ones for a reply over the frame limit. The session
// reads past that reply and the poll asks again for fewer messages, instead
// of dropping the connection and asking the same again forever (the
// read-back of 64 KiB records stalled at offset 0). The frame limit is
// lowered to 256 KiB so 64 KiB messages show it; with and without the read
// cache, and with the client's running size at 1 KiB from another topic.
func TestReadLargeMessagesOverFrameLimit(t *testing.T) {
	for _, cacheBytes := range []int64{0, -1} {
		t.Run(fmt.Sprintf("cache=%d", cacheBytes), func(t *testing.T) {
			addr, stream := target(t)
			c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2, ReadCacheBytes: cacheBytes, TailWindowBytes: -1}) // the poll path
			c.maxReply = 256 << 10
			cx := ctx(t)
			for _, tp := range []string{"small", "big"} {
				if _, err := c.CreateTopic(cx, tp, 1, store.TopicConfig{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Append(cx, "small", 0, bigBatch(0, 200, 1000)); err != nil {
				t.Fatal(err)
			}
			readBig(t, c, "small", 200, 1<<20)
			for i := range 4 {
				if _, err := c.Append(cx, "big", 0, bigBatch(i*10, 10, 64<<10)); err != nil {
					t.Fatal(err)
				}
			}
			readBig(t, c, "big", 40, 1<<20)
			if c.cache != nil && c.cache.shrinks.Load() == 0 {
				t.Fatal("no poll was asked again with fewer messages: the test did not reach the frame limit")
			}
			// Each reply over the limit counts as a protocol error of
			// PollMessages (docs/METRICS.md).
			out := scrape(c)
			if strings.Contains(out, `kiggy_iggy_request_errors_total{command="PollMessages",kind="protocol"} 0`+"\n") ||
				!strings.Contains(out, `kiggy_iggy_request_errors_total{command="PollMessages",kind="protocol"}`) {
				t.Fatalf("the replies over the limit were not counted as protocol errors:\n%s", out)
			}
		})
	}
}

// TestReadMessageLargerThanBudget: a Read whose budget is smaller than the
// next message still returns that message (Kafka's KIP-74: a Fetch makes
// progress with a record batch larger than its byte budget), here 1 MiB
// messages (Kafka's default max.message.bytes) read 64 KiB at a time.
func TestReadMessageLargerThanBudget(t *testing.T) {
	for _, cacheBytes := range []int64{0, -1} {
		t.Run(fmt.Sprintf("cache=%d", cacheBytes), func(t *testing.T) {
			addr, stream := target(t)
			c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2, ReadCacheBytes: cacheBytes, TailWindowBytes: -1}) // the poll path
			cx := ctx(t)
			if _, err := c.CreateTopic(cx, "mib", 1, store.TopicConfig{}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := c.Append(cx, "mib", 0, bigBatch(i*2, 2, 1<<20-200)); err != nil {
					t.Fatal(err)
				}
			}
			readBig(t, c, "mib", 6, 64<<10)
		})
	}
}
