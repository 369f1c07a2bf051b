package proto

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/zeebo/xxh3"
)

// TestStampAndSeal: the one-walk stamp and seal writes exactly what
// StampFrames and SealBatch write, for batches of fewer and more frames than
// one checksum chunk holds, the result passes ValidateBatch, and frames that
// do not tile fail.
func TestStampAndSeal(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 200} {
		var b message.Batch
		b.Reset(5000)
		for i := range n {
			b.Begin(5000 + uint64(i))
			b.AppendPayloadString(fmt.Sprintf("payload-%d", i))
			b.MarkHeaders()
			b.AppendHeader(message.KindString, "k", message.KindRaw, []byte{byte(i)})
			b.End()
		}
		a := bytes.Clone(b.Frames())
		if err := StampFrames(a, n); err != nil {
			t.Fatal(err)
		}
		ha := make([]byte, BatchHeaderSize)
		SealBatch(xxh3.New(), ha, a, n, b.Origin)

		fr := b.Frames()
		hb := make([]byte, BatchHeaderSize)
		if err := StampAndSeal(xxh3.New(), hb, fr, n, b.Origin); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, fr) || !bytes.Equal(ha, hb) {
			t.Fatalf("%d frames: StampAndSeal differs from StampFrames + SealBatch", n)
		}
		if err := ValidateBatch(xxh3.New(), append(hb, fr...), uint32(n)); err != nil {
			t.Fatalf("%d frames: %v", n, err)
		}
		if err := StampAndSeal(xxh3.New(), hb, fr[:len(fr)-1], n, b.Origin); err == nil {
			t.Fatalf("%d frames: a short batch sealed", n)
		}
		if err := StampAndSeal(xxh3.New(), hb, fr, n-1, b.Origin); err == nil {
			t.Fatalf("%d frames: a count below the frames sealed", n)
		}
	}
}
