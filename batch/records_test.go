package batch_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/varint"
)

// rawBatch wraps a records section (uncompressed unless codec says
// otherwise) in a valid header claiming count records.
func rawBatch(section []byte, count int32, codec batch.Codec) []byte {
	b := make([]byte, batch.HeaderSize, batch.HeaderSize+len(section))
	binary.BigEndian.PutUint32(b[8:], uint32(batch.HeaderSize-12+len(section)))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(codec))
	binary.BigEndian.PutUint32(b[23:], uint32(count-1))
	binary.BigEndian.PutUint64(b[27:], 1700000000000)
	binary.BigEndian.PutUint64(b[35:], 1700000000000)
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(count))
	b = append(b, section...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// rec encodes a record whose body is fields, prefixed with its length.
func rec(fields ...[]byte) []byte {
	body := bytes.Join(fields, nil)
	return append(varint.AppendVarint(nil, int32(len(body))), body...)
}

func vi(v int32) []byte { return varint.AppendVarint(nil, v) }

// plain is a record body: attributes 0, deltas 0, null key, null value, no headers.
var plain = [][]byte{{0}, vi(0), vi(0), vi(-1), vi(-1), vi(0)}

func TestRecordErrors(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name    string
		section []byte
		count   int32
		want    error
	}{
		{"ok", rec(plain...), 1, nil},
		{"negative length", vi(-1), 1, batch.ErrRecordLength},
		{"length past end", cat(vi(16), []byte{0, 0, 0}), 1, batch.ErrRecordLength},
		{"overlong varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 1, batch.ErrRecordLength},
		{"truncated varint", []byte{0x80}, 1, batch.ErrRecordLength},
		{"empty record", vi(0), 1, batch.ErrRecordBody},
		{"key length -2", rec([]byte{0}, vi(0), vi(0), vi(-2), vi(-1), vi(0)), 1, batch.ErrRecordBody},
		{"key past record", cat(rec([]byte{0}, vi(0), vi(0), vi(3), []byte("ab")), rec(plain...)), 2, batch.ErrRecordBody},
		{"value length -5", rec([]byte{0}, vi(0), vi(0), vi(-1), vi(-5), vi(0)), 1, batch.ErrRecordBody},
		{"negative header count", rec([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(-1)), 1, batch.ErrRecordBody},
		{"negative header key", rec([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(-1), vi(-1)), 1, batch.ErrRecordBody},
		{"header value -2", rec([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(1), []byte("k"), vi(-2)), 1, batch.ErrRecordBody},
		{"header count huge", rec([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1<<30), vi(0), vi(-1)), 1, batch.ErrRecordBody},
		{"missing header count", rec([]byte{0}, vi(0), vi(0), vi(-1), vi(-1)), 1, batch.ErrRecordBody},
		{"extra byte in record", rec(append(plain[:len(plain):len(plain)], []byte{0})...), 1, batch.ErrRecordBody},
		{"bad timestamp varlong", rec([]byte{0}, bytes.Repeat([]byte{0xff}, 11)), 1, batch.ErrRecordBody},
		{"fewer records than count", rec(plain...), 2, batch.ErrRecordCount},
		{"no records at all", nil, 1, batch.ErrRecordCount},
		{"trailing byte", cat(rec(plain...), []byte{0}), 1, batch.ErrRecordTrailing},
		{"trailing record", cat(rec(plain...), rec(plain...)), 1, batch.ErrRecordTrailing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := rawBatch(tt.section, tt.count, batch.NoCompression)
			h, err := batch.Validate(b)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := batch.RecordsOf(b, h)
			if err != nil {
				t.Fatal(err)
			}
			var r batch.Record
			n := 0
			for recs.Next(&r) {
				n++
			}
			if recs.Err() != tt.want {
				t.Fatalf("err %v after %d records, want %v", recs.Err(), n, tt.want)
			}
			if recs.Next(&r) {
				t.Fatal("Next after the end returned true")
			}
			if tt.want != nil && tt.want.(*batch.Error).Code != 87 {
				t.Fatalf("code %d", tt.want.(*batch.Error).Code)
			}
		})
	}
}

func TestRecordsFieldsAndViews(t *testing.T) {
	var bld batch.Builder
	bld.Reset([]byte("prefix"), 0, 1000, batch.NoCompression)
	bld.Append(0, 0, nil, nil)
	bld.Append(1, -5, []byte{}, []byte{})
	bld.BeginRecord(2, 1<<40, []byte("key"), []byte("value"))
	bld.AppendHeader([]byte("h1"), []byte("v1"))
	bld.AppendHeader([]byte(""), nil)
	bld.AppendHeader([]byte("h3"), []byte{})
	bld.EndRecord()
	bld.Append(7, 3, []byte("k"), bytes.Repeat([]byte("x"), 300))
	out := bld.Finish()
	if !bytes.HasPrefix(out, []byte("prefix")) {
		t.Fatal("dst prefix lost")
	}
	b := out[len("prefix"):]
	h, err := batch.Validate(b)
	if err != batch.ErrOffsetDelta {
		// lastOffsetDelta 7 with 4 records: Validate flags the gap, as
		// Kafka does for producer batches.
		t.Fatalf("Validate: %v", err)
	}
	if h.LastOffsetDelta != 7 || h.NumRecords != 4 || h.MaxTimestamp != 1000+1<<40 || h.BaseTimestamp != 1000 {
		t.Fatalf("%+v", h)
	}
	recs, err := batch.RecordsOf(b, h)
	if err != nil {
		t.Fatal(err)
	}
	if recs.Len() != 4 {
		t.Fatal(recs.Len())
	}
	var rs []batch.Record
	var r batch.Record
	for recs.Next(&r) {
		rs = append(rs, r)
	}
	if recs.Err() != nil || len(rs) != 4 {
		t.Fatal(recs.Err(), len(rs))
	}
	if rs[0].Key != nil || rs[0].Value != nil {
		t.Fatal("null key/value not nil")
	}
	if rs[1].Key == nil || len(rs[1].Key) != 0 || rs[1].Value == nil || len(rs[1].Value) != 0 || rs[1].TimestampDelta != -5 {
		t.Fatalf("empty key/value: %+v", rs[1])
	}
	if string(rs[2].Key) != "key" || string(rs[2].Value) != "value" || rs[2].TimestampDelta != 1<<40 || rs[2].OffsetDelta != 2 {
		t.Fatalf("%+v", rs[2])
	}
	hs := rs[2].Headers
	if hs.Len() != 3 {
		t.Fatal(hs.Len())
	}
	for pass := range 2 {
		var got []string
		for k, v, ok := hs.Next(); ok; k, v, ok = hs.Next() {
			got = append(got, fmt.Sprintf("%q=%q/%v", k, v, v == nil))
		}
		if want := []string{`"h1"="v1"/false`, `""=""/true`, `"h3"=""/false`}; !slices.Equal(got, want) {
			t.Fatalf("pass %d: headers %q, want %q", pass, got, want)
		}
		hs.Rewind()
	}
	if len(rs[3].Value) != 300 || rs[3].OffsetDelta != 7 {
		t.Fatalf("%+v", rs[3])
	}

	// Views alias the buffer (zero copy) and are capped (appending to one
	// cannot write into the frame).
	k := rs[2].Key
	if cap(k) != len(k) || cap(rs[3].Value) != len(rs[3].Value) {
		t.Fatal("views are not full slice expressions")
	}
	next := append([]byte(nil), b...)
	_ = append(k, "!!!!"...)
	if !bytes.Equal(b, next) {
		t.Fatal("append to a view wrote into the frame")
	}
	i := bytes.Index(b, []byte("key"))
	copy(b[i:], "KEY")
	if string(k) != "KEY" {
		t.Fatal("key is not a view into the frame")
	}
}

func TestRecordHeadersMalformed(t *testing.T) {
	for _, raw := range [][]byte{nil, {0x01}, {0x02}, {0x02, 'a'}, {0x02, 'a', 0x03}, {0x02, 'a', 0x10, 'x'}} {
		h := batch.NewRecordHeaders(raw, 3)
		n := 0
		for _, _, ok := h.Next(); ok; _, _, ok = h.Next() {
			n++
		}
		if n > 1 {
			t.Fatalf("%x: %d headers", raw, n)
		}
	}
	if h := batch.NewRecordHeaders(nil, -4); h.Len() != 0 {
		t.Fatal("negative count")
	}
}

func TestRecordsOfChecks(t *testing.T) {
	h, _ := batch.Validate(golden)
	if _, err := batch.RecordsOf(golden[:60], h); err != batch.ErrTruncated {
		t.Fatal(err)
	}
	hc := h
	hc.Attributes = int16(batch.Zstd)
	if _, err := batch.RecordsOf(golden, hc); err != batch.ErrCompressed {
		t.Fatal(err)
	}
}
