package batch_test

// Differential tests against franz-go's kmsg (docs/design/style.md habit 8): batches
// assembled with kmsg and compressed the way each client library does decode
// through Validate and Decoder to the same records; batches from our Builder
// decode with kmsg.RecordBatch.ReadFrom, reference decompressors and
// kmsg.Record.ReadFrom to the same records.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/fuzz"
)

// compressors produce a records section the way a client library does.
var compressors = []struct {
	name  string
	codec batch.Codec
	fn    func(tb testing.TB, raw []byte) []byte
}{
	{"none", batch.NoCompression, func(_ testing.TB, raw []byte) []byte { return raw }},
	{"gzip", batch.Gzip, func(tb testing.TB, raw []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
		return buf.Bytes()
	}},
	{"gzip-multimember", batch.Gzip, func(tb testing.TB, raw []byte) []byte {
		var buf bytes.Buffer
		for _, part := range [][]byte{raw[:len(raw)/3], raw[len(raw)/3:]} {
			w := gzip.NewWriter(&buf)
			w.Write(part)
			if err := w.Close(); err != nil {
				tb.Fatal(err)
			}
		}
		return buf.Bytes()
	}},
	{"snappy-raw", batch.Snappy, func(_ testing.TB, raw []byte) []byte { return s2.EncodeSnappy(nil, raw) }},
	{"snappy-xerial", batch.Snappy, func(_ testing.TB, raw []byte) []byte { return xerial.Encode(nil, raw) }},
	{"lz4-default", batch.LZ4, func(tb testing.TB, raw []byte) []byte { return lz4Frame(tb, raw) }},
	{"lz4-64k-checksums-size", batch.LZ4, func(tb testing.TB, raw []byte) []byte {
		return lz4Frame(tb, raw, lz4.BlockSizeOption(lz4.Block64Kb), lz4.BlockChecksumOption(true),
			lz4.ChecksumOption(true), lz4.SizeOption(uint64(len(raw))))
	}},
	{"lz4-256k-no-checksum", batch.LZ4, func(tb testing.TB, raw []byte) []byte {
		return lz4Frame(tb, raw, lz4.BlockSizeOption(lz4.Block256Kb), lz4.ChecksumOption(false))
	}},
	{"zstd-franz", batch.Zstd, func(tb testing.TB, raw []byte) []byte {
		enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(64<<10), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
		if err != nil {
			tb.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(raw, nil)
	}},
	{"zstd-stream-no-fcs", batch.Zstd, func(tb testing.TB, raw []byte) []byte {
		var buf bytes.Buffer
		enc, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			tb.Fatal(err)
		}
		for i := 0; i < len(raw); i += 1000 {
			enc.Write(raw[i:min(i+1000, len(raw))])
		}
		if err := enc.Close(); err != nil {
			tb.Fatal(err)
		}
		return buf.Bytes()
	}},
	{"zstd-two-frames", batch.Zstd, func(tb testing.TB, raw []byte) []byte {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			tb.Fatal(err)
		}
		defer enc.Close()
		out := enc.EncodeAll(raw[:len(raw)/2], nil)
		return enc.EncodeAll(raw[len(raw)/2:], out)
	}},
}

func lz4Frame(tb testing.TB, raw []byte, opts ...lz4.Option) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(opts...); err != nil {
		tb.Fatal(err)
	}
	w.Write(raw)
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// refDecompress decompresses with the reference libraries (what franz-go
// and Sarama use to read), not with package batch.
func refDecompress(codec int16, data []byte) ([]byte, error) {
	switch batch.Codec(codec & 7) {
	case batch.NoCompression:
		return data, nil
	case batch.Gzip:
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case batch.Snappy:
		return xerial.Decode(data)
	case batch.LZ4:
		return io.ReadAll(lz4.NewReader(bytes.NewReader(data)))
	case batch.Zstd:
		d, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(data, nil)
	}
	return nil, fmt.Errorf("codec %d", codec)
}

// kmsgRecord encodes e as a kmsg.Record with the right Length.
func kmsgRecord(e fuzz.ExpectedRecord, i int) kmsg.Record {
	r := kmsg.Record{TimestampDelta64: int64(i * 3), OffsetDelta: int32(i), Key: e.Key, Value: e.Value}
	for _, h := range e.Headers {
		r.Headers = append(r.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
	}
	r.Length = int32(len(r.AppendTo(nil)) - 1) // Length 0 encodes in one byte
	return r
}

// kmsgBatch assembles a batch of recs with kmsg, compressing the records
// section with compress, and fills in the CRC.
func kmsgBatch(recs []fuzz.ExpectedRecord, codec batch.Codec, compress func([]byte) []byte) []byte {
	var raw []byte
	for i, e := range recs {
		r := kmsgRecord(e, i)
		raw = r.AppendTo(raw)
	}
	rb := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec),
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: 1700000000000,
		MaxTimestamp: 1700000000000 + int64(3*(len(recs)-1)), ProducerID: 99, ProducerEpoch: 1,
		FirstSequence: 5, NumRecords: int32(len(recs)), Records: compress(raw),
	}
	rb.Length = int32(batch.HeaderSize - 12 + len(rb.Records))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// kmsgDecode reads a batch with kmsg and the reference decompressors.
func kmsgDecode(tb testing.TB, b []byte) (kmsg.RecordBatch, []fuzz.ExpectedRecord) {
	tb.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		tb.Fatalf("kmsg.RecordBatch.ReadFrom: %v", err)
	}
	if want := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(rb.CRC) != want {
		tb.Fatalf("crc %08x, want %08x", uint32(rb.CRC), want)
	}
	raw, err := refDecompress(rb.Attributes, rb.Records)
	if err != nil {
		tb.Fatalf("reference decompress: %v", err)
	}
	var out []fuzz.ExpectedRecord
	for len(raw) > 0 {
		l, n := binary.Varint(raw)
		if n <= 0 || l < 0 || int(l) > len(raw)-n {
			tb.Fatalf("bad record length at record %d", len(out))
		}
		var r kmsg.Record
		if err := r.ReadFrom(raw[:n+int(l)]); err != nil {
			tb.Fatalf("kmsg.Record.ReadFrom: %v", err)
		}
		raw = raw[n+int(l):]
		e := fuzz.ExpectedRecord{Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			e.Headers = append(e.Headers, fuzz.Header{Key: h.Key, Value: h.Value})
		}
		out = append(out, e)
	}
	if len(out) != int(rb.NumRecords) {
		tb.Fatalf("%d records, NumRecords %d", len(out), rb.NumRecords)
	}
	return rb, out
}

// oracleRecords is GoClientRecords plus records that stress varint sizes.
func oracleRecords() []fuzz.ExpectedRecord {
	recs := fuzz.GoClientRecords()
	for _, n := range []int{50, 51, 58, 59, 60, 8180, 8185, 8190, 1 << 16} {
		recs = append(recs, fuzz.ExpectedRecord{Key: []byte("v"), Value: fuzz.Text(uint64(n), n)})
	}
	var hs []fuzz.Header
	for i := range 70 {
		hs = append(hs, fuzz.Header{Key: fmt.Sprint("h", i), Value: []byte{byte(i)}})
	}
	return append(recs, fuzz.ExpectedRecord{Key: nil, Value: nil, Headers: hs})
}

func TestKmsgBuiltBatchesDecode(t *testing.T) {
	recs := oracleRecords()
	for _, c := range compressors {
		t.Run(c.name, func(t *testing.T) {
			b := kmsgBatch(recs, c.codec, func(raw []byte) []byte { return c.fn(t, raw) })
			h, err := batch.Validate(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.Codec() != c.codec || h.ProducerID != 99 || h.BaseSequence != 5 || h.NumRecords != int32(len(recs)) {
				t.Fatalf("%+v", h)
			}
			compareRecords(t, c.name, decodeAll(t, [][]byte{b}), recs, false)
		})
	}
}

func TestBuilderDecodesWithKmsg(t *testing.T) {
	recs := oracleRecords()
	var bld batch.Builder
	var buf []byte
	for _, codec := range []batch.Codec{batch.NoCompression, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd} {
		for _, headersVia := range []string{"begin", "appendrecord"} {
			t.Run(codec.String()+"-"+headersVia, func(t *testing.T) {
				bld.Reset(buf[:0], 0, 1700000000000, codec)
				bld.SetProducer(99, 1, 5)
				for i, e := range recs {
					switch {
					case headersVia == "begin" && len(e.Headers) > 0:
						bld.BeginRecord(int32(i), int64(i*3), e.Key, e.Value)
						for _, h := range e.Headers {
							bld.AppendHeader([]byte(h.Key), h.Value)
						}
					case len(e.Headers) > 0:
						var raw []byte
						for _, h := range e.Headers {
							raw = batch.AppendRecordHeader(raw, []byte(h.Key), h.Value)
						}
						bld.AppendRecord(&batch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i * 3),
							Key: e.Key, Value: e.Value, Headers: batch.NewRecordHeaders(raw, len(e.Headers))})
					default:
						bld.Append(int32(i), int64(i*3), e.Key, e.Value)
					}
				}
				b := bld.Finish()
				buf = b
				rb, got := kmsgDecode(t, b)
				if rb.Attributes != int16(codec) || rb.NumRecords != int32(len(recs)) || rb.LastOffsetDelta != int32(len(recs)-1) ||
					rb.FirstTimestamp != 1700000000000 || rb.MaxTimestamp != 1700000000000+int64(3*(len(recs)-1)) ||
					rb.ProducerID != 99 || rb.ProducerEpoch != 1 || rb.FirstSequence != 5 || rb.PartitionLeaderEpoch != -1 ||
					rb.Magic != 2 || int(rb.Length) != len(b)-12 {
					t.Fatalf("header %+v", rb)
				}
				compareRecords(t, "kmsg", got, recs, false)
				// And our own decoder agrees.
				compareRecords(t, "batch", decodeAll(t, [][]byte{b}), recs, false)
			})
		}
	}
}

// TestBuilderVarintLengthChanges builds records whose length varint (and
// header-count varint) needs 1, 2 and 3 bytes through BeginRecord/EndRecord,
// which reserves 5 bytes and moves the record down, and through
// BeginRecordSized, which writes them up front, and checks the bytes equal
// the direct encoding.
func TestBuilderVarintLengthChanges(t *testing.T) {
	var direct, streamed, sized batch.Builder
	for _, n := range []int{0, 1, 50, 56, 57, 58, 63, 64, 100, 8000, 8185, 8186, 8191, 8192, 1 << 20} {
		for _, nh := range []int{0, 1, 63, 64, 65, 200} {
			value := bytes.Repeat([]byte{'v'}, n)
			var raw []byte
			for i := range nh {
				raw = batch.AppendRecordHeader(raw, []byte{byte('a' + i%26)}, nil)
			}
			direct.Reset(nil, 0, 5, batch.NoCompression)
			direct.AppendRecord(&batch.Record{OffsetDelta: 0, TimestampDelta: 1, Key: []byte("k"), Value: value,
				Headers: batch.NewRecordHeaders(raw, nh)})
			direct.Append(1, 2, nil, []byte("after"))
			want := direct.Finish()

			streamed.Reset(nil, 0, 5, batch.NoCompression)
			streamed.BeginRecord(0, 1, []byte("k"), value)
			for i := range nh {
				streamed.AppendHeader([]byte{byte('a' + i%26)}, nil)
			}
			streamed.Append(1, 2, nil, []byte("after")) // ends the open record
			got := streamed.Finish()
			if !bytes.Equal(got, want) {
				t.Fatalf("value %d headers %d: streamed record differs from direct encoding", n, nh)
			}
			hl := 0
			for i := range nh {
				hl += batch.RecordHeaderLen([]byte{byte('a' + i%26)}, nil)
			}
			sized.Reset(nil, 0, 5, batch.NoCompression)
			sized.BeginRecordSized(0, 1, []byte("k"), value, int32(nh), hl)
			for i := range nh {
				sized.AppendHeader([]byte{byte('a' + i%26)}, nil)
			}
			sized.Append(1, 2, nil, []byte("after"))
			if got := sized.Finish(); !bytes.Equal(got, want) {
				t.Fatalf("value %d headers %d: sized record differs from direct encoding", n, nh)
			}
			if _, err := batch.Validate(got); err != nil {
				t.Fatal(err)
			}
			_, recs := kmsgDecode(t, got)
			if len(recs) != 2 || len(recs[0].Value) != n || len(recs[0].Headers) != nh || string(recs[1].Value) != "after" {
				t.Fatalf("value %d headers %d: decoded %d records", n, nh, len(recs))
			}
		}
	}
}

func TestBuilderEdges(t *testing.T) {
	var b batch.Builder
	b.Reset([]byte("keep"), 0, 0, batch.Codec(6))
	if got := b.Finish(); string(got) != "keep" {
		t.Fatalf("empty batch: %q", got)
	}
	b.AppendHeader([]byte("k"), nil) // no open record: ignored
	b.EndRecord()                    // no open record: ignored
	b.Reset(nil, 10, 0, batch.Codec(6))
	b.BeginRecord(0, 0, nil, []byte("x"))
	out := b.Finish() // closes the open record
	h, err := batch.Validate(out)
	if err != nil || h.Codec() != batch.NoCompression || h.BaseOffset != 10 || b.Len() != 1 {
		t.Fatalf("%v %+v", err, h)
	}
	// Reset keeps the buffer reusable: a second batch into the same storage.
	b.Reset(out[:0], 0, 0, batch.Zstd)
	b.Append(0, 0, nil, bytes.Repeat([]byte("z"), 1000))
	out2 := b.Finish()
	if h, err := batch.Validate(out2); err != nil || h.Codec() != batch.Zstd || len(out2) > 200 {
		t.Fatalf("%v %+v %d", err, h, len(out2))
	}
}

func TestBuilderSnappyIsXerial(t *testing.T) {
	var b batch.Builder
	b.Reset(nil, 0, 0, batch.Snappy)
	for i := range 100 {
		b.Append(int32(i), 0, nil, fuzz.Text(uint64(i), 1000)) // > 32 KiB: several xerial chunks
	}
	out := b.Finish()
	if !bytes.HasPrefix(out[batch.HeaderSize:], []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")) {
		t.Fatalf("not xerial: % x", out[batch.HeaderSize:batch.HeaderSize+16])
	}
	b.Reset(nil, 0, 0, batch.LZ4)
	b.Append(0, 0, nil, []byte("x"))
	out = b.Finish()
	if flg, bd := out[batch.HeaderSize+4], out[batch.HeaderSize+5]; flg>>6 != 1 || flg&0x20 == 0 || bd != 0x40 {
		t.Fatalf("lz4 FLG %02x BD %02x: want version 01, independent blocks, 64 KiB", flg, bd)
	}
}

// TestBuilderGrow: with Grow set, the caller's buffer grows only through it,
// and the batch is byte for byte the one append's growth builds.
func TestBuilderGrow(t *testing.T) {
	build := func(b *batch.Builder) []byte {
		b.Reset(make([]byte, 3, 3+batch.HeaderSize), 7, 100, batch.NoCompression)
		for i := range 200 {
			v := bytes.Repeat([]byte{byte('a' + i%26)}, i*37)
			if i%3 == 0 {
				b.Append(int32(i), int64(i), []byte("key"), v)
				continue
			}
			b.BeginRecord(int32(i), int64(i), nil, v)
			for h := range i % 5 {
				b.AppendHeader([]byte{byte('h' + h)}, v[:min(len(v), h*100)])
			}
		}
		return b.Finish()
	}
	var plain, grown batch.Builder
	want := build(&plain)
	calls := 0
	grown.Grow = func(buf []byte, n int) []byte {
		calls++
		if n <= cap(buf)-len(buf) {
			t.Fatalf("Grow called with room for %d already", n)
		}
		return append(make([]byte, 0, len(buf)+n), buf...) // exactly enough
	}
	got := build(&grown)
	if !bytes.Equal(got, want) {
		t.Fatal("batch built through Grow differs")
	}
	if calls < 100 {
		t.Fatalf("Grow called %d times; exact-size growth needs one per record", calls)
	}
	if _, err := batch.Validate(got[3:]); err != nil {
		t.Fatal(err)
	}
}
