package iggytest

import (
	"encoding/binary"
	"math/bits"
)

// XXH32 primes.
const (
	p32_1 uint32 = 2654435761
	p32_2 uint32 = 2246822519
	p32_3 uint32 = 3266489917
	p32_4 uint32 = 668265263
	p32_5 uint32 = 374761393
)

func xxh32Round(acc, input uint32) uint32 {
	acc += input * p32_2
	acc = bits.RotateLeft32(acc, 13)
	return acc * p32_1
}

// xxh32 is XXH32 with seed 0, which Iggy uses to hash named single consumers
// into offset keys and messages keys into partitions (§2.4, §2.5, TV15).
func xxh32(b []byte) uint32 {
	n := len(b)
	var h uint32
	if n >= 16 {
		v1 := p32_1
		v1 += p32_2
		v2 := p32_2
		v3 := uint32(0)
		v4 := uint32(0)
		v4 -= p32_1
		for len(b) >= 16 {
			v1 = xxh32Round(v1, binary.LittleEndian.Uint32(b[0:]))
			v2 = xxh32Round(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = xxh32Round(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = xxh32Round(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = p32_5
	}
	h += uint32(n)
	for len(b) >= 4 {
		h += binary.LittleEndian.Uint32(b) * p32_3
		h = bits.RotateLeft32(h, 17) * p32_4
		b = b[4:]
	}
	for _, c := range b {
		h += uint32(c) * p32_5
		h = bits.RotateLeft32(h, 11) * p32_1
	}
	h ^= h >> 15
	h *= p32_2
	h ^= h >> 13
	h *= p32_3
	h ^= h >> 16
	return h
}
