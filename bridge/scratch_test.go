package bridge

import (
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
)

// TestScratchRetentionBounded: a pooled state keeps at most
// maxRetainedScratch of concurrent-request scratch, and no single buffer
// over its own cap.
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
	if sumParts > maxRetainedScratch || sumBatches > maxRetainedScratch || sumParts == 0 || sumBatches == 0 {
		t.Fatalf("kept %d and %d bytes; want 0 < kept ≤ %d", sumParts, sumBatches, maxRetainedScratch)
	}
	if len(fs.parts) > maxRetainedFanout || len(f.batches) > maxRetainedFanout {
		t.Fatalf("kept %d readers, %d batches", len(fs.parts), len(f.batches))
	}
}
