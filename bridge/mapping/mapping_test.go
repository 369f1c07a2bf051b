package mapping

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// encodeOne maps r into a fresh batch with the window computed from r alone.
func encodeOne(t testing.TB, r *Record) (message.Frame, *message.Batch) {
	t.Helper()
	var w Window
	w.Observe(r.TimestampMs)
	var b message.Batch
	b.Reset(w.Start())
	var e Encoder
	if err := e.Append(&b, r); err != nil {
		t.Fatalf("Append: %v", err)
	}
	f, err := message.ParseFrame(b.Frames())
	if err != nil || f.Size != b.Size() {
		t.Fatalf("ParseFrame: %v (size %d of %d)", err, f.Size, b.Size())
	}
	return f, &b
}

type hdr struct {
	kind  byte
	key   string
	vkind byte
	value []byte
}

func headersOf(t testing.TB, block []byte) []hdr {
	t.Helper()
	var out []hdr
	for len(block) > 0 {
		h, rest, err := message.NextHeader(block)
		if err != nil {
			t.Fatalf("NextHeader: %v", err)
		}
		out = append(out, hdr{h.KeyKind, string(h.Key), h.ValueKind, h.Value})
		block = rest
	}
	return out
}

// TestFastPathBlock: docs/design/record-mapping.md §2.7 — no key, no headers, a
// non-empty value, no kafka.ts: exactly one header, an 18-byte block.
func TestFastPathBlock(t *testing.T) {
	f, _ := encodeOne(t, &Record{Value: []byte("hello"), TimestampMs: 1_700_000_000_000})
	want := unhex(t, "02 07000000 6b61666b612e76 01 01000000 01")
	if !bytes.Equal(f.Headers, want) {
		t.Fatalf("block = %x, want %x", f.Headers, want)
	}
	if string(f.Payload) != "hello" {
		t.Fatalf("payload = %q", f.Payload)
	}
}

// TestWorkedExample: key k, value v, header trace=abc, ts 1 700 000 000 123 ms.
func TestWorkedExample(t *testing.T) {
	r := &Record{Key: []byte("k"), Value: []byte("v"), TimestampMs: 1_700_000_000_123,
		Headers: []Header{{Key: []byte("trace"), Value: []byte("abc")}}}
	f, b := encodeOne(t, r)
	if string(f.Payload) != "v" {
		t.Fatalf("payload %q", f.Payload)
	}
	if got := b.Origin + uint64(f.TimestampDelta); got != 1_700_000_000_123_000 {
		t.Fatalf("origin = %d", got)
	}
	got := headersOf(t, f.Headers)
	want := []hdr{
		{2, "kafka.h.trace", 1, []byte("abc")},
		{2, "kafka.key", 1, []byte("k")},
		{2, "kafka.v", 1, []byte{1}},
	}
	if !equalHdrs(got, want) {
		t.Fatalf("headers = %v, want %v", got, want)
	}
}

func TestTombstone(t *testing.T) {
	f, _ := encodeOne(t, &Record{Key: []byte("k"), Value: nil, TimestampMs: 5})
	if !bytes.Equal(f.Payload, []byte{0}) {
		t.Fatalf("payload %x", f.Payload)
	}
	want := []hdr{
		{2, "kafka.key", 1, []byte("k")},
		{2, "kafka.v", 1, []byte{1}},
		{2, "kafka.value", 1, []byte("null")},
	}
	if got := headersOf(t, f.Headers); !equalHdrs(got, want) {
		t.Fatalf("headers = %v", got)
	}
}

func TestEnvelopeExamples(t *testing.T) {
	// Key present but empty, value v, no headers.
	f, _ := encodeOne(t, &Record{Key: []byte{}, Value: []byte("v"), TimestampMs: 7})
	if want := unhex(t, "03 00000000 01000000 76 00000000"); !bytes.Equal(f.Payload, want) {
		t.Fatalf("envelope 1 = %x, want %x", f.Payload, want)
	}
	want := []hdr{{2, "kafka.envelope", 1, []byte{1}}, {2, "kafka.v", 1, []byte{1}}}
	if got := headersOf(t, f.Headers); !equalHdrs(got, want) {
		t.Fatalf("envelope headers = %v", got)
	}
	// Key k, value v, one header flag with a null value.
	f, _ = encodeOne(t, &Record{Key: []byte("k"), Value: []byte("v"), TimestampMs: 7,
		Headers: []Header{{Key: []byte("flag")}}})
	if want := unhex(t, "03 01000000 6b 01000000 76 01000000 04000000 666c6167 00 00000000"); !bytes.Equal(f.Payload, want) {
		t.Fatalf("envelope 2 = %x, want %x", f.Payload, want)
	}
}

func TestEnvelopeTriggers(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 256)
	cases := map[string]Record{
		"key over 255":       {Key: long, Value: []byte("v")},
		"empty key":          {Key: []byte{}, Value: []byte("v")},
		"header name > 247":  {Value: []byte("v"), Headers: []Header{{Key: long[:248], Value: []byte("a")}}},
		"null header value":  {Value: []byte("v"), Headers: []Header{{Key: []byte("a")}}},
		"empty header value": {Value: []byte("v"), Headers: []Header{{Key: []byte("a"), Value: []byte{}}}},
		"header value > 255": {Value: []byte("v"), Headers: []Header{{Key: []byte("a"), Value: long}}},
	}
	// Over the 100 000-byte block budget: 500 headers of 200-byte values.
	var many []Header
	for i := range 500 {
		many = append(many, Header{Key: []byte(strings.Repeat("n", 10) + string(rune('a'+i%26)) + strings.Repeat("z", i/26)), Value: long[:200]})
	}
	cases["block over budget"] = Record{Value: []byte("v"), Headers: many}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			r.TimestampMs = 1
			f, _ := encodeOne(t, &r)
			hs := headersOf(t, f.Headers)
			if hs[0].key != "kafka.envelope" {
				t.Fatalf("not enveloped: %v", hs[0])
			}
			roundTrip(t, &r)
		})
	}
	// Just within: a 247-byte name and a 255-byte value stay native.
	r := Record{Value: []byte("v"), Headers: []Header{{Key: long[:247], Value: long[:255]}}, TimestampMs: 1}
	f, _ := encodeOne(t, &r)
	if headersOf(t, f.Headers)[0].key == "kafka.envelope" {
		t.Fatal("247-byte name enveloped")
	}
}

func TestRepeatedHeaderRefused(t *testing.T) {
	var b message.Batch
	b.Reset(0)
	var e Encoder
	err := e.Append(&b, &Record{Value: []byte("v"), Headers: []Header{
		{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}, {Key: []byte("a"), Value: []byte("3")}}})
	if err != ErrInvalidRecord {
		t.Fatalf("err = %v, want ErrInvalidRecord", err)
	}
	if b.Count != 0 || b.Size() != 0 {
		t.Fatal("refused record left bytes in the batch")
	}
}

func TestTimestampRules(t *testing.T) {
	// A batch: two stamped records, one -1, one at the epoch, one outlier
	// beyond 71.6 minutes.
	const base = int64(1_700_000_000_000)
	recs := []Record{
		{Value: []byte("a"), TimestampMs: base + 10},
		{Value: []byte("b"), TimestampMs: base},
		{Value: []byte("c"), TimestampMs: -1},
		{Value: []byte("d"), TimestampMs: 0},
		{Value: []byte("e"), TimestampMs: base + 5_000_000},
	}
	var w Window
	for _, r := range recs {
		w.Observe(r.TimestampMs)
	}
	if w.Start() != uint64(base)*1000 {
		t.Fatalf("window start %d", w.Start())
	}
	var b message.Batch
	b.Reset(w.Start())
	var e Encoder
	for i := range recs {
		if err := e.Append(&b, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	wantTS := []int64{0, 0, -1, 0, base + 5_000_000} // kafka.ts values; 0 = absent for first two
	hasTS := []bool{false, false, true, true, true}
	frames := b.Frames()
	var d Decoder
	for i := range recs {
		f, err := message.ParseFrame(frames)
		if err != nil {
			t.Fatal(err)
		}
		frames = frames[f.Size:]
		var ts []byte
		for _, h := range headersOf(t, f.Headers) {
			if h.key == "kafka.ts" {
				if h.vkind != message.KindInt64 {
					t.Fatalf("record %d: kafka.ts kind %d", i, h.vkind)
				}
				ts = h.value
			}
		}
		if (ts != nil) != hasTS[i] {
			t.Fatalf("record %d: kafka.ts present=%v, want %v", i, ts != nil, hasTS[i])
		}
		if ts != nil && int64(binary.LittleEndian.Uint64(ts)) != wantTS[i] {
			t.Fatalf("record %d: kafka.ts=%d", i, int64(binary.LittleEndian.Uint64(ts)))
		}
		// Read back: -1 becomes the server time; everything else as sent.
		m := message.Message{Timestamp: 42_000_000, OriginTimestamp: b.Origin + uint64(f.TimestampDelta), Payload: f.Payload, Headers: f.Headers}
		var r Record
		if err := d.Decode(&m, &r); err != nil {
			t.Fatal(err)
		}
		want := recs[i].TimestampMs
		if want == -1 {
			want = 42_000
		}
		if r.TimestampMs != want {
			t.Fatalf("record %d: timestamp %d, want %d", i, r.TimestampMs, want)
		}
	}
	for _, bad := range []int64{-2, -1000} {
		var e Encoder
		b.Reset(0)
		if err := e.Append(&b, &Record{Value: []byte("x"), TimestampMs: bad}); err != ErrInvalidRecord {
			t.Fatalf("ts %d: err %v", bad, err)
		}
	}
}

func roundTrip(t *testing.T, in *Record) {
	t.Helper()
	f, b := encodeOne(t, in)
	m := message.Message{Timestamp: 5_000_000, OriginTimestamp: b.Origin + uint64(f.TimestampDelta), Payload: f.Payload, Headers: f.Headers}
	var d Decoder
	var out Record
	if err := d.Decode(&m, &out); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := *in
	if want.TimestampMs == -1 {
		want.TimestampMs = 5_000 // "no timestamp" reads back as the append time
	}
	assertSame(t, &want, &out)
}

func assertSame(t *testing.T, in, out *Record) {
	t.Helper()
	if !sameBytes(in.Key, out.Key) || !sameBytes(in.Value, out.Value) || in.TimestampMs != out.TimestampMs {
		t.Fatalf("record mismatch:\n in key=%v(%v) value=%d(%v) ts=%d\nout key=%v(%v) value=%d(%v) ts=%d",
			in.Key, in.Key == nil, len(in.Value), in.Value == nil, in.TimestampMs,
			out.Key, out.Key == nil, len(out.Value), out.Value == nil, out.TimestampMs)
	}
	// Native path returns headers sorted by name; compare as multisets
	// (names are unique on the native path).
	if len(in.Headers) != len(out.Headers) {
		t.Fatalf("headers: %d in, %d out", len(in.Headers), len(out.Headers))
	}
	for _, h := range in.Headers {
		found := false
		for _, o := range out.Headers {
			if bytes.Equal(h.Key, o.Key) && sameBytes(h.Value, o.Value) {
				found = true
			}
		}
		if !found {
			t.Fatalf("header %q lost", h.Key)
		}
	}
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func equalHdrs(a, b []hdr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].kind != b[i].kind || a[i].key != b[i].key || a[i].vkind != b[i].vkind || !bytes.Equal(a[i].value, b[i].value) {
			return false
		}
	}
	return true
}

func randBytes(r *rand.Rand, nilOK bool) []byte {
	switch r.IntN(6) {
	case 0:
		if nilOK {
			return nil
		}
		return []byte{}
	case 1:
		return []byte{}
	case 2:
		return bytes.Repeat([]byte{byte(r.IntN(256))}, 200+r.IntN(200))
	default:
		b := make([]byte, 1+r.IntN(20))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
}

func TestRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		r := Record{Key: randBytes(rng, true), Value: randBytes(rng, true), TimestampMs: int64(rng.IntN(3)) - 1}
		if rng.IntN(2) == 0 {
			r.TimestampMs = 1_600_000_000_000 + int64(rng.IntN(1e9))
		}
		n := rng.IntN(4)
		for j := 0; j < n; j++ {
			r.Headers = append(r.Headers, Header{Key: []byte{byte('a' + j), byte(rng.IntN(256) & 0x7f)}, Value: randBytes(rng, true)})
		}
		roundTrip(t, &r)
	}
}

func TestForeignMessage(t *testing.T) {
	var block []byte
	block = message.AppendHeader(block, message.KindRaw, "trace", message.KindRaw, []byte("abc"))
	block = message.AppendHeader(block, message.KindString, "kafka.key", message.KindRaw, []byte("looks-like-ours"))
	block = message.AppendHeader(block, message.KindRaw, "\xff\xfe", message.KindRaw, []byte("dropped"))
	block = message.AppendHeader(block, message.KindString, "trace", message.KindInt64, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	m := message.Message{Timestamp: 9_000_000, OriginTimestamp: 0, Payload: []byte("payload"), Headers: block}
	var d Decoder
	var r Record
	if err := d.Decode(&m, &r); err != nil {
		t.Fatal(err)
	}
	if r.Key != nil || string(r.Value) != "payload" || r.TimestampMs != 9_000 {
		t.Fatalf("foreign record: key=%v value=%q ts=%d", r.Key, r.Value, r.TimestampMs)
	}
	if len(r.Headers) != 2 || string(r.Headers[0].Key) != "trace" || !bytes.Equal(r.Headers[0].Value, []byte{1, 0, 0, 0, 0, 0, 0, 0}) ||
		string(r.Headers[1].Key) != "kafka.key" {
		t.Fatalf("foreign headers: %q", r.Headers)
	}
}

func TestUnmappable(t *testing.T) {
	ver := func(v []byte) []byte {
		return message.AppendHeader(nil, message.KindString, "kafka.v", message.KindRaw, v)
	}
	cases := map[string]message.Message{
		"unknown version":   {Payload: []byte("x"), Headers: ver([]byte{2})},
		"bad value marker":  {Payload: []byte("x"), Headers: message.AppendHeader(ver(one), message.KindString, "kafka.value", message.KindRaw, []byte("nul"))},
		"broken block":      {Payload: []byte("x"), Headers: []byte{2, 9, 0, 0, 0, 'k'}},
		"ts not int64":      {Payload: []byte("x"), Headers: message.AppendHeader(ver(one), message.KindString, "kafka.ts", message.KindRaw, []byte("epoch"))},
		"ts below -1":       {Payload: []byte("x"), Headers: message.AppendHeader(ver(one), message.KindString, "kafka.ts", message.KindInt64, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})},
		"envelope trailing": {Payload: unhex(t, "03 00000000 01000000 76 00000000 00"), Headers: message.AppendHeader(ver(one), message.KindString, "kafka.envelope", message.KindRaw, one)},
		"envelope short":    {Payload: unhex(t, "03 05000000 01"), Headers: message.AppendHeader(ver(one), message.KindString, "kafka.envelope", message.KindRaw, one)},
		"envelope count":    {Payload: unhex(t, "00 00000000 00000000 ffffffff"), Headers: message.AppendHeader(ver(one), message.KindString, "kafka.envelope", message.KindRaw, one)},
		"envelope version":  {Payload: unhex(t, "00 00000000 00000000 00000000"), Headers: message.AppendHeader(ver(one), message.KindString, "kafka.envelope", message.KindRaw, []byte{2})},
	}
	for name, m := range cases {
		var d Decoder
		var r Record
		if err := d.Decode(&m, &r); err != ErrUnmappable {
			t.Errorf("%s: err = %v, want ErrUnmappable", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	_, b := encodeOne(f, &Record{Key: []byte("k"), Value: []byte("v"), TimestampMs: 3, Headers: []Header{{Key: []byte("h"), Value: []byte("x")}}})
	fr, _ := message.ParseFrame(b.Frames())
	f.Add(fr.Payload, fr.Headers)
	_, b = encodeOne(f, &Record{Key: []byte{}, Value: nil, TimestampMs: 0, Headers: []Header{{Key: []byte("h")}}})
	fr, _ = message.ParseFrame(b.Frames())
	f.Add(fr.Payload, fr.Headers)
	f.Fuzz(func(t *testing.T, payload, headers []byte) {
		m := message.Message{Payload: payload, Headers: headers, Timestamp: 5, OriginTimestamp: 7}
		var d Decoder
		var r Record
		if err := d.Decode(&m, &r); err != nil {
			return
		}
		// Whatever decodes must re-encode and decode to the same record.
		in := r
		in.Headers = append([]Header(nil), r.Headers...)
		seen := map[string]bool{}
		for _, h := range in.Headers {
			if seen[string(h.Key)] {
				return // foreign duplicates can't be re-produced
			}
			seen[string(h.Key)] = true
		}
		if in.TimestampMs < -1 {
			return
		}
		var nb message.Batch
		var w Window
		w.Observe(in.TimestampMs)
		nb.Reset(w.Start())
		var e Encoder
		if err := e.Append(&nb, &in); err != nil {
			if err == ErrInvalidRecord || err == ErrTooLarge {
				return
			}
			t.Fatal(err)
		}
		nf, _ := message.ParseFrame(nb.Frames())
		m2 := message.Message{Payload: nf.Payload, Headers: nf.Headers, OriginTimestamp: nb.Origin + uint64(nf.TimestampDelta), Timestamp: 5}
		var out Record
		if err := d.Decode(&m2, &out); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !sameBytes(in.Key, out.Key) || !sameBytes(in.Value, out.Value) {
			t.Fatalf("round trip changed the record")
		}
	})
}
