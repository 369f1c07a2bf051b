package batch

import (
	"bytes"
	"encoding/binary"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
)

// unsnappy decodes Kafka's two snappy variants (docs/design/kafka-protocol.md §5): the
// xerial/snappy-java framing (Java, Sarama, kafka-go), recognized by its
// 8-byte magic, and otherwise one raw snappy block (librdkafka, franz-go).
// Both state their decoded size before any output is produced, so the budget
// is checked first and the buffer sized exactly.
func (d *Decoder) unsnappy(src []byte, limit int) ([]byte, error) {
	if len(src) >= 8 && bytes.Equal(src[:8], xerialPrefix[:8]) {
		return d.unxerial(src, limit)
	}
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, ErrDecompress
	}
	if n > limit {
		return nil, ErrBudget
	}
	out := d.grow(d.out[:0], n, limit)
	dec, err := s2.Decode(out[:n], src)
	if err != nil || len(dec) != n {
		return nil, ErrDecompress
	}
	return dec, nil
}

// unxerial decodes xerial framing: the 16-byte prefix (magic, version,
// compatible version), then chunks of a big-endian int32 length and a raw
// snappy block. It sums the chunks' decoded sizes first, then decodes into a
// buffer of exactly that size with xerial.DecodeCapped.
func (d *Decoder) unxerial(src []byte, limit int) ([]byte, error) {
	const prefix = 16
	if len(src) < prefix {
		return nil, ErrDecompress
	}
	total := 0
	for pos := prefix; pos < len(src); {
		if len(src)-pos < 4 {
			return nil, ErrDecompress
		}
		size := int(binary.BigEndian.Uint32(src[pos:]))
		pos += 4
		if size > len(src)-pos {
			return nil, ErrDecompress
		}
		n, err := s2.DecodedLen(src[pos : pos+size])
		if err != nil {
			return nil, ErrDecompress
		}
		if n > limit-total {
			return nil, ErrBudget
		}
		total += n
		pos += size
	}
	if total == 0 {
		return d.out[:0], nil
	}
	out := d.grow(d.out[:0], total, limit)
	dec, err := xerial.DecodeCapped(out[:0:total], src)
	if err != nil || len(dec) != total {
		return nil, ErrDecompress
	}
	return dec, nil
}
