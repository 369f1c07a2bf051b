package iggycodec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
)

// pingFrame is a Ping the way an Iggy 0.12 client sends it: a header-only
// Request frame, operation NonReplicated, the command code in reserved.
func pingFrame() []byte {
	f := make([]byte, 256)
	binary.LittleEndian.PutUint32(f[48:], 256) // size
	f[60] = 5                                  // command: Request
	f[128] = 0x2a                              // client (u128), nonzero
	f[176] = 2                                 // operation: NonReplicated
	binary.LittleEndian.PutUint32(f[196:], 1)  // reserved[0..4]: PING_CODE
	return f
}

// refused fails t unless err is the oracle's refusal, and returns its reason.
func refused(t *testing.T, err error, what string) string {
	t.Helper()
	var r *Refused
	if !errors.As(err, &r) {
		t.Fatalf("%s: want the oracle to refuse, got %v", what, err)
	}
	return r.Reason
}

func TestVersionIsProtocol0_12_0(t *testing.T) {
	o := Start(t)
	max, min, err := o.Version()
	if err != nil {
		t.Fatal(err)
	}
	const want = 12 << 10 // 0<<20 | 12<<10 | 0 = 12288, packed 0.12.0
	if max != want || min != want {
		t.Fatalf("version %d %d, want %d %d (0.12.0)", max, min, want, want)
	}
}

func TestPingFrame(t *testing.T) {
	o := Start(t)
	c, err := o.Check(pingFrame())
	if err != nil {
		t.Fatalf("ping refused: %v", err)
	}
	if c.Code != 1 || len(c.Body) != 0 {
		t.Fatalf("ping: code %d body %x (%s), want code 1 and no body", c.Code, c.Body, c.Debug)
	}

	long := append(pingFrame(), 0) // a byte the size field does not count
	_, _, err = o.Request(long)
	t.Logf("%s: %s", "frame longer than its size", refused(t, err, "frame longer than its size"))

	bigger := pingFrame()
	binary.LittleEndian.PutUint32(bigger[48:], 300)
	_, _, err = o.Request(bigger)
	t.Logf("%s: %s", "size past the frame", refused(t, err, "size past the frame"))

	for _, op := range []byte{0, 1, 3, 128, 160, 99} {
		f := pingFrame()
		f[176] = op
		_, _, err = o.Request(f)
		t.Logf("%s: %s", fmt.Sprintf("ping with operation %d", op), refused(t, err, fmt.Sprintf("ping with operation %d", op)))
	}

	// A replicated command sent as NonReplicated: the operation is not
	// operation_for_code(code).
	create := pingFrame()
	binary.LittleEndian.PutUint32(create[196:], 202) // CreateStream
	_, _, err = o.Request(create)
	t.Logf("%s: %s", "CreateStream as NonReplicated", refused(t, err, "CreateStream as NonReplicated"))

	// The same with the right operation but the code left in reserved, and
	// no request stamp: both rules of RequestHeader::for_request.
	stamped := pingFrame()
	stamped[176] = 128
	binary.LittleEndian.PutUint64(stamped[168:], 1) // request
	binary.LittleEndian.PutUint64(stamped[184:], 1) // session
	binary.LittleEndian.PutUint32(stamped[196:], 202)
	_, _, err = o.Request(stamped)
	t.Logf("%s: %s", "code left in reserved", refused(t, err, "code left in reserved"))
	binary.LittleEndian.PutUint32(stamped[196:], 0)
	_, _, err = o.Request(stamped)
	t.Logf("%s: %s", "no request_checksum", refused(t, err, "no request_checksum"))

	notRequest := pingFrame()
	notRequest[60] = 8 // Reply
	_, _, err = o.Request(notRequest)
	t.Logf("%s: %s", "command Reply", refused(t, err, "command Reply"))

	noClient := pingFrame()
	noClient[128] = 0
	_, _, err = o.Request(noClient)
	t.Logf("%s: %s", "client 0", refused(t, err, "client 0"))

	unknownCode := pingFrame()
	binary.LittleEndian.PutUint32(unknownCode[196:], 14) // retired
	_, _, err = o.Request(unknownCode)
	t.Logf("%s: %s", "retired code 14", refused(t, err, "retired code 14"))

	withBody := append(pingFrame(), 1)
	binary.LittleEndian.PutUint32(withBody[48:], 257)
	_, _, err = o.Request(withBody)
	t.Logf("%s: %s", "ping with a body byte", refused(t, err, "ping with a body byte"))
}

// TestGetStreamFrame checks a request with a body: GetStream for stream 7,
// and the same frame with its identifier cut short.
func TestGetStreamFrame(t *testing.T) {
	o := Start(t)
	f := pingFrame()
	binary.LittleEndian.PutUint32(f[196:], 200)
	body := []byte{1, 4, 7, 0, 0, 0} // numeric identifier 7
	f = append(f, body...)
	binary.LittleEndian.PutUint32(f[48:], uint32(len(f)))
	code, reencoded, err := o.Request(f)
	if err != nil {
		t.Fatal(err)
	}
	if code != 200 || !bytes.Equal(reencoded, body) {
		t.Fatalf("code %d body %x, want 200 %x", code, reencoded, body)
	}
	short := f[:len(f)-1]
	binary.LittleEndian.PutUint32(short[48:], uint32(len(short)))
	_, _, err = o.Request(short)
	refused(t, err, "truncated identifier")
}

// TestGetStreamReply checks that a generated GetStream reply decodes back to
// the same bytes and values, that its values describe its bytes (the fixed
// stream fields read here by hand), and that a cut body is refused.
func TestGetStreamReply(t *testing.T) {
	o := Start(t)
	for seed := uint64(0); seed < 40; seed++ {
		body, values, err := o.Reply(200, seed)
		if err != nil {
			t.Fatal(err)
		}
		again, valuesAgain, err := o.Reply(200, seed)
		if err != nil || !bytes.Equal(again, body) || !reflect.DeepEqual(valuesAgain, values) {
			t.Fatalf("seed %d: reply is not deterministic (%v)", seed, err)
		}
		reencoded, decoded, err := o.DecodeReply(200, body)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !bytes.Equal(reencoded, body) || !reflect.DeepEqual(decoded, values) {
			t.Fatalf("seed %d: decode-reply differs:\n%x %v\n%x %v", seed, body, values, reencoded, decoded)
		}

		stream := values["stream"].(map[string]any)
		// u32 fields are JSON numbers, u64 fields decimal strings.
		want := func(key string, inBytes uint64) {
			t.Helper()
			if got := fmt.Sprint(stream[key]); got != strconv.FormatUint(inBytes, 10) {
				t.Fatalf("seed %d: %s = %s in JSON, %d in bytes", seed, key, got, inBytes)
			}
		}
		want("id", uint64(binary.LittleEndian.Uint32(body[0:])))
		want("created_at", binary.LittleEndian.Uint64(body[4:]))
		want("topics_count", uint64(binary.LittleEndian.Uint32(body[12:])))
		want("size_bytes", binary.LittleEndian.Uint64(body[16:]))
		want("messages_count", binary.LittleEndian.Uint64(body[24:]))
		if _, ok := stream["created_at"].(string); !ok {
			t.Fatalf("seed %d: created_at is %T, want a decimal string", seed, stream["created_at"])
		}
		name := string(body[33 : 33+int(body[32])])
		if stream["name"] != name {
			t.Fatalf("seed %d: name %q in JSON, %q in bytes", seed, stream["name"], name)
		}
		topics := values["topics"].([]any)
		if n := binary.LittleEndian.Uint32(body[12:]); int(n) != len(topics) {
			t.Fatalf("seed %d: topics_count %d, %d topics", seed, n, len(topics))
		}

		_, _, err = o.DecodeReply(200, body[:len(body)-1])
		refused(t, err, "cut GetStream reply")
	}
}

// TestResultSection checks the committed-result section: a CreateStream
// reply starts with count 0, a rejection section is refused with its code.
func TestResultSection(t *testing.T) {
	o := Start(t)
	op, framed, name, err := o.Framing(202)
	if err != nil || op != 128 || !framed || name != "stream.create" {
		t.Fatalf("framing 202: %d %v %q %v", op, framed, name, err)
	}
	op, framed, _, err = o.Framing(200)
	if err != nil || op != 2 || framed {
		t.Fatalf("framing 200: %d %v %v", op, framed, err)
	}
	body, _, err := o.Reply(202, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(body, []byte{0, 0, 0, 0}) {
		t.Fatalf("CreateStream reply %x does not start with a zero result count", body)
	}
	reject, err := o.Reject(1009)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xf1, 0x03, 0, 0}; !bytes.Equal(reject, want) {
		t.Fatalf("reject 1009 = %x, want %x", reject, want)
	}
	_, _, err = o.DecodeReply(202, reject)
	refused(t, err, "rejected CreateStream")
}

func TestReplyHeader(t *testing.T) {
	o := Start(t)
	body, _, err := o.Reply(202, 5)
	if err != nil {
		t.Fatal(err)
	}
	h, values, err := o.ReplyHeader(202, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 256 || h[60] != 8 || h[208] != 128 || h[220] != 1 {
		t.Fatalf("CreateStream reply header: len %d command %d operation %d committed %d", len(h), h[60], h[208], h[220])
	}
	if size := binary.LittleEndian.Uint32(h[48:]); int(size) != 256+len(body) || values["size"] != json.Number(strconv.FormatUint(uint64(size), 10)) {
		t.Fatalf("size %d (JSON %v), body %d bytes", size, values["size"], len(body))
	}
	h, values, err = o.ReplyHeader(1, 5)
	if err != nil {
		t.Fatal(err)
	}
	if h[208] != 2 || h[220] != 0 || values["has_committed_result"] != false {
		t.Fatalf("Ping reply header: operation %d committed byte %d, %v", h[208], h[220], values["has_committed_result"])
	}
}

func TestEviction(t *testing.T) {
	o := Start(t)
	e, err := o.Eviction(14, 12288, 12288)
	if err != nil {
		t.Fatal(err)
	}
	if len(e) != 256 || e[60] != 13 || e[255] != 14 ||
		binary.LittleEndian.Uint32(e[144:]) != 12288 || binary.LittleEndian.Uint32(e[148:]) != 12288 ||
		binary.LittleEndian.Uint32(e[48:]) != 256 {
		t.Fatalf("eviction %x", e)
	}
	_, err = o.Eviction(14, 12288, 0)
	refused(t, err, "window with min 0")
	_, err = o.Eviction(9, 1, 1)
	refused(t, err, "window on InvalidCredentials")
	_, err = o.Eviction(200, 0, 0)
	refused(t, err, "reason 200")
}
