package engine

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// goldenStream is three request frames as clients send them: the ApiVersions
// v4 request Java 4.0 sends (docs/design/kafka-protocol.md §1.6), an empty frame, and a
// made-up frame with a 300-byte payload.
func goldenStream() (stream []byte, frames [][]byte) {
	apiVersions := []byte{
		0x00, 0x12, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x0a, 'p', 'r', 'o', 'd', 'u', 'c', 'e', 'r', '-', '1',
		0x00,
		0x12, 'a', 'p', 'a', 'c', 'h', 'e', '-', 'k', 'a', 'f', 'k', 'a', '-', 'j', 'a', 'v', 'a',
		0x06, '4', '.', '0', '.', '0',
		0x00,
	}
	big := make([]byte, 8+300)
	binary.BigEndian.PutUint16(big, 0)
	binary.BigEndian.PutUint32(big[4:], 7)
	for i := range big[8:] {
		big[8+i] = byte(i * 7)
	}
	frames = [][]byte{apiVersions, {}, big}
	for _, f := range frames {
		stream = binary.BigEndian.AppendUint32(stream, uint32(len(f)))
		stream = append(stream, f...)
	}
	return stream, frames
}

// feedAll runs the framer over chunks and returns the frames it produced.
func feedAll(t testing.TB, f *framer, chunks [][]byte) ([][]byte, CloseReason) {
	var out [][]byte
	for _, p := range chunks {
		for len(p) > 0 {
			k, done, bad := f.feed(p)
			if bad != reasonNone {
				return out, bad
			}
			if k == 0 && !done {
				t.Fatalf("framer made no progress on %d bytes", len(p))
			}
			p = p[k:]
			if done {
				b, n := f.take()
				out = append(out, bytes.Clone((*b)[:n]))
				putBuf(b)
			}
		}
	}
	return out, reasonNone
}

func TestFramerSplitAtEveryOffset(t *testing.T) {
	stream, want := goldenStream()
	check := func(name string, chunks [][]byte) {
		t.Helper()
		f := framer{max: DefaultMaxFrameSize}
		got, bad := feedAll(t, &f, chunks)
		if bad != reasonNone {
			t.Fatalf("%s: closed with %v", name, bad)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: got %d frames, want %d", name, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: frame %d differs", name, i)
			}
		}
		if f.inFrame() {
			t.Fatalf("%s: framer still in a frame", name)
		}
	}
	for i := 0; i <= len(stream); i++ {
		check("split", [][]byte{stream[:i], stream[i:]})
	}
	var bytewise [][]byte
	for i := range stream {
		bytewise = append(bytewise, stream[i:i+1])
	}
	check("bytewise", bytewise)
}

func TestFramerSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		max  int32
		want CloseReason
	}{
		{"negative", []byte{0xff, 0xff, 0xff, 0xff}, 100, ReasonNegativeSize},
		{"min int32", []byte{0x80, 0, 0, 0}, 100, ReasonNegativeSize},
		{"2 GiB", []byte{0x7f, 0xff, 0xff, 0xff}, DefaultMaxFrameSize, ReasonFrameTooLarge},
		{"max+1", []byte{0, 0, 0, 101}, 100, ReasonFrameTooLarge},
		{"max", append([]byte{0, 0, 0, 100}, make([]byte, 100)...), 100, reasonNone},
	} {
		for _, split := range []int{0, 1, 3, 4} {
			f := framer{max: tc.max}
			_, got := feedAll(t, &f, [][]byte{tc.in[:split], tc.in[split:]})
			if got != tc.want {
				t.Errorf("%s split %d: got %v, want %v", tc.name, split, got, tc.want)
			}
			if tc.want != reasonNone && f.body != nil {
				t.Errorf("%s: a buffer was sized from a rejected length", tc.name)
			}
		}
	}
}

// TestFramerGrowsWithData: a declared large frame costs only what arrived.
func TestFramerGrowsWithData(t *testing.T) {
	f := framer{max: DefaultMaxFrameSize}
	hdr := binary.BigEndian.AppendUint32(nil, 50<<20)
	if _, done, bad := f.feed(hdr); done || bad != reasonNone {
		t.Fatalf("feed header: done=%v bad=%v", done, bad)
	}
	if got := cap(*f.body); got > initialFrameChunk {
		t.Fatalf("declared 50 MiB, buffer %d bytes before any body arrived", got)
	}
	chunk := make([]byte, 100<<10)
	for range 3 {
		if t := f.tail(); t == nil {
			break
		}
		f.feed(chunk)
	}
	if got := cap(*f.body); got > 1<<20 {
		t.Fatalf("300 KiB arrived, buffer %d bytes", got)
	}
	f.reset()
}

// TestFramerSizedByLargestFrame: after a complete frame of 600 KiB, a frame
// declaring up to twice that gets its whole buffer at once, even after a
// smaller frame; one declaring more starts small again, as does a first
// frame; a partial frame does not count.
func TestFramerSizedByLargestFrame(t *testing.T) {
	f := framer{max: DefaultMaxFrameSize}
	send := func(size int) {
		t.Helper()
		frame := append(binary.BigEndian.AppendUint32(nil, uint32(size)), make([]byte, size)...)
		if n, done, bad := f.feed(frame); !done || n != len(frame) || bad != reasonNone {
			t.Fatalf("frame of %d: n=%d done=%v bad=%v", size, n, done, bad)
		}
		b, _ := f.take()
		putBuf(b)
	}
	begin := func(size int) int {
		t.Helper()
		if _, done, bad := f.feed(binary.BigEndian.AppendUint32(nil, uint32(size))); done || bad != reasonNone {
			t.Fatalf("header of %d: done=%v bad=%v", size, done, bad)
		}
		got := cap(*f.body)
		f.reset()
		return got
	}
	if got := begin(1 << 20); got > initialFrameChunk {
		t.Fatalf("a first frame of 1 MiB got a %d-byte buffer before its body", got)
	}
	send(600 << 10)
	if got := begin(1 << 20); got < 1<<20 {
		t.Fatalf("after a 600 KiB frame, a 1 MiB frame got %d bytes up front", got)
	}
	send(600 << 10)
	if got := begin(50 << 20); got > 2<<20 { // twice the last, in its 2 MiB size class
		t.Fatalf("after a 600 KiB frame, a 50 MiB declaration got %d bytes up front", got)
	}
	// reset (a connection closing mid-frame) does not make the partial
	// frame the last one.
	if got := begin(1 << 20); got < 1<<20 {
		t.Fatalf("the last complete frame was forgotten: %d bytes", got)
	}
	// A smaller frame after it does not shrink what the largest earned.
	send(64 << 10)
	if got := begin(1 << 20); got < 1<<20 {
		t.Fatalf("after 600 KiB then 64 KiB frames, a 1 MiB frame got %d bytes up front", got)
	}
}

// TestFramerGrowsToAvail: bytes known to be waiting size the next growth in
// one step, bounded by the declared size; unknown (0) keeps doubling.
func TestFramerGrowsToAvail(t *testing.T) {
	f := framer{max: DefaultMaxFrameSize}
	f.feed(binary.BigEndian.AppendUint32(nil, 3<<20))
	f.feed(make([]byte, initialFrameChunk))
	if !f.wantsRoom() {
		t.Fatal("full initial buffer does not want room")
	}
	f.avail = 900 << 10
	tl := f.tail()
	if got := cap(*f.body); got < initialFrameChunk+900<<10 || got > 2<<20 {
		t.Fatalf("avail 900 KiB: buffer %d bytes", got)
	}
	if len(tl) < 900<<10 || f.avail != 0 {
		t.Fatalf("tail %d bytes, avail left %d", len(tl), f.avail)
	}
	f.filled(len(tl))
	f.avail = 64 << 20 // more than the frame: bounded by its size
	f.tail()
	if got := cap(*f.body); got != 4<<20 {
		t.Fatalf("avail past the frame: buffer %d bytes, want the 3 MiB frame's class", got)
	}
	f.reset()
}

// TestFramerDirectTail: large bodies read through tail/filled match feed.
func TestFramerDirectTail(t *testing.T) {
	body := make([]byte, 1<<20+13)
	for i := range body {
		body[i] = byte(i * 31)
	}
	f := framer{max: DefaultMaxFrameSize}
	f.feed(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	src := body
	for {
		tl := f.tail()
		if tl == nil {
			k, done, _ := f.feed(src)
			if !done || k != len(src) {
				t.Fatal("frame incomplete")
			}
			break
		}
		k := copy(tl, src[:min(len(src), 7000)])
		src = src[k:]
		if f.filled(k) {
			break
		}
	}
	b, n := f.take()
	if !bytes.Equal((*b)[:n], body) {
		t.Fatal("frame differs")
	}
}

// FuzzFramer: any byte stream cut anywhere frames exactly like the stream
// fed whole, and never panics.
func FuzzFramer(f *testing.F) {
	stream, _ := goldenStream()
	f.Add(stream, uint16(3), int32(1000))
	f.Add([]byte{0, 0, 0, 2, 1, 2, 0xff, 0xff, 0xff, 0xff}, uint16(1), int32(100))
	f.Fuzz(func(t *testing.T, in []byte, cut uint16, max int32) {
		if max < 0 {
			max = -max
		}
		max %= 1 << 20
		whole := framer{max: max}
		want, wantBad := feedAll(t, &whole, [][]byte{in})
		c := min(int(cut), len(in))
		parts := framer{max: max}
		var chunks [][]byte
		for i := 0; i < c; i++ {
			chunks = append(chunks, in[i:i+1])
		}
		chunks = append(chunks, in[c:])
		got, gotBad := feedAll(t, &parts, chunks)
		if gotBad != wantBad || len(got) != len(want) {
			t.Fatalf("split framing differs: %d/%v vs %d/%v", len(got), gotBad, len(want), wantBad)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d differs", i)
			}
		}
		whole.reset()
		parts.reset()
	})
}

// TestFramerDirectReadsWithAvail: a stream of large and small frames read
// the way the epoll loop reads it (tail/filled for large bodies with a
// SIOCINQ-like avail hint that may be right, short, far too large or absent;
// feed for the rest, in random read sizes) frames exactly as feeding it
// whole does.
func TestFramerDirectReadsWithAvail(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var stream []byte
	var want [][]byte
	for i := range 40 {
		n := rng.IntN(64)
		if i%3 == 0 {
			n = directReadMin + rng.IntN(3<<20)
		}
		body := make([]byte, n)
		for j := range body {
			body[j] = byte(i + j*7)
		}
		stream = binary.BigEndian.AppendUint32(stream, uint32(n))
		stream = append(stream, body...)
		want = append(want, body)
	}
	for round := range 20 {
		f := framer{max: DefaultMaxFrameSize}
		var got [][]byte
		take := func() {
			b, n := f.take()
			got = append(got, bytes.Clone((*b)[:n]))
			putBuf(b)
		}
		rest := stream
		for len(rest) > 0 {
			if f.wantsRoom() {
				switch rng.IntN(4) {
				case 0: // exact: everything sent so far has arrived
					f.avail = len(rest)
				case 1:
					f.avail = rng.IntN(len(rest) + 1)
				case 2: // a hint past the frame
					f.avail = len(rest) + rng.IntN(1<<24)
				}
			}
			if tl := f.tail(); tl != nil {
				k := copy(tl, rest[:min(len(rest), 1+rng.IntN(1<<20))])
				rest = rest[k:]
				if f.filled(k) {
					take()
				}
				continue
			}
			p := rest[:min(len(rest), 1+rng.IntN(64<<10))]
			for len(p) > 0 {
				k, done, bad := f.feed(p)
				if bad != reasonNone {
					t.Fatalf("round %d: closed with %v", round, bad)
				}
				p, rest = p[k:], rest[k:]
				if done {
					take()
				}
				if f.tail() != nil {
					break // a large body follows: read it directly
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d frames, want %d", round, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("round %d: frame %d differs", round, i)
			}
		}
		f.reset()
	}
}
