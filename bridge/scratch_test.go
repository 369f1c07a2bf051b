package bridge

import (
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
)

// TestScratchRetentionBounded: a pooled state keeps at most
// maxRetainedScratch of concurrent-request scratch, and no single buffer
// over its own cap; a Produce's partition batches all go back to the class
// pools.
func TestScratchRetentionBounded(t *testing.T) {
	var fs fetchState
	var f produceFanout
	for range 40 {
		fs.parts = append(fs.parts, &partReader{buf: make([]byte, 0, 2<<20)})
		b := new(message.Batch)
		b.Buf = make([]byte, 0, 2<<20)
		f.batches = append(f.batches, b)
	}
	fs.parts = append(fs.parts, &partReader{buf: make([]byte, 0, maxRetainedPartBuf+1)})
	fs.trim()
	f.trim()
	sumParts, sumBatches := 0, 0
	for _, r := range fs.parts {
		sumParts += cap(r.buf)
	}
	for _, b := range f.batches {
		sumBatches += cap(b.Buf)
	}
	if sumParts > maxRetainedScratch || sumParts == 0 {
		t.Fatalf("kept %d bytes; want 0 < kept ≤ %d", sumParts, maxRetainedScratch)
	}
	if sumBatches != 0 || len(f.batches) != 0 {
		t.Fatalf("a state kept %d batches, %d bytes", len(f.batches), sumBatches)
	}
	if len(fs.parts) > maxRetainedReaders {
		t.Fatalf("kept %d readers, %d batches", len(fs.parts), len(f.batches))
	}
}

// TestBatchClasses: a pooled batch holds what it was asked for, comes back
// from its class's pool, and sizes outside the classes are not pooled.
func TestBatchClasses(t *testing.T) {
	for _, n := range []int{1, 1 << 14, 1<<14 + 1, 300 << 10, 4 << 20} {
		b := getBatch(n)
		if cap(b.Buf) < n {
			t.Fatalf("getBatch(%d): capacity %d", n, cap(b.Buf))
		}
		putBatch(b)
	}
	if b := getBatch(4<<20 + 1); cap(b.Buf) != 0 {
		t.Fatalf("a batch past the largest class came from a pool: %d", cap(b.Buf))
	}
	var f produceFanout
	b := f.batch(0, 100<<10)
	if cap(b.Buf) < 100<<10 {
		t.Fatalf("fan-out batch of %d bytes", cap(b.Buf))
	}
	if again := f.batch(0, 50<<10); again != b {
		t.Fatal("a slot left by a failed partition was not reused")
	}
	f.trim()
	if len(f.batches) != 0 {
		t.Fatal("trim kept batches")
	}
}
