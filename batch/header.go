// Package batch validates, iterates, decompresses and builds Kafka
// RecordBatch v2 ("magic 2"), the only record format a Kafka 4.x broker
// accepts (docs/design/kafka-protocol.md §4, §5).
//
// The Produce path is
//
//	h, err := batch.Validate(records)        // sizes, magic, CRC-32C, attributes, count
//	d := batch.AcquireDecoder()
//	recs, err := d.Records(records, h, &budget) // decompresses under the budget if needed
//	for recs.Next(&rec) { ... }              // views into records or into d's buffer
//	err = recs.Err()                         // count and trailing-byte checks
//	batch.ReleaseDecoder(d)
//
// Everything handed out is a view: for an uncompressed batch, into the
// caller's buffer (valid until the frame is released); for a compressed one,
// into the Decoder's output buffer (valid until the Decoder's next Records
// call or its release). Nothing on the uncompressed path allocates, and a
// reused Decoder does not allocate in steady state.
//
// Fetch builds batches with Builder (reserve the header, append records,
// backfill lengths and the CRC in Finish).
package batch

import (
	"encoding/binary"
	"hash/crc32"
)

// HeaderSize is the size of the RecordBatch v2 header; the records start at
// this offset (docs/design/kafka-protocol.md §4.1).
const HeaderSize = 61

// Magic is the only batch format version this package accepts.
const Magic = 2

// Offsets of the header fields (docs/design/kafka-protocol.md §4.1).
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21 // the CRC covers [offAttributes, end)
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57

	// lengthOverhead is what batchLength does not count: baseOffset and
	// batchLength itself.
	lengthOverhead = 12
	// minLength is the smallest legal batchLength: a header with no records.
	minLength = HeaderSize - lengthOverhead
)

// Attribute bits (docs/design/kafka-protocol.md §4.1).
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

// castagnoli is the CRC-32C table, built once. "crc: CRC-32C (Castagnoli)
// over bytes from offset 21 (attributes) to the end of the batch."
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Codec is the compression codec in attribute bits 0–2.
type Codec int8

// The codecs Kafka defines (docs/design/kafka-protocol.md §5). Ids 5–7 are invalid.
const (
	NoCompression Codec = 0
	Gzip          Codec = 1
	Snappy        Codec = 2
	LZ4           Codec = 3
	Zstd          Codec = 4
)

var codecNames = [8]string{"none", "gzip", "snappy", "lz4", "zstd", "codec(5)", "codec(6)", "codec(7)"}

// String returns Kafka's name for c ("none", "gzip", "snappy", "lz4", "zstd").
func (c Codec) String() string {
	if c < 0 || int(c) >= len(codecNames) {
		return "codec(?)"
	}
	return codecNames[c]
}

// Valid reports whether c is one of the five codecs Kafka defines.
func (c Codec) Valid() bool { return c >= NoCompression && c <= Zstd }

// Header is a decoded RecordBatch v2 header (docs/design/kafka-protocol.md §4.1).
type Header struct {
	// BaseOffset is the offset of the first record; producers send 0.
	BaseOffset int64
	// Length is batchLength: the batch size minus 12.
	Length int32
	// PartitionLeaderEpoch is stamped by the broker; producers send -1.
	PartitionLeaderEpoch int32
	// Magic is the format version, 2.
	Magic int8
	// CRC is the stored CRC-32C of bytes [21, end).
	CRC uint32
	// Attributes holds the codec, timestamp type, transactional, control and
	// delete-horizon bits.
	Attributes int16
	// LastOffsetDelta is the offset delta of the last record.
	LastOffsetDelta int32
	// BaseTimestamp is the first record's timestamp (ms).
	BaseTimestamp int64
	// MaxTimestamp is the largest record timestamp (ms).
	MaxTimestamp int64
	// ProducerID is -1 unless the producer is idempotent.
	ProducerID int64
	// ProducerEpoch is -1 unless the producer is idempotent.
	ProducerEpoch int16
	// BaseSequence is -1 unless the producer is idempotent.
	BaseSequence int32
	// NumRecords is recordsCount.
	NumRecords int32
}

// Codec returns the compression codec (attribute bits 0–2).
func (h Header) Codec() Codec { return Codec(h.Attributes & attrCodecMask) }

// LogAppendTime reports attribute bit 3: timestamps are the broker's append
// time (clients must send CreateTime).
func (h Header) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// Transactional reports attribute bit 4.
func (h Header) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports attribute bit 5 (transaction markers; never from clients).
func (h Header) Control() bool { return h.Attributes&attrControl != 0 }

// HasDeleteHorizon reports attribute bit 6 (KIP-534; set only by the log
// cleaner, then BaseTimestamp is the delete horizon).
func (h Header) HasDeleteHorizon() bool { return h.Attributes&attrDeleteHorizon != 0 }

// Size returns the batch size in bytes, Length + 12.
func (h Header) Size() int { return int(h.Length) + lengthOverhead }

// parseHeader decodes the 61-byte header; b must hold at least HeaderSize bytes.
func parseHeader(b []byte) Header {
	_ = b[HeaderSize-1]
	return Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[offNumRecords:])),
	}
}

// Validate checks that records, one Produce partition's records field, holds
// exactly one well-formed RecordBatch v2 and returns its header. It checks,
// in this order (docs/design/kafka-protocol.md §4.5, §4.6):
//
//   - the field is not empty (ErrNoBatch);
//   - magic is 2 (ErrMagic), before any size or CRC check, as Kafka does;
//   - at least 61 bytes and batchLength >= 49 (ErrTooShort);
//   - batchLength+12 equals len(records): more is ErrTruncated, less means a
//     second batch or trailing bytes, ErrTrailing;
//   - the CRC-32C over [21, end) matches (ErrCRC);
//   - the codec is 0–4 (ErrCodec);
//   - recordsCount > 0 (ErrCount) and lastOffsetDelta+1 == recordsCount
//     (ErrOffsetDelta).
//
// The records themselves are checked while iterating (Records). Producer-only
// rules (baseOffset 0, no control batches, ...) are in Header.CheckProduce;
// whether to accept transactional batches is the caller's decision
// (Header.Transactional). Validate does not allocate. On error the returned
// header holds whatever could be decoded.
func Validate(records []byte) (Header, error) {
	if len(records) == 0 {
		return Header{}, ErrNoBatch
	}
	if len(records) > offMagic && records[offMagic] != Magic {
		// "Produce requests with version N are only allowed to contain
		// record batches with magic version 2" (ProduceRequest.validateRecords).
		return Header{Magic: int8(records[offMagic])}, ErrMagic
	}
	if len(records) < HeaderSize {
		return Header{}, ErrTooShort
	}
	h := parseHeader(records)
	if h.Length < minLength {
		// "the size N is smaller than the minimum allowed overhead 61"
		// (DefaultRecordBatch.ensureValid).
		return h, ErrTooShort
	}
	size := int64(h.Length) + lengthOverhead
	if size > int64(len(records)) {
		return h, ErrTruncated
	}
	if size < int64(len(records)) {
		// "only allowed to contain exactly one record batch per partition".
		return h, ErrTrailing
	}
	if checksum(records[offAttributes:]) != h.CRC {
		return h, ErrCRC
	}
	if !h.Codec().Valid() {
		return h, ErrCodec
	}
	// "Invalid reported count for record batch" / "Inconsistent batch offset
	// range [..] and count of records N" (LogValidator.validateBatch).
	if h.NumRecords <= 0 {
		return h, ErrCount
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) {
		return h, ErrOffsetDelta
	}
	return h, nil
}

// CheckProduce applies the rules Kafka enforces only on batches written by
// clients (LogValidator.validateBatch, UnifiedLog.analyzeAndValidateRecords):
// baseOffset must be 0 (ErrBaseOffset), the batch must not be a control batch
// (ErrControl), an idempotent batch (producerId >= 0) needs baseSequence >= 0
// (ErrSequence), and the LogAppendTime attribute must not be set
// (ErrLogAppendTime). A caller that refuses control or transactional batches
// with a code of its own checks Control/Transactional first.
func (h Header) CheckProduce() error {
	if h.BaseOffset != 0 {
		return ErrBaseOffset
	}
	if h.Control() {
		return ErrControl
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return ErrSequence
	}
	if h.LogAppendTime() {
		return ErrLogAppendTime
	}
	return nil
}

// SetBaseOffset overwrites the baseOffset field of the batch starting at b.
// The field lies before the CRC range, so the CRC stays valid
// (docs/design/kafka-protocol.md §4.1). b must hold at least HeaderSize bytes.
func SetBaseOffset(b []byte, baseOffset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:offBaseOffset+8], uint64(baseOffset))
}

// SetPartitionLeaderEpoch overwrites the partitionLeaderEpoch field of the
// batch starting at b; like SetBaseOffset it leaves the CRC valid.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:offLeaderEpoch+4], uint32(epoch))
}

// PeekCodec returns the codec in the attribute bits 0–2 of the batch starting
// at b, without validating the batch (docs/design/kafka-protocol.md §4.1:
// attributes is an INT16 at offset 21, so the codec is in byte 22). ok is
// false when b is too short to hold the attributes. Validate is the check;
// PeekCodec only lets a caller decide early how to handle a batch.
func PeekCodec(b []byte) (c Codec, ok bool) {
	if len(b) < offAttributes+2 {
		return NoCompression, false
	}
	return Codec(b[offAttributes+1] & attrCodecMask), true
}
