//go:build !race

package memlog

import (
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestTrimAmortised: once a partition is at its cap, an append costs far
// less than one allocation on average (a trim that copied the entry slice
// made every append allocate and copy all entries).
func TestTrimAmortised(t *testing.T) {
	l := New(Config{PartitionBytes: 1 << 20, ChunkSize: 64 << 10})
	l.CreateTopic(ctx, "t", 1, store.TopicConfig{})
	b := batchOf("a fixed-size message")
	for range 20000 {
		l.Append(ctx, "t", 0, b)
	}
	wm, _ := l.Watermarks(ctx, "t", 0)
	if wm.LogStart == 0 {
		t.Fatal("the cap was not reached")
	}
	if n := testing.AllocsPerRun(5000, func() { l.Append(ctx, "t", 0, b) }); n > 0.2 {
		t.Fatalf("%.2f allocations per append at the cap", n)
	}
}

// TestReadAllocs: reading stored messages allocates nothing.
func TestReadAllocs(t *testing.T) {
	l := New(Config{})
	l.CreateTopic(ctx, "t", 1, store.TopicConfig{})
	l.Append(ctx, "t", 0, batchOf("a", "b", "c"))
	n := 0
	fn := func(*message.Message) bool { n++; return true }
	if a := testing.AllocsPerRun(100, func() { l.Read(ctx, "t", 0, 0, 1<<20, fn) }); a != 0 {
		t.Fatalf("Read allocates %v times", a)
	}
	if n == 0 {
		t.Fatal("nothing read")
	}
}
