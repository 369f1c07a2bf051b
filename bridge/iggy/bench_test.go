package iggy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// BenchmarkAppend sends a 100 × 1 KiB batch to iggytest over loopback per
// op. The server runs in a child process, so allocs/op is the client's.
func BenchmarkAppend(b *testing.B) {
	// window=true keeps a copy of every append for readers at the tail
	// (tailwindow.go): its cost on the produce path, side by side, each
	// against a server of its own (the model holds what it was sent, and
	// a fuller one is a slower one).
	for _, window := range []int64{-1, DefaultTailWindowBytes} {
		b.Run(fmt.Sprintf("window=%v", window > 0), func(b *testing.B) {
			addr := startServerProcess(b)
			c := open(b, Config{Addr: addr, Stream: fmt.Sprintf("bench%d", time.Now().UnixNano()), PoolSize: 1, PingInterval: -1, TailWindowBytes: window})
			benchAppend(b, c)
		})
	}
}

func benchAppend(b *testing.B, c *Client) {
	cx := context.Background()
	if _, err := c.CreateTopic(cx, "bench", 1, store.TopicConfig{}); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 1024)
	batch := message.Batch{Checksums: true} // stamped as the gateway's are
	batch.Reset(1_700_000_000_000_000)
	for i := range 100 {
		batch.Begin(batch.Origin + uint64(i))
		batch.AppendPayload(payload...)
		batch.MarkHeaders()
		batch.AppendHeader(message.KindString, "kafka.v", message.KindRaw, []byte{1})
		batch.End()
	}
	b.SetBytes(int64(batch.Size()))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Append(cx, "bench", 0, &batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead polls 100 × 1 KiB messages from iggytest (child process) per op.
func BenchmarkRead(b *testing.B) {
	addr := startServerProcess(b)
	c := open(b, Config{Addr: addr, PoolSize: 1, PingInterval: -1})
	cx := context.Background()
	c.CreateTopic(cx, "rbench", 1, store.TopicConfig{})
	payload := make([]byte, 1024)
	var batch message.Batch
	batch.Reset(1)
	for i := range 100 {
		batch.Begin(1 + uint64(i))
		batch.AppendPayload(payload...)
		batch.MarkHeaders()
		batch.End()
	}
	c.Append(cx, "rbench", 0, &batch)
	n := 0
	fn := func(*message.Message) bool { n++; return true }
	b.SetBytes(int64(batch.Size()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Read(cx, "rbench", 0, 0, 1<<20, fn); err != nil {
			b.Fatal(err)
		}
	}
	if n == 0 {
		b.Fatal("nothing read")
	}
}

// BenchmarkCommitOffset commits one offset per op (past the end of an
// empty partition: the commit log alone holds it) to iggytest in a child
// process, alone and in a cluster (CommitTail: the log is read up to the
// commit before it is answered, docs/design/cluster.md §9).
func BenchmarkCommitOffset(b *testing.B) {
	for _, tail := range []struct {
		name string
		d    time.Duration
	}{{"alone", 0}, {"cluster", 200 * time.Millisecond}} {
		b.Run(tail.name, func(b *testing.B) {
			addr := startServerProcess(b)
			c := open(b, Config{Addr: addr, PoolSize: 1, PingInterval: -1, CommitTail: tail.d})
			cx := context.Background()
			if _, err := c.CreateTopic(cx, "bench", 1, store.TopicConfig{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := int64(0)
			for b.Loop() {
				i++
				if err := c.CommitOffset(cx, "g", "bench", 0, i, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
