package proto

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/zeebo/xxh3"
)

// nonZero lists the non-zero bytes of b as index → value, the form §7 uses.
func nonZero(b []byte) map[int]byte {
	m := map[int]byte{}
	for i, v := range b {
		if v != 0 {
			m[i] = v
		}
	}
	return m
}

func checkNonZero(t *testing.T, name string, got []byte, want map[int]byte) {
	t.Helper()
	g := nonZero(got)
	if len(g) != len(want) {
		t.Errorf("%s: %d non-zero bytes, want %d: %v", name, len(g), len(want), g)
	}
	for i, v := range want {
		if g[i] != v {
			t.Errorf("%s: byte %d = %#x, want %#x", name, i, g[i], v)
		}
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readHex(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return unhex(t, string(b))
}

// TV1: Ping request before login (client 1, request 1, session 0).
func TestTV1PingHeader(t *testing.T) {
	h := make([]byte, HeaderSize)
	PutRequestHeader(h, 0, ClientID{Lo: 1}, 1, OperationFor(CodePing), 0, CodePing)
	checkNonZero(t, "TV1", h, map[int]byte{49: 1, 60: 5, 128: 1, 168: 1, 176: 2, 196: 1})

	req := ParseRequestHeader(h)
	if !req.Validate(Dialect011) {
		t.Fatal("TV1 header does not validate")
	}
	r := make([]byte, HeaderSize)
	PutReplyHeader(r, 0, &req, 0, 0, 0)
	rh := ParseReplyHeader(r)
	if r[60] != 8 || r[208] != 2 || rh.Request != 1 || rh.Status != 0 || rh.Size != 256 {
		t.Fatalf("TV1 reply: %+v", rh)
	}
}

// TV2: Go SDK golden header.
func TestTV2GoldenHeader(t *testing.T) {
	h := make([]byte, HeaderSize)
	PutRequestHeader(h, 4, ClientID{Lo: 0x0807060504030201, Hi: 0x100F0E0D0C0B0A09}, 2, OpCreateStream, 11, CodeCreateStream)
	want := map[int]byte{48: 0x04, 49: 0x01, 60: 5, 168: 2, 176: 0x80, 184: 0x0b}
	for i := 0; i < 16; i++ {
		want[128+i] = byte(i + 1)
	}
	checkNonZero(t, "TV2", h, want)
	if len(nonZero(h)) != 22 {
		t.Fatalf("TV2: %d non-zero bytes, want 22", len(nonZero(h)))
	}
}

// TV3: LoginRegister for iggy/iggy, sdk "go-sdk" / "0.1.0".
func TestTV3Login(t *testing.T) {
	body := AppendLoginBody(nil, Dialect011, nil, "go-sdk", "0.1.0", "iggy", "iggy")
	want := unhex(t, "00 2c 00 00 06 67 6f 2d 73 64 6b 05 30 2e 31 2e 30 04 69 67 67 79 04 69 67 67 79 00 00 00 00")
	if !bytes.Equal(body, want) {
		t.Fatalf("TV3 body\n got %x\nwant %x", body, want)
	}
	h := make([]byte, HeaderSize)
	PutRequestHeader(h, len(body), ClientID{Lo: 1}, 0, OperationFor(CodeLoginRegister), 0, CodeLoginRegister)
	checkNonZero(t, "TV3", h, map[int]byte{48: 0x1f, 49: 1, 60: 5, 128: 1, 176: 1})
}

// TV4: login success reply body.
func TestTV4LoginReply(t *testing.T) {
	body := unhex(t, "00000000 00000000 0100000000000000 002c0000 0c 302e392e302d656467652e35")
	r := NewReader(body)
	count, user, session, version, name := r.U32(), r.U32(), r.U64(), r.U32(), r.Name()
	if count != 0 || user != 0 || session != 1 || version != 11264 || string(name) != "0.9.0-edge.5" || r.Complete() != nil {
		t.Fatal("TV4 decode mismatch")
	}
}

// TV5: bad password eviction.
func TestTV5Eviction(t *testing.T) {
	h := make([]byte, HeaderSize)
	PutEvictionHeader(h, ClientID{Lo: 0x42}, EvictInvalidCredentials, 0, 0)
	checkNonZero(t, "TV5", h, map[int]byte{49: 1, 60: 0x0d, 128: 0x42, 255: 9})
	rh := ParseReplyHeader(h)
	if rh.Command != CommandEviction || rh.Reason != 9 || ReasonCode(rh.Reason) != CodeInvalidCredentials {
		t.Fatalf("TV5: %+v", rh)
	}
}

// TV6: CreateStream "orders" and its duplicate-name result body.
func TestTV6CreateStream(t *testing.T) {
	body := AppendName(nil, "orders")
	if !bytes.Equal(body, unhex(t, "06 6f 72 64 65 72 73")) {
		t.Fatalf("TV6 body %x", body)
	}
	h := make([]byte, HeaderSize)
	PutRequestHeader(h, len(body), ClientID{Lo: 1}, 1, OperationFor(CodeCreateStream), 1, CodeCreateStream)
	checkNonZero(t, "TV6", h, map[int]byte{48: 7, 49: 1, 60: 5, 128: 1, 168: 1, 176: 0x80, 184: 1})
	if got := AppendResultError(nil, CodeStreamNameAlreadyExists); !bytes.Equal(got, unhex(t, "01000000 00000000 f4030000")) {
		t.Fatalf("TV6 result %x", got)
	}
}

// TV7: CreateTopic body, with and without a message_expiry option.
func TestTV7CreateTopic(t *testing.T) {
	body := AppendNumericID(nil, 0)
	body = AppendU32(body, 3)
	body = AppendName(body, "events")
	if !bytes.Equal(body, unhex(t, "01 04 00000000 03000000 06 6576656e7473")) {
		t.Fatalf("TV7 body %x", body)
	}
	opt := AppendOptionU64(nil, "message_expiry", 60_000_000)
	if !bytes.Equal(opt, unhex(t, "02 0e000000 6d6573736167655f657870697279 0c 08000000 0087930300000000")) {
		t.Fatalf("TV7 option %x", opt)
	}
}

// TV8: cross-SDK golden options block; walked with the message TLV decoder.
func TestTV8Options(t *testing.T) {
	block := unhex(t, "02 0d000000 "+hex.EncodeToString([]byte("enforce_fsync"))+" 03 01000000 01 02 0c000000 "+
		hex.EncodeToString([]byte("segment_size"))+" 0c 08000000 0000004000000000")
	h, rest, err := message.NextHeader(block)
	if err != nil || string(h.Key) != "enforce_fsync" || h.ValueKind != KindBool || h.Value[0] != 1 {
		t.Fatalf("TV8 first: %+v %v", h, err)
	}
	h, rest, err = message.NextHeader(rest)
	if err != nil || string(h.Key) != "segment_size" || h.ValueKind != KindUint64 || binary.LittleEndian.Uint64(h.Value) != 1<<30 || len(rest) != 0 {
		t.Fatalf("TV8 second: %+v %v", h, err)
	}
}

// buildTV9 builds the TV9 messages with message.Batch, then stamps and seals
// them as the client does.
func buildTV9(t *testing.T) (hdr, frames []byte) {
	var b message.Batch
	b.Reset(1000)
	b.Begin(1000)
	b.AppendPayloadString("first-payload")
	b.MarkHeaders()
	b.End()
	b.Begin(1050)
	b.AppendPayloadString("second-payload")
	b.MarkHeaders()
	b.Buf = append(b.Buf, "user-header-bytes"...) // opaque bytes in the golden vector
	b.End()
	fr := b.Frames()
	fr[8] = 7    // message ids 7 and 8 (MessageID{7}: first byte)
	fr[61+8] = 8 // frame 1 is 48+13 bytes
	if err := StampFrames(fr, b.Count); err != nil {
		t.Fatal(err)
	}
	hdr = make([]byte, BatchHeaderSize)
	SealBatch(xxh3.New(), hdr, fr, b.Count, b.Origin)
	return hdr, fr
}

// TV9: SendMessages golden body generated by Rust (Balanced partitioning).
func TestTV9SendBody(t *testing.T) {
	golden := readHex(t, "tv9_send_body.hex")
	hdr, frames := buildTV9(t)
	var body []byte
	body = AppendU32(body, 0) // metadata length, backfilled
	body = AppendNumericID(body, 1)
	body = AppendNumericID(body, 2)
	body = append(body, PartitionBalanced, 0)
	body = AppendU32(body, 2)
	binary.LittleEndian.PutUint32(body, uint32(len(body)-4))
	body = append(body, hdr...)
	body = append(body, frames...)
	if !bytes.Equal(body, golden) {
		t.Fatalf("TV9 mismatch\n got %x\nwant %x", body, golden)
	}
	if got := binary.LittleEndian.Uint64(hdr[BatchChecksum:]); got != 0x7c260763c8381fa9 {
		t.Fatalf("TV9 batch checksum %#x", got)
	}
	if got := binary.LittleEndian.Uint64(frames); got != 0x7596755a20b9d2bf {
		t.Fatalf("TV9 frame 1 checksum %#x", got)
	}
	if err := ValidateBatch(xxh3.New(), body[22:], 2); err != nil {
		t.Fatalf("TV9 golden batch fails validation: %v", err)
	}
}

// TV10: single-message SendMessages to partition 0.
func TestTV10SingleSend(t *testing.T) {
	var b message.Batch
	b.Reset(1_700_000_000_000_000)
	b.Begin(1_700_000_000_000_000)
	b.AppendPayloadString("hello")
	b.MarkHeaders()
	b.End()
	fr := b.Frames()
	fr[8] = 1
	if err := StampFrames(fr, 1); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, BatchHeaderSize)
	SealBatch(xxh3.New(), hdr, fr, 1, b.Origin)
	var meta []byte
	meta = AppendU32(meta, 22)
	meta = AppendNumericID(meta, 0)
	meta = AppendNumericID(meta, 0)
	meta = append(meta, PartitionID, 4, 0, 0, 0, 0)
	meta = AppendU32(meta, 1)
	if !bytes.Equal(meta, unhex(t, "16000000 010400000000 010400000000 020400000000 01000000")) {
		t.Fatalf("TV10 metadata %x", meta)
	}
	if !bytes.Equal(hdr[24:52], unhex(t, "00401e18240a0600 3501000000000000 c30f947c3dc33789 01000000")) {
		t.Fatalf("TV10 batch header %x", hdr[24:52])
	}
	if !bytes.Equal(fr, unhex(t, "8e5ca59edbbdbfb9 01000000000000000000000000000000 00000000 00000000 00000000 05000000 0000000000000000 68656c6c6f")) {
		t.Fatalf("TV10 frame %x", fr)
	}
	if n := len(meta) + len(hdr) + len(fr); n != 335 {
		t.Fatalf("TV10 body %d bytes, want 335", n)
	}
	h := make([]byte, HeaderSize)
	PutRequestHeader(h, 335, ClientID{Lo: 1}, 2, OperationFor(CodeSendMessages), 1, CodeSendMessages)
	checkNonZero(t, "TV10 header", h, map[int]byte{48: 0x4f, 49: 2, 60: 5, 128: 1, 168: 2, 176: 0xa0, 184: 1})
}

// TV12: Rust-generated poll reply, walked with RecordIter.
func TestTV12PollReply(t *testing.T) {
	body := readHex(t, "tv12_poll_body.hex")
	r := NewReader(body)
	if r.U32() != 3 || r.U64() != 101 || r.U32() != 2 {
		t.Fatal("TV12 prefix")
	}
	var it RecordIter
	it.Reset(r.Rest())
	var offs, ts, origins []uint64
	for it.Next() {
		h := it.Header()
		fr := it.Frames()
		for len(fr) > 0 {
			f, err := message.ParseFrame(fr)
			if err != nil {
				t.Fatal(err)
			}
			offs = append(offs, h.BaseOffset+uint64(f.OffsetDelta))
			ts = append(ts, h.BaseTimestamp)
			origins = append(origins, h.OriginTimestamp+uint64(f.TimestampDelta))
			fr = fr[f.Size:]
		}
		if h.Checksum != 0xd2ee8f8ab32668c9 {
			t.Fatalf("TV12 batch checksum %#x", h.Checksum)
		}
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	want := [][]uint64{{100, 101}, {5000, 5000}, {1000, 1050}}
	for i, got := range [][]uint64{offs, ts, origins} {
		if len(got) != 2 || got[0] != want[i][0] || got[1] != want[i][1] {
			t.Fatalf("TV12 field %d = %v, want %v", i, got, want[i])
		}
	}
}

// TV13: SendMessages confirmation.
func TestTV13Confirmation(t *testing.T) {
	r := NewReader(unhex(t, "01000000 01000000 02000000 03000000 0400000000000000"))
	count, stream, topic, partition, base := r.U32(), r.U32(), r.U32(), r.U32(), r.U64()
	if count != 1 || stream != 1 || topic != 2 || partition != 3 || base != 4 || r.Complete() != nil {
		t.Fatal("TV13")
	}
}

func TestValidateBatchRejects(t *testing.T) {
	hdr, frames := buildTV9(t)
	good := append(append([]byte(nil), hdr...), frames...)
	h := xxh3.New()
	cases := map[string]func(b []byte) ([]byte, uint32){
		"count mismatch": func(b []byte) ([]byte, uint32) { return b, 3 },
		"payload flip":   func(b []byte) ([]byte, uint32) { b[256+48] ^= 1; return b, 2 },
		"batch checksum": func(b []byte) ([]byte, uint32) { b[40] ^= 1; return b, 2 },
		"reserved":       func(b []byte) ([]byte, uint32) { b[100] = 1; return b, 2 },
		"frame reserved": func(b []byte) ([]byte, uint32) { b[256+40] = 1; return b, 2 },
		"short":          func(b []byte) ([]byte, uint32) { return b[:len(b)-1], 2 },
		"trailing":       func(b []byte) ([]byte, uint32) { return append(b, 0), 2 },
		"tiny":           func(b []byte) ([]byte, uint32) { return b[:10], 2 },
	}
	for name, mut := range cases {
		b, want := mut(append([]byte(nil), good...))
		if err := ValidateBatch(h, b, want); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := ValidateBatch(h, good, 2); err != nil {
		t.Fatal(err)
	}
}

func TestIdentifierAndNames(t *testing.T) {
	var b []byte
	b = AppendNumericID(b, 1)
	b = AppendStringID(b, "orders")
	if !bytes.Equal(b, unhex(t, "01 04 01 00 00 00 02 06 6f 72 64 65 72 73")) {
		t.Fatalf("%x", b)
	}
	r := NewReader(b)
	a, c := r.Identifier(), r.Identifier()
	if a.Kind != IDNumeric || a.Numeric != 1 || c.Kind != IDString || string(c.Name) != "orders" || r.Complete() != nil {
		t.Fatal("identifier decode")
	}
	for _, bad := range []string{"01 03 000000", "02 00", "03 04 00000000", "01"} {
		r := NewReader(unhex(t, bad))
		r.Identifier()
		if r.Ok() {
			t.Errorf("%s accepted", bad)
		}
	}
	if v := Dialect011.Version(); FormatVersion(v) != "0.11.0" || v != 11264 || FormatVersion(Dialect012.Version()) != "0.12.0" || Dialect012.Version() != 12288 {
		t.Fatal(FormatVersion(Dialect011.Version()), FormatVersion(Dialect012.Version()))
	}
	if Code(2013).String() != "TopicNameAlreadyExists" || Code(777).String() != "code 777" {
		t.Fatal("code names")
	}
}

func TestHeaderValidate(t *testing.T) {
	h := make([]byte, HeaderSize)
	cases := []struct {
		client       ClientID
		req, session uint64
		op           uint8
		ok           bool
	}{
		{ClientID{Lo: 1}, 0, 0, OpRegister, true},
		{ClientID{Lo: 1}, 1, 0, OpRegister, false},
		{ClientID{Lo: 1}, 0, 1, OpRegister, false},
		{ClientID{}, 1, 1, OpNonReplicated, false},
		{ClientID{Hi: 1}, 0, 0, OpNonReplicated, true},
		{ClientID{Lo: 1}, 1, 1, OpCreateStream, true},
		{ClientID{Lo: 1}, 0, 1, OpCreateStream, false},
		{ClientID{Lo: 1}, 1, 0, OpSendMessages, false},
		{ClientID{Lo: 1}, 1, 1, 99, false},
		{ClientID{Lo: 1}, 1, 1, 0, false},
	}
	for i, c := range cases {
		PutRequestHeader(h, 0, c.client, c.req, c.op, c.session, 0)
		rh := ParseRequestHeader(h)
		if rh.Validate(Dialect011) != c.ok {
			t.Errorf("case %d: Validate = %v", i, !c.ok)
		}
	}
}

func TestCommittedOperation(t *testing.T) {
	if !ReplyMatches(OpCreateTopic, 64) || !ReplyMatches(OpCreateTopic, OpCreateTopic) || !ReplyMatches(OpCreatePartitions, 65) ||
		ReplyMatches(OpCreateStream, 64) || ReplyMatches(OpSendMessages, OpNonReplicated) {
		t.Fatal("ReplyMatches")
	}
}
