package wire

// Shared helpers for the produce-side oracle tests (header, ApiVersions,
// Metadata, Produce, InitProducerId). franz-go's kmsg is the independent
// oracle (docs/design/style.md habit 8). Names carry a "prod" prefix so they cannot clash
// with the helpers of the other codec files in this package.

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// prodGen generates varied field contents from a fixed seed.
type prodGen struct{ r *rand.Rand }

func newProdGen(seed uint64) *prodGen { return &prodGen{rand.New(rand.NewPCG(seed, 0x6b69676779))} }

// str returns "", a short string, or one longer than 127 bytes (so that its
// compact length takes two varint bytes).
func (g *prodGen) str() string {
	switch g.r.IntN(6) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("long-name.", 13+g.r.IntN(5))
	default:
		const chars = "abcdefghijklmnopqrstuvwxyz0123456789-._ÄÖ"
		b := make([]byte, 1+g.r.IntN(20))
		for i := range b {
			b[i] = chars[g.r.IntN(len(chars))]
		}
		return string(b)
	}
}

// nullStr returns null about a quarter of the time, else a str.
func (g *prodGen) nullStr() NullString {
	if g.r.IntN(4) == 0 {
		return NullString{}
	}
	return NullStringOf(g.str())
}

// count returns 0, a small count, or one above 127 (two-byte compact length)
// when big is set.
func (g *prodGen) count(big bool) int {
	switch g.r.IntN(5) {
	case 0:
		return 0
	case 1:
		if big {
			return 127 + g.r.IntN(20)
		}
	}
	return 1 + g.r.IntN(4)
}

// records returns nil (null), empty, or opaque bytes of varied length.
func (g *prodGen) records() []byte {
	switch g.r.IntN(6) {
	case 0:
		return nil
	case 1:
		return []byte{}
	case 2:
		b := make([]byte, 200+g.r.IntN(300))
		for i := range b {
			b[i] = byte(g.r.Uint32())
		}
		return b
	default:
		b := make([]byte, 1+g.r.IntN(60))
		for i := range b {
			b[i] = byte(g.r.Uint32())
		}
		return b
	}
}

func (g *prodGen) uuid() (u [16]byte) {
	if g.r.IntN(3) == 0 {
		return u
	}
	for i := range u {
		u[i] = byte(g.r.Uint32())
	}
	return u
}

func (g *prodGen) i16() int16 { return int16(g.r.Uint32()) }
func (g *prodGen) i32() int32 { return int32(g.r.Uint32()) }
func (g *prodGen) i64() int64 { return int64(g.r.Uint64()) }

func (g *prodGen) int32s() []int32 {
	n := g.count(false)
	if g.r.IntN(8) == 0 {
		n = 130
	}
	s := make([]int32, n)
	for i := range s {
		s[i] = g.i32()
	}
	return s
}

// unknownTags sets a couple of unknown tagged fields, which decoders must
// skip by size (KIP-482), including one whose tag needs a two-byte varint.
func (g *prodGen) unknownTags(t *kmsg.Tags) {
	if g.r.IntN(2) == 0 {
		return
	}
	t.Set(uint32(10+g.r.IntN(5)), []byte("tagged"))
	if g.r.IntN(2) == 0 {
		t.Set(1000, bytes.Repeat([]byte{0xee}, 130))
	}
}

// prodPtr converts a NullString to kmsg's *string form.
func prodPtr(s NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.S
}

// prodNS converts kmsg's *string form to a NullString.
func prodNS(p *string) NullString {
	if p == nil {
		return NullString{}
	}
	return NullStringOf(*p)
}

// prodNullableBytesEqual compares nullable byte fields: nil (null) differs
// from empty.
func prodNullableBytesEqual(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// prodCheckPrefixes decodes every strict prefix of body, and body plus a
// trailing byte, and requires an error each time: a short field must latch
// an error and Complete must reject leftovers. decode must not panic.
func prodCheckPrefixes(t *testing.T, body []byte, decode func([]byte) error) {
	t.Helper()
	for i := range body {
		if err := decode(body[:i:i]); err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded without error", i, len(body))
		}
	}
	long := append(append([]byte(nil), body...), 0)
	if err := decode(long); !errors.Is(err, ErrTrailing) {
		t.Fatalf("trailing byte: got %v, want ErrTrailing", err)
	}
}
