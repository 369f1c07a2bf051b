package varint

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestZigZagKnownValues(t *testing.T) {
	// docs/design/kafka-protocol.md §1.2: -1 → 0x01, 0 → 0x00, 1 → 0x02, 2 → 0x04, 8 → 0x10.
	cases := map[int32]byte{-1: 0x01, 0: 0x00, 1: 0x02, 2: 0x04, 8: 0x10}
	for v, want := range cases {
		got := AppendVarint(nil, v)
		if len(got) != 1 || got[0] != want {
			t.Errorf("AppendVarint(%d) = %x, want %02x", v, got, want)
		}
	}
}

// TestAgainstEncodingBinary diffs the fast path against the standard library
// (docs/design/style.md habit 8): binary.AppendVarint is exactly Kafka's zig-zag form.
func TestAgainstEncodingBinary(t *testing.T) {
	values32 := []int32{0, 1, -1, 63, -64, 64, 127, 128, 8191, -8192, 1 << 20, math.MaxInt32, math.MinInt32}
	for _, v := range values32 {
		want := binary.AppendVarint(nil, int64(v))
		got := AppendVarint(nil, v)
		if string(got) != string(want) {
			t.Fatalf("AppendVarint(%d) = %x, want %x", v, got, want)
		}
		if VarintLen(v) != len(want) {
			t.Fatalf("VarintLen(%d) = %d, want %d", v, VarintLen(v), len(want))
		}
		d, n := Varint(want)
		if d != v || n != len(want) {
			t.Fatalf("Varint(%x) = %d,%d want %d,%d", want, d, n, v, len(want))
		}
		u := uint32(v)
		wantU := binary.AppendUvarint(nil, uint64(u))
		if string(AppendUvarint(nil, u)) != string(wantU) || UvarintLen(u) != len(wantU) {
			t.Fatalf("AppendUvarint(%d) mismatch", u)
		}
		du, n := Uvarint(wantU)
		if du != u || n != len(wantU) {
			t.Fatalf("Uvarint(%x) = %d,%d", wantU, du, n)
		}
	}
	values64 := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 40, -(1 << 40)}
	for _, v := range values64 {
		want := binary.AppendVarint(nil, v)
		if string(AppendVarlong(nil, v)) != string(want) || VarlongLen(v) != len(want) {
			t.Fatalf("AppendVarlong(%d) mismatch", v)
		}
		d, n := Varlong(want)
		if d != v || n != len(want) {
			t.Fatalf("Varlong(%x) = %d,%d", want, d, n)
		}
	}
}

func TestRejectsOverlong(t *testing.T) {
	if _, n := Uvarint([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}); n != -1 {
		t.Fatalf("6-byte uvarint accepted: n=%d", n)
	}
	if _, n := Uvarint([]byte{0xff, 0xff, 0xff, 0xff, 0x10}); n != -1 {
		t.Fatalf("33-bit uvarint accepted: n=%d", n)
	}
	if v, n := Uvarint([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}); n != 5 || v != math.MaxUint32 {
		t.Fatalf("max uint32 rejected: %d %d", v, n)
	}
	if _, n := Uvarint64([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}); n != -1 {
		t.Fatalf("11-byte varlong accepted: n=%d", n)
	}
	if _, n := Uvarint64([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}); n != -1 {
		t.Fatalf("65-bit varlong accepted: n=%d", n)
	}
	if _, n := Uvarint([]byte{0x80, 0x80}); n != 0 {
		t.Fatalf("truncated uvarint: n=%d, want 0", n)
	}
	if _, n := Uvarint(nil); n != 0 {
		t.Fatalf("empty uvarint: n=%d, want 0", n)
	}
}

func FuzzVarint(f *testing.F) {
	f.Add([]byte{0x01})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, n := Varint(b); n > 0 {
			if n > MaxLen32 {
				t.Fatalf("consumed %d > 5", n)
			}
			ref, rn := binary.Varint(b)
			if rn <= 0 || int32(ref) != v {
				// Our encoding may be shorter-or-equal but must agree on value
				// for canonical inputs.
				if rn > 0 && rn == n && int64(v) != ref {
					t.Fatalf("Varint(%x)=%d, binary says %d", b[:n], v, ref)
				}
			}
			re := AppendVarint(nil, v)
			if d, _ := Varint(re); d != v {
				t.Fatalf("round trip %d", v)
			}
		}
		if v, n := Varlong(b); n > 0 {
			if n > MaxLen64 {
				t.Fatalf("consumed %d > 10", n)
			}
			ref, rn := binary.Varint(b)
			if rn != n || ref != v {
				t.Fatalf("Varlong(%x)=%d,%d binary %d,%d", b, v, n, ref, rn)
			}
		}
	})
}
