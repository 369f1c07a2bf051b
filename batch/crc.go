package batch

import "hash/crc32"

// crcChunk is how many bytes checksum brings into cache before it runs the
// CRC over them (docs/BENCHMARKS.md, "The CRC of a Produce batch").
const crcChunk = 4 << 10

// checksum is the batch CRC-32C ("CRC-32C (Castagnoli) over bytes from
// offset 21 (attributes) to the end of the batch",
// docs/design/kafka-protocol.md §4.6) of p, the same value as
// crc32.Checksum(p, castagnoli), computed so that it is not bound by memory.
//
// A Produce batch is checked once, right after the engine read it, and a
// request of many partitions is larger than the core's cache; a Fetch batch
// the Builder just wrote is about as large as the core's L2. The CRC
// instruction loop over bytes that are not in cache runs at a fraction of
// its speed over cached ones; a loop that only loads one byte per cache
// line keeps many misses in flight at once, as a copy does, and running it
// over each 4 KiB chunk just before the CRC runs over that chunk restores
// most of it (BenchmarkChecksumCold measures both).
func checksum(p []byte) uint32 {
	if len(p) < 2*crcChunk {
		return crc32.Checksum(p, castagnoli)
	}
	var c uint32
	for len(p) > 0 {
		n := min(len(p), crcChunk)
		touchLines(p[:n])
		c = crc32.Update(c, castagnoli, p[:n])
		p = p[n:]
	}
	return c
}

// touchLines loads one byte of every 64-byte cache line of p and returns
// their sum. It is not inlined, so its loads are not removed as unused.
//
//go:noinline
func touchLines(p []byte) byte {
	var s byte
	for i := 0; i < len(p); i += 64 {
		s += p[i]
	}
	return s
}
