package wire

// The one random content generator of the kmsg oracle tests (admin,
// consume/group and produce codecs; docs/design/style.md habit 8): every
// field kind a codec test fills, with the shapes that break codecs (empty,
// null, strings and counts past 127 that need two-byte compact lengths,
// unknown tagged fields), and the converters between kmsg's nullable strings
// and ours.

import (
	"bytes"
	"math/rand/v2"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// oracleGen generates varied field contents from a fixed seed.
type oracleGen struct {
	r *rand.Rand
	// small keeps counts at or below 127 and long strings short (fuzz seeds
	// stay short).
	small bool
	// outer and inner are the maximum counts of nOuter (topics, groups) and
	// nInner (partitions, members); empty makes every array empty, every
	// nullable null and every string "" (csVariants).
	outer, inner int
	empty        bool
	variant      bool // made by newVariantGen
}

// newOracleGen returns a generator with the default shapes.
func newOracleGen(seed uint64) *oracleGen {
	return &oracleGen{r: rand.New(rand.NewPCG(seed, 0x6b69676779))}
}

// newVariantGen returns a generator with the shapes of csVariants[variant].
// Two generators with the same seed and variant produce the same values,
// whether or not tagsIf is on.
func newVariantGen(seed uint64, variant int) *oracleGen {
	v := csVariants[variant]
	return &oracleGen{r: rand.New(rand.NewPCG(seed, uint64(variant)+0x6373)), outer: v.outer, inner: v.inner, empty: v.empty, variant: true}
}

// str returns "", a short string (sometimes not valid UTF-8), or one longer
// than 127 bytes (its compact length takes two varint bytes).
func (g *oracleGen) str() string {
	if g.empty {
		return ""
	}
	switch g.r.IntN(7) {
	case 0:
		return ""
	case 1:
		if g.small {
			return "retention.ms"
		}
		return strings.Repeat("long-name.", 13+g.r.IntN(5))
	default:
		const chars = "abcdefghijklmnopqrstuvwxyz0123456789-._éÄÖ"
		b := make([]byte, 1+g.r.IntN(24))
		for i := range b {
			b[i] = chars[g.r.IntN(len(chars))]
		}
		return string(b)
	}
}

// strs returns n strings.
func (g *oracleGen) strs(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = g.str()
	}
	return s
}

// ptr returns nil (null) about a quarter of the time, else a str.
func (g *oracleGen) ptr() *string {
	if g.empty || g.r.IntN(4) == 0 {
		return nil
	}
	s := g.str()
	return &s
}

// ns is ptr as a NullString.
func (g *oracleGen) ns() NullString { return nsOf(g.ptr()) }

// n returns 0, a small count, or, when big, one above 127 (a two-byte
// compact length).
func (g *oracleGen) n(big bool) int {
	switch g.r.IntN(6) {
	case 0:
		return 0
	case 1:
		if big && !g.small {
			return 128 + g.r.IntN(20)
		}
	}
	return 1 + g.r.IntN(4)
}

// nOuter returns an outer array count; nInner an inner one. Both sometimes
// hit the maximum so that the large variants really are large.
func (g *oracleGen) nOuter() int { return g.upTo(g.outer) }
func (g *oracleGen) nInner() int { return g.upTo(g.inner) }

func (g *oracleGen) upTo(max int) int {
	if g.empty || max == 0 {
		return 0
	}
	if g.r.IntN(3) == 0 {
		return max
	}
	return g.r.IntN(max + 1)
}

func (g *oracleGen) i8() int8   { return int8(g.r.Uint32()) }
func (g *oracleGen) i16() int16 { return int16(g.r.Uint32()) }
func (g *oracleGen) bool() bool { return g.r.IntN(2) == 0 }

// i32 returns -1, a small value or any value.
func (g *oracleGen) i32() int32 {
	switch g.r.IntN(4) {
	case 0:
		return -1
	case 1:
		return int32(g.r.IntN(100))
	default:
		return int32(g.r.Uint32())
	}
}

// i64 returns -1, a small value or any value.
func (g *oracleGen) i64() int64 {
	switch g.r.IntN(4) {
	case 0:
		return -1
	case 1:
		return int64(g.r.IntN(1000))
	default:
		return int64(g.r.Uint64())
	}
}

// code returns an error code from -1 to 128.
func (g *oracleGen) code() ErrorCode { return ErrorCode(g.r.IntN(130) - 1) }

// uuid returns the all-zero "no id" a third of the time, else random bytes.
func (g *oracleGen) uuid() (u [16]byte) {
	if g.r.IntN(3) == 0 {
		return u
	}
	for i := range u {
		u[i] = byte(g.r.Uint32())
	}
	return u
}

// int32s returns an INT32 array: of nInner elements in a variant generator,
// else sometimes of more than 127.
func (g *oracleGen) int32s() []int32 {
	if g.variant {
		return g.int32sOf(g.nInner())
	}
	n := g.n(false)
	if !g.small && g.r.IntN(8) == 0 {
		n = 130
	}
	return g.int32sOf(n)
}

func (g *oracleGen) int32sOf(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = g.i32()
	}
	return s
}

// bytes returns empty, short or >127-byte contents (never nil).
func (g *oracleGen) bytes() []byte {
	if g.empty {
		return []byte{}
	}
	n := 0
	switch g.r.IntN(4) {
	case 0:
	case 1:
		n = 130 + g.r.IntN(100)
	default:
		n = 1 + g.r.IntN(40)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

// records returns nil (null), empty, or opaque bytes of varied length.
func (g *oracleGen) records() []byte {
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

// tags returns unknown tagged fields half of the time: an empty payload, a
// small one, or one over 127 bytes (two-byte size). The admin oracle strips
// them before comparing (admStripTags).
func (g *oracleGen) tags() kmsg.Tags {
	var t kmsg.Tags
	if g.r.IntN(2) == 0 {
		return t
	}
	for range 1 + g.r.IntN(3) {
		var p []byte
		switch g.r.IntN(3) {
		case 1:
			p = []byte{1, 2, 3}
		case 2:
			p = bytes.Repeat([]byte{0xfe}, 130)
		}
		t.Set(uint32(g.r.IntN(300)), p)
	}
	return t
}

// tagsIf returns one to three unknown tagged fields when on (and none when
// off), consuming the same randomness either way. The tag numbers are
// unknown to every struct of the consume and group APIs.
func (g *oracleGen) tagsIf(on bool) kmsg.Tags {
	var t kmsg.Tags
	n := 1 + g.r.IntN(3)
	for i := 0; i < n; i++ {
		key := uint32(10 + g.r.IntN(5)*1000 + i)
		val := make([]byte, g.r.IntN(200))
		for j := range val {
			val[j] = byte(g.r.Uint32())
		}
		if on {
			t.Set(key, val)
		}
	}
	return t
}

// unknownTags sets a couple of unknown tagged fields on t half of the time,
// which decoders must skip by size (KIP-482), including one whose tag needs
// a two-byte varint.
func (g *oracleGen) unknownTags(t *kmsg.Tags) {
	if g.r.IntN(2) == 0 {
		return
	}
	t.Set(uint32(10+g.r.IntN(5)), []byte("tagged"))
	if g.r.IntN(2) == 0 {
		t.Set(1000, bytes.Repeat([]byte{0xee}, 130))
	}
}

// nsOf converts kmsg's nullable string to ours.
func nsOf(p *string) NullString {
	if p == nil {
		return NullString{}
	}
	return NullStringOf(*p)
}

// ptrOf converts our nullable string to kmsg's.
func ptrOf(s NullString) *string {
	if !s.Valid {
		return nil
	}
	v := s.S
	return &v
}
