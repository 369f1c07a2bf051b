//go:build !race

package batch_test

import (
	"testing"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/fuzz"
)

// Zero allocations is a failing test (docs/design/style.md habit 7).

func TestAllocsValidateIterate(t *testing.T) {
	for _, name := range []string{"franz-go-none", "sarama-none", "kcat-none", "java-none"} {
		b := captureBatch(t, name)
		var sink int
		allocs := testing.AllocsPerRun(100, func() {
			h, err := batch.Validate(b)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := batch.RecordsOf(b, h)
			if err != nil {
				t.Fatal(err)
			}
			var r batch.Record
			for recs.Next(&r) {
				sink += len(r.Key) + len(r.Value)
				for k, v, ok := r.Headers.Next(); ok; k, v, ok = r.Headers.Next() {
					sink += len(k) + len(v)
				}
			}
			if recs.Err() != nil {
				t.Fatal(recs.Err())
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs per validate+iterate", name, allocs)
		}
	}
}

func TestAllocsDecoderSteadyState(t *testing.T) {
	d := batch.AcquireDecoder()
	defer batch.ReleaseDecoder(d)
	for _, name := range []string{
		"franz-go-none", "franz-go-gzip", "franz-go-snappy", "franz-go-lz4", "franz-go-zstd",
		"sarama-snappy", "sarama-lz4", "sarama-zstd", "kcat-gzip", "kcat-snappy", "kcat-lz4", "kcat-zstd",
		"java-gzip", "java-snappy", "java-lz4", "java-zstd",
	} {
		b := captureBatch(t, name)
		h, err := batch.Validate(b)
		if err != nil {
			t.Fatal(err)
		}
		run := func() {
			budget := batch.Budget{MaxBytes: 1 << 20, MaxRecords: 1000}
			recs, err := d.Records(b, h, &budget)
			if err != nil {
				t.Fatal(err)
			}
			var r batch.Record
			for recs.Next(&r) {
			}
			if recs.Err() != nil {
				t.Fatal(recs.Err())
			}
		}
		run() // warm up: grow the buffer, create the codec state
		if allocs := testing.AllocsPerRun(50, run); allocs != 0 {
			t.Errorf("%s: %v allocs per decompress+iterate", name, allocs)
		}
	}
}

func TestAllocsBuilder(t *testing.T) {
	var bld batch.Builder
	buf := make([]byte, 0, 64<<10)
	key, value := []byte("key"), fuzz.Text(1, 500)
	raw := batch.AppendRecordHeader(nil, []byte("h"), []byte("v"))
	hdrs := batch.NewRecordHeaders(raw, 1)
	allocs := testing.AllocsPerRun(100, func() {
		bld.Reset(buf[:0], 100, 1700000000000, batch.NoCompression)
		bld.SetProducer(1, 0, 0)
		for i := range 20 {
			bld.Append(int32(3*i), int64(i), key, value)
			bld.AppendRecord(&batch.Record{OffsetDelta: int32(3*i + 1), Key: key, Value: value, Headers: hdrs})
			bld.BeginRecord(int32(3*i+2), int64(i), key, value)
			bld.AppendHeader([]byte("h"), []byte("v"))
			bld.AppendHeader([]byte("h2"), nil)
		}
		buf = bld.Finish()
	})
	if allocs != 0 {
		t.Errorf("%v allocs per uncompressed build", allocs)
	}
	if _, err := batch.Validate(buf); err != nil {
		t.Fatal(err)
	}
}

func captureBatch(tb testing.TB, name string) []byte {
	tb.Helper()
	caps, err := fuzz.LoadCaptures(fuzz.CapturesDir())
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range caps {
		if c.Name == name {
			return c.Batches[0]
		}
	}
	tb.Fatalf("no capture %s", name)
	return nil
}

// TestAllocsBuilderCompressed: once its compressors and scratch exist, a
// Builder compresses a batch into a buffer with room for it without
// allocating, for every codec; the batch decodes back to its records.
func TestAllocsBuilderCompressed(t *testing.T) {
	key, value := []byte("key"), fuzz.Text(1, 500)
	for _, codec := range []batch.Codec{batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd} {
		var bld batch.Builder
		buf := make([]byte, 0, 256<<10)
		grows := 0
		bld.Grow = func(b []byte, n int) []byte { grows++; return append(b[:len(b):len(b)], make([]byte, n)...)[:len(b)] }
		run := func() {
			bld.Reset(buf[:0], 100, 1700000000000, codec)
			for i := range 200 {
				bld.BeginRecord(int32(i), int64(i), key, value)
				bld.AppendHeader([]byte("h"), []byte("v"))
			}
			buf = bld.Finish()
		}
		run()
		if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
			t.Errorf("%s: %v allocs per compressed build", codec, allocs)
		}
		if grows != 0 {
			t.Errorf("%s: Grow called %d times with room for the batch", codec, grows)
		}
		h, err := batch.Validate(buf)
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		if h.Codec() != codec || h.NumRecords != 200 {
			t.Fatalf("%s: batch has codec %s, %d records", codec, h.Codec(), h.NumRecords)
		}
		if len(buf) >= 200*len(value) {
			t.Errorf("%s: %d bytes for %d bytes of values: not compressed", codec, len(buf), 200*len(value))
		}
	}
}

// TestBuilderCompressedGrow: with too little room, Finish asks Grow once for
// the compressed stream's worst case, and the result is a valid batch.
func TestBuilderCompressedGrow(t *testing.T) {
	value := fuzz.Text(2, 4000)
	for _, codec := range []batch.Codec{batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd} {
		var bld batch.Builder
		grows := 0
		bld.Grow = func(b []byte, n int) []byte { grows++; return append(b[:len(b):len(b)], make([]byte, n)...)[:len(b)] }
		bld.Reset(make([]byte, 3, 100), 0, 0, codec)
		for i := range 50 {
			bld.Append(int32(i), 0, nil, value)
		}
		out := bld.Finish()
		if grows != 1 {
			t.Errorf("%s: Grow called %d times, want 1", codec, grows)
		}
		if _, err := batch.Validate(out[3:]); err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
	}
}
