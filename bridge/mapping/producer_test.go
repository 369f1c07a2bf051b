package mapping

import (
	"bytes"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
)

// TestProducerStampBytes: the stamp is a kafka.producer header (String key,
// Raw 19-byte value: version 1, id i64, epoch i16, base sequence i32, count
// i32, little-endian) in sorted position on both paths, and FindProducer
// reads it back.
func TestProducerStampBytes(t *testing.T) {
	stamp := &Producer{ID: 0x0102030405060708, Epoch: 0x090a, BaseSequence: 0x0b0c0d0e, Count: 3}
	wantValue := unhex(t, "01 0807060504030201 0a09 0e0d0c0b 03000000")
	for _, tc := range []struct {
		name string
		r    Record
		keys []string
	}{
		{"native", Record{Key: []byte("k"), Value: []byte("v"), TimestampMs: 0, Producer: stamp,
			Headers: []Header{{Key: []byte("trace"), Value: []byte("abc")}}},
			[]string{"kafka.h.trace", "kafka.key", "kafka.producer", "kafka.ts", "kafka.v"}},
		{"native fast path", Record{Value: []byte("v"), TimestampMs: 1_700_000_000_000, Producer: stamp},
			[]string{"kafka.producer", "kafka.v"}},
		{"tombstone", Record{Key: []byte("k"), TimestampMs: 1_700_000_000_000, Producer: stamp},
			[]string{"kafka.key", "kafka.producer", "kafka.v", "kafka.value"}},
		{"envelope", Record{Key: []byte{}, Value: []byte("v"), TimestampMs: 0, Producer: stamp},
			[]string{"kafka.envelope", "kafka.producer", "kafka.ts", "kafka.v"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := encodeOne(t, &tc.r)
			hs := headersOf(t, f.Headers)
			var keys []string
			for _, h := range hs {
				keys = append(keys, h.key)
				if h.kind != message.KindString {
					t.Fatalf("key %q kind %d", h.key, h.kind)
				}
				if h.key == "kafka.producer" && (h.vkind != message.KindRaw || !bytes.Equal(h.value, wantValue)) {
					t.Fatalf("stamp = kind %d %x, want Raw %x", h.vkind, h.value, wantValue)
				}
			}
			if len(keys) != len(tc.keys) {
				t.Fatalf("keys %q, want %q", keys, tc.keys)
			}
			for i := range keys {
				if keys[i] != tc.keys[i] {
					t.Fatalf("keys %q, want %q", keys, tc.keys)
				}
			}
			got, ok := FindProducer(f.Headers)
			if !ok || got != *stamp {
				t.Fatalf("FindProducer = %+v %v, want %+v", got, ok, *stamp)
			}

			// The record reads back exactly as without the stamp: the
			// decoder surfaces no kafka.* key but kafka.h.*.
			plain := tc.r
			plain.Producer = nil
			pf, _ := encodeOne(t, &plain)
			var d Decoder
			var with, without Record
			if err := d.Decode(&message.Message{Payload: f.Payload, Headers: f.Headers, Timestamp: 5000}, &with); err != nil {
				t.Fatal(err)
			}
			with.Headers = append([]Header(nil), with.Headers...)
			if err := d.Decode(&message.Message{Payload: pf.Payload, Headers: pf.Headers, Timestamp: 5000}, &without); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(with.Key, without.Key) || !bytes.Equal(with.Value, without.Value) || (with.Value == nil) != (without.Value == nil) ||
				with.TimestampMs != without.TimestampMs || len(with.Headers) != len(without.Headers) {
				t.Fatalf("decoded with stamp %+v, without %+v", with, without)
			}
		})
	}
}

// TestFindProducerRefuses: no stamp, a stamp on a message no gateway wrote
// (no kafka.v), another layout version, a wrong size or impossible values
// are all "no stamp".
func TestFindProducerRefuses(t *testing.T) {
	good := unhex(t, "01 0100000000000000 0000 00000000 01000000")
	block := func(version bool, kind byte, value []byte) []byte {
		var b []byte
		b = message.AppendHeader(b, message.KindString, keyProducer, kind, value)
		if version {
			b = message.AppendHeader(b, message.KindString, keyVersion, message.KindRaw, one)
		}
		return b
	}
	if _, ok := FindProducer(block(true, message.KindRaw, good)); !ok {
		t.Fatal("good stamp refused")
	}
	bad := func(edit func([]byte) []byte) []byte { return edit(append([]byte(nil), good...)) }
	for name, b := range map[string][]byte{
		"no headers":     nil,
		"only kafka.v":   message.AppendHeader(nil, message.KindString, keyVersion, message.KindRaw, one),
		"foreign":        block(false, message.KindRaw, good),
		"not raw":        block(true, message.KindString, good),
		"version 2":      block(true, message.KindRaw, bad(func(b []byte) []byte { b[0] = 2; return b })),
		"short":          block(true, message.KindRaw, good[:18]),
		"long":           block(true, message.KindRaw, append(bad(func(b []byte) []byte { return b }), 0)),
		"negative id":    block(true, message.KindRaw, bad(func(b []byte) []byte { b[8] = 0x80; return b })),
		"count 0":        block(true, message.KindRaw, bad(func(b []byte) []byte { b[15] = 0; return b })),
		"broken block":   block(true, message.KindRaw, good)[:10],
		"kafka.v = 2":    append(message.AppendHeader(nil, message.KindString, keyProducer, message.KindRaw, good), message.AppendHeader(nil, message.KindString, keyVersion, message.KindRaw, []byte{2})...),
		"negative epoch": block(true, message.KindRaw, bad(func(b []byte) []byte { b[10] = 0x80; return b })),
	} {
		if p, ok := FindProducer(b); ok {
			t.Errorf("%s: FindProducer = %+v, want none", name, p)
		}
	}
}

// TestProducerStampGolden pins the docs/MAPPING.md example: producer 7,
// epoch 0, base sequence 5, 3 records.
func TestProducerStampGolden(t *testing.T) {
	want := unhex(t, "02 0e000000 6b61666b612e70726f6475636572 01 13000000 01 0700000000000000 0000 05000000 03000000")
	p := Producer{ID: 7, Epoch: 0, BaseSequence: 5, Count: 3}
	if got := p.appendHeader(nil); !bytes.Equal(got, want) {
		t.Fatalf("stamp header = %x, want %x", got, want)
	}
}

// FuzzFindProducer: FindProducer never panics on any header block, and a
// stamp it accepts, written again on a record, reads back identically.
func FuzzFindProducer(f *testing.F) {
	for _, r := range []Record{
		{Value: []byte("v"), TimestampMs: 1, Producer: &Producer{ID: 7, Epoch: 1, BaseSequence: 5, Count: 3}},
		{Key: []byte{}, Value: []byte("v"), TimestampMs: 0, Producer: &Producer{ID: 1 << 62, Epoch: 32767, BaseSequence: 1<<31 - 1, Count: 1}},
		{Key: []byte("k"), Headers: []Header{{Key: []byte("h"), Value: []byte("x")}}, TimestampMs: 1},
	} {
		fr, _ := encodeOne(f, &r)
		f.Add(fr.Headers)
	}
	f.Fuzz(func(t *testing.T, headers []byte) {
		p, ok := FindProducer(headers)
		if !ok {
			return
		}
		fr, _ := encodeOne(t, &Record{Value: []byte("v"), TimestampMs: 1, Producer: &p})
		if q, ok := FindProducer(fr.Headers); !ok || q != p {
			t.Fatalf("stamp %+v read back as %+v (%v)", p, q, ok)
		}
	})
}
