package acl

// The stored form of an ACL (docs/design/security.md §6.3): one system-store
// entry per binding, its value
//
//	version byte (1) | resource type | pattern type | operation | permission
//	| uvarint len + resource name | uvarint len + principal | uvarint len + host
//
// and its key the hex SHA-256 of the value, so that the same ACL always
// lands on the same key and a delete names it without a lookup.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
)

// encodingVersion is the first byte of a stored binding.
const encodingVersion = 1

// ErrEncoding is returned by Unmarshal for bytes that are not a stored
// binding.
var ErrEncoding = errors.New("acl: malformed stored ACL")

// maxStoredString bounds a stored string (Kafka strings are int16-sized).
const maxStoredString = 1 << 15

// Marshal returns b's stored form.
func Marshal(b Binding) []byte {
	out := make([]byte, 0, 5+3*binary.MaxVarintLen32+len(b.ResourceName)+len(b.Principal)+len(b.Host))
	out = append(out, encodingVersion, byte(b.ResourceType), byte(b.PatternType), byte(b.Operation), byte(b.Permission))
	for _, s := range [...]string{b.ResourceName, b.Principal, b.Host} {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	return out
}

// Key returns the system-store key of b.
func Key(b Binding) string {
	sum := sha256.Sum256(Marshal(b))
	return hex.EncodeToString(sum[:])
}

// Unmarshal reads a stored binding and checks that it is a valid ACL.
func Unmarshal(v []byte) (Binding, error) {
	if len(v) < 5 || v[0] != encodingVersion {
		return Binding{}, ErrEncoding
	}
	b := Binding{ResourceType: ResourceType(v[1]), PatternType: PatternType(v[2]), Operation: Operation(v[3]), Permission: Permission(v[4])}
	v = v[5:]
	var strs [3]string
	for i := range strs {
		n, k := binary.Uvarint(v)
		if k <= 0 || n > maxStoredString || n > uint64(len(v)-k) {
			return Binding{}, ErrEncoding
		}
		strs[i] = string(v[k : k+int(n)])
		v = v[k+int(n):]
	}
	if len(v) != 0 {
		return Binding{}, ErrEncoding
	}
	b.ResourceName, b.Principal, b.Host = strs[0], strs[1], strs[2]
	if err := b.Validate(); err != nil {
		return Binding{}, err
	}
	return b, nil
}
