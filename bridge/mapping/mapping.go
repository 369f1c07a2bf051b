// Package mapping turns Kafka records into Iggy messages and back, byte for
// byte as docs/design/record-mapping.md (mapping version 1, compatible with
// the Rust gateway in apache/iggy) specifies. Bare section numbers (§2.6) in
// this package's comments refer to docs/design/record-mapping.md.
//
// Produce: one record becomes one message frame in a message.Batch. The value
// is the payload; the key and headers become `kafka.*` user headers (String
// keys, Raw values, sorted by key bytes); records the native form cannot hold
// go into the envelope. Fetch: Decode reverses it, and presents messages
// written by native Iggy clients as records with a null key.
//
// Both directions work on views and caller-owned scratch space, so the hot
// path allocates nothing once the scratch slices have grown.
package mapping

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"unicode/utf8"

	"github.com/kiggy-io/kiggy/bridge/message"
)

// Reserved Iggy header keys (docs/design/record-mapping.md §2.1).
const (
	keyVersion  = "kafka.v"
	keyKey      = "kafka.key"
	keyValue    = "kafka.value"
	keyTS       = "kafka.ts"
	keyEnvelope = "kafka.envelope"
	keyProducer = "kafka.producer"
	keyControl  = "kafka.control"
	prefixH     = "kafka.h."
)

// Limits from Iggy (docs/design/record-mapping.md §1).
const (
	// MaxPayload is the largest Iggy payload (MAX_PAYLOAD_SIZE).
	MaxPayload = 64_000_000
	// MaxHeaderBlock is the largest user-header block (MAX_USER_HEADERS_SIZE).
	MaxHeaderBlock = 100_000
	// maxHeaderPart is the longest header key or value.
	maxHeaderPart = 255
)

// Errors. Each maps to one Kafka code for the whole partition
// (docs/design/record-mapping.md §2.9).
var (
	// ErrInvalidRecord: a record the mapping refuses (INVALID_RECORD, 87):
	// repeated header name, bad timestamp, non-UTF-8 header name.
	ErrInvalidRecord = errors.New("mapping: invalid record")
	// ErrTooLarge: a record too large for an Iggy message (MESSAGE_TOO_LARGE, 10).
	ErrTooLarge = errors.New("mapping: record too large for an Iggy message")
	// ErrUnmappable: a stored message that cannot be presented as a record
	// (docs/design/record-mapping.md §3.6; the partition answers UNKNOWN_SERVER_ERROR).
	ErrUnmappable = errors.New("mapping: stored message cannot be mapped to a record")
)

var (
	one         = []byte{1}
	placeholder = []byte{0}
	markerNull  = []byte("null")
	markerEmpty = []byte("empty")
)

// Header is one Kafka record header; a nil Value is null.
type Header struct {
	Key   []byte
	Value []byte
}

// Record is a Kafka record on its way in or out. Nil Key or Value mean null;
// non-nil empty means empty. Slices are views owned by the caller.
type Record struct {
	Key         []byte
	Value       []byte
	TimestampMs int64
	// Headers are in producer order on the way in; on the way out, sorted by
	// name (native path) or in producer order (envelope).
	Headers []Header
	// Producer, on the way in, is the idempotent producer stamp to write on
	// this message (the first of an idempotent batch); nil writes none.
	// Decode leaves it nil; it reports a stamp in Stamp.
	Producer *Producer
	// Stamp, on the way out, is the producer stamp Decode found on the
	// message (Stamp.Count > 0), the zero value when it has none.
	Stamp Producer
	// Control, on the way out, is the transaction marker the message is
	// (docs/MAPPING.md, "Transaction markers"); IsControl says whether it
	// is one. A control message has no key, value or headers.
	Control   Control
	IsControl bool
}

// Window computes a batch's timestamp window start: the minimum µs timestamp
// over records whose Kafka timestamp is > 0, or 0 if none
// (docs/design/record-mapping.md §2.5, rule 1). Observe every record, then call Start.
type Window struct {
	min uint64
	any bool
}

// Observe adds one record's Kafka timestamp (ms).
func (w *Window) Observe(ms int64) {
	if ms <= 0 || ms > math.MaxInt64/1000 {
		return
	}
	us := uint64(ms) * 1000
	if !w.any || us < w.min {
		w.min, w.any = us, true
	}
}

// Start returns the window start in µs.
func (w *Window) Start() uint64 {
	if !w.any {
		return 0
	}
	return w.min
}

// Encoder maps records into a message.Batch. Its scratch space is reused
// across records; an Encoder is not safe for concurrent use.
type Encoder struct {
	sorted []Header
}

// Append maps r to one message frame appended to b, whose Origin must be the
// batch's window start (Window.Start). r.Headers is left unchanged. On error
// nothing is appended.
func (e *Encoder) Append(b *message.Batch, r *Record) error {
	origin, writeTS, err := timestamps(r.TimestampMs, b.Origin)
	if err != nil {
		return err
	}
	if r.TimestampMs == -1 {
		// Read back as the store's append time (§2.5).
		b.ServerTime = true
	}

	// Sort a copy of the headers by name: the native block is sorted, and
	// adjacent equal names reveal a repeated header (refused, §2.4).
	e.sorted = append(e.sorted[:0], r.Headers...)
	sortHeaders(e.sorted)
	envelope := r.Key != nil && (len(r.Key) == 0 || len(r.Key) > maxHeaderPart)
	block := 0 // native header block size
	for i := range e.sorted {
		h := &e.sorted[i]
		if i > 0 && bytes.Equal(h.Key, e.sorted[i-1].Key) {
			return ErrInvalidRecord
		}
		if !utf8.Valid(h.Key) {
			return ErrInvalidRecord
		}
		if len(prefixH)+len(h.Key) > maxHeaderPart || h.Value == nil || len(h.Value) == 0 || len(h.Value) > maxHeaderPart {
			envelope = true
		}
		block += headerSize(len(prefixH)+len(h.Key), len(h.Value))
	}
	if !envelope {
		block += headerSize(len(keyVersion), 1)
		if r.Key != nil {
			block += headerSize(len(keyKey), len(r.Key))
		}
		if len(r.Value) == 0 {
			block += headerSize(len(keyValue), len("empty"))
		}
		if writeTS {
			block += headerSize(len(keyTS), 8)
		}
		if r.Producer != nil {
			block += headerSize(len(keyProducer), r.Producer.size())
		}
		if block > MaxHeaderBlock {
			envelope = true
		}
	}
	if envelope {
		return e.appendEnvelope(b, r, origin, writeTS)
	}
	if len(r.Value) > MaxPayload {
		return ErrTooLarge
	}

	b.Begin(origin)
	if len(r.Value) == 0 {
		b.AppendPayload(placeholder...)
	} else {
		b.AppendPayload(r.Value...)
	}
	b.MarkHeaders()
	// Sorted by key bytes: kafka.h.* < kafka.key < kafka.producer < kafka.ts
	// < kafka.v < kafka.value.
	for i := range e.sorted {
		h := &e.sorted[i]
		b.Buf = appendPrefixedKey(b.Buf, h.Key)
		b.Buf = appendRawValue(b.Buf, h.Value)
	}
	if r.Key != nil {
		b.AppendHeader(message.KindString, keyKey, message.KindRaw, r.Key)
	}
	if r.Producer != nil {
		b.Buf = r.Producer.appendHeader(b.Buf)
	}
	if writeTS {
		b.Buf = appendTS(b.Buf, r.TimestampMs)
	}
	b.AppendHeader(message.KindString, keyVersion, message.KindRaw, one)
	switch {
	case r.Value == nil:
		b.AppendHeader(message.KindString, keyValue, message.KindRaw, markerNull)
	case len(r.Value) == 0:
		b.AppendHeader(message.KindString, keyValue, message.KindRaw, markerEmpty)
	}
	b.End()
	return nil
}

// appendEnvelope writes the §2.6 envelope: all integers u32 LE.
func (e *Encoder) appendEnvelope(b *message.Batch, r *Record, origin uint64, writeTS bool) error {
	size := 13 + len(r.Key) + len(r.Value)
	for i := range r.Headers {
		size += 9 + len(r.Headers[i].Key) + len(r.Headers[i].Value)
	}
	if size > MaxPayload {
		return ErrTooLarge
	}
	b.Begin(origin)
	var flags byte
	if r.Key != nil {
		flags |= 1
	}
	if r.Value != nil {
		flags |= 2
	}
	b.Buf = append(b.Buf, flags)
	b.Buf = appendLenBytes(b.Buf, r.Key)
	b.Buf = appendLenBytes(b.Buf, r.Value)
	b.Buf = binary.LittleEndian.AppendUint32(b.Buf, uint32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		b.Buf = appendLenBytes(b.Buf, h.Key)
		if h.Value != nil {
			b.Buf = append(b.Buf, 1)
		} else {
			b.Buf = append(b.Buf, 0)
		}
		b.Buf = appendLenBytes(b.Buf, h.Value)
	}
	b.MarkHeaders()
	// Sorted: kafka.envelope < kafka.producer < kafka.ts < kafka.v.
	b.AppendHeader(message.KindString, keyEnvelope, message.KindRaw, one)
	if r.Producer != nil {
		b.Buf = r.Producer.appendHeader(b.Buf)
	}
	if writeTS {
		b.Buf = appendTS(b.Buf, r.TimestampMs)
	}
	b.AppendHeader(message.KindString, keyVersion, message.KindRaw, one)
	b.End()
	return nil
}

// timestamps applies docs/design/record-mapping.md §2.5: native = ms×1000 (-1 → 0);
// origin = clamp(native, start, start+u32max); kafka.ts is written iff
// origin ≠ native or ms == 0.
func timestamps(ms int64, start uint64) (origin uint64, writeTS bool, err error) {
	var native uint64
	switch {
	case ms < -1 || ms > math.MaxInt64/1000:
		return 0, false, ErrInvalidRecord
	case ms == -1:
		native = 0
	default:
		native = uint64(ms) * 1000
	}
	origin = native
	if origin < start {
		origin = start
	}
	if origin > start+message.MaxTimestampSpan {
		origin = start + message.MaxTimestampSpan
	}
	return origin, origin != native || ms == 0, nil
}

func headerSize(k, v int) int { return 1 + 4 + k + 1 + 4 + v }

func appendPrefixedKey(dst, name []byte) []byte {
	dst = append(dst, message.KindString)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(prefixH)+len(name)))
	dst = append(dst, prefixH...)
	return append(dst, name...)
}

func appendRawValue(dst, v []byte) []byte {
	dst = append(dst, message.KindRaw)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

func appendTS(dst []byte, ms int64) []byte {
	dst = append(dst, message.KindString)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(keyTS)))
	dst = append(dst, keyTS...)
	dst = append(dst, message.KindInt64)
	dst = binary.LittleEndian.AppendUint32(dst, 8)
	return binary.LittleEndian.AppendUint64(dst, uint64(ms))
}

func appendLenBytes(dst, b []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// sortHeaders sorts by key bytes; insertion sort, stable, no allocation
// (records carry few headers).
func sortHeaders(h []Header) {
	for i := 1; i < len(h); i++ {
		for j := i; j > 0 && bytes.Compare(h[j].Key, h[j-1].Key) < 0; j-- {
			h[j], h[j-1] = h[j-1], h[j]
		}
	}
}
