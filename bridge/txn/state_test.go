package txn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// richTxn returns a Txn with every field set: nparts partitions and
// ngroups groups of noffs offsets, strings of length strLen.
func richTxn(nparts, ngroups, noffs, strLen int) Txn {
	s := func(prefix string, i int) string {
		v := prefix + strings.Repeat("x", max(0, strLen-len(prefix)-4)) + string(rune('a'+i%26))
		return v
	}
	t := Txn{ID: "tid", ProducerID: math.MaxInt64 - 7, Epoch: math.MaxInt16 - 1, LastEpoch: math.MaxInt16 - 2, TimeoutMs: math.MaxInt32,
		State: PrepareCommit, StartMs: -12345, UpdateMs: math.MaxInt64}
	for i := range nparts {
		t.Partitions = append(t.Partitions, Partition{Topic: s("topic-", i), Partition: int32(i) - 1, First: int64(i) * 1e12})
	}
	for g := range ngroups {
		grp := GroupOffsets{Group: s("group-", g)}
		for o := range noffs {
			grp.Offsets = append(grp.Offsets, Offset{Topic: s("t", o), Partition: int32(o), Offset: int64(o) - 1,
				LeaderEpoch: int32(-o), Metadata: s("m", o*g)})
		}
		t.Groups = append(t.Groups, grp)
	}
	return t
}

func TestStateNames(t *testing.T) {
	for s := Empty; s <= CompleteAbort; s++ {
		got, ok := ParseState(s.String())
		if !ok || got != s {
			t.Fatalf("ParseState(%q) = %v, %v", s.String(), got, ok)
		}
	}
	if State(6).String() != "Unknown" {
		t.Fatalf("State(6) = %q", State(6).String())
	}
	if _, ok := ParseState("Dead"); ok {
		t.Fatal("ParseState(Dead) ok")
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		t    Txn
	}{
		{"zero", Txn{ID: "z"}},
		{"empty-state", Txn{ID: "e", ProducerID: 1, Epoch: 0, LastEpoch: -1, TimeoutMs: 60000, State: Empty, UpdateMs: 1700000000000}},
		{"one-partition", richTxn(1, 0, 0, 8)},
		{"many-partitions", richTxn(1000, 0, 0, 40)},
		{"groups-no-offsets", richTxn(2, 5, 0, 10)},
		{"many-groups-offsets", richTxn(50, 20, 50, 30)},
		{"long-strings", richTxn(3, 2, 3, 60000)},
		{"max-strings", richTxn(1, 1, 1, math.MaxUint16)},
		// The shortest offsets: an empty topic and metadata (20 bytes
		// each), at the end of the value.
		{"short-offsets", Txn{ID: "s", ProducerID: 3, State: Ongoing, Groups: []GroupOffsets{
			{Group: "g", Offsets: []Offset{{Topic: "", Partition: 0, Offset: 1}}}}}},
		{"one-char-topic-offset", Txn{ID: "s", ProducerID: 3, State: Ongoing, Groups: []GroupOffsets{
			{Group: "g", Offsets: []Offset{{Topic: "a", Partition: 0, Offset: 1}}}}}},
		{"several-short-offsets", Txn{ID: "s", ProducerID: 3, State: Ongoing, Groups: []GroupOffsets{
			{Group: "g", Offsets: []Offset{{Topic: "a", Offset: 1}, {Topic: "b", Offset: 2}, {Topic: "c", Offset: 3}}}}}},
		{"empty-group-name", Txn{ID: "s", ProducerID: 3, State: Ongoing, Groups: []GroupOffsets{{}}}},
		{"empty-topic-partition", Txn{ID: "s", ProducerID: 3, State: Ongoing, Partitions: []Partition{{}}}},
	}
	for _, s := range []State{Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort} {
		tx := richTxn(2, 1, 2, 5)
		tx.State = s
		cases = append(cases, struct {
			name string
			t    Txn
		}{"state-" + s.String(), tx})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.t.Encode()
			got, err := Decode(c.t.ID, b)
			if err != nil {
				t.Fatalf("Decode: %v (%d bytes)", err, len(b))
			}
			if !reflect.DeepEqual(got, c.t) {
				t.Fatalf("round trip differs:\n got %+v\nwant %+v", summary(got), summary(c.t))
			}
			if again := got.Encode(); !bytes.Equal(again, b) {
				t.Fatal("re-encoding differs")
			}
		})
	}
}

// summary keeps failure messages short.
func summary(t Txn) string {
	var b strings.Builder
	b.WriteString(t.ID)
	for _, p := range t.Partitions {
		b.WriteString(" p:" + trunc(p.Topic))
	}
	for _, g := range t.Groups {
		b.WriteString(" g:" + trunc(g.Group))
		for _, o := range g.Offsets {
			b.WriteString(" o:" + trunc(o.Topic) + "/" + trunc(o.Metadata))
		}
	}
	return b.String()
}

func trunc(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

// TestEncodeStringTooLong: Encode writes u16 string lengths; a longer
// string cannot round-trip, so the coordinator must never persist one
// (TestCoordinatorRefusesLongStrings).
func TestEncodeStringTooLong(t *testing.T) {
	tx := Txn{ID: "x", ProducerID: 1, State: Ongoing, Groups: []GroupOffsets{{Group: strings.Repeat("g", math.MaxUint16+1)}}}
	if got, err := Decode("x", tx.Encode()); err == nil && reflect.DeepEqual(got, tx) {
		t.Fatal("a 65536-byte string round-tripped through a u16 length")
	}
}

func TestDecodeRefuses(t *testing.T) {
	rich := richTxn(3, 2, 2, 6)
	good := rich.Encode()
	// Every truncation is refused.
	for n := range len(good) {
		if _, err := Decode("t", good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d of %d bytes: err %v", n, len(good), err)
		}
	}
	// Trailing bytes.
	for _, tail := range [][]byte{{0}, {1, 2, 3}, make([]byte, 64)} {
		if _, err := Decode("t", append(bytes.Clone(good), tail...)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d trailing bytes: err %v", len(tail), err)
		}
	}
	mutate := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	cases := map[string][]byte{
		"nil":            nil,
		"version-0":      mutate(func(b []byte) { b[0] = 0 }),
		"version-3":      mutate(func(b []byte) { b[0] = 3 }),
		"version-1-as-2": mutate(func(b []byte) { b[0] = 1 }), // 2 bytes too many for version 1
		"state-6":        mutate(func(b []byte) { b[17] = 6 }),
		"state-255":      mutate(func(b []byte) { b[17] = 255 }),
		"negative-pid":   mutate(func(b []byte) { binary.LittleEndian.PutUint64(b[1:], uint64(1)<<63) }),
		"pid-minus-1":    mutate(func(b []byte) { binary.LittleEndian.PutUint64(b[1:], math.MaxUint64) }),
		"negative-epoch": mutate(func(b []byte) { binary.LittleEndian.PutUint16(b[9:], 0xffff) }),
		"last-epoch-2":   mutate(func(b []byte) { binary.LittleEndian.PutUint16(b[11:], 0xfffe) }),
		"last-epoch-min": mutate(func(b []byte) { binary.LittleEndian.PutUint16(b[11:], 0x8000) }),
		"huge-partition-count": mutate(func(b []byte) {
			binary.LittleEndian.PutUint32(b[34:], math.MaxUint32)
		}),
		"partition-count+1": mutate(func(b []byte) { b[34]++ }),
		"partition-count-1": mutate(func(b []byte) { b[34]-- }),
		"string-length-long": mutate(func(b []byte) {
			binary.LittleEndian.PutUint16(b[38:], 0xffff)
		}),
	}
	for name, b := range cases {
		if _, err := Decode("t", b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	// An empty Txn: the fixed fields and two zero counts.
	hdr := (&Txn{}).Encode()
	if len(hdr) != 42 || hdr[0] != 2 {
		t.Fatalf("empty Txn encodes to %d bytes", len(hdr))
	}
}

// TestDecodeLayout pins the persisted layout's field offsets (the tests
// above mutate by offset).
func TestDecodeLayout(t *testing.T) {
	tx := Txn{ProducerID: 0x0102030405060708, Epoch: 0x0a0b, LastEpoch: 0x0c0d, TimeoutMs: 0x11121314, State: PrepareAbort,
		StartMs: 0x2122232425262728, UpdateMs: 0x3132333435363738,
		Partitions: []Partition{{Topic: "ab", Partition: 7, First: 9}}}
	b := tx.Encode()
	want := []byte{2, 8, 7, 6, 5, 4, 3, 2, 1, 0x0b, 0x0a, 0x0d, 0x0c, 0x14, 0x13, 0x12, 0x11, 3,
		0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21, 0x38, 0x37, 0x36, 0x35, 0x34, 0x33, 0x32, 0x31,
		1, 0, 0, 0, 2, 0, 'a', 'b', 7, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if !bytes.Equal(b, want) {
		t.Fatalf("Encode = %v\nwant     %v", b, want)
	}
	// Version 1, as 7a5d905 wrote it: no last epoch (-1).
	v1 := append([]byte{1}, want[1:11]...)
	v1 = append(v1, want[13:]...)
	got, err := Decode("x", v1)
	tx.ID, tx.LastEpoch = "x", -1
	if err != nil || !reflect.DeepEqual(got, tx) {
		t.Fatalf("version 1: %+v %v", got, err)
	}
}

func TestCloneIsDeep(t *testing.T) {
	a := richTxn(2, 2, 2, 5)
	c := a.clone()
	c.Partitions[0].First = -1
	c.Groups[0].Offsets[0].Offset = -99
	c.Groups[1].Group = "changed"
	if a.Partitions[0].First == -1 || a.Groups[0].Offsets[0].Offset == -99 || a.Groups[1].Group == "changed" {
		t.Fatal("clone shares memory with the original")
	}
}

func FuzzDecodeTxn(f *testing.F) {
	rich := richTxn(3, 2, 2, 6)
	f.Add(rich.Encode())
	v2 := rich.Encode()
	f.Add(append(append([]byte{1}, v2[1:11]...), v2[13:]...)) // version 1
	f.Add((&Txn{}).Encode())
	short := Txn{ID: "s", ProducerID: 3, State: Ongoing, Groups: []GroupOffsets{
		{Group: "g", Offsets: []Offset{{Topic: "a", Offset: 1}}}}}
	f.Add(short.Encode())
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := Decode("id", b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v", err)
			}
			return
		}
		if tx.ID != "id" || tx.ProducerID < 0 || tx.Epoch < 0 || tx.State > CompleteAbort {
			t.Fatalf("accepted %+v", tx)
		}
		if tx.LastEpoch < -1 || b[0] == 1 && tx.LastEpoch != -1 {
			t.Fatalf("last epoch %d", tx.LastEpoch)
		}
		// Version 2 re-encodes to the same bytes; version 1 to version 2
		// (checked by the decode below).
		if again := tx.Encode(); b[0] == stateVersion && !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", b, again)
		}
		// And an encoding of a Txn decodes back to it.
		tx2, err := Decode("id", tx.Encode())
		if err != nil || !reflect.DeepEqual(tx, tx2) {
			t.Fatalf("second decode: %v", err)
		}
	})
}
