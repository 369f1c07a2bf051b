package wire

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/kiggy-io/kiggy/varint"
)

// Errors returned by Reader. They are sentinels so the hot path never
// allocates; detail belongs in logs.
var (
	// ErrShort means a field ran past the end of the frame.
	ErrShort = errors.New("wire: field runs past end of frame")
	// ErrNegativeLength means a non-nullable length or count was negative.
	ErrNegativeLength = errors.New("wire: negative length")
	// ErrVarint means a varint was over-long or overflowed.
	ErrVarint = errors.New("wire: malformed varint")
	// ErrTooMany means a declared array count cannot fit in the bytes left.
	ErrTooMany = errors.New("wire: array count exceeds frame")
	// ErrTrailing means bytes were left over after the last field.
	ErrTrailing = errors.New("wire: trailing bytes after message")
)

// Reader is a sticky-error cursor over a request frame (docs/design/style.md habit 3).
// Each read checks the bytes left first; the first failure latches, after
// which every read returns the zero value. Check Err (or Ok) before making an
// allocation whose size came from the wire, and Complete once at the end.
//
// Strings and byte slices returned by a Reader alias the underlying buffer:
// they are valid until the frame is released.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// Reset points r at b and clears any error.
func (r *Reader) Reset(b []byte) { *r = Reader{b: b} }

// Err returns the first error, or nil.
func (r *Reader) Err() error { return r.err }

// Ok reports whether no read has failed.
func (r *Reader) Ok() bool { return r.err == nil }

// Len returns the number of unread bytes.
func (r *Reader) Len() int { return len(r.b) - r.off }

// Offset returns the number of bytes consumed so far.
func (r *Reader) Offset() int { return r.off }

// Rest returns the unread bytes without consuming them.
func (r *Reader) Rest() []byte { return r.b[r.off:len(r.b):len(r.b)] }

// Fail latches err if no error is latched yet.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Complete returns the latched error, or ErrTrailing if bytes remain.
func (r *Reader) Complete() error {
	if r.err != nil {
		return r.err
	}
	if r.off != len(r.b) {
		return ErrTrailing
	}
	return nil
}

func (r *Reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = ErrShort
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

// Skip consumes n bytes.
func (r *Reader) Skip(n int) { r.take(n) }

// Int8 reads an INT8.
func (r *Reader) Int8() int8 {
	b := r.take(1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

// Bool reads a BOOLEAN (non-zero is true).
func (r *Reader) Bool() bool { return r.Int8() != 0 }

// Int16 reads an INT16.
func (r *Reader) Int16() int16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

// Int32 reads an INT32.
func (r *Reader) Int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Uint32 reads a UINT32.
func (r *Reader) Uint32() uint32 { return uint32(r.Int32()) }

// Int64 reads an INT64.
func (r *Reader) Int64() int64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Float64 reads a FLOAT64.
func (r *Reader) Float64() float64 {
	return math.Float64frombits(uint64(r.Int64()))
}

// UUID reads a 16-byte UUID.
func (r *Reader) UUID() (u [16]byte) {
	b := r.take(16)
	copy(u[:], b)
	return u
}

// Uvarint reads an UNSIGNED_VARINT.
func (r *Reader) Uvarint() uint32 {
	if r.err != nil {
		return 0
	}
	v, n := varint.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.err = ErrShort
		return 0
	case n < 0:
		r.err = ErrVarint
		return 0
	}
	r.off += n
	return v
}

// Varint reads a zig-zag VARINT.
func (r *Reader) Varint() int32 {
	u := r.Uvarint()
	return int32(u>>1) ^ -int32(u&1)
}

// Varlong reads a zig-zag VARLONG.
func (r *Reader) Varlong() int64 {
	if r.err != nil {
		return 0
	}
	v, n := varint.Varlong(r.b[r.off:])
	switch {
	case n == 0:
		r.err = ErrShort
		return 0
	case n < 0:
		r.err = ErrVarint
		return 0
	}
	r.off += n
	return v
}

// String reads a STRING (INT16 length, must be ≥ 0). The result aliases the frame.
func (r *Reader) String() string {
	n := r.Int16()
	if n < 0 {
		r.Fail(ErrNegativeLength)
		return ""
	}
	return viewString(r.take(int(n)))
}

// NullableString reads a NULLABLE_STRING; null is reported by ok=false.
func (r *Reader) NullableString() (s string, ok bool) {
	n := r.Int16()
	if n < 0 {
		return "", false
	}
	return viewString(r.take(int(n))), r.err == nil
}

// CompactString reads a COMPACT_STRING (length N+1; 0 is invalid here).
func (r *Reader) CompactString() string {
	n := r.Uvarint()
	if n == 0 {
		r.Fail(ErrNegativeLength)
		return ""
	}
	return viewString(r.take(lenFromCompact(n)))
}

// CompactNullableString reads a COMPACT_NULLABLE_STRING; 0 means null (ok=false).
func (r *Reader) CompactNullableString() (s string, ok bool) {
	n := r.Uvarint()
	if n == 0 {
		return "", false
	}
	return viewString(r.take(lenFromCompact(n))), r.err == nil
}

// Str reads a string in the flexible (compact) or classic form.
func (r *Reader) Str(flexible bool) string {
	if flexible {
		return r.CompactString()
	}
	return r.String()
}

// NullableStr reads a nullable string in the flexible or classic form.
func (r *Reader) NullableStr(flexible bool) (string, bool) {
	if flexible {
		return r.CompactNullableString()
	}
	return r.NullableString()
}

// Bytes reads BYTES (INT32 length ≥ 0). The result aliases the frame.
func (r *Reader) Bytes() []byte {
	n := r.Int32()
	if n < 0 {
		r.Fail(ErrNegativeLength)
		return nil
	}
	b := r.take(int(n))
	if b == nil && r.err == nil {
		return []byte{}
	}
	return b
}

// NullableBytes reads NULLABLE_BYTES (or RECORDS); null returns nil.
func (r *Reader) NullableBytes() []byte {
	n := r.Int32()
	if n < 0 {
		return nil
	}
	return r.take(int(n))
}

// CompactBytes reads COMPACT_BYTES.
func (r *Reader) CompactBytes() []byte {
	n := r.Uvarint()
	if n == 0 {
		r.Fail(ErrNegativeLength)
		return nil
	}
	return r.take(lenFromCompact(n))
}

// CompactNullableBytes reads COMPACT_NULLABLE_BYTES (or COMPACT_RECORDS); null returns nil.
func (r *Reader) CompactNullableBytes() []byte {
	n := r.Uvarint()
	if n == 0 {
		return nil
	}
	return r.take(lenFromCompact(n))
}

// ByteSlice reads bytes in the flexible or classic form.
func (r *Reader) ByteSlice(flexible bool) []byte {
	if flexible {
		return r.CompactBytes()
	}
	return r.Bytes()
}

// NullableByteSlice reads nullable bytes in the flexible or classic form.
func (r *Reader) NullableByteSlice(flexible bool) []byte {
	if flexible {
		return r.CompactNullableBytes()
	}
	return r.NullableBytes()
}

// ArrayLen reads an ARRAY or COMPACT_ARRAY count. It returns -1 for a null
// array. minElemSize is the smallest encoded size of one element; a count
// whose elements cannot fit in the bytes left fails with ErrTooMany before the
// caller sizes anything from it.
func (r *Reader) ArrayLen(flexible bool, minElemSize int) int {
	var n int
	if flexible {
		u := r.Uvarint()
		if r.err != nil {
			return 0
		}
		if u == 0 {
			return -1
		}
		n = int(u - 1)
	} else {
		v := r.Int32()
		if r.err != nil {
			return 0
		}
		if v < 0 {
			return -1
		}
		n = int(v)
	}
	if minElemSize < 1 {
		minElemSize = 1
	}
	if n > (len(r.b)-r.off)/minElemSize {
		r.Fail(ErrTooMany)
		return 0
	}
	return n
}

// SkipTags reads a TAGGED_FIELDS section and skips every field by its size
// (KIP-482: "readers must skip unknown tags by size").
func (r *Reader) SkipTags() {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.Uvarint() // tag
		size := r.Uvarint()
		r.take(int(size))
	}
}

func lenFromCompact(n uint32) int {
	// n ≥ 1 here; n-1 may exceed int32 on 32-bit hosts but take() bounds it.
	return int(n - 1)
}
