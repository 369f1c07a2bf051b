package iggytest

import (
	"encoding/binary"
	"math/bits"
)

// XXH32 primes (PRIME32_1 … PRIME32_5 of the XXH32 specification).
const (
	prime1 uint32 = 2654435761
	prime2 uint32 = 2246822519
	prime3 uint32 = 3266489917
	prime4 uint32 = 668265263
	prime5 uint32 = 374761393
)

func xxh32Round(acc, input uint32) uint32 {
	acc += input * prime2
	acc = bits.RotateLeft32(acc, 13)
	return acc * prime1
}

// xxh32 is XXH32 with seed 0, which Iggy uses to hash named single consumers
// into offset keys and messages keys into partitions (§2.4, §2.5, TV15).
func xxh32(b []byte) uint32 {
	n := len(b)
	var h uint32
	if n >= 16 {
		v1 := prime1
		v1 += prime2
		v2 := prime2
		v3 := uint32(0)
		v4 := uint32(0)
		v4 -= prime1
		for len(b) >= 16 {
			v1 = xxh32Round(v1, binary.LittleEndian.Uint32(b[0:]))
			v2 = xxh32Round(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = xxh32Round(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = xxh32Round(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = prime5
	}
	h += uint32(n)
	for len(b) >= 4 {
		h += binary.LittleEndian.Uint32(b) * prime3
		h = bits.RotateLeft32(h, 17) * prime4
		b = b[4:]
	}
	for _, c := range b {
		h += uint32(c) * prime5
		h = bits.RotateLeft32(h, 11) * prime1
	}
	h ^= h >> 15
	h *= prime2
	h ^= h >> 13
	h *= prime3
	h ^= h >> 16
	return h
}
