//go:build linux

package hostile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/varint"
)

// formatter encodes request frames (size, header v1/v2, body) with kmsg.
var formatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile"))

// frameOf returns req as a complete request frame.
func frameOf(req kmsg.Request, corr int32) []byte {
	return formatter.AppendRequest(nil, req, corr)
}

// kconn is a raw Kafka connection (internal/testing/kafkawire): hand-built frames
// out, frames in.
type kconn struct{ *kafkawire.Conn }

// dialTimeout bounds the suite's TCP connects. It is generous: a clean-clone
// CI run on a machine loaded well past its two cores saw a loopback connect
// of the truncated-frames storm take over 5 s; the suite tests kiggy's
// behaviour, not the host's scheduling.
const dialTimeout = 30 * time.Second

// dial connects to addr or fails the test.
func dial(t testing.TB, addr string) *kconn {
	t.Helper()
	c, err := kafkawire.Dial(addr, "hostile", dialTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &kconn{c}
}

// produceReq is a Produce request (acks=all) of one topic, partitions in
// the order given, each with its records field.
func produceReq(version int16, topic string, parts ...partData) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p.index
		rp.Records = p.records
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// partData is one partition entry of a Produce request.
type partData struct {
	index   int32
	records []byte
}

// produceCodes sends req on k and returns each partition's error code, in
// request order.
func (k *kconn) produceCodes(t testing.TB, req *kmsg.ProduceRequest) []int16 {
	t.Helper()
	r, err := k.RoundTrip(req)
	if err != nil {
		t.Fatalf("Produce v%d: %v", req.Version, err)
	}
	resp := r.(*kmsg.ProduceResponse)
	var codes []int16
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

// plainBatch builds a valid uncompressed (or compressed) batch of n small
// records with batch.Builder.
func plainBatch(n int, codec batch.Codec) []byte {
	var b batch.Builder
	b.Reset(nil, 0, time.Now().UnixMilli(), codec)
	for i := range n {
		b.Append(int32(i), 0, []byte(fmt.Sprintf("k%d", i)), bytes.Repeat([]byte{'v'}, 50))
	}
	return b.Finish()
}

// Offsets of RecordBatch v2 header fields (docs/design/kafka-protocol.md §4.1).
const (
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offRecordsCount    = 57
	batchHeaderSize    = 61
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// reseal recomputes the batch CRC-32C over attributes..end.
func reseal(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// lieCount rewrites a batch's recordsCount and lastOffsetDelta and reseals
// it, so only the record iteration can notice the lie.
func lieCount(b []byte, count, lastOffsetDelta int32) []byte {
	b = bytes.Clone(b)
	binary.BigEndian.PutUint32(b[offRecordsCount:], uint32(count))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(lastOffsetDelta))
	return reseal(b)
}

// rawBatch wraps an already compressed records section in a valid batch
// header claiming count records.
func rawBatch(section []byte, count int32, codec batch.Codec) []byte {
	now := time.Now().UnixMilli()
	b := make([]byte, 0, batchHeaderSize+len(section))
	b = binary.BigEndian.AppendUint64(b, 0)                       // baseOffset
	b = binary.BigEndian.AppendUint32(b, uint32(49+len(section))) // batchLength
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)              // partitionLeaderEpoch
	b = append(b, 2)                                              // magic
	b = binary.BigEndian.AppendUint32(b, 0)                       // crc, below
	b = binary.BigEndian.AppendUint16(b, uint16(codec))           // attributes
	b = binary.BigEndian.AppendUint32(b, uint32(count-1))         // lastOffsetDelta
	b = binary.BigEndian.AppendUint64(b, uint64(now))             // baseTimestamp
	b = binary.BigEndian.AppendUint64(b, uint64(now))             // maxTimestamp
	b = binary.BigEndian.AppendUint64(b, 0xffffffffffffffff)      // producerId
	b = binary.BigEndian.AppendUint16(b, 0xffff)                  // producerEpoch
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)              // baseSequence
	b = binary.BigEndian.AppendUint32(b, uint32(count))           // recordsCount
	b = append(b, section...)
	return reseal(b)
}

// bomb is a compressed records section that inflates to (or declares) far
// more than the decode budget.
type bomb struct {
	name  string
	codec batch.Codec
	// inflates is what the section decompresses to or claims.
	inflates int64
	section  []byte
}

// batch returns the bomb in a valid batch claiming 1000 records.
func (b bomb) batch() []byte { return rawBatch(b.section, 1000, b.codec) }

// makeBombs builds one or more bombs per codec, each inflating to or
// declaring 1 GiB. No codec reaches 1 GiB from 1 KiB of honest data (DEFLATE
// tops out near 1032:1, LZ4 near 255:1, snappy near 21:1, zstd needs four
// bytes per 128 KiB RLE block), so each codec gets its most compact honest
// stream and, where the format has one, a size claim in under 1 KiB.
func makeBombs(t testing.TB) []bomb {
	t.Helper()
	const gib = 1 << 30
	var bombs []bomb

	// gzip: members of 16 MiB of zeros at best compression (~16 KiB each),
	// repeated to 1 GiB: a multi-member stream of about 1 MiB.
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(make([]byte, 16<<20))
	zw.Close()
	bombs = append(bombs, bomb{"gzip", batch.Gzip, gib, bytes.Repeat(member.Bytes(), gib/(16<<20))})

	// snappy, raw block: a length varint claiming 1 GiB, then 600 bytes.
	raw := varint.AppendUvarint(nil, gib)
	raw = append(raw, make([]byte, 600)...)
	bombs = append(bombs, bomb{"snappy-raw-claim", batch.Snappy, gib, raw})

	// snappy, xerial framing: one honest 32 KiB chunk, then a chunk whose
	// block claims the rest of 1 GiB.
	x := []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
	chunk := s2.EncodeSnappy(nil, make([]byte, 32<<10))
	x = binary.BigEndian.AppendUint32(x, uint32(len(chunk)))
	x = append(x, chunk...)
	claim := varint.AppendUvarint(nil, gib-(32<<10))
	claim = append(claim, 0)
	x = binary.BigEndian.AppendUint32(x, uint32(len(claim)))
	x = append(x, claim...)
	bombs = append(bombs, bomb{"snappy-xerial-claim", batch.Snappy, gib, x})

	// snappy, xerial framing, honest: 96 MiB of zeros in 1 MiB chunks
	// (snappy's ratio makes an honest 1 GiB stream 48 MiB on the wire).
	xh := []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
	mib := s2.EncodeSnappy(nil, make([]byte, 1<<20))
	for range 96 {
		xh = binary.BigEndian.AppendUint32(xh, uint32(len(mib)))
		xh = append(xh, mib...)
	}
	bombs = append(bombs, bomb{"snappy-xerial-96MiB", batch.Snappy, 96 << 20, xh})

	// lz4: the frame pierrec/lz4 writes for one 4 MiB block of zeros, its
	// block repeated 256 times (about 4 MiB for 1 GiB).
	bombs = append(bombs, bomb{"lz4", batch.LZ4, gib, lz4Bomb(t, gib)})

	// zstd: a frame of 8192 RLE blocks of 128 KiB (32 KiB for 1 GiB).
	z := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38} // no content size, 128 KiB window
	for i := range gib / (128 << 10) {
		hdr := uint32(1<<1) | uint32(128<<10)<<3 // RLE block of 128 KiB
		if i == gib/(128<<10)-1 {
			hdr |= 1 // last block
		}
		z = append(z, byte(hdr), byte(hdr>>8), byte(hdr>>16), 0)
	}
	bombs = append(bombs, bomb{"zstd-rle", batch.Zstd, gib, z})

	// zstd: a 22-byte frame declaring a content size of 1 GiB.
	zc := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xc0, 0x38} // 8-byte content size, 128 KiB window
	zc = binary.LittleEndian.AppendUint64(zc, gib)
	blk := uint32(1) | uint32(1<<1) | uint32(1)<<3 // last RLE block of 1 byte
	zc = append(zc, byte(blk), byte(blk>>8), byte(blk>>16), 'x')
	bombs = append(bombs, bomb{"zstd-claim", batch.Zstd, gib, zc})

	// zstd: what a real encoder writes for 1 GiB of zeros.
	var zs bytes.Buffer
	enc, _ := zstd.NewWriter(&zs, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	zero := make([]byte, 4<<20)
	for range gib / len(zero) {
		enc.Write(zero)
	}
	enc.Close()
	bombs = append(bombs, bomb{"zstd-encoder", batch.Zstd, gib, zs.Bytes()})
	return bombs
}

// lz4Bomb returns an LZ4 frame of size bytes of zeros made of repeated
// 4 MiB blocks: pierrec/lz4 writes one block, whose frame header and block
// are then reused.
func lz4Bomb(t testing.TB, size int) []byte {
	t.Helper()
	var one bytes.Buffer
	w := lz4.NewWriter(&one)
	if err := w.Apply(lz4.BlockSizeOption(lz4.Block4Mb), lz4.ChecksumOption(false), lz4.ConcurrencyOption(1)); err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, 4<<20))
	w.Close()
	b := one.Bytes()
	// Frame: magic (4), FLG, BD, header checksum; one block (4-byte size +
	// data); the 4-byte end mark. FLG 0x60: version 01, independent blocks,
	// no checksums, no content size.
	if len(b) < 15 || binary.LittleEndian.Uint32(b) != 0x184d2204 || b[4] != 0x60 {
		t.Fatalf("unexpected lz4 frame from pierrec/lz4: % x", b[:min(len(b), 16)])
	}
	block := b[7 : len(b)-4]
	if n := binary.LittleEndian.Uint32(block); int(n) != len(block)-4 || n&(1<<31) != 0 {
		t.Fatalf("lz4 frame is not one compressed block: size field %x, %d bytes", n, len(block)-4)
	}
	out := append([]byte(nil), b[:7]...)
	for range size / (4 << 20) {
		out = append(out, block...)
	}
	return append(out, 0, 0, 0, 0)
}
