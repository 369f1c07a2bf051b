package wire

import (
	"encoding/binary"
	"math"

	"github.com/kiggy-io/kiggy/varint"
)

// Append-style encoders (docs/design/style.md habit 1): each appends one primitive to dst
// (nil allowed) and returns the extended slice.

// AppendInt8 appends an INT8.
func AppendInt8(dst []byte, v int8) []byte { return append(dst, byte(v)) }

// AppendBool appends a BOOLEAN.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendInt16 appends an INT16.
func AppendInt16(dst []byte, v int16) []byte { return binary.BigEndian.AppendUint16(dst, uint16(v)) }

// AppendInt32 appends an INT32.
func AppendInt32(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }

// AppendUint32 appends a UINT32.
func AppendUint32(dst []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(dst, v) }

// AppendInt64 appends an INT64.
func AppendInt64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

// AppendFloat64 appends a FLOAT64.
func AppendFloat64(dst []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
}

// AppendUUID appends a UUID.
func AppendUUID(dst []byte, u [16]byte) []byte { return append(dst, u[:]...) }

// AppendUvarint appends an UNSIGNED_VARINT.
func AppendUvarint(dst []byte, v uint32) []byte { return varint.AppendUvarint(dst, v) }

// AppendString appends a STRING.
func AppendString(dst []byte, s string) []byte {
	dst = AppendInt16(dst, int16(len(s)))
	return append(dst, s...)
}

// AppendNullableString appends a NULLABLE_STRING; null when !ok.
func AppendNullableString(dst []byte, s string, ok bool) []byte {
	if !ok {
		return AppendInt16(dst, -1)
	}
	return AppendString(dst, s)
}

// AppendCompactString appends a COMPACT_STRING.
func AppendCompactString(dst []byte, s string) []byte {
	dst = varint.AppendUvarint(dst, uint32(len(s))+1)
	return append(dst, s...)
}

// AppendCompactNullableString appends a COMPACT_NULLABLE_STRING; null when !ok.
func AppendCompactNullableString(dst []byte, s string, ok bool) []byte {
	if !ok {
		return append(dst, 0)
	}
	return AppendCompactString(dst, s)
}

// AppendStr appends a string in the flexible or classic form.
func AppendStr(dst []byte, flexible bool, s string) []byte {
	if flexible {
		return AppendCompactString(dst, s)
	}
	return AppendString(dst, s)
}

// AppendNullableStr appends a nullable string in the flexible or classic form.
func AppendNullableStr(dst []byte, flexible bool, s string, ok bool) []byte {
	if flexible {
		return AppendCompactNullableString(dst, s, ok)
	}
	return AppendNullableString(dst, s, ok)
}

// AppendBytes appends BYTES.
func AppendBytes(dst []byte, b []byte) []byte {
	dst = AppendInt32(dst, int32(len(b)))
	return append(dst, b...)
}

// AppendNullableBytes appends NULLABLE_BYTES; a nil b is null.
func AppendNullableBytes(dst []byte, b []byte) []byte {
	if b == nil {
		return AppendInt32(dst, -1)
	}
	return AppendBytes(dst, b)
}

// AppendCompactBytes appends COMPACT_BYTES.
func AppendCompactBytes(dst []byte, b []byte) []byte {
	dst = varint.AppendUvarint(dst, uint32(len(b))+1)
	return append(dst, b...)
}

// AppendCompactNullableBytes appends COMPACT_NULLABLE_BYTES; a nil b is null.
func AppendCompactNullableBytes(dst []byte, b []byte) []byte {
	if b == nil {
		return append(dst, 0)
	}
	return AppendCompactBytes(dst, b)
}

// AppendByteSlice appends bytes in the flexible or classic form.
func AppendByteSlice(dst []byte, flexible bool, b []byte) []byte {
	if flexible {
		return AppendCompactBytes(dst, b)
	}
	return AppendBytes(dst, b)
}

// AppendNullableByteSlice appends nullable bytes in the flexible or classic form.
func AppendNullableByteSlice(dst []byte, flexible bool, b []byte) []byte {
	if flexible {
		return AppendCompactNullableBytes(dst, b)
	}
	return AppendNullableBytes(dst, b)
}

// AppendArrayLen appends an ARRAY or COMPACT_ARRAY count; n < 0 is null.
func AppendArrayLen(dst []byte, flexible bool, n int) []byte {
	if flexible {
		if n < 0 {
			return append(dst, 0)
		}
		return varint.AppendUvarint(dst, uint32(n)+1)
	}
	if n < 0 {
		return AppendInt32(dst, -1)
	}
	return AppendInt32(dst, int32(n))
}

// AppendEmptyTags appends an empty TAGGED_FIELDS section when flexible.
func AppendEmptyTags(dst []byte, flexible bool) []byte {
	if flexible {
		return append(dst, 0)
	}
	return dst
}

// AppendTag appends one tagged field (tag, size, payload); the caller writes
// the field count first, in ascending tag order (KIP-482).
func AppendTag(dst []byte, tag uint32, payload []byte) []byte {
	dst = varint.AppendUvarint(dst, tag)
	dst = varint.AppendUvarint(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// ReserveInt32 appends 4 zero bytes and returns their offset, for a length
// backfilled later with PutInt32 (docs/design/style.md habit 2).
func ReserveInt32(dst []byte) ([]byte, int) { return append(dst, 0, 0, 0, 0), len(dst) }

// PutInt32 writes v big-endian at dst[off:].
func PutInt32(dst []byte, off int, v int32) { binary.BigEndian.PutUint32(dst[off:], uint32(v)) }
