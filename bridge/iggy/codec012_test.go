package iggy

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/big"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggycodec"
)

// Differential tests of the 0.12 dialect against Iggy's own codec
// (iggy_binary_protocol 0.11.1-edge.4, protocol 0.12.0, behind
// internal/testing/iggycodec): no 0.10 server can be run here, so the crate the
// server and the official SDK share is the judge (docs/IGGY.md, "Versions").

// tapped is a request frame the client sent and the replies it got.
type tapped struct {
	code           uint32
	frame, replies []byte
}

// tap records the frames an iggytest server sees, one per command code
// and shape (the first of each).
type tap struct {
	mu     sync.Mutex
	frames []tapped
	seen   map[string]bool
}

func (tp *tap) record(frame, replies []byte) {
	h := proto.ParseRequestHeader(frame)
	code := codeOfRequest(&h)
	// One frame per (code, body length): the shapes differ by length
	// (options present or not, a message or several).
	key := string(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, code), uint32(len(frame))))
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.seen[key] {
		return
	}
	tp.seen[key] = true
	tp.frames = append(tp.frames, tapped{code: code, frame: bytes.Clone(frame), replies: bytes.Clone(replies)})
}

// codeOfRequest is the command code of a request frame: in the header for a
// non-replicated one, else the one kiggy sends as that operation.
func codeOfRequest(h *proto.RequestHeader) uint32 {
	if h.Operation == proto.OpNonReplicated {
		return h.Code
	}
	if h.Operation == proto.OpRegister {
		return proto.CodeLoginRegister // the sessions below log in with a password
	}
	for _, c := range requestCodes {
		if proto.OperationFor(c) == h.Operation {
			return c
		}
	}
	return 0
}

var requestCodes = []uint32{
	proto.CodeLogoutUser, proto.CodeCreateStream, proto.CodeDeleteStream, proto.CodeCreateTopic,
	proto.CodeDeleteTopic, proto.CodeUpdateResource, proto.CodeCreatePartitions,
	proto.CodeCreateConsumerGroup, proto.CodeDeleteConsumerGroup, proto.CodeJoinConsumerGroup,
	proto.CodeLeaveConsumerGroup, proto.CodeSendMessages, proto.CodeStoreConsumerOffset,
	proto.CodeDeleteConsumerOffset,
}

// session012 runs a client session on an iggytest server that speaks 0.12
// only, through every command the client sends, and returns what the tap saw.
func session012(t *testing.T) []tapped {
	t.Helper()
	tp := &tap{seen: map[string]bool{}}
	srv, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}, Tap: tp.record})
	c := open(t, Config{Addr: addr, PoolSize: 2})
	if c.Dialect() != proto.Dialect012 {
		t.Fatalf("dialect %v", c.Dialect())
	}
	cx := ctx(t)
	for i, cfg := range []store.TopicConfig{
		{},
		{MessageExpiry: time.Hour, MaxBytes: 2 << 30, Durability: store.DurabilityFsync},
		{Durability: store.DurabilityBuffered},
	} {
		name := "codec" + string(rune('a'+i))
		if _, err := c.CreateTopic(cx, name, 2, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; n <= 3; n++ {
		if _, err := c.Append(cx, "codeca", 0, batchOf(uint64(n), "v", 8*n)); err != nil {
			t.Fatal(err)
		}
	}
	// A write whose connection breaks: the session is bound again.
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Count: 1, Drop: true, Apply: true, Close: true})
	if _, err := c.Append(cx, "codeca", 1, batchOf(1, "w", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(cx, "codeca", 0, 0, 1<<20, func(*message.Message) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.OffsetForTime(cx, "codeca", 0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Watermarks(cx, "codeca", 1); err != nil {
		t.Fatal(err)
	}
	if err := c.storeOffset(cx, "g", "codeca", 0, 2); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.fetchOffset(cx, "g", "codeca", 0); err != nil {
		t.Fatal(err)
	}
	if err := c.deleteOffset(cx, "g", "codeca", 0); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitOffset(cx, "g", "codeca", 1, 1, "meta"); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateTopic(cx, "codeca", store.TopicConfig{MessageExpiry: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateTopic(cx, "codeca", store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions(cx, "codeca", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Topics(cx); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(cx, "codecb"); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.partitionPrimary(cx, "codeca", 1); !ok {
		t.Fatal("GetPartitionRoute named no node of the roster")
	}
	if err := c.VerifyLogin(cx, "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(cx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.frames
}

// TestCodec012Requests: every request the client sends in 0.12 passes the
// server's header checks in Iggy's codec and decodes with the crate's type
// for its command, which re-encodes it byte for byte; every reply iggytest
// sent back decodes with the crate and re-encodes byte for byte.
func TestCodec012Requests(t *testing.T) {
	o := iggycodec.Start(t)
	frames := session012(t)
	codes := map[uint32]bool{}
	for _, f := range frames {
		got, err := o.Check(f.frame)
		if err != nil {
			t.Errorf("%s (%d bytes): Iggy's codec refuses kiggy's request: %v", commandName(f.code), len(f.frame), err)
			continue
		}
		codes[got.Code] = true
		if !bytes.Equal(got.Body, f.frame[proto.HeaderSize:]) {
			t.Errorf("%s: Iggy's codec re-encodes the body differently:\n kiggy %x\n crate %x\n%s", commandName(got.Code), f.frame[proto.HeaderSize:], got.Body, got.Debug)
		}
		checkReplies(t, o, got.Code, f.replies)
	}
	for _, c := range []uint32{proto.CodeLoginRegister, proto.CodeGetClusterMetadata, proto.CodeGetStream, proto.CodeCreateStream,
		proto.CodeCreateTopic, proto.CodeGetTopic, proto.CodeGetTopics, proto.CodeDeleteTopic, proto.CodeUpdateResource,
		proto.CodeCreatePartitions, proto.CodeSendMessages, proto.CodePollMessages, proto.CodeStoreConsumerOffset,
		proto.CodeGetConsumerOffset, proto.CodeDeleteConsumerOffset, proto.CodePing, proto.CodeBindSession, proto.CodeGetPartitionRoute} {
		if !codes[c] {
			t.Errorf("the session sent no %s: the test no longer covers it", commandName(c))
		}
	}
}

// checkReplies hands each status-0 reply frame with a body to the crate.
func checkReplies(t *testing.T, o *iggycodec.Oracle, code uint32, replies []byte) {
	t.Helper()
	for len(replies) >= proto.HeaderSize {
		h := proto.ParseReplyHeader(replies)
		if int(h.Size) > len(replies) || h.Size < proto.HeaderSize {
			t.Errorf("%s: iggytest wrote a torn reply", commandName(code))
			return
		}
		body := replies[proto.HeaderSize:h.Size]
		replies = replies[h.Size:]
		if h.Command != proto.CommandReply || h.Status != 0 || len(body) == 0 {
			continue
		}
		re, _, err := o.DecodeReply(code, body)
		if err != nil {
			t.Errorf("%s: Iggy's codec refuses iggytest's reply: %v\n %x", commandName(code), err, body)
			continue
		}
		if !bytes.Equal(re, body) {
			t.Errorf("%s: Iggy's codec re-encodes iggytest's reply differently:\n iggytest %x\n crate    %x", commandName(code), body, re)
		}
	}
}

// TestCodec012MutationsRefused: the oracle can fail. A 0.12 login without
// its bind secret, a retired operation, and a frame whose size lies are
// refused by Iggy's codec.
func TestCodec012MutationsRefused(t *testing.T) {
	o := iggycodec.Start(t)
	var secret [proto.BindSecretSize]byte
	client := proto.ClientID{Lo: 7}
	frame := func(op uint8, code uint32, body []byte) []byte {
		f := append(make([]byte, proto.HeaderSize), body...)
		var req, sess uint64
		if op != proto.OpRegister && op != proto.OpNonReplicated {
			req, sess = 1, 1
		}
		proto.PutRequestHeader(f, len(body), client, req, op, sess, code)
		if op != proto.OpNonReplicated && !proto.IsPartition(op) {
			proto.SetRequestChecksum(f, 99, 1)
		}
		return f
	}
	good := frame(proto.OpRegister, proto.CodeLoginRegister,
		proto.AppendLoginBody(nil, proto.Dialect012, &secret, sdkName, sdkVersion, "iggy", "iggy"))
	if _, err := o.Check(good); err != nil {
		t.Fatalf("the unmutated login is refused: %v", err)
	}
	noSecret := frame(proto.OpRegister, proto.CodeLoginRegister,
		proto.AppendLoginBody(nil, proto.Dialect011, nil, sdkName, sdkVersion, "iggy", "iggy"))
	binary.LittleEndian.PutUint32(noSecret[proto.HeaderSize:], proto.Dialect012.Version())
	if c, err := o.Check(noSecret); err == nil && bytes.Equal(c.Body, noSecret[proto.HeaderSize:]) {
		t.Errorf("a 0.12 login without its bind secret passes as %s", c.Debug)
	}
	retired := frame(proto.OpUpdateTopic, 0, proto.AppendStringID(proto.AppendStringID(nil, "kafka"), "t"))
	if _, err := o.Check(retired); err == nil {
		t.Error("UpdateTopic (133), retired in 0.12, passes")
	}
	short := bytes.Clone(good)
	binary.LittleEndian.PutUint32(short[48:], uint32(len(short)-1))
	if _, err := o.Check(short); err == nil {
		t.Error("a frame whose size field lies passes")
	}
}

// TestCodec012Replies: replies Iggy's codec encodes from randomized values
// decode in kiggy's 0.12 decoders to the same values (GetTopic, CreateTopic,
// GetTopics, GetClusterMetadata, LoginRegister, SendMessages,
// GetConsumerOffset, GetPartitionRoute, PollMessages). Values past what
// kiggy can represent (more than 2^31-1 partitions, offsets past 2^62) are
// refused as malformed, never misread.
func TestCodec012Replies(t *testing.T) {
	o := iggycodec.Start(t)
	d := proto.Dialect012
	for seed := uint64(1); seed <= 60; seed++ {
		for _, code := range []uint32{proto.CodeGetTopic, proto.CodeCreateTopic} {
			body, v := oracleReply(t, o, code, seed)
			got, err := decodeTopic(body, d, "kafka")
			topic := v["topic"].(map[string]any)
			if num(topic["partitions_count"]) > math.MaxInt32 {
				if err == nil {
					t.Errorf("%s seed %d: %d partitions decoded", commandName(code), seed, num(topic["partitions_count"]))
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s seed %d: %v\n%x", commandName(code), seed, err, body)
			}
			if uint64(got.id) != num(topic["id"]) || got.created != num(topic["created_at"]) || got.info.Name != topic["name"] ||
				uint64(got.info.Partitions) != num(topic["partitions_count"]) {
				t.Errorf("%s seed %d: kiggy read %+v, the crate wrote %v", commandName(code), seed, got, topic)
			}
			for i, p := range v["partitions"].([]any) {
				p := p.(map[string]any)
				ctx := p["context"].(map[string]any)
				gp := got.partitions[i]
				if uint64(gp.id) != num(p["id"]) || gp.currentOffset != num(p["current_offset"]) || gp.messages != num(p["messages_count"]) ||
					gp.context != (proto.PartitionContext{Incarnation: num(ctx["incarnation"]), OwnerGeneration: num(ctx["owner_generation"]), MetadataOp: num(ctx["metadata_op"])}) {
					t.Errorf("%s seed %d partition %d: kiggy read %+v, the crate wrote %v", commandName(code), seed, i, gp, p)
				}
			}
		}

		body, v := oracleReply(t, o, proto.CodeGetTopics, seed)
		topics, err := decodeTopics(body, d, "kafka")
		want := v["topics"].([]any)
		tooMany := false
		for _, x := range want {
			tooMany = tooMany || num(x.(map[string]any)["partitions_count"]) > math.MaxInt32
		}
		switch {
		case tooMany && err == nil:
			t.Errorf("GetTopics seed %d: more than 2^31-1 partitions decoded", seed)
		case !tooMany && err != nil:
			t.Fatalf("GetTopics seed %d: %v", seed, err)
		case !tooMany:
			if len(topics) != len(want) {
				t.Fatalf("GetTopics seed %d: %d topics, want %d", seed, len(topics), len(want))
			}
			for i, x := range want {
				x := x.(map[string]any)
				if topics[i].Name != x["name"] || uint64(topics[i].Partitions) != num(x["partitions_count"]) {
					t.Errorf("GetTopics seed %d topic %d: kiggy read %+v, the crate wrote %v", seed, i, topics[i], x)
				}
			}
		}

		body, v = oracleReply(t, o, proto.CodeGetClusterMetadata, seed)
		nodes, err := decodeClusterMetadata(body, d)
		if err != nil {
			t.Fatalf("GetClusterMetadata seed %d: %v", seed, err)
		}
		for i, n := range v["nodes"].([]any) {
			n := n.(map[string]any)
			addr := net.JoinHostPort(n["ip"].(string), strconv.FormatUint(num(n["tcp_port"]), 10))
			leader := num(n["role"]) == roleLeader && num(n["status"]) == statusHealthy
			if nodes[i].name != n["name"] || nodes[i].addr != addr || nodes[i].leader != leader {
				t.Errorf("GetClusterMetadata seed %d node %d: kiggy read %+v, the crate wrote %v", seed, i, nodes[i], n)
			}
		}

		body, v = oracleReply(t, o, proto.CodeLoginRegister, seed)
		sess, server, err := decodeLoginReply(body)
		if num(v["session"]) == 0 {
			if err == nil {
				t.Errorf("LoginRegister seed %d: session 0 accepted", seed)
			}
		} else if err != nil || sess != num(v["session"]) || string(server) != v["server_version"] {
			t.Errorf("LoginRegister seed %d: kiggy read %d %q %v, the crate wrote %v", seed, sess, server, err, v)
		}

		body, v = oracleReply(t, o, proto.CodeSendMessages, seed)
		base, err := decodeConfirmation(body)
		conf := v["confirmations"].([]any)
		switch {
		case len(conf) == 0:
			if err != nil || base != -1 {
				t.Errorf("SendMessages seed %d: no confirmations read as %d %v", seed, base, err)
			}
		case num(conf[0].(map[string]any)["base_offset"]) > 1<<62:
			if err == nil {
				t.Errorf("SendMessages seed %d: base offset past 2^62 accepted", seed)
			}
		case err != nil || uint64(base) != num(conf[0].(map[string]any)["base_offset"]):
			t.Errorf("SendMessages seed %d: kiggy read %d %v, the crate wrote %v", seed, base, err, conf[0])
		}

		body, v = oracleReply(t, o, proto.CodeGetConsumerOffset, seed)
		stored, err := decodeStoredOffset(body)
		if want := num(v["stored_offset"]); want >= 1<<62 {
			if err == nil {
				t.Errorf("GetConsumerOffset seed %d: %d accepted", seed, want)
			}
		} else if err != nil || stored != want {
			t.Errorf("GetConsumerOffset seed %d: kiggy read %d %v, the crate wrote %v", seed, stored, err, v)
		}

		body, v = oracleReply(t, o, proto.CodeGetPartitionRoute, seed)
		if replica, err := decodePartitionRoute(body); err != nil || uint64(replica) != num(v["primary_replica"]) {
			t.Errorf("GetPartitionRoute seed %d: kiggy read replica %d %v, the crate wrote %v", seed, replica, err, v)
		}

		checkPollReply(t, o, seed)
	}
}

// checkPollReply decodes an Iggy-encoded poll reply with kiggy's walk.
func checkPollReply(t *testing.T, o *iggycodec.Oracle, seed uint64) {
	t.Helper()
	body, v := oracleReply(t, o, proto.CodePollMessages, seed)
	s := newSession(&Client{cfg: Config{Stream: "kafka"}})
	s.dialect = proto.Dialect012
	want := v["messages"].([]any)
	var got []message.Message
	res, err := s.walkPoll(body, 0, 1<<30, true, 0, func(m *message.Message) bool {
		c := *m
		c.Payload, c.Headers = bytes.Clone(m.Payload), bytes.Clone(m.Headers)
		got = append(got, c)
		return true
	})
	if err != nil {
		t.Fatalf("PollMessages seed %d: %v\n%x", seed, err, body)
	}
	if res.current != num(v["current_offset"]) || len(got) != len(want) {
		t.Fatalf("PollMessages seed %d: kiggy read current %d and %d messages, the crate wrote %v", seed, res.current, len(got), v)
	}
	for i, w := range want {
		w := w.(map[string]any)
		id, _ := new(big.Int).SetString(w["id"].(string), 10)
		var wantID [16]byte
		id.FillBytes(wantID[:]) // big-endian; the wire is little-endian u128
		slices.Reverse(wantID[:])
		g := got[i]
		if uint64(g.Offset) != num(w["offset"]) || g.Timestamp != num(w["timestamp"]) || g.OriginTimestamp != num(w["origin_timestamp"]) ||
			g.ID != wantID || hex.EncodeToString(g.Payload) != w["payload"] || hex.EncodeToString(g.Headers) != w["user_headers"] {
			t.Errorf("PollMessages seed %d message %d: kiggy read %+v, the crate wrote %v", seed, i, g, w)
		}
	}
}

// oracleReply returns a reply body for code from Iggy's codec, the result
// section of a result-framed one removed as the session removes it.
func oracleReply(t *testing.T, o *iggycodec.Oracle, code uint32, seed uint64) ([]byte, map[string]any) {
	t.Helper()
	body, v, err := o.Reply(code, seed)
	if err != nil {
		t.Fatalf("%s seed %d: %v", commandName(code), seed, err)
	}
	op, framed, _, err := o.Framing(code)
	if err != nil {
		t.Fatal(err)
	}
	if framed {
		if op != proto.OperationFor(code) && code != proto.CodeLoginRegister {
			t.Fatalf("%s: the crate sends operation %d, kiggy %d", commandName(code), op, proto.OperationFor(code))
		}
		rest, _, err := resultSection(proto.OperationFor(code), 0, body)
		if err != nil {
			t.Fatalf("%s seed %d: result section: %v", commandName(code), seed, err)
		}
		body = rest
	}
	return body, v
}

// num reads a JSON number or a decimal string (the oracle's u64) as uint64.
func num(v any) uint64 {
	switch x := v.(type) {
	case json.Number:
		n, _ := strconv.ParseUint(string(x), 10, 64)
		return n
	case string:
		n, _ := strconv.ParseUint(x, 10, 64)
		return n
	case float64:
		return uint64(x)
	}
	return 0
}
