package batch

// Design note: decompression under a budget.
//
// A compressed batch is a few bytes on the wire that may claim gigabytes once
// decompressed (docs/design/kafka-protocol.md §5, "Safety"). Every codec therefore writes
// into one output buffer owned by the Decoder, grown geometrically but never
// past the remaining Budget.MaxBytes, and stops with ErrBudget as soon as the
// stream would produce a byte more:
//
//   - gzip and zstd are streams: the Decoder reads into the spare capacity of
//     its buffer, and once the buffer is at the budget it asks for one more
//     byte; getting one is ErrBudget. Memory is the budget plus the codec's
//     fixed working set (flate: a 32 KiB window; zstd: a history ring of the
//     frame's window, which is capped at MaxZstdWindow).
//   - snappy (raw and xerial) states its decoded length up front
//     (s2.DecodedLen per block), so the total is checked before any output
//     is allocated and the buffer is sized exactly.
//   - lz4 frames are parsed here and each block is decoded straight into the
//     output buffer with lz4.UncompressBlock, so there is no intermediate
//     block buffer; a block's exact size is computed from its sequences only
//     when the spare capacity was too small.
//
// The Decoder keeps its buffers and codec state between calls, so a reused
// Decoder does not allocate in steady state.

import (
	"encoding/binary"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Budget is what a request may still spend on decoding. Records subtracts
// from it as it goes, so one Budget can be shared by all partitions of a
// request. Only bytes a Decoder materializes (decompressed records) count
// against MaxBytes; uncompressed records are views into the request frame,
// which the connection already bounded.
type Budget struct {
	// MaxBytes is the number of decompressed bytes still allowed.
	MaxBytes int64
	// MaxRecords is the number of records still allowed.
	MaxRecords int64
}

// MaxZstdWindow is the largest zstd window (history) the Decoder accepts:
// 8 MiB, the size RFC 8878 recommends every decoder support (Java producers
// at the default level declare 2 MiB; klauspost-based clients at most 8 MiB).
// A frame declaring a larger window fails with ErrDecompress.
const MaxZstdWindow = 8 << 20

// maxRetain is the largest output buffer ReleaseDecoder keeps for reuse.
const maxRetain = 16 << 20

// minGrow is the smallest capacity the output buffer grows to.
const minGrow = 16 << 10

// minRecordSize is the smallest encoded record: one byte each for length,
// attributes, timestampDelta, offsetDelta, key length, value length and
// header count.
const minRecordSize = 7

// Decoder decompresses record batches into a buffer it owns and hands out
// iterators over them. Get one with AcquireDecoder and return it with
// ReleaseDecoder; using it after release is forbidden. A Decoder is not safe
// for concurrent use.
type Decoder struct {
	out   []byte // decompressed records; Records views point here
	src   sliceReader
	probe [1]byte
	gz    *gzip.Reader
	zs    *zstd.Decoder
}

var decoderPool = sync.Pool{New: func() any { return new(Decoder) }}

// AcquireDecoder returns a Decoder from the pool.
func AcquireDecoder() *Decoder { return decoderPool.Get().(*Decoder) }

// ReleaseDecoder returns d to the pool. Records and views obtained from d
// must not be used afterwards.
func ReleaseDecoder(d *Decoder) {
	if d == nil {
		return
	}
	if cap(d.out) > maxRetain {
		d.out = nil
	}
	d.src.b = nil
	decoderPool.Put(d)
}

// Records returns an iterator over the records of batch b, which Validate
// accepted with header h. An uncompressed batch is iterated in place; a
// compressed one is decompressed into d's buffer, so the iterator and its
// views are valid until d's next Records call or its release.
//
// budget is charged h.NumRecords records and, for a compressed batch, the
// decompressed size; a batch that would overdraw it fails with
// ErrBudgetRecords or ErrBudget (having allocated at most the remaining
// budget). A nil budget means no limit, for trusted input only.
// Undecodable compressed data fails with ErrDecompress.
func (d *Decoder) Records(b []byte, h Header, budget *Budget) (Records, error) {
	size := h.Size()
	if size < HeaderSize || size > len(b) {
		return Records{}, ErrTruncated
	}
	limitBytes, limitRecords := int64(math.MaxInt), int64(math.MaxInt64)
	if budget != nil {
		limitBytes, limitRecords = budget.MaxBytes, budget.MaxRecords
	}
	n := int64(h.NumRecords)
	section := b[HeaderSize:size:size]
	codec := h.Codec()
	if codec == NoCompression && n > int64(len(section)/minRecordSize) {
		// An uncompressed records section cannot hold more than one record
		// per minRecordSize bytes: a larger count is a lie, not a large
		// batch (Kafka's iterator fails it as "premature EOF").
		return Records{}, ErrRecordCount
	}
	if n > limitRecords {
		return Records{}, ErrBudgetRecords
	}
	if codec == NoCompression {
		if budget != nil {
			budget.MaxRecords -= n
		}
		return newRecords(section, h.NumRecords), nil
	}
	if n > 0 && n > limitBytes/minRecordSize {
		// Even the smallest records would not fit in the budget.
		return Records{}, ErrBudget
	}
	limit := int(min(max(limitBytes, 0), int64(math.MaxInt)))
	var out []byte
	var err error
	switch codec {
	case Gzip:
		out, err = d.gunzip(section, limit)
	case Snappy:
		out, err = d.unsnappy(section, limit)
	case LZ4:
		out, err = d.unlz4(section, limit)
	case Zstd:
		out, err = d.unzstd(section, limit)
	default:
		return Records{}, ErrCodec
	}
	if err != nil {
		return Records{}, err
	}
	if budget != nil {
		budget.MaxBytes -= int64(len(out))
		budget.MaxRecords -= n
	}
	return newRecords(out[:len(out):len(out)], h.NumRecords), nil
}

// grow returns out (same contents) with room for at least need more bytes,
// growing d.out geometrically up to limit total. The caller guarantees
// len(out)+need <= limit.
func (d *Decoder) grow(out []byte, need, limit int) []byte {
	want := len(out) + need
	if want <= cap(out) {
		return out
	}
	c := min(max(want, 2*cap(out), minGrow), limit)
	c = max(c, want)
	n := make([]byte, len(out), c)
	copy(n, out)
	d.out = n[:0]
	return n
}

// readAll reads r into d's buffer, at most limit bytes. hint, if positive, is
// the expected size, used to size the buffer once (never past limit).
func (d *Decoder) readAll(r io.Reader, limit, hint int) ([]byte, error) {
	out := d.out[:0]
	if hint > cap(out) {
		out = d.grow(out, min(hint, limit), limit)
	}
	for {
		end := min(cap(out), limit)
		if len(out) == end {
			if len(out) >= limit {
				// At the budget: one more byte means the stream is too big.
				for {
					n, err := r.Read(d.probe[:])
					if n > 0 {
						d.out = out[:0]
						return nil, ErrBudget
					}
					if err == io.EOF {
						d.out = out[:0]
						return out, nil
					}
					if err != nil {
						d.out = out[:0]
						return nil, ErrDecompress
					}
				}
			}
			out = d.grow(out, 1, limit)
			end = min(cap(out), limit)
		}
		n, err := r.Read(out[len(out):end])
		out = out[:len(out)+n]
		if err == io.EOF {
			d.out = out[:0]
			return out, nil
		}
		if err != nil {
			d.out = out[:0]
			return nil, ErrDecompress
		}
	}
}

// gunzip decodes an RFC 1952 gzip stream, which may hold several members
// (Java's GZIPOutputStream, librdkafka's zlib).
func (d *Decoder) gunzip(src []byte, limit int) ([]byte, error) {
	d.src.b = src
	if d.gz == nil {
		d.gz = new(gzip.Reader)
	}
	if err := d.gz.Reset(&d.src); err != nil {
		return nil, ErrDecompress
	}
	// ISIZE, the last member's size mod 2^32, is only a sizing hint.
	hint := 0
	if len(src) >= 18 {
		hint = int(binary.LittleEndian.Uint32(src[len(src)-4:]))
	}
	out, err := d.readAll(d.gz, limit, hint)
	d.src.b = nil
	return out, err
}

// unzstd decodes zstd frames (RFC 8878), which need not declare their
// content size (Java's zstd-jni streams do not).
func (d *Decoder) unzstd(src []byte, limit int) ([]byte, error) {
	if d.zs == nil {
		zs, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(MaxZstdWindow),
			zstd.WithDecoderMaxMemory(MaxZstdWindow),
		)
		if err != nil {
			return nil, ErrDecompress
		}
		d.zs = zs
	}
	hint := 0
	var fh zstd.Header
	if fh.Decode(src) == nil && fh.HasFCS {
		if fh.FrameContentSize > uint64(limit) {
			return nil, ErrBudget
		}
		hint = int(fh.FrameContentSize)
	}
	d.src.b = src
	// sliceReader is not a bytes.Buffer, so the decoder streams (and stays
	// within its window) rather than decoding the whole input in memory.
	if err := d.zs.Reset(&d.src); err != nil {
		d.src.b = nil
		return nil, ErrDecompress
	}
	out, err := d.readAll(d.zs, limit, hint)
	d.src.b = nil
	return out, err
}

// sliceReader is an io.Reader and io.ByteReader over b.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func (r *sliceReader) ReadByte() (byte, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, nil
}
