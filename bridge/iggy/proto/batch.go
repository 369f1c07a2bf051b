package proto

import (
	"encoding/binary"
	"errors"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/zeebo/xxh3"
)

// BatchHeaderSize is the size of the batch header in front of a batch's
// message frames (§3.7).
const BatchHeaderSize = 256

// Batch header field offsets (§3.7; bytes 52..256 must be zero).
const (
	BatchPartitionID     = 0
	BatchBaseOffset      = 8
	BatchBaseTimestamp   = 16
	BatchOriginTimestamp = 24
	BatchLength          = 32
	BatchChecksum        = 40
	BatchMessageCount    = 48
	batchUsed            = 52
)

// Batch validation errors. On TCP the server answers none of them: a batch
// that fails is dropped silently (§3.7 "If any check fails, the batch is
// dropped with no reply").
var (
	ErrBatchTiling   = errors.New("iggy: batch frames do not tile the batch")
	ErrBatchChecksum = errors.New("iggy: batch or message checksum mismatch")
	ErrBatchHeader   = errors.New("iggy: malformed batch header")
)

// BatchHeader is the decoded form of a 256-byte batch header.
type BatchHeader struct {
	PartitionID     uint64
	BaseOffset      uint64
	BaseTimestamp   uint64
	OriginTimestamp uint64
	Length          uint64
	Checksum        uint64
	MessageCount    uint32
}

// ParseBatchHeader decodes h[:BatchHeaderSize]; h must be long enough.
func ParseBatchHeader(h []byte) BatchHeader {
	h = h[:BatchHeaderSize:BatchHeaderSize]
	return BatchHeader{
		PartitionID:     binary.LittleEndian.Uint64(h[BatchPartitionID:]),
		BaseOffset:      binary.LittleEndian.Uint64(h[BatchBaseOffset:]),
		BaseTimestamp:   binary.LittleEndian.Uint64(h[BatchBaseTimestamp:]),
		OriginTimestamp: binary.LittleEndian.Uint64(h[BatchOriginTimestamp:]),
		Length:          binary.LittleEndian.Uint64(h[BatchLength:]),
		Checksum:        binary.LittleEndian.Uint64(h[BatchChecksum:]),
		MessageCount:    binary.LittleEndian.Uint32(h[BatchMessageCount:]),
	}
}

// Put writes the header into h[:BatchHeaderSize], zeroing the reserved bytes.
func (bh *BatchHeader) Put(h []byte) {
	h = h[:BatchHeaderSize:BatchHeaderSize]
	binary.LittleEndian.PutUint64(h[BatchPartitionID:], bh.PartitionID)
	binary.LittleEndian.PutUint64(h[BatchBaseOffset:], bh.BaseOffset)
	binary.LittleEndian.PutUint64(h[BatchBaseTimestamp:], bh.BaseTimestamp)
	binary.LittleEndian.PutUint64(h[BatchOriginTimestamp:], bh.OriginTimestamp)
	binary.LittleEndian.PutUint64(h[BatchLength:], bh.Length)
	binary.LittleEndian.PutUint64(h[BatchChecksum:], bh.Checksum)
	binary.LittleEndian.PutUint32(h[BatchMessageCount:], bh.MessageCount)
	clear(h[batchUsed:])
}

// FrameChecksum computes a message frame's checksum: XXH3-64 (seed 0) over
// the frame bytes [8 .. end of user headers] (§3.7). frame must be exactly
// one frame.
func FrameChecksum(frame []byte) uint64 { return message.FrameChecksum(frame) }

// StampFrames walks count frames in frames, writes each frame's checksum into
// its first 8 bytes and the frame's offset_delta as its index. It fails if the
// frames do not tile the slice exactly.
func StampFrames(frames []byte, count int) error {
	off := 0
	for i := 0; i < count; i++ {
		n, err := frameLen(frames[off:])
		if err != nil {
			return err
		}
		f := frames[off : off+n]
		binary.LittleEndian.PutUint32(f[24:], uint32(i))
		binary.LittleEndian.PutUint64(f, FrameChecksum(f))
		off += n
	}
	if off != len(frames) {
		return ErrBatchTiling
	}
	return nil
}

// frameLen returns the length of the frame at the start of b.
func frameLen(b []byte) (int, error) {
	if len(b) < message.FrameHeaderSize {
		return 0, ErrBatchTiling
	}
	n := uint64(message.FrameHeaderSize) + uint64(binary.LittleEndian.Uint32(b[32:])) + uint64(binary.LittleEndian.Uint32(b[36:]))
	if n > uint64(len(b)) {
		return 0, ErrBatchTiling
	}
	return int(n), nil
}

// BatchChecksumOf computes the batch checksum (§3.7): XXH3-64 (seed 0) over
// the LE bytes of partition_id, base_offset, base_timestamp, origin_timestamp,
// batch_length and message_count as they stand in hdr, then every frame's
// stored checksum in order. h is a caller-owned Hasher (reused, no
// allocation); frames must tile exactly (see StampFrames).
func BatchChecksumOf(h *xxh3.Hasher, hdr []byte, frames []byte) uint64 {
	h.Reset()
	_, _ = h.Write(hdr[BatchPartitionID:BatchChecksum])          // 40 bytes: ids, timestamps, length
	_, _ = h.Write(hdr[BatchMessageCount : BatchMessageCount+4]) // message_count
	for off := 0; off+message.FrameHeaderSize <= len(frames); {
		n, err := frameLen(frames[off:])
		if err != nil {
			break
		}
		_, _ = h.Write(frames[off : off+8])
		off += n
	}
	return h.Sum64()
}

// SealBatch fills a producer batch header in hdr for frames (already stamped
// by StampFrames): zero partition, base offset and base timestamp, the given
// origin timestamp, length, count and checksum.
func SealBatch(h *xxh3.Hasher, hdr []byte, frames []byte, count int, origin uint64) {
	bh := BatchHeader{
		OriginTimestamp: origin,
		Length:          uint64(BatchHeaderSize + len(frames)),
		MessageCount:    uint32(count),
	}
	bh.Put(hdr)
	binary.LittleEndian.PutUint64(hdr[BatchChecksum:], BatchChecksumOf(h, hdr, frames))
}

// StampAndSeal is StampFrames then SealBatch in one walk over the frames:
// each frame's offset_delta and checksum are written, and the checksum is fed
// to the batch checksum (in chunks, not 8 bytes a call) while the frame is
// still in cache. The result is byte for byte theirs; it fails as
// StampFrames does, with hdr then not sealed.
func StampAndSeal(h *xxh3.Hasher, hdr []byte, frames []byte, count int, origin uint64) error {
	bh := BatchHeader{
		OriginTimestamp: origin,
		Length:          uint64(BatchHeaderSize + len(frames)),
		MessageCount:    uint32(count),
	}
	bh.Put(hdr)
	h.Reset()
	_, _ = h.Write(hdr[BatchPartitionID:BatchChecksum])
	_, _ = h.Write(hdr[BatchMessageCount : BatchMessageCount+4])
	var sums [512]byte
	k, off := 0, 0
	for i := 0; i < count; i++ {
		n, err := frameLen(frames[off:])
		if err != nil {
			return err
		}
		f := frames[off : off+n]
		binary.LittleEndian.PutUint32(f[24:], uint32(i))
		sum := FrameChecksum(f)
		binary.LittleEndian.PutUint64(f, sum)
		binary.LittleEndian.PutUint64(sums[k:], sum)
		if k += 8; k == len(sums) {
			_, _ = h.Write(sums[:])
			k = 0
		}
		off += n
	}
	if off != len(frames) {
		return ErrBatchTiling
	}
	_, _ = h.Write(sums[:k])
	binary.LittleEndian.PutUint64(hdr[BatchChecksum:], h.Sum64())
	return nil
}

// SealStamped fills a producer batch header in hdr, as StampAndSeal does,
// for frames already stamped as they were built: sums are their checksums
// in order, 8 little-endian bytes each, in one or more pieces (one per
// message.Batch sent, Batch.Sums), and size the frames' total length. The
// frames are not read at all, so hdr is StampAndSeal's only if the frames'
// offset deltas count 0…count−1 and each checksum is its frame's, as
// message.Batch keeps them.
func SealStamped(h *xxh3.Hasher, hdr []byte, size, count int, origin uint64, sums ...[]byte) {
	bh := BatchHeader{
		OriginTimestamp: origin,
		Length:          uint64(BatchHeaderSize + size),
		MessageCount:    uint32(count),
	}
	bh.Put(hdr)
	h.Reset()
	_, _ = h.Write(hdr[BatchPartitionID:BatchChecksum])
	_, _ = h.Write(hdr[BatchMessageCount : BatchMessageCount+4])
	for _, p := range sums {
		_, _ = h.Write(p)
	}
	binary.LittleEndian.PutUint64(hdr[BatchChecksum:], h.Sum64())
}

// ValidateBatch applies the server's admission checks to one producer batch
// (§3.7): batch_length covers exactly hdr+frames, message_count ≥ 1 and equals
// want, the frames tile the batch, reserved bytes are zero, and the batch
// checksum and every frame checksum match.
func ValidateBatch(h *xxh3.Hasher, batch []byte, want uint32) error {
	if len(batch) < BatchHeaderSize {
		return ErrBatchHeader
	}
	hdr := batch[:BatchHeaderSize]
	bh := ParseBatchHeader(hdr)
	for _, b := range hdr[batchUsed:] {
		if b != 0 {
			return ErrBatchHeader
		}
	}
	if bh.MessageCount == 0 || bh.MessageCount != want || bh.Length != uint64(len(batch)) {
		return ErrBatchHeader
	}
	frames := batch[BatchHeaderSize:]
	off := 0
	for i := uint32(0); i < bh.MessageCount; i++ {
		n, err := frameLen(frames[off:])
		if err != nil {
			return err
		}
		f := frames[off : off+n]
		if binary.LittleEndian.Uint64(f[40:]) != 0 {
			return ErrBatchHeader
		}
		if binary.LittleEndian.Uint64(f) != FrameChecksum(f) {
			return ErrBatchChecksum
		}
		off += n
	}
	if off != len(frames) {
		return ErrBatchTiling
	}
	if BatchChecksumOf(h, hdr, frames) != bh.Checksum {
		return ErrBatchChecksum
	}
	return nil
}

// RecordIter walks the batch records of a PollMessages reply (§3.8: records
// back to back, each a 256-byte batch header plus frames, walked by
// batch_length). Views it returns are valid until the reply is released.
type RecordIter struct {
	rest   []byte
	hdr    BatchHeader
	frames []byte
	err    error
}

// Reset points the iterator at the records part of a poll reply.
func (it *RecordIter) Reset(records []byte) { *it = RecordIter{rest: records} }

// Next advances to the next record; it returns false at the end or on a
// malformed record (see Err).
func (it *RecordIter) Next() bool {
	if it.err != nil || len(it.rest) == 0 {
		return false
	}
	if len(it.rest) < BatchHeaderSize {
		it.err = ErrBatchHeader
		return false
	}
	it.hdr = ParseBatchHeader(it.rest)
	if it.hdr.Length < BatchHeaderSize || it.hdr.Length > uint64(len(it.rest)) {
		it.err = ErrBatchHeader
		return false
	}
	n := int(it.hdr.Length)
	it.frames = it.rest[BatchHeaderSize:n:n]
	it.rest = it.rest[n:]
	return true
}

// Header returns the current record's batch header.
func (it *RecordIter) Header() *BatchHeader { return &it.hdr }

// Rest returns the records after the current one.
func (it *RecordIter) Rest() []byte { return it.rest }

// Frames returns the current record's frames.
func (it *RecordIter) Frames() []byte { return it.frames }

// Err returns the error that stopped the walk, if any.
func (it *RecordIter) Err() error { return it.err }
