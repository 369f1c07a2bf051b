// Package message holds kiggy's in-process form of an Iggy message: the exact
// Iggy 0.9 message frame (docs/design/iggy-protocol.md §3.7), so that the Iggy client can
// send a built batch without re-encoding and the embedded log can store it as
// is.
//
// A frame is a 48-byte header followed by the payload and then the user-header
// block (all integers little-endian):
//
//	0  checksum u64          XXH3-64 over bytes [8:end]; stamped by End when Batch.Checksums is set, else 0 until the Iggy client stamps it
//	8  id u128               message id (kiggy leaves it 0, docs/design/record-mapping.md §2.8)
//	24 offset_delta u32      index of the message within its batch
//	28 timestamp_delta u32   origin timestamp − Batch.Origin, in µs
//	32 user_headers_length u32
//	36 payload_length u32
//	40 reserved u64          0
//	48 payload, then user headers
package message

import (
	"encoding/binary"
	"errors"

	"github.com/zeebo/xxh3"
)

// FrameHeaderSize is the size of an Iggy message frame header.
const FrameHeaderSize = 48

// Headroom is the number of bytes a Batch keeps free in front of its frames,
// so a backend can write its own framing (the Iggy SendMessages metadata and
// 256-byte batch header) in place and send one contiguous slice.
const Headroom = 1024

// MaxTimestampSpan is the largest origin-timestamp span one batch can express:
// each frame holds a u32 µs delta (≈71.6 minutes).
const MaxTimestampSpan = 1<<32 - 1

// User-header kind codes (docs/design/iggy-protocol.md §4.1).
const (
	KindRaw    byte = 1
	KindString byte = 2
	KindInt64  byte = 7
)

// Errors reported when parsing frames.
var (
	ErrFrame   = errors.New("message: malformed frame")
	ErrHeaders = errors.New("message: malformed user-header block")
)

// Batch is a sequence of message frames being built, or handed to a Log to
// append. Frames are written directly into Buf after Headroom bytes.
//
// A Batch is not safe for concurrent use. The zero value is not ready: call
// Reset first.
type Batch struct {
	// Buf holds Headroom reserved bytes, then Count frames back to back.
	Buf []byte
	// Count is the number of complete frames.
	Count int
	// Origin is the batch origin timestamp in µs: every frame's timestamp
	// delta is relative to it, and it must be ≤ every message's origin.
	Origin uint64
	// Checksums makes End stamp each frame's checksum (FrameChecksum) while
	// the frame is still in cache, and keep the checksums in order for the
	// batch checksum (Sums), so a backend that needs them (Iggy) does not
	// walk the frames again (docs/BENCHMARKS.md, "Where kiggy's CPU
	// goes"). It takes effect at the next Reset and is kept across Resets.
	Checksums bool
	// ServerTime: some frame's timestamp is the store's append time, which
	// only the store knows (a Kafka record timestamp of -1,
	// docs/design/record-mapping.md §2.5), so a copy of the frames is not
	// what a read of them returns: the Iggy tail window does not keep such
	// a batch (docs/IGGY.md, "The tail window"). Reset clears it.
	ServerTime bool

	start   int    // offset of the frame being built, or -1
	stamped bool   // every frame stamped, its checksum in sums
	sums    []byte // the frames' checksums, 8 LE bytes each, while stamped
}

// FrameChecksum is an Iggy message frame's checksum: XXH3-64 (seed 0) over
// the frame from byte 8 (the id) to its end (docs/design/iggy-protocol.md
// §3.7). frame must be exactly one frame.
func FrameChecksum(frame []byte) uint64 { return xxh3.Hash(frame[8:]) }

// Sums returns the checksums of b's frames in order, 8 little-endian bytes
// each, when every frame was stamped as it was built (Checksums); nil
// otherwise. The slice is b's and valid until b changes.
func (b *Batch) Sums() []byte {
	if !b.stamped || len(b.sums) != 8*b.Count {
		return nil
	}
	return b.sums
}

// Reset empties b and sets its origin timestamp, keeping Buf's capacity.
func (b *Batch) Reset(origin uint64) {
	if cap(b.Buf) < Headroom {
		b.Buf = make([]byte, Headroom, Headroom+4096)
	}
	b.Buf = b.Buf[:Headroom]
	b.Count = 0
	b.Origin = origin
	b.ServerTime = false
	b.start = -1
	b.stamped = b.Checksums
	b.sums = b.sums[:0]
}

// Frames returns the frame bytes (without the headroom).
func (b *Batch) Frames() []byte { return b.Buf[Headroom:] }

// Size returns the number of frame bytes.
func (b *Batch) Size() int { return len(b.Buf) - Headroom }

// Begin starts a frame for a message with the given origin timestamp (µs),
// which must be within [Origin, Origin+MaxTimestampSpan]. The payload must be
// appended next (AppendPayload), then user headers (AppendHeader), then End.
func (b *Batch) Begin(origin uint64) {
	b.start = len(b.Buf)
	var h [FrameHeaderSize]byte
	binary.LittleEndian.PutUint32(h[24:], uint32(b.Count))
	binary.LittleEndian.PutUint32(h[28:], uint32(origin-b.Origin))
	b.Buf = append(b.Buf, h[:]...)
}

// AppendPayload appends payload bytes to the frame being built; it may be
// called several times (the envelope is written in pieces). It must come
// before any AppendHeader.
func (b *Batch) AppendPayload(p ...byte) { b.Buf = append(b.Buf, p...) }

// AppendPayloadString is AppendPayload for a string.
func (b *Batch) AppendPayloadString(p string) { b.Buf = append(b.Buf, p...) }

// MarkHeaders records that the payload is complete; headers follow.
// It returns the payload length so far.
func (b *Batch) MarkHeaders() int {
	n := len(b.Buf) - b.start - FrameHeaderSize
	binary.LittleEndian.PutUint32(b.Buf[b.start+36:], uint32(n))
	return n
}

// AppendHeader appends one user header (kind, key, kind, value) in TLV form.
// MarkHeaders must have been called for this frame.
func (b *Batch) AppendHeader(keyKind byte, key string, valueKind byte, value []byte) {
	b.Buf = AppendHeader(b.Buf, keyKind, key, valueKind, value)
}

// End completes the frame begun by Begin.
func (b *Batch) End() {
	payloadLen := binary.LittleEndian.Uint32(b.Buf[b.start+36:])
	headersLen := len(b.Buf) - b.start - FrameHeaderSize - int(payloadLen)
	binary.LittleEndian.PutUint32(b.Buf[b.start+32:], uint32(headersLen))
	if b.stamped {
		if b.Checksums {
			b.sums = binary.LittleEndian.AppendUint64(b.sums, stamp(b.Buf[b.start:]))
		} else {
			b.stamped = false
		}
	}
	b.Count++
	b.start = -1
}

// Join appends src's frames to b, whose origin must be ≤ src's and within
// MaxTimestampSpan of src's last timestamp: each frame's offset delta is
// renumbered through b and its timestamp delta rebased onto b.Origin. When b
// is stamped, the frames Join changed are stamped again here, right after
// their copy, and src's checksums are taken as they are for frames it did
// not change. src's frames must tile (a batch built with Begin and End).
func (b *Batch) Join(src *Batch) {
	at := len(b.Buf)
	b.Buf = append(b.Buf, src.Frames()...)
	if b.stamped {
		b.sums = append(b.sums, make([]byte, 8*src.Count)...)
	}
	shift := uint32(src.Origin - b.Origin)
	switch {
	case shift == 0 && b.Count == 0 && b.stamped && src.Sums() != nil:
		copy(b.sums, src.sums)
	case b.stamped:
		renumber(b.Buf[at:], src.Count, b.Count, shift, b.sums[8*b.Count:])
	default:
		renumber(b.Buf[at:], src.Count, b.Count, shift, nil)
	}
	b.Count += src.Count
	b.ServerTime = b.ServerTime || src.ServerTime
}

// Rebase makes b's frames the messages first, first+1, … of a batch whose
// origin is origin (≤ b.Origin, within MaxTimestampSpan of b's last
// timestamp): their offset deltas are renumbered from first and their
// timestamp deltas rebased, in place, and a stamped b is stamped again where
// a frame changed. It is Join without the copy, for a backend that sends
// several batches as one from their own buffers; b is then for sending only
// (its offset deltas no longer start at 0).
func (b *Batch) Rebase(origin uint64, first int) {
	shift := uint32(b.Origin - origin)
	b.Origin = origin
	if shift == 0 && first == 0 {
		return
	}
	var sums []byte
	if b.Sums() != nil {
		sums = b.sums
	} else {
		b.stamped = false
	}
	renumber(b.Frames(), b.Count, first, shift, sums)
}

// renumber gives the count frames of frames the offset deltas first… and
// adds shift to their timestamp deltas; with sums (8 bytes a frame) it
// stamps each frame again and writes its checksum there.
func renumber(frames []byte, count, first int, shift uint32, sums []byte) {
	off := 0
	for i := range count {
		fr := frames[off:]
		binary.LittleEndian.PutUint32(fr[24:], uint32(first+i))
		binary.LittleEndian.PutUint32(fr[28:], binary.LittleEndian.Uint32(fr[28:])+shift)
		n := FrameHeaderSize + int(binary.LittleEndian.Uint32(fr[32:])) + int(binary.LittleEndian.Uint32(fr[36:]))
		if sums != nil {
			binary.LittleEndian.PutUint64(sums[8*i:], stamp(fr[:n]))
		}
		off += n
	}
}

// stamp writes frame's checksum into its first 8 bytes and returns it.
func stamp(frame []byte) uint64 {
	sum := FrameChecksum(frame)
	binary.LittleEndian.PutUint64(frame, sum)
	return sum
}

// Abort drops the frame being built.
func (b *Batch) Abort() {
	if b.start >= 0 {
		b.Buf = b.Buf[:b.start]
		b.start = -1
	}
}

// AppendHeader appends one TLV user header to dst.
func AppendHeader(dst []byte, keyKind byte, key string, valueKind byte, value []byte) []byte {
	dst = append(dst, keyKind)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	dst = append(dst, valueKind)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...)
}

// Frame is a parsed view of one frame; its slices alias the frame bytes.
type Frame struct {
	Checksum       uint64
	ID             [16]byte
	OffsetDelta    uint32
	TimestampDelta uint32
	Payload        []byte
	Headers        []byte
	// Size is the whole frame's length in bytes.
	Size int
}

// ParseFrame parses the frame at the start of b.
func ParseFrame(b []byte) (Frame, error) {
	if len(b) < FrameHeaderSize {
		return Frame{}, ErrFrame
	}
	var f Frame
	f.Checksum = binary.LittleEndian.Uint64(b)
	copy(f.ID[:], b[8:24])
	f.OffsetDelta = binary.LittleEndian.Uint32(b[24:])
	f.TimestampDelta = binary.LittleEndian.Uint32(b[28:])
	hl := uint64(binary.LittleEndian.Uint32(b[32:]))
	pl := uint64(binary.LittleEndian.Uint32(b[36:]))
	end := FrameHeaderSize + pl + hl
	if end > uint64(len(b)) {
		return Frame{}, ErrFrame
	}
	p := FrameHeaderSize + int(pl)
	f.Payload = b[FrameHeaderSize:p:p]
	f.Headers = b[p:int(end):int(end)]
	f.Size = int(end)
	return f, nil
}

// Message is one stored message as a Log hands it to a reader. Its slices
// alias the backend's buffers and are valid only during the callback that
// received it.
type Message struct {
	// Offset is the message's partition offset (= the Kafka offset).
	Offset int64
	// Timestamp is the server's append time in µs.
	Timestamp uint64
	// OriginTimestamp is the producer's timestamp in µs (0 = none).
	OriginTimestamp uint64
	// ID is the Iggy message id.
	ID [16]byte
	// Payload is the message payload.
	Payload []byte
	// Headers is the raw TLV user-header block.
	Headers []byte
}

// Header is one decoded user header; slices alias the block.
type Header struct {
	KeyKind   byte
	Key       []byte
	ValueKind byte
	Value     []byte
}

// NextHeader decodes the first header of block and returns it with the rest of
// the block. It fails on truncation or on a zero kind.
func NextHeader(block []byte) (Header, []byte, error) {
	var h Header
	if len(block) < 5 {
		return h, nil, ErrHeaders
	}
	h.KeyKind = block[0]
	kl := uint64(binary.LittleEndian.Uint32(block[1:]))
	block = block[5:]
	if kl > uint64(len(block)) {
		return h, nil, ErrHeaders
	}
	h.Key = block[:kl:kl]
	block = block[kl:]
	if len(block) < 5 {
		return h, nil, ErrHeaders
	}
	h.ValueKind = block[0]
	vl := uint64(binary.LittleEndian.Uint32(block[1:]))
	block = block[5:]
	if vl > uint64(len(block)) {
		return h, nil, ErrHeaders
	}
	h.Value = block[:vl:vl]
	if h.KeyKind == 0 || h.ValueKind == 0 {
		return h, nil, ErrHeaders
	}
	return h, block[vl:], nil
}
