package batch

import (
	"encoding/binary"

	"github.com/kiggy-io/kiggy/varint"
)

// Builder builds one RecordBatch v2 at a time into a caller-supplied buffer:
// Reset reserves the 61-byte header, Append* add records, Finish backfills
// batchLength, lastOffsetDelta, maxTimestamp, recordsCount and the CRC
// (docs/design/style.md habit 2) and returns the buffer. A Builder is reusable and owned
// by one goroutine; reusing it with a buffer of sufficient capacity makes the
// uncompressed path allocation-free.
//
// Records can be added three ways:
//
//   - Append(offsetDelta, timestampDelta, key, value): a record without headers.
//   - AppendRecord(&rec): a record whose headers are already encoded, such as
//     one read from another batch, or built with AppendRecordHeader and
//     NewRecordHeaders. Its size is known up front; nothing is moved.
//   - BeginRecord(...), then AppendHeader(key, value) per header, then
//     EndRecord (or the next Begin/Append/Finish): headers streamed one by
//     one. BeginRecord reserves five bytes for the record length and for the
//     header count; EndRecord writes the real varints and moves the record
//     body down over the unused reservation.
//   - BeginRecordSized(...) with the headers' count and encoded size
//     (RecordHeaderLen each), then AppendHeader per header and EndRecord:
//     headers from the caller's own form, with the record's length written
//     up front, so nothing is moved.
//
// With a codec other than NoCompression the records are built in a scratch buffer
// owned by the Builder and compressed into the batch by Finish (snappy uses
// xerial framing, as a Kafka broker emits it).
type Builder struct {
	buf   []byte // caller's dst with the batch appended; the batch starts at start
	start int
	raw   []byte // records scratch when compressing
	codec Codec

	baseOffset    int64
	baseTimestamp int64
	leaderEpoch   int32
	attrs         int16
	producerID    int64
	producerEpoch int16
	baseSequence  int32

	n               int32
	lastOffsetDelta int32
	maxTsDelta      int64

	// The record opened by BeginRecord.
	open     bool
	recStart int // index of the reserved length varint in the records buffer
	hcPos    int // index of the reserved header-count varint
	nHeaders int32
	// sized: the open record was begun by BeginRecordSized, whose headers
	// end at sizedEnd in the records buffer, sizedHeaders of them.
	sized        bool
	sizedEnd     int
	sizedHeaders int32

	enc *encoders // lazily created compressors

	// Grow, when set, replaces append's growth of the caller's buffer for
	// uncompressed batches: before a record is added, if the buffer lacks
	// room for it, Grow(buf, n) must return a buffer with buf's contents
	// and room for at least n more bytes (engine.Request.GrowResponse, which
	// moves a response into a larger pooled buffer). nil = append.
	Grow func(buf []byte, n int) []byte
}

// reserve is the space BeginRecord reserves for a 32-bit varint.
const reserve = varint.MaxLen32

// Reset starts a new batch appended to dst (nil allowed; existing contents
// are kept before the batch). Producer fields default to -1 (not idempotent)
// and partitionLeaderEpoch to -1; change them with SetProducer and
// SetPartitionLeaderEpoch. An invalid codec is treated as NoCompression.
func (b *Builder) Reset(dst []byte, baseOffset, baseTimestamp int64, codec Codec) {
	if !codec.Valid() {
		codec = NoCompression
	}
	b.start = len(dst)
	var hdr [HeaderSize]byte
	b.buf = append(dst, hdr[:]...)
	b.raw = b.raw[:0]
	b.codec = codec
	b.baseOffset = baseOffset
	b.baseTimestamp = baseTimestamp
	b.leaderEpoch = -1
	b.attrs = 0
	b.producerID, b.producerEpoch, b.baseSequence = -1, -1, -1
	b.n, b.lastOffsetDelta, b.maxTsDelta = 0, 0, 0
	b.open, b.sized = false, false
}

// SetProducer sets producerId, producerEpoch and baseSequence.
func (b *Builder) SetProducer(id int64, epoch int16, baseSequence int32) {
	b.producerID, b.producerEpoch, b.baseSequence = id, epoch, baseSequence
}

// SetPartitionLeaderEpoch sets partitionLeaderEpoch.
func (b *Builder) SetPartitionLeaderEpoch(epoch int32) { b.leaderEpoch = epoch }

// SetAttributes sets the attribute bits other than the codec (timestamp type,
// transactional, control, delete horizon); the codec bits of a are ignored.
func (b *Builder) SetAttributes(a int16) { b.attrs = a &^ attrCodecMask }

// Codec returns the codec the batch being built is compressed with.
func (b *Builder) Codec() Codec { return b.codec }

// RecordsLen returns the uncompressed size of the records added so far
// (the batch body before compression).
func (b *Builder) RecordsLen() int {
	if b.codec == NoCompression {
		return len(b.buf) - b.start - HeaderSize
	}
	return len(b.raw)
}

// TrimScratch drops the compression scratch buffer when its capacity is
// over max, so a pooled Builder does not pin a large one.
func (b *Builder) TrimScratch(max int) {
	if cap(b.raw) > max {
		b.raw = nil
	}
}

// Len returns the number of records added so far.
func (b *Builder) Len() int { return int(b.n) }

// records returns the buffer records are appended to.
func (b *Builder) records() *[]byte {
	if b.codec == NoCompression {
		return &b.buf
	}
	return &b.raw
}

func (b *Builder) note(offsetDelta int32, timestampDelta int64) {
	if b.n == 0 || timestampDelta > b.maxTsDelta {
		b.maxTsDelta = timestampDelta
	}
	b.lastOffsetDelta = offsetDelta
	b.n++
}

// Append adds a record without headers. A nil key or value is encoded as
// null (-1), a non-nil empty one as empty.
func (b *Builder) Append(offsetDelta int32, timestampDelta int64, key, value []byte) {
	b.appendRecord(0, offsetDelta, timestampDelta, key, value, nil, 0)
}

// AppendRecord adds r, copying its headers' encoded bytes as they are.
func (b *Builder) AppendRecord(r *Record) {
	b.appendRecord(r.Attributes, r.OffsetDelta, r.TimestampDelta, r.Key, r.Value, r.Headers.raw, r.Headers.count)
}

func (b *Builder) appendRecord(attrs int8, offsetDelta int32, timestampDelta int64, key, value, headers []byte, nHeaders int32) {
	if b.open {
		b.EndRecord()
	}
	body := 1 + varint.VarlongLen(timestampDelta) + varint.VarintLen(offsetDelta) +
		bytesLen(key) + bytesLen(value) + varint.VarintLen(nHeaders) + len(headers)
	p := b.records()
	b.ensure(p, varint.MaxLen32+body)
	dst := varint.AppendVarint(*p, int32(body))
	dst = append(dst, byte(attrs))
	dst = varint.AppendVarlong(dst, timestampDelta)
	dst = varint.AppendVarint(dst, offsetDelta)
	dst = appendVarintBytes(dst, key)
	dst = appendVarintBytes(dst, value)
	dst = varint.AppendVarint(dst, nHeaders)
	*p = append(dst, headers...)
	b.note(offsetDelta, timestampDelta)
}

// ensure gives *p room for n more bytes through Grow, when set, for the
// caller's buffer (the compression scratch is the Builder's own and grows by
// append).
func (b *Builder) ensure(p *[]byte, n int) {
	if b.Grow != nil && p == &b.buf && n > cap(b.buf)-len(b.buf) {
		b.buf = b.Grow(b.buf, n)
	}
}

// bytesLen is the encoded size of a VARINT-length-prefixed byte string.
func bytesLen(v []byte) int {
	if v == nil {
		return 1
	}
	return varint.VarintLen(int32(len(v))) + len(v)
}

// BeginRecord starts a record whose headers follow through AppendHeader. The
// record is completed by EndRecord, or implicitly by the next BeginRecord,
// Append, AppendRecord or Finish.
func (b *Builder) BeginRecord(offsetDelta int32, timestampDelta int64, key, value []byte) {
	if b.open {
		b.EndRecord()
	}
	p := b.records()
	b.ensure(p, 2*reserve+1+varint.MaxLen64+varint.MaxLen32+bytesLen(key)+bytesLen(value))
	dst := *p
	b.recStart = len(dst)
	var pad [reserve]byte
	dst = append(dst, pad[:]...)
	dst = append(dst, 0) // attributes
	dst = varint.AppendVarlong(dst, timestampDelta)
	dst = varint.AppendVarint(dst, offsetDelta)
	dst = appendVarintBytes(dst, key)
	dst = appendVarintBytes(dst, value)
	b.hcPos = len(dst)
	*p = append(dst, pad[:]...)
	b.nHeaders = 0
	b.open = true
	b.note(offsetDelta, timestampDelta)
}

// BeginRecordSized starts a record as BeginRecord does, for a caller that
// knows its headers up front: nHeaders of them, headersLen bytes encoded (the
// sum of their RecordHeaderLen), which must follow through AppendHeader
// before EndRecord. The record's length and header count are written at
// once, so EndRecord moves nothing.
func (b *Builder) BeginRecordSized(offsetDelta int32, timestampDelta int64, key, value []byte, nHeaders int32, headersLen int) {
	if b.open {
		b.EndRecord()
	}
	body := 1 + varint.VarlongLen(timestampDelta) + varint.VarintLen(offsetDelta) +
		bytesLen(key) + bytesLen(value) + varint.VarintLen(nHeaders) + headersLen
	p := b.records()
	b.ensure(p, varint.MaxLen32+body)
	dst := varint.AppendVarint(*p, int32(body))
	dst = append(dst, 0) // attributes
	dst = varint.AppendVarlong(dst, timestampDelta)
	dst = varint.AppendVarint(dst, offsetDelta)
	dst = appendVarintBytes(dst, key)
	dst = appendVarintBytes(dst, value)
	dst = varint.AppendVarint(dst, nHeaders)
	*p = dst
	b.sizedEnd, b.sizedHeaders = len(dst)+headersLen, nHeaders
	b.nHeaders = 0
	b.open, b.sized = true, true
	b.note(offsetDelta, timestampDelta)
}

// RecordHeaderLen is the encoded size of one record header (key, value), as
// AppendRecordHeader and AppendHeader write it.
func RecordHeaderLen(key, value []byte) int {
	return varint.VarintLen(int32(len(key))) + len(key) + bytesLen(value)
}

// AppendHeader adds a header to the record opened by BeginRecord; a nil value
// is encoded as null. Without an open record it does nothing.
func (b *Builder) AppendHeader(key, value []byte) {
	if !b.open {
		return
	}
	p := b.records()
	b.ensure(p, 2*varint.MaxLen32+len(key)+len(value))
	*p = AppendRecordHeader(*p, key, value)
	b.nHeaders++
}

// EndRecord completes the record opened by BeginRecord: it writes the header
// count and the record length into their reserved space and moves the record
// body down over what the varints did not use. Without an open record it
// does nothing.
func (b *Builder) EndRecord() {
	if !b.open {
		return
	}
	b.open = false
	p := b.records()
	if b.sized {
		b.sized = false
		if len(*p) != b.sizedEnd || b.nHeaders != b.sizedHeaders {
			// The caller's count or size was not what it appended: a bug
			// in the caller, never the input's doing.
			panic("batch: BeginRecordSized headers differ from those appended")
		}
		return
	}
	dst := *p
	var hc, ln [reserve]byte
	hcLen := len(varint.AppendVarint(hc[:0], b.nHeaders))
	fieldsStart := b.recStart + reserve // attributes .. value
	fieldsLen := b.hcPos - fieldsStart
	headersStart := b.hcPos + reserve
	headersLen := len(dst) - headersStart
	body := fieldsLen + hcLen + headersLen
	lnLen := len(varint.AppendVarint(ln[:0], int32(body)))

	i := b.recStart
	i += copy(dst[i:], ln[:lnLen])
	i += copy(dst[i:], dst[fieldsStart:fieldsStart+fieldsLen])
	i += copy(dst[i:], hc[:hcLen])
	i += copy(dst[i:], dst[headersStart:headersStart+headersLen])
	*p = dst[:i]
}

// Finish completes the batch and returns the buffer passed to Reset with the
// batch appended. With no records it returns that buffer unchanged (Kafka
// never emits an empty batch from a producer). For a compressed codec it
// compresses the records first; should the compressor fail (it cannot for
// in-memory input), the batch is emitted uncompressed instead.
func (b *Builder) Finish() []byte {
	if b.open {
		b.EndRecord()
	}
	if b.n == 0 {
		return b.buf[:b.start]
	}
	codec := b.codec
	if codec != NoCompression {
		// The compressed stream goes straight into the caller's buffer:
		// room for the worst case first, through Grow when set, so the
		// compressors never reallocate it.
		if need := compressBound(codec, len(b.raw)); b.Grow != nil && need > cap(b.buf)-len(b.buf) {
			b.buf = b.Grow(b.buf, need)
		}
		out, ok := b.compress(b.buf, b.raw)
		if ok {
			b.buf = out
		} else {
			codec = NoCompression
			b.buf = append(b.buf, b.raw...)
		}
	}
	h := b.buf[b.start:]
	binary.BigEndian.PutUint64(h[offBaseOffset:], uint64(b.baseOffset))
	binary.BigEndian.PutUint32(h[offLength:], uint32(len(h)-lengthOverhead))
	binary.BigEndian.PutUint32(h[offLeaderEpoch:], uint32(b.leaderEpoch))
	h[offMagic] = Magic
	binary.BigEndian.PutUint16(h[offAttributes:], uint16(b.attrs|int16(codec)))
	binary.BigEndian.PutUint32(h[offLastOffsetDelta:], uint32(b.lastOffsetDelta))
	binary.BigEndian.PutUint64(h[offBaseTimestamp:], uint64(b.baseTimestamp))
	binary.BigEndian.PutUint64(h[offMaxTimestamp:], uint64(b.baseTimestamp+b.maxTsDelta))
	binary.BigEndian.PutUint64(h[offProducerID:], uint64(b.producerID))
	binary.BigEndian.PutUint16(h[offProducerEpoch:], uint16(b.producerEpoch))
	binary.BigEndian.PutUint32(h[offBaseSequence:], uint32(b.baseSequence))
	binary.BigEndian.PutUint32(h[offNumRecords:], uint32(b.n))
	binary.BigEndian.PutUint32(h[offCRC:], checksum(h[offAttributes:]))
	return b.buf
}
