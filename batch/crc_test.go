package batch_test

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/kiggy-io/kiggy/batch"
)

// TestChecksumMatchesCRC32C checks the chunked CRC against hash/crc32 at
// every length around the chunk boundaries and at unaligned starts.
func TestChecksumMatchesCRC32C(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 64<<10+200)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	lengths := []int{0, 1, 63, 64, 65, 4095, 4096, 4097, 8191, 8192, 8193, 12288, 12289, 64 << 10}
	for _, start := range []int{0, 1, 7, 21, 63} {
		for _, n := range lengths {
			p := buf[start : start+n]
			if got, want := batch.Checksum(p), crc32.Checksum(p, castagnoliTable); got != want {
				t.Fatalf("start %d len %d: checksum %08x, crc32 %08x", start, n, got, want)
			}
		}
	}
	for range 200 {
		start, n := r.IntN(100), r.IntN(len(buf)-100)
		p := buf[start : start+n]
		if got, want := batch.Checksum(p), crc32.Checksum(p, castagnoliTable); got != want {
			t.Fatalf("start %d len %d: checksum %08x, crc32 %08x", start, n, got, want)
		}
	}
}

// BenchmarkChecksumCold measures the batch CRC over 1 MiB batches that are
// not in cache (a 64 MiB ring, larger than this machine's caches per core),
// as a Produce request of many partitions leaves them, against
// hash/crc32 alone over the same bytes; "hot" runs over one cached batch.
func BenchmarkChecksumCold(b *testing.B) {
	ring := make([]byte, 64<<20)
	for i := range ring {
		ring[i] = byte(i * 31)
	}
	const batchSize = 1 << 20
	slots := len(ring) / batchSize
	for _, c := range []struct {
		name string
		fn   func([]byte) uint32
	}{
		{"chunked", batch.Checksum},
		{"crc32", func(p []byte) uint32 { return crc32.Checksum(p, castagnoliTable) }},
	} {
		b.Run("cold/"+c.name, func(b *testing.B) {
			b.SetBytes(batchSize)
			for i := range b.N {
				o := (i % slots) * batchSize
				c.fn(ring[o : o+batchSize])
			}
		})
		b.Run("hot/"+c.name, func(b *testing.B) {
			b.SetBytes(batchSize)
			for range b.N {
				c.fn(ring[:batchSize])
			}
		})
	}
}
