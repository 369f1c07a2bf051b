package iggytest

import (
	"slices"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/zeebo/xxh3"
)

// validSend builds a SendMessages body for stream 0, topic 0, partition p.
func validSend(p uint32) []byte {
	return sendBody(proto.PartitionID, proto.AppendU32(nil, p))
}

// sendBody builds a SendMessages body for stream 0, topic 0 with the given
// partitioning (§2.5): three messages with a header each.
func sendBody(kind uint8, value []byte) []byte {
	var b message.Batch
	b.Reset(10)
	for i := range 3 {
		b.Begin(10 + uint64(i))
		b.AppendPayloadString("payload")
		b.MarkHeaders()
		b.AppendHeader(message.KindString, "kafka.v", message.KindRaw, []byte{1})
		b.End()
	}
	proto.StampFrames(b.Frames(), b.Count)
	hdr := make([]byte, proto.BatchHeaderSize)
	proto.SealBatch(xxh3.New(), hdr, b.Frames(), b.Count, b.Origin)
	body := proto.AppendU32(nil, uint32(18+len(value)))
	body = proto.AppendNumericID(body, 0)
	body = proto.AppendNumericID(body, 0)
	body = append(body, kind, uint8(len(value)))
	body = append(body, value...)
	body = proto.AppendU32(body, uint32(b.Count))
	body = append(body, hdr...)
	return append(body, b.Frames()...)
}

func topicID(b []byte) []byte { return proto.AppendNumericID(proto.AppendNumericID(b, 0), 0) }

// processSeed is one FuzzProcess (0.11) or FuzzProcess012 seed: a request
// sent on the harness's logged-in connection, and the reply status the
// harness expects when the seeds are replayed in order (-1: no reply, or an
// Eviction); raw is the same for the raw-frame path (-1 also when the body
// is not a whole frame). sum is the request_checksum (0.12 only: FuzzProcess
// sends none).
type processSeed struct {
	name string
	op   uint8
	code uint32
	req  uint64
	sum  uint64
	body []byte
	want int64
	raw  int64
}

// fuzzSecret is the bind secret of the 0.12 harness's login.
var fuzzSecret = [proto.BindSecretSize]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
	17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}

// fuzzLogin is the harness's login body in dialect d.
func fuzzLogin(d proto.Dialect) []byte {
	return proto.AppendLoginBody(nil, d, &fuzzSecret, "f", "0", "iggy", "iggy")
}

// processSeeds returns one well-formed request per command the server
// implements in dialect d, in an order where each finds what it needs (the
// harness's stream 0 "s", topic 0 "t" with two partitions and three
// messages in partition 1, then what earlier seeds create), and the
// requests d does not define, which are dropped. Metadata requests carry
// increasing request numbers above the harness's own (§1.4 watermark), and
// in 0.12 a request identifier (§9). A few seeds carry a whole frame as the
// body for the harness's raw-frame path on a fresh connection.
func processSeeds(d proto.Dialect) []processSeed {
	const ok, none = 0, -1
	n := proto.AppendNumericID
	sid := proto.AppendStringID
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	u8 := func(v ...uint8) []byte { return v }
	u32, u64 := proto.AppendU32, proto.AppendU64
	// Clipped: seeds append to it, each into a copy of its own.
	byName := slices.Clip(cat(sid(nil, "s"), sid(nil, "t")))
	// poll: consumer kind and id, stream, topic, partition flag and id,
	// strategy and value, count, auto-commit (§3.8).
	poll := func(kind uint8, consumer []byte, strategy uint8, value uint64, autoCommit uint8) []byte {
		return cat(u8(kind), consumer, topicID(nil), u8(1), u32(nil, 1), u8(strategy), u64(nil, value), u32(nil, 10), u8(autoCommit))
	}
	// offset: consumer kind and id, stream, topic, partition flag and id (§3.9).
	offset := func(kind uint8, consumer []byte) []byte {
		return cat(u8(kind), consumer, topicID(nil), u8(1), u32(nil, 1))
	}
	single, group := sid(nil, "kafka.cg.g"), n(nil, 0)
	option := func(key string, kind uint8, val []byte) []byte {
		return cat(u8(proto.KindString), proto.AppendLongString(nil, key), u8(kind), proto.AppendLongString(nil, string(val)))
	}
	topicOpts := cat(
		proto.AppendOptionU64(nil, "message_expiry", 60_000_000),
		proto.AppendOptionU64(nil, "max_topic_size", 2<<30),
		option("compression_algorithm", proto.KindString, []byte("gzip")),
		option("segment_size", proto.KindString, []byte("1GiB")),
	)
	// frame is a whole request; stamp puts XXH3 of the body in
	// request_checksum, as kiggy stamps a login (§9).
	frame := func(req uint64, op uint8, session uint64, code uint32, body []byte, stamp bool) []byte {
		f := make([]byte, proto.HeaderSize, proto.HeaderSize+len(body))
		proto.PutRequestHeader(f, len(body), proto.ClientID{Lo: 2}, req, op, session, code)
		if stamp {
			proto.SetRequestChecksum(f, xxh3.Hash(body), 0)
		}
		return append(f, body...)
	}
	login := proto.AppendLoginBody(nil, proto.Dialect011, nil, "f", "0", "iggy", "iggy")
	// 0.12: UpdateResource (§9) of topic 0: scope 1 (topic), the topic's
	// identifiers, the keys to reset, the options to set.
	update := func(scope uint8, reset []string, opts []byte) []byte {
		b := topicID(u8(scope))
		b = append(b, uint8(len(reset)))
		for _, k := range reset {
			b = proto.AppendName(b, k)
		}
		return append(b, opts...)
	}
	route := func(p uint32) []byte { return u32(topicID(nil), p) }
	// 0.12 WaitForMessages on partition 1 of stream "s", topic "t" (wait.go).
	waitTimeout := func(waitUS, timeoutUS uint64) []byte {
		return proto.AppendWaitForMessages(nil, "s", "t", waitUS, timeoutUS, []uint32{1}, []uint64{0})
	}
	wait := func(waitUS, offset uint64) []byte {
		return proto.AppendWaitForMessages(nil, "s", "t", waitUS, waitUS+2_000_000, []uint32{1}, []uint64{offset})
	}
	waitPart := func(p uint32) []byte {
		return proto.AppendWaitForMessages(nil, "s", "t", 0, 1, []uint32{p}, []uint64{0})
	}
	wrong := fuzzSecret
	wrong[0] ^= 0xff
	// The harness's session is the server's first commit op: 1.
	bind := proto.AppendBindSessionBody(nil, proto.Dialect012, proto.ClientID{Lo: 1}, 1, 0, &fuzzSecret, "f", "0")
	badBind := proto.AppendBindSessionBody(nil, proto.Dialect012, proto.ClientID{Lo: 1}, 1, 0, &wrong, "f", "0")

	seeds := []processSeed{
		// Reads (operation 2, the command code in the header).
		{"ping", proto.OpNonReplicated, proto.CodePing, 1, 0, nil, ok, none},
		{"cluster metadata", proto.OpNonReplicated, proto.CodeGetClusterMetadata, 1, 0, nil, ok, none},
		{"me", proto.OpNonReplicated, proto.CodeGetMe, 1, 0, nil, ok, none},
		{"get stream", proto.OpNonReplicated, proto.CodeGetStream, 1, 0, n(nil, 0), ok, none},
		{"get stream by name", proto.OpNonReplicated, proto.CodeGetStream, 1, 0, sid(nil, "s"), ok, none},
		{"get streams", proto.OpNonReplicated, proto.CodeGetStreams, 1, 0, nil, ok, none},
		{"get topic", proto.OpNonReplicated, proto.CodeGetTopic, 11, 0, topicID(nil), ok, none},
		{"get topic by name", proto.OpNonReplicated, proto.CodeGetTopic, 1, 0, byName, ok, none},
		{"get topics", proto.OpNonReplicated, proto.CodeGetTopics, 1, 0, n(nil, 0), ok, none},
		{"poll offset", proto.OpNonReplicated, proto.CodePollMessages, 6, 0, poll(proto.ConsumerSingle, n(nil, 0), proto.PollOffset, 0, 1), ok, none},
		{"poll timestamp", proto.OpNonReplicated, proto.CodePollMessages, 1, 0, poll(proto.ConsumerSingle, n(nil, 0), proto.PollTimestamp, 1, 0), ok, none},
		{"poll first", proto.OpNonReplicated, proto.CodePollMessages, 1, 0, poll(proto.ConsumerSingle, single, proto.PollFirst, 0, 0), ok, none},
		{"poll last", proto.OpNonReplicated, proto.CodePollMessages, 1, 0, poll(proto.ConsumerSingle, single, proto.PollLast, 0, 0), ok, none},
		{"poll next", proto.OpNonReplicated, proto.CodePollMessages, 1, 0, poll(proto.ConsumerSingle, n(nil, 0), proto.PollNext, 0, 1), ok, none},
		{"poll undecodable", proto.OpNonReplicated, proto.CodePollMessages, 1, 0, u8(proto.ConsumerSingle), ok, none},
		{"get offset", proto.OpNonReplicated, proto.CodeGetConsumerOffset, 7, 0, offset(proto.ConsumerSingle, single), ok, none},
		{"unknown code", proto.OpNonReplicated, proto.CodeGetStats, 1, 0, nil, int64(proto.CodeInvalidCommand), none},
		{"legacy login", proto.OpNonReplicated, proto.CodeLoginUser, 1, 0, login, none, none},
	}
	if d == proto.Dialect012 {
		seeds = append(seeds,
			// GetPartitionRoute (§9): [stream][topic][partition u32].
			processSeed{"partition route", proto.OpNonReplicated, proto.CodeGetPartitionRoute, 1, 0, route(1), ok, none},
			processSeed{"partition route, no such partition", proto.OpNonReplicated, proto.CodeGetPartitionRoute, 1, 0, route(9), int64(proto.CodePartitionNotFound), none},
			processSeed{"wait, ready", proto.OpNonReplicated, proto.CodeWaitForMessages, 1, 0, wait(0, 0), ok, none},
			processSeed{"wait, none at once", proto.OpNonReplicated, proto.CodeWaitForMessages, 1, 0, wait(0, 1<<40), ok, none},
			processSeed{"wait, parked", proto.OpNonReplicated, proto.CodeWaitForMessages, 1, 0, wait(1_000_000, 1<<40), none, none},
			processSeed{"cancel the parked wait", proto.OpNonReplicated, proto.CodeCancelDeferredRequest, 1, 0, nil, none, none},
			processSeed{"wait, timeout under the margin", proto.OpNonReplicated, proto.CodeWaitForMessages, 1, 0, waitTimeout(1, 1), int64(proto.CodeInvalidCommand), none},
			processSeed{"wait, no such partition", proto.OpNonReplicated, proto.CodeWaitForMessages, 1, 0, waitPart(9), int64(proto.CodePartitionNotFound), none},
			processSeed{"partition route, short", proto.OpNonReplicated, proto.CodeGetPartitionRoute, 1, 0, topicID(nil), int64(proto.CodeInvalidCommand), none},
			// BindSession (§9) of the harness's own session, then with a
			// wrong secret: evicted.
			processSeed{"bind session", proto.OpNonReplicated, proto.CodeBindSession, 1, 0, bind, ok, none},
			processSeed{"bind session, wrong secret", proto.OpNonReplicated, proto.CodeBindSession, 1, 0, badBind, none, none},
			processSeed{"bind session, short", proto.OpNonReplicated, proto.CodeBindSession, 1, 0, bind[:len(bind)-1], none, none},
		)
	} else {
		seeds = append(seeds,
			processSeed{"partition route (0.12 only)", proto.OpNonReplicated, proto.CodeGetPartitionRoute, 1, 0, route(1), int64(proto.CodeInvalidCommand), none},
			processSeed{"wait (0.12 only)", proto.OpNonReplicated, proto.CodeWaitForMessages, 1, 0, wait(0, 0), int64(proto.CodeInvalidCommand), none},
			processSeed{"cancel (0.12 only)", proto.OpNonReplicated, proto.CodeCancelDeferredRequest, 1, 0, nil, int64(proto.CodeInvalidCommand), none},
			processSeed{"bind session (0.12 only)", proto.OpNonReplicated, proto.CodeBindSession, 1, 0, bind, none, none},
		)
	}
	seeds = append(seeds, []processSeed{
		// Metadata writes (replicated operations, request numbers above 2).
		{"create stream", proto.OpCreateStream, 0, 100, 0, proto.AppendName(nil, "other"), ok, none},
		{"create topic", proto.OpCreateTopic, 0, 101, 0, cat(proto.AppendName(u32(n(nil, 0), 2), "t2"), topicOpts), ok, none},
		{"create group", proto.OpCreateConsumerGroup, 0, 102, 0, proto.AppendName(topicID(nil), "grp"), ok, none},
		{"join group", proto.OpJoinConsumerGroup, 0, 103, 0, n(topicID(nil), 0), ok, none},
		{"create partitions", proto.OpCreatePartitions, 0, 104, 0, u32(topicID(nil), 2), ok, none},
		{"replayed create partitions", proto.OpCreatePartitions, 0, 104, 0, u32(topicID(nil), 2), ok, none},
		{"create group 2", proto.OpCreateConsumerGroup, 0, 105, 0, proto.AppendName(byName, "grp2"), ok, none},
		{"join group 2", proto.OpJoinConsumerGroup, 0, 106, 0, sid(byName, "grp2"), ok, none},
		{"leave group 2", proto.OpLeaveConsumerGroup, 0, 107, 0, sid(byName, "grp2"), ok, none},
		{"delete group 2", proto.OpDeleteConsumerGroup, 0, 108, 0, sid(byName, "grp2"), ok, none},
		{"delete topic", proto.OpDeleteTopic, 0, 109, 0, sid(n(nil, 0), "t2"), ok, none},
		{"delete stream", proto.OpDeleteStream, 0, 110, 0, sid(nil, "other"), ok, none},
	}...)
	expiry := proto.AppendOptionU64(nil, "message_expiry", 120_000_000)
	if d == proto.Dialect012 {
		seeds = append(seeds, []processSeed{
			// Retired in 0.12: dropped as invalid headers.
			{"update stream (retired)", proto.OpUpdateStream, 0, 111, 0, proto.AppendName(n(nil, 0), "s"), none, none},
			{"update topic (retired)", proto.OpUpdateTopic, 0, 111, 0, cat(proto.AppendName(topicID(nil), "t"), expiry), none, none},
			// UpdateResource (§9): set a key, reset it, and the refusals.
			{"update resource, set", proto.OpUpdateResource, 0, 111, 0, update(1, nil, expiry), ok, none},
			{"update resource, reset", proto.OpUpdateResource, 0, 112, 0, update(1, []string{"message_expiry", "max_topic_size"}, nil), ok, none},
			{"update resource, set and reset", proto.OpUpdateResource, 0, 113, 0, update(1, []string{"message_expiry"}, expiry), int64(proto.CodeInvalidCommand), none},
			{"update resource, nothing", proto.OpUpdateResource, 0, 113, 0, update(1, nil, nil), int64(proto.CodeInvalidCommand), none},
			{"update resource, stream scope", proto.OpUpdateResource, 0, 113, 0, update(2, nil, expiry), int64(proto.CodeInvalidCommand), none},
			{"update resource, durability", proto.OpUpdateResource, 0, 113, 0, update(1, nil, proto.AppendOptionString(nil, "durability", "persisted")), int64(proto.CodeUnsupportedOptionKey), none},
			// 0.12's topic options (§9): durability, no enforce_fsync.
			{"create topic, persisted", proto.OpCreateTopic, 0, 113, 0, cat(proto.AppendName(u32(n(nil, 0), 1), "t3"), proto.AppendOptionString(nil, "durability", "persisted")), ok, none},
			{"create topic, bad durability", proto.OpCreateTopic, 0, 114, 0, cat(proto.AppendName(u32(n(nil, 0), 1), "t4"), proto.AppendOptionString(nil, "durability", "fsync")), int64(proto.CodeInvalidOptionValue), none},
			{"create topic, enforce_fsync", proto.OpCreateTopic, 0, 114, 0, cat(proto.AppendName(u32(n(nil, 0), 1), "t4"), proto.AppendOptionBool(nil, "enforce_fsync", true)), int64(proto.CodeUnsupportedOptionKey), none},
			{"delete topic 3", proto.OpDeleteTopic, 0, 114, 0, sid(n(nil, 0), "t3"), ok, none},
			// A metadata request without a request identifier.
			{"unstamped create stream", proto.OpCreateStream, 0, 115, 0, proto.AppendName(nil, "x"), int64(proto.CodeInvalidFormat), none},
		}...)
	} else {
		seeds = append(seeds, []processSeed{
			{"update stream", proto.OpUpdateStream, 0, 111, 0, proto.AppendName(n(nil, 0), "s"), int64(proto.CodeFeatureUnavailable), none},
			{"update topic", proto.OpUpdateTopic, 0, 111, 0, cat(proto.AppendName(topicID(nil), "t"), expiry), ok, none},
			{"update resource (0.12 only)", proto.OpUpdateResource, 0, 112, 0, update(1, nil, expiry), none, none},
		}...)
	}
	seeds = append(seeds, []processSeed{
		// Group reads, as a member of group 0.
		{"get group", proto.OpNonReplicated, proto.CodeGetConsumerGroup, 1, 0, n(topicID(nil), 0), ok, none},
		{"get groups", proto.OpNonReplicated, proto.CodeGetConsumerGroups, 1, 0, topicID(nil), ok, none},
		{"sync group", proto.OpNonReplicated, proto.CodeSyncConsumerGroup, 10, 0, n(topicID(nil), 0), ok, none},
		{"poll group", proto.OpNonReplicated, proto.CodePollMessages, 1, 0, poll(proto.ConsumerGroup, group, proto.PollNext, 0, 1), ok, none},

		// Partition writes (request numbers are not checked in 0.11; in
		// 0.12 a write sent again under the last one's number gets its
		// receipt).
		{"send to partition", proto.OpSendMessages, 0, 5, 0, validSend(1), ok, none},
		{"send balanced", proto.OpSendMessages, 0, 50, 0, sendBody(proto.PartitionBalanced, nil), ok, none},
		{"send by key", proto.OpSendMessages, 0, 51, 0, sendBody(proto.PartitionMessagesKey, []byte("k")), ok, none},
		{"send by key again", proto.OpSendMessages, 0, 51, 0, sendBody(proto.PartitionMessagesKey, []byte("k")), ok, none},
		{"store offset", proto.OpStoreConsumerOffset, 0, 8, 0, cat(offset(proto.ConsumerSingle, single), u64(nil, 1), u8(1)), ok, none},
		{"get offset", proto.OpNonReplicated, proto.CodeGetConsumerOffset, 7, 0, offset(proto.ConsumerSingle, single), ok, none},
		{"delete offset", proto.OpDeleteConsumerOffset, 0, 9, 0, cat(offset(proto.ConsumerSingle, single), u8(1)), ok, none},
		{"store group offset", proto.OpStoreConsumerOffset, 0, 8, 0, cat(offset(proto.ConsumerGroup, group), u64(nil, 2), u8(1)), ok, none},
		{"get group offset", proto.OpNonReplicated, proto.CodeGetConsumerOffset, 7, 0, offset(proto.ConsumerGroup, group), ok, none},
		{"delete group offset", proto.OpDeleteConsumerOffset, 0, 9, 0, cat(offset(proto.ConsumerGroup, group), u8(1)), ok, none},

		// Whole frames for the raw path (the logged-in connection reads
		// them as bodies of a ping).
		{"raw login, checksummed", proto.OpNonReplicated, proto.CodePing, 1, 0, frame(0, proto.OpRegister, 0, 0, login, true), ok, ok},
		{"raw PAT login", proto.OpNonReplicated, proto.CodePing, 1, 0, frame(0, proto.OpRegister, 0, 0, proto.AppendPATLoginBody(nil, proto.Dialect011, nil, "f", "0", "tok"), false), ok, none},
		{"raw ping", proto.OpNonReplicated, proto.CodePing, 1, 0, frame(1, proto.OpNonReplicated, 0, proto.CodePing, nil, false), ok, ok},
		{"raw write before login", proto.OpNonReplicated, proto.CodePing, 1, 0, frame(1, proto.OpCreateStream, 1, 0, proto.AppendName(nil, "x"), false), ok, none},
	}...)
	if d == proto.Dialect012 {
		seeds = append(seeds, []processSeed{
			// A 0.12 login on a fresh connection must carry a request
			// identifier; BindSession moves the harness's session to it.
			{"raw 0.12 login", proto.OpNonReplicated, proto.CodePing, 1, 0, frame(0, proto.OpRegister, 0, 0, fuzzLogin(proto.Dialect012), true), ok, ok},
			{"raw 0.12 login, unstamped", proto.OpNonReplicated, proto.CodePing, 1, 0, frame(0, proto.OpRegister, 0, 0, fuzzLogin(proto.Dialect012), false), ok, int64(proto.CodeInvalidFormat)},
			{"raw bind session", proto.OpNonReplicated, proto.CodePing, 1, 0, frame(1, proto.OpNonReplicated, 0, proto.CodeBindSession, bind, false), ok, ok},
			{"raw bind session, wrong secret", proto.OpNonReplicated, proto.CodePing, 1, 0, frame(1, proto.OpNonReplicated, 0, proto.CodeBindSession, badBind, false), ok, none},
		}...)
	}
	// Logout last: the harness logs in again after it.
	seeds = append(seeds, processSeed{"logout", proto.OpLogout, 0, 116, 0, nil, ok, none})
	if d == proto.Dialect012 {
		// §9: a random non-zero identifier on every metadata request.
		for i := range seeds {
			s := &seeds[i]
			if proto.IsMetadata(s.op) && s.name != "unstamped create stream" {
				s.sum = 0x9e3779b97f4a7c15 ^ s.req
			}
		}
	}
	return seeds
}

// fuzzHarness is FuzzProcess's server: a connection logged in with dialect
// d on a server holding stream 0 "s", topic 0 "t" with two partitions, and
// three messages in partition 1.
type fuzzHarness struct {
	s  *Server
	st *connState
	d  proto.Dialect
}

func newFuzzHarness(tb testing.TB, d proto.Dialect) *fuzzHarness {
	// Both dialects whatever KIGGY_IGGY_PROTOCOL says: the raw-frame path
	// logs in with either.
	h := &fuzzHarness{s: New(Config{Dialects: proto.Dialects[:]}), st: &connState{connID: 1}, d: d}
	h.setup(proto.OpRegister, proto.CodeLoginRegister, 0, fuzzLogin(d))
	h.setup(proto.OpCreateStream, 0, 1, proto.AppendName(nil, "s"))
	h.setup(proto.OpCreateTopic, 0, 2, proto.AppendName(proto.AppendU32(proto.AppendNumericID(nil, 0), 2), "t"))
	h.setup(proto.OpSendMessages, 0, 3, validSend(1))
	if !h.st.bound || h.st.dialect != d {
		tb.Fatal("setup login failed")
	}
	return h
}

// setup sends one of the harness's own requests; in 0.12 each carries a
// request identifier, XXH3 of its body as kiggy stamps a login.
func (h *fuzzHarness) setup(op uint8, code uint32, req uint64, body []byte) {
	frame := make([]byte, proto.HeaderSize)
	proto.PutRequestHeader(frame, len(body), proto.ClientID{Lo: 1}, req, op, h.st.session, code)
	if h.d == proto.Dialect012 {
		proto.SetRequestChecksum(frame, xxh3.Hash(body), 0)
	}
	h.s.process(h.st, append(frame, body...), nil)
}

// run serves one fuzz input and returns the replies on the logged-in
// connection and on the raw-frame path. sum is the request_checksum.
func (h *fuzzHarness) run(op uint8, code uint32, req, sum uint64, body []byte) (out, raw []byte) {
	st := h.st
	frame := make([]byte, proto.HeaderSize, proto.HeaderSize+len(body))
	proto.PutRequestHeader(frame, len(body), st.client, req, op, st.session, code)
	proto.SetRequestChecksum(frame, sum, 0)
	frame = append(frame, body...)
	out, _ = h.s.process(st, frame, nil)
	// The same bytes as a raw frame (header included) from the fuzzer.
	if len(body) >= proto.HeaderSize {
		raw, _ = h.s.process(&connState{connID: 2}, append([]byte(nil), body...), nil)
	}
	if !st.bound { // a Logout: log in again for the next input
		st.client = proto.ClientID{Lo: 1}
		h.setup(proto.OpRegister, proto.CodeLoginRegister, 0, fuzzLogin(h.d))
	}
	return out, raw
}

// replayed reports whether a metadata request numbered req is answered from
// the client's reply cache (§1.4: the request number at the watermark).
func (h *fuzzHarness) replayed(op uint8, req uint64) bool {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	cs := h.s.clients[h.st.client]
	return proto.IsMetadata(op) && cs != nil && req == cs.watermark && cs.lastReply != nil
}

// check applies the invariants every reply on the harness's connection
// meets, beyond checkFrames: a status-0 poll reply has the dialect's head,
// and in 0.12 a status-0 reply to a metadata request is marked committed
// (§9: byte 220), a replay from the reply cache included (replay says
// which, for the seeds that expect one).
func (h *fuzzHarness) check(t *testing.T, op uint8, code uint32, out []byte, replay bool) {
	if replyStatus(out) != 0 {
		return
	}
	body := out[proto.HeaderSize:proto.FrameSize(out)]
	if op == proto.OpNonReplicated && code == proto.CodePollMessages && len(body) < h.d.PollReplyHeaderSize() {
		t.Fatalf("poll reply of %d bytes, the head alone is %d", len(body), h.d.PollReplyHeaderSize())
	}
	if h.d == proto.Dialect012 && proto.IsMetadata(op) && out[220] != 1 {
		t.Fatalf("status-0 reply to metadata operation %d not marked committed (replayed: %v)", op, replay)
	}
}

// FuzzProcess feeds arbitrary requests to the server's frame handler, on a
// connection logged in with protocol 0.11, of a server holding a stream, a
// topic and messages. It must never panic, and every reply it writes must
// be well framed.
func FuzzProcess(f *testing.F) {
	for _, s := range processSeeds(proto.Dialect011) {
		f.Add(s.op, s.code, s.req, s.body)
	}
	h := newFuzzHarness(f, proto.Dialect011)
	f.Fuzz(func(t *testing.T, op uint8, code uint32, req uint64, body []byte) {
		replay := h.replayed(op, req)
		out, raw := h.run(op, code, req, 0, body)
		checkFrames(t, out)
		checkFrames(t, raw)
		h.check(t, op, code, out, replay)
	})
}

// FuzzProcess012 is FuzzProcess on a connection logged in with protocol
// 0.12 (§9), the request_checksum drawn from the input too.
func FuzzProcess012(f *testing.F) {
	for _, s := range processSeeds(proto.Dialect012) {
		f.Add(s.op, s.code, s.req, s.sum, s.body)
	}
	h := newFuzzHarness(f, proto.Dialect012)
	f.Fuzz(func(t *testing.T, op uint8, code uint32, req, sum uint64, body []byte) {
		replay := h.replayed(op, req)
		out, raw := h.run(op, code, req, sum, body)
		checkFrames(t, out)
		checkFrames(t, raw)
		h.check(t, op, code, out, replay)
	})
}

// TestProcessSeeds replays FuzzProcess's and FuzzProcess012's seeds in
// order and checks each gets the reply it was written for, so the seeds
// stay well-formed requests as the server changes.
func TestProcessSeeds(t *testing.T) {
	for _, d := range proto.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			h := newFuzzHarness(t, d)
			for _, s := range processSeeds(d) {
				replay := h.replayed(s.op, s.req)
				out, raw := h.run(s.op, s.code, s.req, s.sum, s.body)
				checkFrames(t, out)
				checkFrames(t, raw)
				h.check(t, s.op, s.code, out, replay)
				if got := replyStatus(out); got != s.want {
					t.Errorf("%s: status %d, want %d", s.name, got, s.want)
				} else if s.want == 0 && proto.ResultFramed(s.op) {
					// A metadata or offset write's result section: count 0 = OK (§1.7).
					body := out[proto.HeaderSize:]
					if len(body) < 4 || body[0]|body[1]|body[2]|body[3] != 0 {
						t.Errorf("%s: result section %x", s.name, body[:min(len(body), 12)])
					}
				}
				if got := replyStatus(raw); got != s.raw {
					t.Errorf("%s: raw-path status %d, want %d", s.name, got, s.raw)
				}
			}
		})
	}
}

// replyStatus is the status of the first reply in out, or -1 for none or
// an Eviction.
func replyStatus(out []byte) int64 {
	if len(out) < proto.HeaderSize {
		return -1
	}
	r := proto.ParseReplyHeader(out)
	if r.Command != proto.CommandReply {
		return -1
	}
	return int64(r.Status)
}

func checkFrames(t *testing.T, out []byte) {
	for len(out) > 0 {
		if len(out) < proto.HeaderSize {
			t.Fatalf("partial header in reply stream")
		}
		n := int(proto.FrameSize(out))
		if n < proto.HeaderSize || n > len(out) {
			t.Fatalf("reply frame size %d of %d", n, len(out))
		}
		h := proto.ParseReplyHeader(out)
		if h.Command != proto.CommandReply && h.Command != proto.CommandEviction {
			t.Fatalf("reply command %d", h.Command)
		}
		if h.Command == proto.CommandReply && h.Status != 0 && n != proto.HeaderSize {
			t.Fatalf("status %d with a body", h.Status)
		}
		out = out[n:]
	}
}

// FuzzPartitionRef feeds arbitrary bodies to the prefix readers that find a
// request's partition for Cluster.SetPartitionPrimary and PartitionReads:
// they must never panic, and a partition they find is named by a non-empty
// topic.
func FuzzPartitionRef(f *testing.F) {
	send := proto.AppendU32(nil, 14)
	send = proto.AppendStringID(send, "s")
	send = proto.AppendStringID(send, "topic")
	send = append(send, proto.PartitionID, 4)
	send = proto.AppendU32(send, 1)
	f.Add(send)
	off := []byte{proto.ConsumerSingle}
	off = proto.AppendStringID(off, "kafka.cg.g")
	off = proto.AppendStringID(off, "s")
	off = proto.AppendStringID(off, "topic")
	off = append(off, 1)
	off = proto.AppendU32(off, 2)
	f.Add(off)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, read := range []func([]byte) (partRef, bool){sendPartition, consumerPartition} {
			if k, ok := read(body); ok && k.topic == "" {
				t.Fatalf("partition %d of an empty topic name", k.partition)
			}
		}
	})
}
