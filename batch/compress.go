package batch

import (
	"slices"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// encoders are a Builder's compressors, created on first use and reused.
type encoders struct {
	w  sliceWriter
	gz *gzip.Writer
	lz *lz4.Writer
	zs *zstd.Encoder
}

// sliceWriter is an io.Writer appending to b.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// xerialPrefix is snappy-java's stream header: magic "\x82SNAPPY\x00", then
// version 1 and minimum compatible version 1 (docs/design/kafka-protocol.md §5).
var xerialPrefix = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}

// xerialChunk is the uncompressed size of one xerial chunk (snappy-java's
// default block size).
const xerialChunk = 32 << 10

// lz4BlockSize is the LZ4 frame block size the Builder writes: 64 KiB, as
// Java's KafkaLZ4BlockOutputStream does.
const lz4BlockSize = lz4.Block64Kb

// zstdWindow is the window the Builder's zstd encoder uses; frames up to this
// size are single-segment and declare their content size.
const zstdWindow = 1 << 20

// The Builder's compression levels: the fastest of each codec. Batches are
// built per Fetch (docs/design/record-mapping.md §3.5), so the CPU per byte
// counts more than the last percent of ratio: on text-like records gzip
// level 1 is about 3× faster than level 6 for 7 % more bytes, and zstd's
// fastest level about 2× faster than its default for 5 % more (Kafka's
// defaults are gzip 6 and zstd 3; kiggy does not read compression.*.level).
const (
	gzipLevel = gzip.BestSpeed
	zstdLevel = zstd.SpeedFastest
)

// compressBound is an upper bound on the size of n bytes compressed with
// codec by compress: incompressible input grows by the codec's framing.
func compressBound(codec Codec, n int) int {
	switch codec {
	case Snappy:
		chunks := n/xerialChunk + 1
		return len(xerialPrefix) + s2.MaxEncodedLen(min(n, xerialChunk))*chunks + 4*chunks
	case LZ4:
		// Stored blocks at worst: 4 bytes per 64 KiB block, a 7-byte
		// frame descriptor, the end mark, and slack for the block bound.
		return n + (n/(64<<10)+1)*(4+lz4.CompressBlockBound(64<<10)-(64<<10)) + 64
	case Gzip:
		// Deflate stored blocks cost 5 bytes per 16 KiB; 18 for the gzip
		// header and trailer.
		return n + (n/16383+1)*5 + 64
	case Zstd:
		// Raw blocks cost 3 bytes per 128 KiB; frame header and checksum.
		return n + (n/(128<<10)+1)*3 + 64 + n>>8
	}
	return n
}

// compress appends src compressed with b.codec to dst.
func (b *Builder) compress(dst, src []byte) ([]byte, bool) {
	if b.enc == nil {
		b.enc = new(encoders)
	}
	e := b.enc
	switch b.codec {
	case Gzip:
		if e.gz == nil {
			gz, err := gzip.NewWriterLevel(nil, gzipLevel)
			if err != nil {
				return dst, false
			}
			e.gz = gz
		}
		e.w.b = dst
		e.gz.Reset(&e.w)
		if _, err := e.gz.Write(src); err != nil {
			return dst, false
		}
		if err := e.gz.Close(); err != nil {
			return dst, false
		}
		out := e.w.b
		e.w.b = nil
		return out, true
	case Snappy:
		dst = slices.Grow(dst, compressBound(Snappy, len(src)))
		dst = append(dst, xerialPrefix...)
		// With a non-empty dst, xerial.Encode appends the chunks only.
		return xerial.Encode(dst, src), true
	case LZ4:
		if e.lz == nil {
			e.lz = lz4.NewWriter(nil)
			// Reset keeps the options: applied once.
			if err := e.lz.Apply(lz4.BlockSizeOption(lz4BlockSize), lz4.ConcurrencyOption(1)); err != nil {
				e.lz = nil
				return dst, false
			}
		}
		e.w.b = dst
		e.lz.Reset(&e.w)
		if _, err := e.lz.Write(src); err != nil {
			return dst, false
		}
		if err := e.lz.Close(); err != nil {
			return dst, false
		}
		out := e.w.b
		e.w.b = nil
		return out, true
	case Zstd:
		if e.zs == nil {
			zs, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(zstdWindow), zstd.WithEncoderLevel(zstdLevel))
			if err != nil {
				return dst, false
			}
			e.zs = zs
		}
		return e.zs.EncodeAll(src, dst), true
	}
	return dst, false
}
