package batch

import (
	"encoding/binary"

	"github.com/pierrec/lz4/v4"
)

// LZ4 frame format constants (lz4 Frame format spec; docs/design/kafka-protocol.md §5).
const (
	lz4FrameMagic     = 0x184D2204
	lz4SkippableMagic = 0x184D2A50 // low nibble is free
	lz4SkippableMask  = 0xFFFFFFF0
	lz4Uncompressed   = 0x80000000 // block size high bit: stored block
	lz4MaxOffset      = 64 << 10   // dependent blocks see 64 KiB of history
)

// unlz4 decodes a sequence of LZ4 frames. The frame structure is parsed here
// and each block is decoded straight into the output buffer, which keeps the
// budget exact and avoids a per-block buffer. Like Java's
// KafkaLZ4BlockInputStream it requires FLG version 01, rejects preset
// dictionaries and blocks larger than the declared maximum, and skips (does
// not verify) content sizes and checksums; unlike Java it also skips the
// header checksum and block checksums: the batch CRC-32C already covers every
// byte. Dependent blocks (which Java refuses) are decoded with the previous
// 64 KiB as dictionary.
func (d *Decoder) unlz4(src []byte, limit int) ([]byte, error) {
	out := d.out[:0]
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, ErrDecompress
		}
		magic := binary.LittleEndian.Uint32(src)
		if magic&lz4SkippableMask == lz4SkippableMagic {
			if len(src) < 8 {
				return nil, ErrDecompress
			}
			n := binary.LittleEndian.Uint32(src[4:])
			if uint64(n) > uint64(len(src)-8) {
				return nil, ErrDecompress
			}
			src = src[8+int(n):]
			continue
		}
		if magic != lz4FrameMagic || len(src) < 7 {
			return nil, ErrDecompress
		}
		flg, bd := src[4], src[5]
		// FLG: version (bits 7-6) must be 01, bit 1 reserved; BD: only bits
		// 6-4 (block maximum size, 4..7) may be set.
		if flg>>6 != 1 || flg&0x02 != 0 || bd&0x8F != 0 || bd>>4 < 4 {
			return nil, ErrDecompress
		}
		if flg&0x01 != 0 { // preset dictionary
			return nil, ErrDecompress
		}
		independent := flg&0x20 != 0
		blockChecksum := flg&0x10 != 0
		contentChecksum := flg&0x04 != 0
		blockMax := 1 << (8 + 2*int(bd>>4)) // 64 KiB, 256 KiB, 1 MiB, 4 MiB
		desc := 4 + 2 + 1                   // magic, FLG, BD, HC
		if flg&0x08 != 0 {                  // content size
			desc += 8
		}
		if len(src) < desc {
			return nil, ErrDecompress
		}
		src = src[desc:]
		frameStart := len(out)
		for {
			if len(src) < 4 {
				return nil, ErrDecompress
			}
			bs := binary.LittleEndian.Uint32(src)
			src = src[4:]
			if bs == 0 { // EndMark
				break
			}
			size := int(bs &^ lz4Uncompressed)
			if size > blockMax || size > len(src) {
				return nil, ErrDecompress
			}
			block := src[:size]
			src = src[size:]
			if blockChecksum {
				if len(src) < 4 {
					return nil, ErrDecompress
				}
				src = src[4:]
			}
			if bs&lz4Uncompressed != 0 {
				if size > limit-len(out) {
					d.out = out[:0]
					return nil, ErrBudget
				}
				out = d.grow(out, size, limit)
				out = append(out, block...)
				continue
			}
			var dict []byte
			if !independent {
				dict = out[max(frameStart, len(out)-lz4MaxOffset):]
			}
			var err error
			out, err = d.lz4Block(out, block, dict, blockMax, limit)
			if err != nil {
				d.out = out[:0]
				return nil, err
			}
		}
		if contentChecksum {
			if len(src) < 4 {
				return nil, ErrDecompress
			}
			src = src[4:]
		}
	}
	d.out = out[:0]
	return out, nil
}

// lz4Block decodes one compressed block and appends it to out. It first
// decodes into the spare capacity; only if that fails does it compute the
// block's exact size, to tell a budget overrun from corruption and to grow
// the buffer.
func (d *Decoder) lz4Block(out, block, dict []byte, blockMax, limit int) ([]byte, error) {
	room := min(cap(out)-len(out), blockMax, limit-len(out))
	if room > 0 {
		if n, err := uncompressLZ4(block, out[len(out):len(out)+room], dict); err == nil {
			return out[:len(out)+n], nil
		}
	}
	n := lz4BlockLen(block, len(dict))
	switch {
	case n == 0:
		return out, nil // a block of literals-length 0 only: nothing to add
	case n < 0 || n > blockMax || n <= room:
		return out, ErrDecompress
	case n > limit-len(out):
		return out, ErrBudget
	}
	out = d.grow(out, n, limit)
	m, err := uncompressLZ4(block, out[len(out):len(out)+n], dict)
	if err != nil || m != n {
		return out, ErrDecompress
	}
	return out[:len(out)+n], nil
}

func uncompressLZ4(block, dst, dict []byte) (int, error) {
	if dict == nil {
		return lz4.UncompressBlock(block, dst)
	}
	return lz4.UncompressBlockWithDict(block, dst, dict)
}

// lz4BlockLen returns the decoded size of an LZ4 block by walking its
// sequences without copying, or -1 if the block is malformed (a length or
// offset running past the input, a zero offset, or an offset reaching before
// the dictionary).
func lz4BlockLen(b []byte, dictLen int) int {
	n, i := 0, 0
	for i < len(b) {
		token := b[i]
		i++
		lit := int(token >> 4)
		if lit == 15 {
			for {
				if i >= len(b) {
					return -1
				}
				c := b[i]
				i++
				lit += int(c)
				if c != 255 {
					break
				}
			}
		}
		if lit > len(b)-i {
			return -1
		}
		i += lit
		n += lit
		if i == len(b) { // the last sequence has literals only
			return n
		}
		if len(b)-i < 2 {
			return -1
		}
		off := int(binary.LittleEndian.Uint16(b[i:]))
		i += 2
		if off == 0 || off > n+dictLen {
			return -1
		}
		match := int(token & 15)
		if match == 15 {
			for {
				if i >= len(b) {
					return -1
				}
				c := b[i]
				i++
				match += int(c)
				if c != 255 {
					break
				}
			}
		}
		n += match + 4
	}
	if len(b) == 0 {
		return -1
	}
	return n
}
