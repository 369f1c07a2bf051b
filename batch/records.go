package batch

import "github.com/kiggy-io/kiggy/varint"

// Record is one record of a batch (docs/design/kafka-protocol.md §4.2). Key, Value and
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
	kl, one := varint1(b, i)
	if one {
		i++
	} else {
		kl, i = readVarintSlow(b, i)
	}
	if i < 0 || kl < 0 || int(kl) > len(b)-i {
		h.next = h.count
		return nil, nil, false
	}
	key = b[i : i+int(kl) : i+int(kl)]
	i += int(kl)
	vl, one := varint1(b, i)
	if one {
		i++
	} else {
		vl, i = readVarintSlow(b, i)
	}
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
// the bytes left before slicing (docs/design/style.md habit 4). After the last record it
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
	if h.Codec() != NoCompression {
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
//
// Every varint is decoded by the inlined one-byte fast path (varint1) first; the
// general decoder runs only for longer encodings.
func (r *Records) Next(rec *Record) bool {
	if r.left <= 0 || r.err != nil {
		return r.finish()
	}
	b, i := r.b, r.off
	length, ok := varint1(b, i)
	if ok {
		i++
	} else {
		length, i = readVarintSlow(b, i)
	}
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
	if v, ok := varint1(b, i); ok {
		rec.TimestampDelta = int64(v)
		i++
	} else if rec.TimestampDelta, i = readVarlongSlow(b, i); i < 0 {
		return r.fail(ErrRecordBody)
	}
	if v, ok := varint1(b, i); ok {
		rec.OffsetDelta = v
		i++
	} else if rec.OffsetDelta, i = readVarintSlow(b, i); i < 0 {
		return r.fail(ErrRecordBody)
	}
	// Key and value: -1 is null. (Java reads any negative length as null;
	// kiggy rejects lengths below -1.)
	kl, ok := varint1(b, i)
	if ok {
		i++
	} else if kl, i = readVarintSlow(b, i); i < 0 {
		return r.fail(ErrRecordBody)
	}
	if kl < -1 || int(kl) > end-i {
		return r.fail(ErrRecordBody)
	}
	rec.Key = nil
	if kl >= 0 {
		j := i + int(kl)
		rec.Key = b[i:j:j]
		i = j
	}
	vl, ok := varint1(b, i)
	if ok {
		i++
	} else if vl, i = readVarintSlow(b, i); i < 0 {
		return r.fail(ErrRecordBody)
	}
	if vl < -1 || int(vl) > end-i {
		return r.fail(ErrRecordBody)
	}
	rec.Value = nil
	if vl >= 0 {
		j := i + int(vl)
		rec.Value = b[i:j:j]
		i = j
	}
	// "Found invalid number of record headers N" for a negative count.
	hc, ok := varint1(b, i)
	if ok {
		i++
	} else if hc, i = readVarintSlow(b, i); i < 0 {
		return r.fail(ErrRecordBody)
	}
	if hc < 0 {
		return r.fail(ErrRecordBody)
	}
	hstart := i
	if hc > 0 {
		i = skipHeaders(b, i, hc)
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

// finish ends the iteration once every declared record was read or one
// failed, checking that no bytes follow the last record.
func (r *Records) finish() bool {
	if !r.done {
		r.done = true
		if r.err == nil && r.off != len(r.b) {
			// "Incorrect declared batch size, records still remaining in file".
			r.err = ErrRecordTrailing
		}
	}
	return false
}

// skipHeaders steps over n record headers from b[i] and returns the index
// after them, or -1 when one does not fit in b (the record). Like Next, it
// decodes each varint by the inlined one-byte path first.
func skipHeaders(b []byte, i int, n int32) int {
	for ; n > 0; n-- {
		// "Invalid negative header key size N" (DefaultRecord.readHeaders):
		// a key is never null; a value may be.
		l, ok := varint1(b, i)
		if ok {
			i++
		} else if l, i = readVarintSlow(b, i); i < 0 {
			return -1
		}
		if l < 0 || int(l) > len(b)-i {
			return -1
		}
		i += int(l)
		if l, ok = varint1(b, i); ok {
			i++
		} else if l, i = readVarintSlow(b, i); i < 0 {
			return -1
		}
		if l < -1 || int(l) > len(b)-i {
			return -1
		}
		if l > 0 {
			i += int(l)
		}
	}
	return i
}

func (r *Records) fail(err error) bool {
	r.err = err
	r.done = true
	return false
}

// varint1 decodes the zig-zag VARINT at b[i] if it is one byte long (ok false
// otherwise, including i out of range). It is small enough to inline, which
// readVarintSlow is not.
func varint1(b []byte, i int) (int32, bool) {
	if uint(i) < uint(len(b)) {
		if c := int32(b[i]); c < 0x80 {
			return c>>1 ^ -(c & 1), true
		}
	}
	return 0, false
}

func readVarintSlow(b []byte, i int) (int32, int) {
	if i < 0 || i >= len(b) {
		return 0, -1
	}
	if i+1 < len(b) && b[i+1] < 0x80 { // two bytes: lengths up to 8191
		u := uint32(b[i]&0x7f) | uint32(b[i+1])<<7
		return int32(u>>1) ^ -int32(u&1), i + 2
	}
	v, n := varint.Varint(b[i:])
	if n <= 0 {
		return 0, -1
	}
	return v, i + n
}

// readVarlongSlow decodes a zig-zag VARLONG at b[i:] like readVarintSlow.
func readVarlongSlow(b []byte, i int) (int64, int) {
	if i < 0 || i >= len(b) {
		return 0, -1
	}
	v, n := varint.Varlong(b[i:])
	if n <= 0 {
		return 0, -1
	}
	return v, i + n
}

// appendVarintBytes appends a VARINT length (-1 for nil) and b.
func appendVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 1) // zig-zag(-1)
	}
	dst = varint.AppendVarint(dst, int32(len(b)))
	return append(dst, b...)
}
