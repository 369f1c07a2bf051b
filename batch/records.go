package batch

import "github.com/kiggy-io/kiggy/varint"

// Record is one record of a batch (KAFKA_PROTOCOL.md §4.2). Key, Value and
// Headers are views: into the request frame for an uncompressed batch (valid
// until the frame is released), or into the Decoder's output buffer for a
// compressed one (valid until the Decoder's next Records call or its release).
// They are full slice expressions, so appending to them never writes into the
// frame.
type Record struct {
	// Attributes is the record attributes byte (unused by Kafka, 0).
	Attributes int8
	// TimestampDelta is the timestamp relative to Header.BaseTimestamp (ms).
	TimestampDelta int64
	// OffsetDelta is the offset relative to Header.BaseOffset.
	OffsetDelta int32
	// Key is nil for a null key; a non-nil empty slice is an empty key.
	Key []byte
	// Value is nil for a null value (tombstone); non-nil empty is empty.
	Value []byte
	// Headers is a view over the record's headers.
	Headers RecordHeaders
}

// RecordHeaders is a view over a record's encoded headers, so that iterating
// records allocates no slice of headers. The zero value has no headers.
// Iterate with Next; Rewind starts over.
type RecordHeaders struct {
	raw   []byte // encoded headers, after the count varint
	count int32
	off   int   // read position in raw
	next  int32 // index of the next header
}

// NewRecordHeaders returns a view over count headers encoded back to back in
// raw (each as AppendRecordHeader writes it). Builder.AppendRecord uses raw as
// is; Next stops early, reporting ok=false, if raw is malformed.
func NewRecordHeaders(raw []byte, count int) RecordHeaders {
	if count < 0 {
		count = 0
	}
	return RecordHeaders{raw: raw, count: int32(count)}
}

// Len returns the number of headers.
func (h *RecordHeaders) Len() int { return int(h.count) }

// Raw returns the encoded headers (without the count), as a view.
func (h *RecordHeaders) Raw() []byte { return h.raw }

// Rewind restarts iteration at the first header.
func (h *RecordHeaders) Rewind() { h.off, h.next = 0, 0 }

// Next returns the next header. key is never nil for a header that exists
// (header keys are non-null strings); value is nil for a null value. ok is
// false after the last header. Both are views with the lifetime of the record.
func (h *RecordHeaders) Next() (key, value []byte, ok bool) {
	if h.next >= h.count {
		return nil, nil, false
	}
	b, i := h.raw, h.off
	kl, i := readVarint(b, i)
	if i < 0 || kl < 0 || int(kl) > len(b)-i {
		h.next = h.count
		return nil, nil, false
	}
	key = b[i : i+int(kl) : i+int(kl)]
	i += int(kl)
	vl, i := readVarint(b, i)
	if i < 0 || vl < -1 || int(vl) > len(b)-i {
		h.next = h.count
		return nil, nil, false
	}
	if vl >= 0 {
		value = b[i : i+int(vl) : i+int(vl)]
		i += int(vl)
	}
	h.off = i
	h.next++
	return key, value, true
}

// AppendRecordHeader appends one header in record encoding (varint key
// length, key, varint value length or -1 for a nil value, value) to dst, for
// NewRecordHeaders.
func AppendRecordHeader(dst, key, value []byte) []byte {
	dst = varint.AppendVarint(dst, int32(len(key)))
	dst = append(dst, key...)
	return appendVarintBytes(dst, value)
}

// Records iterates the records of one batch. It is a value over the records
// section; Next decodes one record per call, checking every length against
// the bytes left before slicing (STYLE.md habit 4). After the last record it
// checks that exactly NumRecords records were present and that no bytes
// follow; Err reports the first failure.
type Records struct {
	b     []byte // records section (view)
	off   int
	left  int32 // records still to read
	count int32
	err   error
	done  bool
}

func newRecords(section []byte, count int32) Records {
	return Records{b: section, left: count, count: count}
}

// RecordsOf returns an iterator over the records of an uncompressed batch
// that Validate accepted with header h. For a compressed batch it returns
// ErrCompressed: use a Decoder. It does not allocate.
func RecordsOf(batch []byte, h Header) (Records, error) {
	if h.Codec() != None {
		return Records{}, ErrCompressed
	}
	size := h.Size()
	if size < HeaderSize || size > len(batch) {
		return Records{}, ErrTruncated
	}
	return newRecords(batch[HeaderSize:size:size], h.NumRecords), nil
}

// Len returns the number of records the batch declares.
func (r *Records) Len() int { return int(r.count) }

// Err returns the first error met by Next, or nil. It is only final once Next
// has returned false.
func (r *Records) Err() error { return r.err }

// Next decodes the next record into rec and reports whether there was one.
// When it returns false, Err tells whether iteration ended cleanly.
func (r *Records) Next(rec *Record) bool {
	if r.left <= 0 || r.err != nil {
		if !r.done {
			r.done = true
			if r.err == nil && r.off != len(r.b) {
				// "Incorrect declared batch size, records still remaining in file".
				r.err = ErrRecordTrailing
			}
		}
		return false
	}
	b := r.b
	length, i := readVarint(b, r.off)
	// "Invalid record size: expected N bytes in record payload, but instead
	// the buffer has only M remaining bytes" (DefaultRecord.readFrom).
	if i < 0 || length < 0 || int(length) > len(b)-i {
		if r.off == len(b) {
			// "Incorrect declared batch size, premature EOF reached".
			return r.fail(ErrRecordCount)
		}
		return r.fail(ErrRecordLength)
	}
	end := i + int(length)
	b = b[:end] // every field below must fit inside this record
	if i >= end {
		return r.fail(ErrRecordBody)
	}
	rec.Attributes = int8(b[i])
	i++
	rec.TimestampDelta, i = readVarlong(b, i)
	if i < 0 {
		return r.fail(ErrRecordBody)
	}
	rec.OffsetDelta, i = readVarint(b, i)
	if i < 0 {
		return r.fail(ErrRecordBody)
	}
	if rec.Key, i = readVarintBytes(b, i); i < 0 {
		return r.fail(ErrRecordBody)
	}
	if rec.Value, i = readVarintBytes(b, i); i < 0 {
		return r.fail(ErrRecordBody)
	}
	// "Found invalid number of record headers N" for a negative count.
	hc, i := readVarint(b, i)
	if i < 0 || hc < 0 {
		return r.fail(ErrRecordBody)
	}
	hstart := i
	for n := hc; n > 0; n-- {
		// "Invalid negative header key size N" (DefaultRecord.readHeaders).
		var kl int32
		kl, i = readVarint(b, i)
		if i < 0 || kl < 0 || int(kl) > end-i {
			return r.fail(ErrRecordBody)
		}
		i += int(kl)
		if _, i = readVarintBytes(b, i); i < 0 {
			return r.fail(ErrRecordBody)
		}
	}
	// "Invalid record size: expected to read N bytes in record payload, but
	// instead read M".
	if i != end {
		return r.fail(ErrRecordBody)
	}
	rec.Headers = RecordHeaders{raw: b[hstart:end:end], count: hc}
	r.off = end
	r.left--
	return true
}

func (r *Records) fail(err error) bool {
	r.err = err
	r.done = true
	return false
}

// readVarint decodes a zig-zag VARINT at b[i:], returning the value and the
// index after it, or index -1 if it is short or malformed. The one-byte case
// (most lengths and deltas) is inlined.
func readVarint(b []byte, i int) (int32, int) {
	if i >= 0 && i < len(b) && b[i] < 0x80 {
		u := int32(b[i])
		return int32(uint32(u)>>1) ^ -(u & 1), i + 1
	}
	return readVarintSlow(b, i)
}

func readVarintSlow(b []byte, i int) (int32, int) {
	if i < 0 || i >= len(b) {
		return 0, -1
	}
	v, n := varint.Varint(b[i:])
	if n <= 0 {
		return 0, -1
	}
	return v, i + n
}

// readVarlong is readVarint for a zig-zag VARLONG.
func readVarlong(b []byte, i int) (int64, int) {
	if i >= 0 && i < len(b) && b[i] < 0x80 {
		u := int64(b[i])
		return int64(uint64(u)>>1) ^ -(u & 1), i + 1
	}
	if i < 0 || i >= len(b) {
		return 0, -1
	}
	v, n := varint.Varlong(b[i:])
	if n <= 0 {
		return 0, -1
	}
	return v, i + n
}

// readVarintBytes decodes a VARINT length and that many bytes at b[i:]: -1 is
// null (nil), 0 a non-nil empty view. Lengths below -1 or past len(b) fail.
// (Java reads any negative length as null; kiggy rejects lengths below -1.)
func readVarintBytes(b []byte, i int) ([]byte, int) {
	l, i := readVarint(b, i)
	if i < 0 || l < -1 || int(l) > len(b)-i {
		return nil, -1
	}
	if l == -1 {
		return nil, i
	}
	j := i + int(l)
	return b[i:j:j], j
}

// appendVarintBytes appends a VARINT length (-1 for nil) and b.
func appendVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 1) // zig-zag(-1)
	}
	dst = varint.AppendVarint(dst, int32(len(b)))
	return append(dst, b...)
}
