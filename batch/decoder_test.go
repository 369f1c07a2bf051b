package batch_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/bits"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/fuzz"
	"github.com/kiggy-io/kiggy/varint"
)

var allCodecs = []batch.Codec{batch.NoCompression, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd}

// buildBatch builds n records of size bytes each with codec and returns the
// batch and the size of its uncompressed records section.
func buildBatch(codec batch.Codec, n, size int) (b []byte, rawSize int) {
	var bld, raw batch.Builder
	bld.Reset(nil, 0, 1700000000000, codec)
	raw.Reset(nil, 0, 1700000000000, batch.NoCompression)
	for i := range n {
		v := fuzz.Text(uint64(i), size)
		bld.Append(int32(i), int64(i), []byte("key"), v)
		raw.Append(int32(i), int64(i), []byte("key"), v)
	}
	return bld.Finish(), len(raw.Finish()) - batch.HeaderSize
}

func countRecords(tb testing.TB, recs batch.Records) int {
	tb.Helper()
	var r batch.Record
	n := 0
	for recs.Next(&r) {
		n++
	}
	if err := recs.Err(); err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestDecoderBudget(t *testing.T) {
	d := batch.AcquireDecoder()
	defer batch.ReleaseDecoder(d)
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			b, size := buildBatch(codec, 50, 700)
			h, err := batch.Validate(b)
			if err != nil {
				t.Fatal(err)
			}
			charged := int64(size)
			if codec == batch.NoCompression {
				charged = 0 // views into the frame cost nothing
			}
			// Exactly enough.
			budget := batch.Budget{MaxBytes: charged, MaxRecords: 50}
			recs, err := d.Records(b, h, &budget)
			if err != nil {
				t.Fatal(err)
			}
			if countRecords(t, recs) != 50 || budget.MaxBytes != 0 || budget.MaxRecords != 0 {
				t.Fatalf("budget left %+v", budget)
			}
			// One record too few.
			budget = batch.Budget{MaxBytes: 1 << 30, MaxRecords: 49}
			if _, err := d.Records(b, h, &budget); err != batch.ErrBudgetRecords {
				t.Fatalf("records: %v", err)
			}
			if budget.MaxRecords != 49 {
				t.Fatal("a failed call charged the budget")
			}
			// No budget.
			recs, err = d.Records(b, h, nil)
			if err != nil || countRecords(t, recs) != 50 {
				t.Fatal(err)
			}
			if codec == batch.NoCompression {
				return
			}
			// One byte too few.
			budget = batch.Budget{MaxBytes: charged - 1, MaxRecords: 50}
			if _, err := d.Records(b, h, &budget); err != batch.ErrBudget {
				t.Fatalf("bytes: %v", err)
			}
			// The same with fresh decoders (no spare capacity to decode into).
			budget = batch.Budget{MaxBytes: charged - 1, MaxRecords: 50}
			if _, err := new(batch.Decoder).Records(b, h, &budget); err != batch.ErrBudget {
				t.Fatalf("fresh, bytes: %v", err)
			}
			budget = batch.Budget{MaxBytes: charged, MaxRecords: 50}
			if recs, err := new(batch.Decoder).Records(b, h, &budget); err != nil || countRecords(t, recs) != 50 {
				t.Fatalf("fresh, exact: %v", err)
			}
			// Too small for even minimal records: refused before decoding.
			budget = batch.Budget{MaxBytes: 50*7 - 1, MaxRecords: 50}
			if _, err := d.Records(b, h, &budget); err != batch.ErrBudget {
				t.Fatalf("min size: %v", err)
			}
			// The decoder still works after failures.
			recs, err = d.Records(b, h, nil)
			if err != nil || countRecords(t, recs) != 50 {
				t.Fatal(err)
			}
		})
	}
}

// TestDecoderViewsLifetime checks that records of a compressed batch are
// views into the Decoder's buffer, overwritten by its next call.
func TestDecoderViewsLifetime(t *testing.T) {
	d := batch.AcquireDecoder()
	defer batch.ReleaseDecoder(d)
	b1, _ := buildBatch(batch.Zstd, 3, 100)
	var bld batch.Builder
	bld.Reset(nil, 0, 0, batch.Zstd)
	for i := range 3 {
		bld.Append(int32(i), 0, []byte("KEY"), bytes.Repeat([]byte("w"), 100))
	}
	b2 := bld.Finish()
	h1, _ := batch.Validate(b1)
	h2, _ := batch.Validate(b2)
	recs, err := d.Records(b1, h1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r batch.Record
	recs.Next(&r)
	if string(r.Key) != "key" {
		t.Fatal(string(r.Key))
	}
	if _, err := d.Records(b2, h2, nil); err != nil {
		t.Fatal(err)
	}
	if string(r.Key) != "KEY" {
		t.Fatalf("old view %q: not a view into the decoder buffer", r.Key)
	}
}

// withSection replaces the records section of a batch (keeping its header
// fields and codec) and fixes length and CRC.
func withSection(b, section []byte) []byte {
	h, _ := batch.Validate(b)
	return rawBatchFrom(h, section)
}

func rawBatchFrom(h batch.Header, section []byte) []byte {
	out := rawBatch(section, h.NumRecords, h.Codec())
	return recrc(out)
}

func TestDecoderCorrupt(t *testing.T) {
	d := batch.AcquireDecoder()
	defer batch.ReleaseDecoder(d)
	for _, codec := range allCodecs[1:] {
		b, _ := buildBatch(codec, 40, 500)
		section := b[batch.HeaderSize:]
		cases := map[string][]byte{
			"empty":      {},
			"half":       section[:len(section)/2],
			"minus one":  section[:len(section)-1],
			"garbage":    fuzz.Noise(3, 200),
			"extra byte": append(append([]byte(nil), section...), 0x55),
			// A flipped byte may land in a literal of a codec whose
			// checksum the decoder skips (the batch CRC covers it), so
			// it need not be detected; it must not panic.
			"flipped?":      flip(section, len(section)/2),
			"flipped head?": flip(section, 3),
		}
		for name, s := range cases {
			mayPass := strings.HasSuffix(name, "?")
			t.Run(codec.String()+"/"+name, func(t *testing.T) {
				bb := withSection(b, s)
				h, err := batch.Validate(bb)
				if err != nil {
					t.Fatal(err)
				}
				recs, err := d.Records(bb, h, &batch.Budget{MaxBytes: 1 << 20, MaxRecords: 1 << 20})
				if err == nil {
					// Some corruptions still decompress; the records
					// check must then catch them.
					var r batch.Record
					for recs.Next(&r) {
					}
					err = recs.Err()
				}
				if err == nil {
					if !mayPass {
						t.Fatal("corruption not detected")
					}
					return
				}
				if e := err.(*batch.Error); e.Code != 87 && e.Code != 10 {
					t.Fatalf("%v: code %d", err, e.Code)
				}
			})
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0xff
	return c
}

// TestDecompressedRecordsChecked: a stream that decompresses fine but whose
// records do not match the count fails in iteration.
func TestDecompressedRecordsChecked(t *testing.T) {
	d := batch.AcquireDecoder()
	defer batch.ReleaseDecoder(d)
	b, _ := buildBatch(batch.Gzip, 3, 10)
	binary.BigEndian.PutUint32(b[57:], 4)
	binary.BigEndian.PutUint32(b[23:], 3)
	b = recrc(b)
	h, err := batch.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := d.Records(b, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r batch.Record
	for recs.Next(&r) {
	}
	if recs.Err() != batch.ErrRecordCount {
		t.Fatal(recs.Err())
	}
}

// lz4Descriptor returns an LZ4 frame magic and descriptor with a correct
// header checksum (the second byte of xxHash32 of FLG and BD).
func lz4Descriptor(flg, bd byte) []byte {
	return []byte{0x04, 0x22, 0x4d, 0x18, flg, bd, byte(xxh32([]byte{flg, bd}) >> 8)}
}

// xxh32 is xxHash32 with seed 0 for inputs under 16 bytes.
func xxh32(b []byte) uint32 {
	const p2, p3, p4, p5 = 2246822519, 3266489917, 668265263, 374761393
	h := uint32(p5) + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * p3
		h = bits.RotateLeft32(h, 17) * p4
	}
	for _, c := range b {
		h += uint32(c) * p5
		h = bits.RotateLeft32(h, 11) * 2654435761
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func TestLZ4Frames(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	// Two dependent blocks: the second copies 8 bytes from the first.
	block1 := cat([]byte{0x80}, []byte("abcdefgh")) // 8 literals
	block2 := []byte{0x04, 0x08, 0x00, 0x10, 'Z'}   // match len 8 at offset 8, then literal 'Z'
	dependent := cat(lz4Descriptor(0x40, 0x40), le32(uint32(len(block1))), block1,
		le32(uint32(len(block2))), block2, le32(0))
	stored := cat(lz4Descriptor(0x60, 0x40), le32(0x80000000|5), []byte("hello"), le32(0))
	skippable := cat(le32(0x184D2A53), le32(3), []byte{1, 2, 3}, stored)
	withChecksums := cat(lz4Descriptor(0x74, 0x40), le32(0x80000000|2), []byte("hi"), le32(0xdeadbeef), le32(0), le32(0xfeedface))
	tests := []struct {
		name string
		in   []byte
		want string // "" with err
		err  error
	}{
		{"dependent blocks", dependent, "abcdefghabcdefghZ", nil},
		{"stored block", stored, "hello", nil},
		{"skippable frame", skippable, "hello", nil},
		{"two frames", cat(stored, stored), "hellohello", nil},
		{"checksums skipped", withChecksums, "hi", nil},
		{"empty compressed block", cat(lz4Descriptor(0x60, 0x40), le32(1), []byte{0}, stored[7:]), "hello", nil},
		{"bad magic", cat([]byte{0x05}, stored[1:]), "", batch.ErrDecompress},
		{"version 0", cat(lz4Descriptor(0x20, 0x40), le32(0)), "", batch.ErrDecompress},
		{"reserved flag", cat(lz4Descriptor(0x62, 0x40), le32(0)), "", batch.ErrDecompress},
		{"block max 3", cat(lz4Descriptor(0x60, 0x30), le32(0)), "", batch.ErrDecompress},
		{"bd reserved", cat(lz4Descriptor(0x60, 0x41), le32(0)), "", batch.ErrDecompress},
		{"preset dictionary", cat(lz4Descriptor(0x61, 0x40), le32(0), le32(0)), "", batch.ErrDecompress},
		{"no end mark", cat(lz4Descriptor(0x60, 0x40), le32(0x80000000|5), []byte("hello")), "", batch.ErrDecompress},
		{"block over max", cat(lz4Descriptor(0x60, 0x40), le32(0x80000000|(64<<10+1)), make([]byte, 64<<10+1), le32(0)), "", batch.ErrDecompress},
		{"offset before start", cat(lz4Descriptor(0x60, 0x40), le32(5), []byte{0x04, 0x08, 0x00, 0x10, 'Z'}, le32(0)), "", batch.ErrDecompress},
		{"truncated skippable", cat(le32(0x184D2A50), le32(100), []byte{1}), "", batch.ErrDecompress},
	}
	d := batch.AcquireDecoder()
	defer batch.ReleaseDecoder(d)
	warm, _ := buildBatch(batch.LZ4, 10, 1000)
	if _, err := batch.DecompressForTest(d, batch.LZ4, warm[batch.HeaderSize:], 1<<20); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A fresh decoder (no spare capacity: sizes come from the
			// sequence walk) and a warm one (decodes into spare capacity).
			for _, dec := range []*batch.Decoder{new(batch.Decoder), d} {
				got, err := batch.DecompressForTest(dec, batch.LZ4, tt.in, 1<<20)
				if err != tt.err {
					t.Fatalf("err %v, want %v", err, tt.err)
				}
				if string(got) != tt.want {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			}
			if tt.err == nil {
				// pierrec's reader agrees.
				ref, err := io.ReadAll(lz4.NewReader(bytes.NewReader(tt.in)))
				if err != nil && tt.name != "checksums skipped" {
					t.Fatalf("pierrec: %v", err)
				}
				if err == nil && string(ref) != tt.want {
					t.Fatalf("pierrec decodes %q", ref)
				}
			}
		})
	}
}

func TestZstdLimits(t *testing.T) {
	d := batch.AcquireDecoder()
	defer batch.ReleaseDecoder(d)
	// A frame declaring a 16 MiB window (exponent 14) holding one raw block.
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x70, 0x09, 0x00, 0x00, 'x'}
	if _, err := batch.DecompressForTest(d, batch.Zstd, frame, 1<<30); err != batch.ErrDecompress {
		t.Fatalf("16 MiB window: %v", err)
	}
	// The same with a 1 MiB window decodes.
	frame[5] = 0x50
	if got, err := batch.DecompressForTest(d, batch.Zstd, frame, 1<<30); err != nil || string(got) != "x" {
		t.Fatalf("1 MiB window: %q %v", got, err)
	}
	// A frame whose content size exceeds the budget is refused up front.
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	big := enc.EncodeAll(make([]byte, 4<<20), nil)
	if _, err := batch.DecompressForTest(d, batch.Zstd, big, 1<<20); err != batch.ErrBudget {
		t.Fatalf("fcs over budget: %v", err)
	}
}

// Bombs: each decompresses to (or claims) 1 GiB. With a 1 MiB budget the
// decoder must stop with ErrBudget promptly, having allocated no more than
// twice the budget (the output buffer grows geometrically up to it) plus the
// codec's fixed working set.
func bombs(tb testing.TB) map[batch.Codec][][]byte {
	const gib = 1 << 30
	out := map[batch.Codec][][]byte{}

	// gzip: 64 members of 16 MiB of zeros each.
	var member bytes.Buffer
	w, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	w.Write(make([]byte, 16<<20))
	w.Close()
	out[batch.Gzip] = [][]byte{bytes.Repeat(member.Bytes(), gib/(16<<20))}

	// zstd: hand-made frame of 8192 RLE blocks of 128 KiB (32 KiB total),
	// and a real encoder's stream of 1 GiB of zeros.
	z := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38} // no FCS, 128 KiB window
	for i := range gib / (128 << 10) {
		hdr := uint32(1<<1) | uint32(128<<10)<<3 // RLE block of 128 KiB
		if i == gib/(128<<10)-1 {
			hdr |= 1 // last block
		}
		z = append(z, byte(hdr), byte(hdr>>8), byte(hdr>>16), 0)
	}
	var zs bytes.Buffer
	enc, _ := zstd.NewWriter(&zs, zstd.WithEncoderConcurrency(1))
	zero := make([]byte, 1<<20)
	for range gib / len(zero) {
		enc.Write(zero)
	}
	enc.Close()
	out[batch.Zstd] = [][]byte{z, zs.Bytes()}

	// lz4: one 4 MiB block of zeros (~16 KiB compressed) repeated 256 times.
	blk := make([]byte, lz4.CompressBlockBound(4<<20))
	n, err := lz4.CompressBlock(make([]byte, 4<<20), blk, nil)
	if err != nil || n == 0 {
		tb.Fatal(err)
	}
	l := lz4Descriptor(0x60, 0x70)
	for range gib / (4 << 20) {
		l = append(l, le32(uint32(n))...)
		l = append(l, blk[:n]...)
	}
	l = append(l, le32(0)...)
	out[batch.LZ4] = [][]byte{l}

	// snappy: a raw block and xerial chunks claiming 1 GiB in under 1 KiB,
	// and a real raw block of 8 MiB of zeros.
	raw := varint.AppendUvarint(nil, gib)
	raw = append(raw, make([]byte, 600)...)
	x := []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
	chunk := s2.EncodeSnappy(nil, make([]byte, 32<<10))
	for range 16 {
		x = binary.BigEndian.AppendUint32(x, uint32(len(chunk)))
		x = append(x, chunk...)
	}
	claim := varint.AppendUvarint(nil, gib-16*(32<<10))
	claim = append(claim, 0)
	x = binary.BigEndian.AppendUint32(x, uint32(len(claim)))
	x = append(x, claim...)
	out[batch.Snappy] = [][]byte{raw, x, s2.EncodeSnappy(nil, make([]byte, 8<<20))}
	return out
}

// workingSet is each codec's fixed decoder state, allocated once per Decoder.
var workingSet = map[batch.Codec]uint64{
	batch.Gzip:   256 << 10,
	batch.Snappy: 0,
	batch.LZ4:    0,
	batch.Zstd:   batch.MaxZstdWindow + 1<<20,
}

func TestBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("bombs take a second to build")
	}
	const budget = 1 << 20
	for codec, bs := range bombs(t) {
		for i, section := range bs {
			t.Run(codec.String(), func(t *testing.T) {
				b := rawBatch(section, 1000, codec)
				h, err := batch.Validate(b)
				if err != nil {
					t.Fatal(err)
				}
				d := new(batch.Decoder) // fresh: no buffers yet
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				start := time.Now()
				bud := batch.Budget{MaxBytes: budget, MaxRecords: 1 << 20}
				_, err = d.Records(b, h, &bud)
				el := time.Since(start)
				runtime.ReadMemStats(&m1)
				alloc := m1.TotalAlloc - m0.TotalAlloc
				t.Logf("bomb %d: %d bytes compressed, %v, %d bytes allocated", i, len(section), el, alloc)
				if err != batch.ErrBudget {
					t.Fatalf("err %v, want ErrBudget", err)
				}
				if bud.MaxBytes != budget {
					t.Fatal("budget charged on failure")
				}
				if limit := 2*budget + workingSet[codec]; alloc > limit {
					t.Fatalf("allocated %d bytes, limit %d", alloc, limit)
				}
				if el > 2*time.Second {
					t.Fatalf("took %v", el)
				}
				// Warm: the second run reuses the buffers.
				runtime.ReadMemStats(&m0)
				_, err = d.Records(b, h, &bud)
				runtime.ReadMemStats(&m1)
				if err != batch.ErrBudget {
					t.Fatal(err)
				}
				if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 64<<10 {
					t.Fatalf("warm decoder allocated %d bytes", alloc)
				}
			})
		}
	}
}
