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

// stampedBatch builds n frames from origin on, stamped as they are built
// when checksums is set.
func stampedBatch(checksums bool, origin uint64, n int, tag string) *message.Batch {
	b := &message.Batch{Checksums: checksums}
	b.Reset(origin)
	for i := range n {
		b.Begin(origin + uint64(i)*7)
		b.AppendPayloadString(fmt.Sprintf("%s-payload-%d", tag, i))
		b.MarkHeaders()
		b.AppendHeader(message.KindString, "k", message.KindRaw, []byte{byte(i)})
		b.End()
	}
	return b
}

// TestSealStamped: a batch whose frames were stamped as they were built
// (message.Batch.Checksums), and batches joined from such batches
// (message.Batch.Join, the coalesced appends), seal from their checksums
// alone to exactly what StampAndSeal writes after walking the frames, and
// pass ValidateBatch; an unstamped batch has no checksums to seal from.
func TestSealStamped(t *testing.T) {
	check := func(name string, b *message.Batch) {
		t.Helper()
		sums := b.Sums()
		if sums == nil {
			t.Fatalf("%s: no checksums", name)
		}
		hs := make([]byte, BatchHeaderSize)
		SealStamped(xxh3.New(), hs, b.Size(), b.Count, b.Origin, sums)
		walked := bytes.Clone(b.Frames())
		hw := make([]byte, BatchHeaderSize)
		if err := StampAndSeal(xxh3.New(), hw, walked, b.Count, b.Origin); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(walked, b.Frames()) || !bytes.Equal(hs, hw) {
			t.Fatalf("%s: sealed from the checksums differs from StampAndSeal", name)
		}
		if err := ValidateBatch(xxh3.New(), append(hs, b.Frames()...), uint32(b.Count)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, n := range []int{1, 64, 65, 300} {
		check(fmt.Sprint(n, " frames"), stampedBatch(true, 9_000, n, "a"))
	}
	// Joins: the first at the set's origin (its checksums taken as they
	// are), later ones shifted and renumbered, and a first member that is
	// itself shifted; unstamped members too.
	for _, c := range []struct {
		name    string
		origin  uint64
		members []*message.Batch
	}{
		{"same origin first", 9_000, []*message.Batch{stampedBatch(true, 9_000, 3, "a"), stampedBatch(true, 9_500, 70, "b")}},
		{"shifted first", 8_000, []*message.Batch{stampedBatch(true, 9_000, 5, "a"), stampedBatch(true, 9_001, 2, "b")}},
		{"unstamped members", 9_000, []*message.Batch{stampedBatch(false, 9_000, 4, "a"), stampedBatch(false, 9_100, 4, "b"), stampedBatch(true, 9_200, 1, "c")}},
	} {
		j := &message.Batch{Checksums: true}
		j.Reset(c.origin)
		var want []uint64 // every message's origin timestamp, in order
		for _, m := range c.members {
			for i := range m.Count {
				want = append(want, m.Origin+uint64(i)*7)
			}
			j.Join(m)
		}
		check(c.name, j)
		// The same set rebased in place and sealed from its pieces (a
		// joined append, written from each batch's own buffer) sends
		// exactly the joined batch's bytes.
		var pieces, sums [][]byte
		first, stamped := 0, true
		for _, m := range c.members {
			r := stampedBatch(m.Sums() != nil, m.Origin, m.Count, string(m.Frames()[message.FrameHeaderSize]))
			r.Rebase(c.origin, first)
			first += r.Count
			pieces, sums = append(pieces, r.Frames()), append(sums, r.Sums())
			stamped = stamped && r.Sums() != nil
		}
		if stamped {
			hr := make([]byte, BatchHeaderSize)
			SealStamped(xxh3.New(), hr, j.Size(), j.Count, c.origin, sums...)
			hj := make([]byte, BatchHeaderSize)
			SealStamped(xxh3.New(), hj, j.Size(), j.Count, j.Origin, j.Sums())
			if !bytes.Equal(bytes.Join(pieces, nil), j.Frames()) || !bytes.Equal(hr, hj) {
				t.Fatalf("%s: rebased in place differs from joined", c.name)
			}
		}
		fr := j.Frames()
		for i, ts := range want {
			f, err := message.ParseFrame(fr)
			if err != nil {
				t.Fatal(err)
			}
			if f.OffsetDelta != uint32(i) || j.Origin+uint64(f.TimestampDelta) != ts {
				t.Fatalf("%s: frame %d has offset delta %d, timestamp %d; want %d", c.name, i, f.OffsetDelta, j.Origin+uint64(f.TimestampDelta), ts)
			}
			fr = fr[f.Size:]
		}
	}
	if b := stampedBatch(false, 9_000, 3, "a"); b.Sums() != nil {
		t.Fatal("an unstamped batch has checksums")
	}
	// Checksums turned off after Reset: the batch is no longer stamped.
	b := &message.Batch{Checksums: true}
	b.Reset(1)
	b.Checksums = false
	b.Begin(1)
	b.MarkHeaders()
	b.End()
	if b.Sums() != nil {
		t.Fatal("a frame ended with Checksums off left the batch stamped")
	}
}
