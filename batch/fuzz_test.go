package batch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/fuzz"
)

func seedBatches(f *testing.F) [][]byte {
	f.Helper()
	caps, err := fuzz.CaptureBatches()
	if err != nil {
		f.Fatal(err)
	}
	return append(fuzz.BatchSeeds(), caps...)
}

// fixup makes b a batch whose length and CRC are right, so the fuzzer gets
// past those checks to the attributes and records.
func fixup(b []byte) []byte {
	if len(b) < batch.HeaderSize {
		return nil
	}
	c := append([]byte(nil), b...)
	binary.BigEndian.PutUint32(c[8:], uint32(len(c)-12))
	c[16] = 2
	binary.BigEndian.PutUint32(c[17:], crc32.Checksum(c[21:], crc32.MakeTable(crc32.Castagnoli)))
	return c
}

// FuzzValidateIterate validates arbitrary bytes, then iterates the records
// of what validates uncompressed, and checks the round trip through Builder.
// Inputs are tried as given and with length and CRC fixed up.
func FuzzValidateIterate(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, b := range [][]byte{in, fixup(in)} {
			h, err := batch.Validate(b)
			if err != nil {
				var e *batch.Error
				if !errors.As(err, &e) {
					t.Fatalf("error %T %v is not a *batch.Error", err, err)
				}
				continue
			}
			if h.Size() != len(b) || h.NumRecords <= 0 {
				t.Fatalf("accepted %+v for %d bytes", h, len(b))
			}
			recs, err := batch.RecordsOf(b, h)
			if h.Codec() != batch.NoCompression {
				if err != batch.ErrCompressed {
					t.Fatalf("compressed batch: %v", err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var bld batch.Builder
			bld.Reset(nil, h.BaseOffset, h.BaseTimestamp, batch.NoCompression)
			var got []batch.Record
			var r batch.Record
			for recs.Next(&r) {
				for k, _, ok := r.Headers.Next(); ok; k, _, ok = r.Headers.Next() {
					if k == nil {
						t.Fatal("nil header key")
					}
				}
				r.Headers.Rewind()
				got = append(got, r)
				bld.AppendRecord(&r)
			}
			if len(got) > int(h.NumRecords) {
				t.Fatalf("%d records, count %d", len(got), h.NumRecords)
			}
			if recs.Err() != nil {
				continue
			}
			if len(got) != int(h.NumRecords) {
				t.Fatalf("clean end after %d of %d records", len(got), h.NumRecords)
			}
			// Round trip: re-encode and decode again to the same records.
			b2 := bld.Finish()
			checkSized(t, h, got, b2)
			h2, err := batch.Validate(b2)
			if err != nil && err != batch.ErrOffsetDelta {
				t.Fatalf("re-encoded batch: %v", err)
			}
			if h2.NumRecords != h.NumRecords {
				t.Fatalf("re-encoded count %d, want %d", h2.NumRecords, h.NumRecords)
			}
			recs2, err := batch.RecordsOf(b2, h2)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; recs2.Next(&r); i++ {
				g := got[i]
				if r.Attributes != g.Attributes || r.TimestampDelta != g.TimestampDelta || r.OffsetDelta != g.OffsetDelta ||
					!sameBytes(r.Key, g.Key) || !sameBytes(r.Value, g.Value) || !bytes.Equal(r.Headers.Raw(), g.Headers.Raw()) ||
					r.Headers.Len() != g.Headers.Len() {
					t.Fatalf("record %d differs after round trip", i)
				}
			}
			if recs2.Err() != nil {
				t.Fatalf("re-encoded records: %v", recs2.Err())
			}
		}
	})
}

// checkSized builds recs again through BeginRecordSized and AppendHeader
// and checks the bytes equal want, AppendRecord's encoding of them (records
// with attributes other than 0, which BeginRecordSized does not write, are
// left to AppendRecord alone).
func checkSized(t *testing.T, h batch.Header, recs []batch.Record, want []byte) {
	var sized batch.Builder
	sized.Reset(nil, h.BaseOffset, h.BaseTimestamp, batch.NoCompression)
	for i := range recs {
		r := &recs[i]
		if r.Attributes != 0 {
			return
		}
		r.Headers.Rewind()
		n, size := int32(0), 0
		for k, v, ok := r.Headers.Next(); ok; k, v, ok = r.Headers.Next() {
			n++
			size += batch.RecordHeaderLen(k, v)
		}
		r.Headers.Rewind()
		sized.BeginRecordSized(r.OffsetDelta, r.TimestampDelta, r.Key, r.Value, n, size)
		for k, v, ok := r.Headers.Next(); ok; k, v, ok = r.Headers.Next() {
			sized.AppendHeader(k, v)
		}
		r.Headers.Rewind()
	}
	if got := sized.Finish(); !bytes.Equal(got, want) {
		t.Fatalf("BeginRecordSized's batch differs from AppendRecord's")
	}
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// FuzzDecompress feeds arbitrary records sections to every codec under a
// small budget: no panic, no hang, output within the budget, and where the
// reference decoder also succeeds, the same output.
func FuzzDecompress(f *testing.F) {
	for _, b := range seedBatches(f) {
		if h, err := batch.Validate(b); err == nil && h.Codec() != batch.NoCompression {
			f.Add(uint8(h.Codec()), b[batch.HeaderSize:])
		}
	}
	// Small bombs and edge frames.
	f.Add(uint8(batch.Snappy), []byte{0x80, 0x80, 0x80, 0x80, 0x04, 0})
	f.Add(uint8(batch.LZ4), append(lz4Descriptor(0x60, 0x70), le32(0)...))
	f.Add(uint8(batch.Zstd), []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38, 0x13, 0x00, 0x10, 0})
	const limit = 64 << 10
	d := batch.AcquireDecoder()
	f.Fuzz(func(t *testing.T, codec uint8, section []byte) {
		c := batch.Codec(codec%4 + 1)
		out, err := batch.DecompressForTest(d, c, section, limit)
		if err != nil {
			if err != batch.ErrDecompress && err != batch.ErrBudget {
				t.Fatalf("unexpected error %v", err)
			}
		} else {
			if len(out) > limit {
				t.Fatalf("%d bytes out, limit %d", len(out), limit)
			}
			if ref, rerr := refDecompress(int16(c), section); rerr == nil && !bytes.Equal(ref, out) {
				t.Fatalf("%v: %d bytes, reference %d bytes", c, len(out), len(ref))
			}
		}
		// Through the public API, as one batch.
		b := rawBatch(section, 3, c)
		h, err := batch.Validate(b)
		if err != nil {
			t.Fatal(err)
		}
		budget := batch.Budget{MaxBytes: limit, MaxRecords: 100}
		recs, err := d.Records(b, h, &budget)
		if err != nil {
			return
		}
		if budget.MaxBytes < 0 {
			t.Fatalf("budget overdrawn: %d", budget.MaxBytes)
		}
		var r batch.Record
		for recs.Next(&r) {
		}
	})
}
