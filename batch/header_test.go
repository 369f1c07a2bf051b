package batch_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/batch"
)

// golden is the 70-byte test vector of docs/design/kafka-protocol.md §4.4: one record,
// key null, value "hi", CreateTime 1700000000000, not idempotent, uncompressed.
var golden = mustHex(`
0000000000000000 0000003a ffffffff 02 bbcc4115 0000 00000000
0000018bcfe56800 0000018bcfe56800 ffffffffffffffff ffff ffffffff 00000001
10 00 00 00 01 04 6869 00`)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

func TestGoldenVector(t *testing.T) {
	if len(golden) != 70 {
		t.Fatalf("golden is %d bytes", len(golden))
	}
	h, err := batch.Validate(golden)
	if err != nil {
		t.Fatal(err)
	}
	want := batch.Header{
		BaseOffset: 0, Length: 58, PartitionLeaderEpoch: -1, Magic: 2, CRC: 0xbbcc4115,
		Attributes: 0, LastOffsetDelta: 0, BaseTimestamp: 1700000000000, MaxTimestamp: 1700000000000,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 1,
	}
	if h != want {
		t.Fatalf("header\n got %+v\nwant %+v", h, want)
	}
	if h.Codec() != batch.NoCompression || h.Transactional() || h.Control() || h.LogAppendTime() || h.HasDeleteHorizon() {
		t.Fatal("flags wrong")
	}
	if err := h.CheckProduce(); err != nil {
		t.Fatal(err)
	}
	recs, err := batch.RecordsOf(golden, h)
	if err != nil {
		t.Fatal(err)
	}
	var r batch.Record
	if !recs.Next(&r) {
		t.Fatal(recs.Err())
	}
	if r.Key != nil || string(r.Value) != "hi" || r.TimestampDelta != 0 || r.OffsetDelta != 0 || r.Headers.Len() != 0 {
		t.Fatalf("record %+v", r)
	}
	if recs.Next(&r) || recs.Err() != nil {
		t.Fatalf("second record or error: %v", recs.Err())
	}

	// The Builder reproduces the vector byte for byte.
	var bld batch.Builder
	bld.Reset(nil, 0, 1700000000000, batch.NoCompression)
	bld.Append(0, 0, nil, []byte("hi"))
	if got := bld.Finish(); !bytes.Equal(got, golden) {
		t.Fatalf("builder\n got %x\nwant %x", got, golden)
	}
}

// recrc recomputes the CRC after a mutation, so a test reaches the check
// after the CRC.
func recrc(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestValidateErrors(t *testing.T) {
	mut := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), golden...))
	}
	tests := []struct {
		name string
		in   []byte
		want *batch.Error
		code int16
	}{
		{"empty", nil, batch.ErrNoBatch, 87},
		{"one byte", []byte{0}, batch.ErrTooShort, 2},
		{"17 bytes magic 2", golden[:17], batch.ErrTooShort, 2},
		{"60 bytes", golden[:60], batch.ErrTooShort, 2},
		{"magic 1", mut(func(b []byte) []byte { b[16] = 1; return b }), batch.ErrMagic, 87},
		{"magic 0 short message set", mut(func(b []byte) []byte { b[16] = 0; return b[:26] }), batch.ErrMagic, 87},
		{"length 48", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 48); return b }), batch.ErrTooShort, 2},
		{"length negative", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 0xffffffff); return b }), batch.ErrTooShort, 2},
		{"truncated", golden[:69], batch.ErrTruncated, 2},
		{"length too big", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 1<<30); return b }), batch.ErrTruncated, 2},
		{"trailing byte", append(append([]byte(nil), golden...), 0), batch.ErrTrailing, 87},
		{"two batches", append(append([]byte(nil), golden...), golden...), batch.ErrTrailing, 87},
		{"crc", mut(func(b []byte) []byte { b[69] ^= 1; return b }), batch.ErrCRC, 2},
		{"crc field", mut(func(b []byte) []byte { b[17] ^= 1; return b }), batch.ErrCRC, 2},
		{"codec 5", mut(func(b []byte) []byte { b[22] = 5; return recrc(b) }), batch.ErrCodec, 76},
		{"codec 7", mut(func(b []byte) []byte { b[22] = 7; return recrc(b) }), batch.ErrCodec, 76},
		{"count 0", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 0); return recrc(b) }), batch.ErrCount, 87},
		{"count -1", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 0xffffffff); return recrc(b) }), batch.ErrCount, 87},
		{"count 2", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 2); return recrc(b) }), batch.ErrOffsetDelta, 87},
		{"lastOffsetDelta max", mut(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 0x7fffffff)
			binary.BigEndian.PutUint32(b[57:], 0x80000000)
			return recrc(b)
		}), batch.ErrCount, 87},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := batch.Validate(tt.in)
			if err != tt.want {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			var e *batch.Error
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Fatalf("code %v, want %d", e, tt.code)
			}
			if !strings.HasPrefix(err.Error(), "batch: ") {
				t.Fatalf("message %q lacks the package prefix", err)
			}
		})
	}
}

func TestAttributesAndCheckProduce(t *testing.T) {
	build := func(f func(*batch.Builder)) batch.Header {
		var b batch.Builder
		b.Reset(nil, 0, 1700000000000, batch.NoCompression)
		f(&b)
		b.Append(0, 0, nil, []byte("x"))
		h, err := batch.Validate(b.Finish())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	tests := []struct {
		name string
		f    func(*batch.Builder)
		flag func(batch.Header) bool
		want error
	}{
		{"plain", func(*batch.Builder) {}, func(batch.Header) bool { return true }, nil},
		{"transactional", func(b *batch.Builder) { b.SetAttributes(0x10); b.SetProducer(7, 0, 0) },
			batch.Header.Transactional, nil},
		{"control", func(b *batch.Builder) { b.SetAttributes(0x30) }, batch.Header.Control, batch.ErrControl},
		{"log append time", func(b *batch.Builder) { b.SetAttributes(0x08) }, batch.Header.LogAppendTime, batch.ErrLogAppendTime},
		{"delete horizon", func(b *batch.Builder) { b.SetAttributes(0x40) }, batch.Header.HasDeleteHorizon, nil},
		{"idempotent", func(b *batch.Builder) { b.SetProducer(7, 1, 10) }, func(h batch.Header) bool {
			return h.ProducerID == 7 && h.ProducerEpoch == 1 && h.BaseSequence == 10
		}, nil},
		{"idempotent without sequence", func(b *batch.Builder) { b.SetProducer(7, 1, -1) },
			func(batch.Header) bool { return true }, batch.ErrSequence},
		{"codec bits ignored", func(b *batch.Builder) { b.SetAttributes(0x07) }, func(h batch.Header) bool {
			return h.Codec() == batch.NoCompression
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := build(tt.f)
			if !tt.flag(h) {
				t.Fatalf("flag not set in %+v", h)
			}
			if err := h.CheckProduce(); err != tt.want {
				t.Fatalf("CheckProduce = %v, want %v", err, tt.want)
			}
		})
	}
	// baseOffset must be 0 from a producer; SetBaseOffset keeps the CRC valid.
	b := append([]byte(nil), golden...)
	batch.SetBaseOffset(b, 42)
	batch.SetPartitionLeaderEpoch(b, 3)
	h, err := batch.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 42 || h.PartitionLeaderEpoch != 3 {
		t.Fatalf("%+v", h)
	}
	if err := h.CheckProduce(); err != batch.ErrBaseOffset {
		t.Fatalf("CheckProduce = %v", err)
	}
}

func TestCodecString(t *testing.T) {
	for c, want := range map[batch.Codec]string{
		batch.NoCompression: "none", batch.Gzip: "gzip", batch.Snappy: "snappy", batch.LZ4: "lz4", batch.Zstd: "zstd",
		5: "codec(5)", 7: "codec(7)", -1: "codec(?)", 8: "codec(?)",
	} {
		if got := c.String(); got != want {
			t.Errorf("%d: %q, want %q", c, got, want)
		}
		if c.Valid() != (c >= 0 && c <= 4) {
			t.Errorf("%d: Valid %v", c, c.Valid())
		}
	}
}

// TestPeekCodec checks PeekCodec against Validate's Header.Codec for every
// codec, and that a batch too short for the attributes is reported as such.
func TestPeekCodec(t *testing.T) {
	for _, codec := range []batch.Codec{batch.NoCompression, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd} {
		var b batch.Builder
		b.Reset(nil, 0, 1700000000000, codec)
		b.Append(0, 0, nil, []byte(strings.Repeat("x", 100)))
		raw := b.Finish()
		h, err := batch.Validate(raw)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := batch.PeekCodec(raw); !ok || c != h.Codec() || c != codec {
			t.Errorf("%s: PeekCodec = %v, %v; Header.Codec %v", codec, c, ok, h.Codec())
		}
	}
	if _, ok := batch.PeekCodec(golden[:22]); ok {
		t.Error("PeekCodec of 22 bytes: ok, want not ok")
	}
	if c, ok := batch.PeekCodec(golden[:23]); !ok || c != batch.NoCompression {
		t.Errorf("PeekCodec of 23 bytes = %v, %v", c, ok)
	}
}
