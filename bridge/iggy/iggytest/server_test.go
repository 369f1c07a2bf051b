package iggytest

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/zeebo/xxh3"
)

// TV15: messages-key hash (XXH32, seed 0).
func TestXXH32(t *testing.T) {
	// TV15 plus the longer vectors of the Go SDK's twox-hash-matching test.
	for in, want := range map[string]uint32{"": 0x02CC5D05, "a": 0x550D7456, "abc": 0x32D153FF, "abcd": 0xA3643705,
		"order-key-1": 0x0D3FE0E1, "0123456789abcdef": 0xC2C45B69, "0123456789abcdefghijklmnopqrstuvwxyz": 0x9AA38E7E,
		"Nobody inspects the spammish repetition": 0xE2293B2F} {
		if got := xxh32([]byte(in)); got != want {
			t.Errorf("xxh32(%q) = %#x, want %#x", in, got, want)
		}
	}
}

// rawClient speaks the protocol by hand, to check what the server answers
// to frames kiggy's client would never send.
type rawClient struct {
	t       *testing.T
	c       net.Conn
	client  proto.ClientID
	session uint64
	req     uint64
}

func dial(t *testing.T, s *Server) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, c: c, client: proto.ClientID{Lo: 7, Hi: 9}}
}

func (r *rawClient) send(op uint8, code uint32, req, session uint64, body []byte) {
	f := make([]byte, proto.HeaderSize, proto.HeaderSize+len(body))
	proto.PutRequestHeader(f, len(body), r.client, req, op, session, code)
	f = append(f, body...)
	if _, err := r.c.Write(f); err != nil {
		r.t.Fatal(err)
	}
}

// recv reads one frame, or returns ok=false after the timeout.
func (r *rawClient) recv(timeout time.Duration) (proto.ReplyHeader, []byte, bool) {
	r.c.SetReadDeadline(time.Now().Add(timeout))
	h := make([]byte, proto.HeaderSize)
	if _, err := io.ReadFull(r.c, h); err != nil {
		return proto.ReplyHeader{}, nil, false
	}
	rh := proto.ParseReplyHeader(h)
	body := make([]byte, rh.Size-proto.HeaderSize)
	if _, err := io.ReadFull(r.c, body); err != nil {
		r.t.Fatal(err)
	}
	return rh, body, true
}

func (r *rawClient) login(user, pass string) {
	r.send(proto.OpRegister, proto.CodeLoginRegister, 0, 0, proto.AppendLoginBody(nil, proto.Dialect011, nil, "test", "0", user, pass))
	h, body, ok := r.recv(5 * time.Second)
	if !ok || h.Command != proto.CommandReply || h.Status != 0 {
		r.t.Fatalf("login: %+v", h)
	}
	rd := proto.NewReader(body)
	rd.U32()
	rd.U32()
	r.session = rd.U64()
	r.req = 1
}

func (r *rawClient) call(code uint32, body []byte) (proto.ReplyHeader, []byte) {
	r.t.Helper()
	r.send(proto.OperationFor(code), code, r.req, r.session, body)
	r.req++
	h, b, ok := r.recv(5 * time.Second)
	if !ok {
		r.t.Fatalf("no reply to code %d", code)
	}
	return h, b
}

func start(t *testing.T) *Server {
	s := New(Config{Tokens: []string{"tok"}})
	if _, err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestLoginAndEvictions(t *testing.T) {
	s := start(t)
	// Ping is allowed before login; other reads get status 40.
	r := dial(t, s)
	r.send(proto.OpNonReplicated, proto.CodePing, 1, 0, nil)
	if h, _, ok := r.recv(5 * time.Second); !ok || h.Status != 0 || h.Request != 1 || h.Operation != proto.OpNonReplicated {
		t.Fatalf("ping: %+v", h)
	}
	r.send(proto.OpNonReplicated, proto.CodeGetStreams, 1, 0, nil)
	if h, _, _ := r.recv(5 * time.Second); h.Status != uint32(proto.CodeUnauthenticated) {
		t.Fatalf("read before login: %+v", h)
	}
	// A replicated request before login: Eviction reason 1.
	r.send(proto.OpCreateStream, proto.CodeCreateStream, 1, 1, proto.AppendName(nil, "x"))
	if h, _, _ := r.recv(5 * time.Second); h.Command != proto.CommandEviction || h.Reason != proto.EvictNoSession {
		t.Fatalf("write before login: %+v", h)
	}

	for _, c := range []struct {
		body   []byte
		code   uint32
		op     uint8
		reason uint8
	}{
		{proto.AppendLoginBody(nil, proto.Dialect011, nil, "t", "0", "iggy", "bad"), proto.CodeLoginRegister, proto.OpRegister, proto.EvictInvalidCredentials},
		{proto.AppendPATLoginBody(nil, proto.Dialect011, nil, "t", "0", "bad-token"), proto.CodeLoginRegisterWithPAT, proto.OpRegister, proto.EvictInvalidToken},
		{append(proto.AppendU32(nil, 13<<10), 1, 'a', 1, 'b'), proto.CodeLoginRegister, proto.OpRegister, proto.EvictIncompatibleProtocol},
		{[]byte{1, 2}, proto.CodeLoginRegister, proto.OpRegister, proto.EvictMalformedLogin},
		{nil, proto.CodeLoginUser, proto.OpNonReplicated, proto.EvictMalformedLogin},
	} {
		r := dial(t, s)
		r.send(c.op, c.code, 0, 0, c.body)
		h, _, ok := r.recv(5 * time.Second)
		if !ok || h.Command != proto.CommandEviction || h.Reason != c.reason {
			t.Errorf("reason %d: got %+v", c.reason, h)
		}
		if c.reason == proto.EvictIncompatibleProtocol && (h.ServerProtocol != proto.Dialect012.Version() || h.ServerProtocolMin != proto.Dialect012.Version()) {
			t.Errorf("reason 14 window: %+v", h)
		}
	}
	r = dial(t, s)
	r.send(proto.OpRegister, proto.CodeLoginRegisterWithPAT, 0, 0, proto.AppendPATLoginBody(nil, proto.Dialect011, nil, "t", "0", "tok"))
	if h, _, _ := r.recv(5 * time.Second); h.Status != 0 || h.Command != proto.CommandReply {
		t.Fatalf("PAT login: %+v", h)
	}
}

func TestSilentDrops(t *testing.T) {
	s := start(t)
	r := dial(t, s)
	r.login("iggy", "iggy")
	r.call(proto.CodeCreateStream, proto.AppendName(nil, "s"))
	tb := proto.AppendNumericID(nil, 0)
	tb = proto.AppendU32(tb, 1)
	r.call(proto.CodeCreateTopic, proto.AppendName(tb, "t"))

	send := func(wait time.Duration, mutate func(batch []byte)) (proto.ReplyHeader, bool) {
		var b message.Batch
		b.Reset(10)
		b.Begin(10)
		b.AppendPayloadString("hello")
		b.MarkHeaders()
		b.End()
		proto.StampFrames(b.Frames(), 1)
		batch := make([]byte, proto.BatchHeaderSize)
		proto.SealBatch(xxh3.New(), batch, b.Frames(), 1, 10)
		batch = append(batch, b.Frames()...)
		mutate(batch)
		body := proto.AppendU32(nil, 22)
		body = proto.AppendNumericID(body, 0)
		body = proto.AppendNumericID(body, 0)
		body = append(body, proto.PartitionID, 4, 0, 0, 0, 0)
		body = proto.AppendU32(body, 1)
		r.send(proto.OpSendMessages, proto.CodeSendMessages, r.req, r.session, append(body, batch...))
		r.req++
		h, _, ok := r.recv(wait)
		return h, ok
	}
	if h, ok := send(5*time.Second, func([]byte) {}); !ok || h.Status != 0 {
		t.Fatalf("good batch: %+v %v", h, ok)
	}
	// §3.7: a bad frame checksum gets no reply.
	if _, ok := send(300*time.Millisecond, func(b []byte) { b[proto.BatchHeaderSize+48] ^= 1 }); ok {
		t.Fatal("bad frame checksum answered")
	}
	// A malformed header (client id 0) gets no reply either.
	r2 := dial(t, s)
	r2.client = proto.ClientID{}
	r2.send(proto.OpNonReplicated, proto.CodePing, 1, 0, nil)
	if _, _, ok := r2.recv(300 * time.Millisecond); ok {
		t.Fatal("client 0 answered")
	}
	// A request checksum that does not match the body: status 4.
	f := make([]byte, proto.HeaderSize)
	proto.PutRequestHeader(f, 0, r.client, r.req, proto.OpNonReplicated, r.session, proto.CodePing)
	proto.SetRequestChecksum(f, 12345, 0)
	r.c.Write(f)
	if h, _, ok := r.recv(5 * time.Second); !ok || h.Status != uint32(proto.CodeInvalidFormat) {
		t.Fatalf("bad request checksum: %+v", h)
	}
	// A frame size below 256 closes the connection.
	bad := make([]byte, proto.HeaderSize)
	binary.LittleEndian.PutUint32(bad[48:], 100)
	r.c.Write(bad)
	if _, _, ok := r.recv(5 * time.Second); ok {
		t.Fatal("answered a short frame")
	}
}

func TestMetadataDedup(t *testing.T) {
	s := start(t)
	r := dial(t, s)
	r.login("iggy", "iggy")
	r.req = 10
	h, body := r.call(proto.CodeCreateStream, proto.AppendName(nil, "s"))
	if h.Status != 0 || binary.LittleEndian.Uint32(body) != 0 {
		t.Fatalf("create: %+v %x", h, body)
	}
	// Replaying the same request number returns the cached reply.
	r.req--
	h2, body2 := r.call(proto.CodeCreateStream, proto.AppendName(nil, "s"))
	if h2.Status != 0 || string(body2) != string(body) {
		t.Fatalf("replay: %+v %x", h2, body2)
	}
	// An older request number: 59.
	r.req -= 2
	if h, _ := r.call(proto.CodeCreateStream, proto.AppendName(nil, "s2")); h.Status != uint32(proto.CodeRequestAlreadyApplied) {
		t.Fatalf("old request: %+v", h)
	}
	r.req += 5
	h, body = r.call(proto.CodeCreateStream, proto.AppendName(nil, "s"))
	if h.Status != 0 || binary.LittleEndian.Uint32(body[8:]) != uint32(proto.CodeStreamNameAlreadyExists) {
		t.Fatalf("duplicate: %+v %x", h, body)
	}
}

// TestStopStartKeepsData restarts the listener on the same address.
func TestStopStartKeepsData(t *testing.T) {
	s := start(t)
	addr := s.Addr().String()
	r := dial(t, s)
	r.login("iggy", "iggy")
	r.call(proto.CodeCreateStream, proto.AppendName(nil, "kept"))
	s.Stop()
	if _, _, ok := r.recv(100 * time.Millisecond); ok {
		t.Fatal("connection survived Stop")
	}
	if _, err := s.Start(addr); err != nil {
		t.Fatal(err)
	}
	r = dial(t, s)
	r.login("iggy", "iggy")
	h, body := r.call(proto.CodeGetStream, proto.AppendStringID(nil, "kept"))
	if h.Status != 0 || len(body) == 0 {
		t.Fatalf("stream lost across restart: %+v", h)
	}
}

// TV14: SyncConsumerGroup reply layout — [generation u64][count u32][ids] —
// for the first of two members of a 5-partition topic: partitions [0, 2, 4].
func TestTV14SyncReply(t *testing.T) {
	s := start(t)
	a, b := dial(t, s), dial(t, s)
	b.client = proto.ClientID{Lo: 8}
	a.login("iggy", "iggy")
	b.login("iggy", "iggy")
	a.call(proto.CodeCreateStream, proto.AppendName(nil, "s"))
	tb := proto.AppendU32(proto.AppendNumericID(nil, 0), 5)
	a.call(proto.CodeCreateTopic, proto.AppendName(tb, "t"))
	ids := proto.AppendNumericID(proto.AppendNumericID(nil, 0), 0)
	a.call(proto.CodeCreateConsumerGroup, proto.AppendName(append([]byte(nil), ids...), "g"))
	grp := proto.AppendNumericID(append([]byte(nil), ids...), 0)
	a.call(proto.CodeJoinConsumerGroup, grp)
	b.call(proto.CodeJoinConsumerGroup, grp)
	h, body := a.call(proto.CodeSyncConsumerGroup, grp)
	want := []byte{2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0}
	if h.Status != 0 || string(body) != string(want) {
		t.Fatalf("sync reply %x, want %x", body, want)
	}
	// A client that is not a member gets an empty body.
	c := dial(t, s)
	c.client = proto.ClientID{Lo: 9}
	c.login("iggy", "iggy")
	if h, body := c.call(proto.CodeSyncConsumerGroup, grp); h.Status != 0 || len(body) != 0 {
		t.Fatalf("non-member sync: %+v %x", h, body)
	}
	// A group poll on a partition the member does not own: the re-sync sentinel.
	poll := append([]byte{proto.ConsumerGroup}, proto.AppendNumericID(nil, 0)...)
	poll = append(append(poll, ids...), 1, 1, 0, 0, 0, proto.PollNext)
	poll = proto.AppendU64(poll, 0)
	poll = append(proto.AppendU32(poll, 1), 0)
	if _, body := a.call(proto.CodePollMessages, poll); binary.LittleEndian.Uint32(body) != resyncPartition {
		t.Fatalf("unowned group poll: %x", body)
	}
}
