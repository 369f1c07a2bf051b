package batch_test

import (
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/fuzz"
)

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// benchBatch builds an uncompressed-size total of about batchSize bytes of
// records of recSize-byte values (16-byte keys, one header).
func benchBatch(codec batch.Codec, recSize, batchSize int) []byte {
	var bld batch.Builder
	bld.Reset(nil, 0, 1700000000000, codec)
	bld.SetProducer(1, 0, 0)
	value := fuzz.Text(1, recSize)
	for i := 0; (i+1)*(recSize+40) <= batchSize || i == 0; i++ {
		bld.BeginRecord(int32(i), int64(i), fmt.Appendf(nil, "key-%012d", i), value)
		bld.AppendHeader([]byte("trace"), []byte("abcdef"))
	}
	return bld.Finish()
}

var benchShapes = []struct {
	name              string
	recSize, batchLen int
}{
	{"rec=100B/batch=16KiB", 100, 16 << 10},
	{"rec=1KiB/batch=16KiB", 1 << 10, 16 << 10},
	{"rec=16KiB/batch=16KiB", 16 << 10, 16 << 10},
	{"rec=100B/batch=1MiB", 100, 1 << 20},
	{"rec=1KiB/batch=1MiB", 1 << 10, 1 << 20},
	{"rec=16KiB/batch=1MiB", 16 << 10, 1 << 20},
}

// BenchmarkValidateIterate measures Validate plus a full iteration (keys,
// values and headers touched) of an uncompressed batch; each shape has a
// CRC-32C-only pass over the same bytes beside it. The goal is
// validate+iterate <= 2x crc.
func BenchmarkValidateIterate(b *testing.B) {
	for _, s := range benchShapes {
		bt := benchBatch(batch.NoCompression, s.recSize, s.batchLen)
		b.Run(s.name+"/validate+iterate", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bt)))
			var sink int
			for b.Loop() {
				h, err := batch.Validate(bt)
				if err != nil {
					b.Fatal(err)
				}
				recs, _ := batch.RecordsOf(bt, h)
				var r batch.Record
				for recs.Next(&r) {
					sink += len(r.Key) + len(r.Value)
					for k, v, ok := r.Headers.Next(); ok; k, v, ok = r.Headers.Next() {
						sink += len(k) + len(v)
					}
				}
				if recs.Err() != nil {
					b.Fatal(recs.Err())
				}
			}
			_ = sink
		})
		b.Run(s.name+"/crc", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bt)))
			var sink uint32
			for b.Loop() {
				sink += crc32.Checksum(bt[21:], castagnoliTable)
			}
			_ = sink
		})
	}
}

// BenchmarkDecompress measures Decoder.Records plus iteration with a reused
// Decoder; bytes are the uncompressed records.
func BenchmarkDecompress(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20} {
		for _, codec := range allCodecs[1:] {
			bt := benchBatch(codec, 1<<10, size)
			raw := benchBatch(batch.NoCompression, 1<<10, size)
			h, err := batch.Validate(bt)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/batch=%dKiB", codec, size>>10), func(b *testing.B) {
				d := batch.AcquireDecoder()
				defer batch.ReleaseDecoder(d)
				b.ReportAllocs()
				b.SetBytes(int64(len(raw) - batch.HeaderSize))
				for b.Loop() {
					recs, err := d.Records(bt, h, nil)
					if err != nil {
						b.Fatal(err)
					}
					var r batch.Record
					for recs.Next(&r) {
					}
					if recs.Err() != nil {
						b.Fatal(recs.Err())
					}
				}
				b.ReportMetric(float64(len(bt))/float64(len(raw)), "ratio")
			})
		}
	}
}

// BenchmarkBuild measures building a batch of 1 KiB records into a reused
// buffer.
func BenchmarkBuild(b *testing.B) {
	key := []byte("key-000000000000")
	value := fuzz.Text(1, 1<<10)
	for _, codec := range allCodecs {
		for _, size := range []int{16 << 10, 1 << 20} {
			n := size / (1<<10 + 40)
			b.Run(fmt.Sprintf("%s/batch=%dKiB", codec, size>>10), func(b *testing.B) {
				var bld batch.Builder
				buf := make([]byte, 0, size+size/8)
				b.ReportAllocs()
				b.SetBytes(int64(n * (len(value) + len(key))))
				for b.Loop() {
					bld.Reset(buf[:0], 0, 1700000000000, codec)
					for i := range n {
						bld.BeginRecord(int32(i), int64(i), key, value)
						bld.AppendHeader([]byte("trace"), []byte("abcdef"))
					}
					buf = bld.Finish()
				}
			})
			b.Run(fmt.Sprintf("%s/batch=%dKiB/sized", codec, size>>10), func(b *testing.B) {
				var bld batch.Builder
				buf := make([]byte, 0, size+size/8)
				hk, hv := []byte("trace"), []byte("abcdef")
				b.ReportAllocs()
				b.SetBytes(int64(n * (len(value) + len(key))))
				for b.Loop() {
					bld.Reset(buf[:0], 0, 1700000000000, codec)
					for i := range n {
						bld.BeginRecordSized(int32(i), int64(i), key, value, 1, batch.RecordHeaderLen(hk, hv))
						bld.AppendHeader(hk, hv)
					}
					buf = bld.Finish()
				}
			})
		}
	}
}
