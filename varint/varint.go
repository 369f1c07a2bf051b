// Package varint implements Kafka's variable-length integers.
//
// Kafka uses three forms (docs/design/kafka-protocol.md §1.2):
//   - UNSIGNED_VARINT: LEB128, 7 data bits per byte, least-significant group
//     first, high bit set when more bytes follow. At most 5 bytes for 32 bits.
//     Used for compact lengths and tagged fields.
//   - VARINT: zig-zag encoded int32, then the same 7-bit groups, at most 5 bytes.
//   - VARLONG: zig-zag encoded int64, at most 10 bytes.
//
// Encoders append to dst (nil allowed). Decoders are bounds-checked, reject
// over-long encodings ("Varint is too long" in Java) and report how many bytes
// they consumed; n <= 0 means failure (0: buffer too short, -1: too long or
// out of range).
package varint

// MaxLen32 is the longest valid encoding of a 32-bit varint.
const MaxLen32 = 5

// MaxLen64 is the longest valid encoding of a 64-bit varlong.
const MaxLen64 = 10

// AppendUvarint appends v as an UNSIGNED_VARINT.
func AppendUvarint(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// AppendUvarint64 appends v as an unsigned 64-bit varint.
func AppendUvarint64(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// AppendVarint appends v as a zig-zag VARINT.
func AppendVarint(dst []byte, v int32) []byte {
	return AppendUvarint(dst, uint32(v<<1)^uint32(v>>31))
}

// AppendVarlong appends v as a zig-zag VARLONG.
func AppendVarlong(dst []byte, v int64) []byte {
	return AppendUvarint64(dst, uint64(v<<1)^uint64(v>>63))
}

// UvarintLen returns the encoded length of v as an UNSIGNED_VARINT.
func UvarintLen(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// VarintLen returns the encoded length of v as a zig-zag VARINT.
func VarintLen(v int32) int { return UvarintLen(uint32(v<<1) ^ uint32(v>>31)) }

// VarlongLen returns the encoded length of v as a zig-zag VARLONG.
func VarlongLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// Uvarint decodes an UNSIGNED_VARINT from b. It returns the value and the
// number of bytes read: 0 if b ends before the value does, -1 if the encoding
// is longer than 5 bytes or overflows 32 bits.
func Uvarint(b []byte) (uint32, int) {
	var v uint32
	for i := 0; i < MaxLen32; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if i == MaxLen32-1 && c > 0x0f {
			// The fifth byte may carry only the top 4 bits of a uint32.
			return 0, -1
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, -1
}

// Uvarint64 decodes an unsigned 64-bit varint with the same contract as Uvarint
// (at most 10 bytes).
func Uvarint64(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < MaxLen64; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if i == MaxLen64-1 && c > 0x01 {
			return 0, -1
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, -1
}

// Varint decodes a zig-zag VARINT (int32) from b, with the contract of Uvarint.
func Varint(b []byte) (int32, int) {
	u, n := Uvarint(b)
	return int32(u>>1) ^ -int32(u&1), n
}

// Varlong decodes a zig-zag VARLONG (int64) from b, with the contract of Uvarint64.
func Varlong(b []byte) (int64, int) {
	u, n := Uvarint64(b)
	return int64(u>>1) ^ -int64(u&1), n
}
