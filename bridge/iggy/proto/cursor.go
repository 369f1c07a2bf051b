package proto

import (
	"encoding/binary"
	"errors"
)

// Decoding errors. They are sentinels so the hot path never allocates.
var (
	// ErrShort means a field ran past the end of the body.
	ErrShort = errors.New("iggy: field runs past end of body")
	// ErrTrailing means bytes were left after the last field.
	ErrTrailing = errors.New("iggy: trailing bytes after body")
	// ErrMalformed means a field held a value the protocol forbids.
	ErrMalformed = errors.New("iggy: malformed field")
)

// Reader is a sticky-error little-endian cursor over a frame body. The first
// short read latches ErrShort and every later read returns zero values. Byte
// slices it returns alias the body: they are valid until the frame is
// released.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// Err returns the first error, or nil.
func (r *Reader) Err() error { return r.err }

// Ok reports whether no read has failed.
func (r *Reader) Ok() bool { return r.err == nil }

// Len returns the number of unread bytes.
func (r *Reader) Len() int { return len(r.b) - r.off }

// Offset returns the number of bytes consumed.
func (r *Reader) Offset() int { return r.off }

// Fail latches err if no error is latched yet.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Complete latches ErrTrailing if bytes are left, and returns the error.
func (r *Reader) Complete() error {
	if r.err == nil && r.off != len(r.b) {
		r.err = ErrTrailing
	}
	return r.err
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

// U8 reads a byte.
func (r *Reader) U8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

// U16 reads a little-endian u16.
func (r *Reader) U16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

// U32 reads a little-endian u32.
func (r *Reader) U32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// U64 reads a little-endian u64.
func (r *Reader) U64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// Bytes reads n bytes as a view.
func (r *Reader) Bytes(n int) []byte { return r.take(n) }

// Rest consumes and returns every unread byte.
func (r *Reader) Rest() []byte { return r.take(r.Len()) }

// Name reads a name string (§2.2: [len u8][bytes], len 1..255). An empty name
// latches ErrMalformed.
func (r *Reader) Name() []byte {
	n := int(r.U8())
	if r.err == nil && n == 0 {
		r.err = ErrMalformed
		return nil
	}
	return r.take(n)
}

// Secret reads a password or token ([len u8][bytes], may be empty).
func (r *Reader) Secret() []byte { return r.take(int(r.U8())) }

// LongString reads a [len u32][bytes] string.
func (r *Reader) LongString() []byte {
	n := r.U32()
	if uint64(n) > uint64(r.Len()) {
		r.Fail(ErrShort)
		return nil
	}
	return r.take(int(n))
}

// Identifier kinds (§2.3).
const (
	IDNumeric = 1
	IDString  = 2
)

// Identifier is a decoded WireIdentifier; Name aliases the body.
type Identifier struct {
	Kind    uint8
	Numeric uint32
	Name    []byte
}

// Identifier reads a WireIdentifier (§2.3: [kind u8][length u8][value]; a
// numeric id has length exactly 4, a string id 1..255 bytes).
func (r *Reader) Identifier() Identifier {
	var id Identifier
	id.Kind = r.U8()
	n := int(r.U8())
	if r.err != nil {
		return Identifier{}
	}
	switch id.Kind {
	case IDNumeric:
		if n != 4 {
			r.err = ErrMalformed
			return Identifier{}
		}
		id.Numeric = r.U32()
	case IDString:
		if n == 0 {
			r.err = ErrMalformed
			return Identifier{}
		}
		id.Name = r.take(n)
	default:
		r.err = ErrMalformed
		return Identifier{}
	}
	return id
}
