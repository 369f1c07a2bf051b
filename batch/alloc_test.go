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
