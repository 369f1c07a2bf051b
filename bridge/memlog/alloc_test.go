//go:build !race

package memlog

import (
	"testing"

	"github.com/kiggy-io/kiggy/bridge"
)

// TestTrimAmortised: once a partition is at its cap, an append costs far
// less than one allocation on average (a trim that copied the entry slice
// made every append allocate and copy all entries).
func TestTrimAmortised(t *testing.T) {
	l := New(Config{PartitionBytes: 1 << 20, ChunkSize: 64 << 10})
	l.CreateTopic(ctx, "t", 1, bridge.TopicConfig{})
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
