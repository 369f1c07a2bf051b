package proto

import (
	"encoding/binary"
	"strconv"
)

// AppendU8 appends a byte.
func AppendU8(dst []byte, v uint8) []byte { return append(dst, v) }

// AppendU32 appends a little-endian u32.
func AppendU32(dst []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(dst, v) }

// AppendU64 appends a little-endian u64.
func AppendU64(dst []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(dst, v) }

// AppendName appends a name string ([len u8][bytes], §2.2). The caller
// guarantees 1 ≤ len(s) ≤ 255.
func AppendName(dst []byte, s string) []byte {
	dst = append(dst, uint8(len(s)))
	return append(dst, s...)
}

// AppendLongString appends a [len u32][bytes] string.
func AppendLongString(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// AppendNumericID appends a numeric Identifier (§2.3: 01 04 <u32>).
func AppendNumericID(dst []byte, id uint32) []byte {
	dst = append(dst, IDNumeric, 4)
	return binary.LittleEndian.AppendUint32(dst, id)
}

// AppendStringID appends a string Identifier (§2.3: 02 <len> <name>). The
// caller guarantees 1 ≤ len(name) ≤ 255.
func AppendStringID(dst []byte, name string) []byte {
	dst = append(dst, IDString, uint8(len(name)))
	return append(dst, name...)
}

// AppendIdentifier appends id in its own kind.
func AppendIdentifier(dst []byte, id Identifier) []byte {
	if id.Kind == IDNumeric {
		return AppendNumericID(dst, id.Numeric)
	}
	dst = append(dst, IDString, uint8(len(id.Name)))
	return append(dst, id.Name...)
}

// Consumer kinds (§2.4).
const (
	ConsumerSingle = 1
	ConsumerGroup  = 2
)

// Partitioning kinds (§2.5).
const (
	PartitionBalanced    = 1
	PartitionID          = 2
	PartitionMessagesKey = 3
)

// Polling strategies (§3.8).
const (
	PollOffset    = 1
	PollTimestamp = 2
	PollFirst     = 3
	PollLast      = 4
	PollNext      = 5
)

// Header-value kinds used in option blocks (§4.1).
const (
	KindRaw    = 1
	KindString = 2
	KindBool   = 3
	KindUint8  = 9
	KindUint32 = 11
	KindUint64 = 12
)

// AppendOptionU64 appends one options-TLV entry with a String key and a
// Uint64 value (§2.6, TV7).
func AppendOptionU64(dst []byte, key string, v uint64) []byte {
	dst = appendOptionKey(dst, key)
	dst = append(dst, KindUint64)
	dst = binary.LittleEndian.AppendUint32(dst, 8)
	return binary.LittleEndian.AppendUint64(dst, v)
}

// AppendOptionU32 appends one options-TLV entry with a String key and a
// Uint32 value (§2.6; the server reads messages_required_to_save as Uint32).
func AppendOptionU32(dst []byte, key string, v uint32) []byte {
	dst = appendOptionKey(dst, key)
	dst = append(dst, KindUint32)
	dst = binary.LittleEndian.AppendUint32(dst, 4)
	return binary.LittleEndian.AppendUint32(dst, v)
}

// AppendOptionBool appends one options-TLV entry with a String key and a
// Bool value, one byte of 0 or 1 (§2.6; the server refuses any other
// payload for a Bool option).
func AppendOptionBool(dst []byte, key string, v bool) []byte {
	dst = appendOptionKey(dst, key)
	dst = append(dst, KindBool)
	dst = binary.LittleEndian.AppendUint32(dst, 1)
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func appendOptionKey(dst []byte, key string) []byte {
	dst = append(dst, KindString)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(key)))
	return append(dst, key...)
}

// Option is one entry of an options TLV block, as views into the block.
type Option struct {
	Key       []byte
	ValueKind uint8
	Value     []byte
}

// Uint reads an unsigned integer value: Uint8/Uint32/Uint64 little-endian
// or a decimal String, as the server accepts them (§2.6).
func (o Option) Uint() (uint64, bool) {
	switch {
	case o.ValueKind == KindUint8 && len(o.Value) == 1:
		return uint64(o.Value[0]), true
	case o.ValueKind == KindUint32 && len(o.Value) == 4:
		return uint64(binary.LittleEndian.Uint32(o.Value)), true
	case o.ValueKind == KindUint64 && len(o.Value) == 8:
		return binary.LittleEndian.Uint64(o.Value), true
	case o.ValueKind == KindString:
		v, err := strconv.ParseUint(string(o.Value), 10, 64)
		return v, err == nil
	}
	return 0, false
}

// Bool reads a Bool value (one byte 0 or 1) or the Strings "true"/"false".
func (o Option) Bool() (v, ok bool) {
	switch {
	case o.ValueKind == KindBool && len(o.Value) == 1 && o.Value[0] <= 1:
		return o.Value[0] == 1, true
	case o.ValueKind == KindString && string(o.Value) == "true":
		return true, true
	case o.ValueKind == KindString && string(o.Value) == "false":
		return false, true
	}
	return false, false
}

// EachOption calls fn for every entry of an options TLV block:
// [key kind u8][key len u32][key][value kind u8][value len u32][value]
// (§2.6). It fails with ErrMalformed when the block does not tile.
func EachOption(block []byte, fn func(Option)) error {
	r := NewReader(block)
	for r.Len() > 0 {
		var o Option
		r.U8() // key kind: String for every option the server accepts
		o.Key = r.LongString()
		o.ValueKind = r.U8()
		o.Value = r.LongString()
		if !r.Ok() {
			return ErrMalformed
		}
		fn(o)
	}
	return nil
}

// AppendResultOK appends an empty result section (§1.7: count 0 = success).
func AppendResultOK(dst []byte) []byte { return AppendU32(dst, 0) }

// AppendResultError appends a one-entry result section carrying code
// (§1.7: [count 1][index 0][result]).
func AppendResultError(dst []byte, code Code) []byte {
	dst = AppendU32(dst, 1)
	dst = AppendU32(dst, 0)
	return AppendU32(dst, uint32(code))
}

// AppendLoginBody appends a LoginRegister body (§3.3) in dialect d: the
// client-version prefix, in 0.12 the session-binding secret (§9), then the
// username, password and an empty context.
func AppendLoginBody(dst []byte, d Dialect, secret *[BindSecretSize]byte, sdkName, sdkVersion, username, password string) []byte {
	dst = appendLoginPrefix(dst, d, secret, sdkName, sdkVersion)
	dst = append(dst, uint8(len(username)))
	dst = append(dst, username...)
	dst = append(dst, uint8(len(password)))
	dst = append(dst, password...)
	return AppendU32(dst, 0)
}

// AppendPATLoginBody appends a LoginRegisterWithPat body (§3.3) in dialect d.
func AppendPATLoginBody(dst []byte, d Dialect, secret *[BindSecretSize]byte, sdkName, sdkVersion, token string) []byte {
	dst = appendLoginPrefix(dst, d, secret, sdkName, sdkVersion)
	dst = append(dst, uint8(len(token)))
	dst = append(dst, token...)
	return AppendU32(dst, 0)
}

func appendLoginPrefix(dst []byte, d Dialect, secret *[BindSecretSize]byte, sdkName, sdkVersion string) []byte {
	dst = AppendU32(dst, d.Version())
	dst = AppendName(dst, sdkName)
	dst = AppendName(dst, sdkVersion)
	if d == Dialect012 {
		dst = append(dst, secret[:]...)
	}
	return dst
}

// AppendOptionString appends one options-TLV entry with a String key and a
// String value (§2.6; 0.12's durability takes "replicated" or "persisted").
func AppendOptionString(dst []byte, key, v string) []byte {
	dst = appendOptionKey(dst, key)
	dst = append(dst, KindString)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

// AppendBindSessionBody appends a 0.12 BindSession body (§9,
// bind_session.rs): the client-version prefix, the session identity
// [client u128][session u64][metadata_watermark u64], the bind secret.
func AppendBindSessionBody(dst []byte, d Dialect, client ClientID, session, watermark uint64, secret *[BindSecretSize]byte, sdkName, sdkVersion string) []byte {
	dst = AppendU32(dst, d.Version())
	dst = AppendName(dst, sdkName)
	dst = AppendName(dst, sdkVersion)
	dst = AppendU64(dst, client.Lo)
	dst = AppendU64(dst, client.Hi)
	dst = AppendU64(dst, session)
	dst = AppendU64(dst, watermark)
	return append(dst, secret[:]...)
}
