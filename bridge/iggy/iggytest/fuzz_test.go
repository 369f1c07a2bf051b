package iggytest

import (
	"testing"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/zeebo/xxh3"
)

// validSend builds a SendMessages body for stream 0, topic 0, partition p.
func validSend(p uint32) []byte {
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
	body := proto.AppendU32(nil, 22)
	body = proto.AppendNumericID(body, 0)
	body = proto.AppendNumericID(body, 0)
	body = append(body, proto.PartitionID, 4)
	body = proto.AppendU32(body, p)
	body = proto.AppendU32(body, uint32(b.Count))
	body = append(body, hdr...)
	return append(body, b.Frames()...)
}

func topicID(b []byte) []byte { return proto.AppendNumericID(proto.AppendNumericID(b, 0), 0) }

// FuzzProcess feeds arbitrary requests to the server's frame handler, on a
// logged-in connection of a server holding a stream, a topic and messages.
// It must never panic, and every reply it writes must be well framed.
func FuzzProcess(f *testing.F) {
	f.Add(proto.OpRegister, uint32(0), uint64(0), proto.AppendLoginBody(nil, "f", "0", "iggy", "iggy"))
	f.Add(proto.OpNonReplicated, proto.CodePing, uint64(1), []byte{})
	f.Add(proto.OpCreateStream, uint32(0), uint64(100), proto.AppendName(nil, "other"))
	ct := proto.AppendU32(proto.AppendNumericID(nil, 0), 2)
	ct = proto.AppendName(ct, "t2")
	f.Add(proto.OpCreateTopic, uint32(0), uint64(101), proto.AppendOptionU64(ct, "message_expiry", 60_000_000))
	f.Add(proto.OpSendMessages, uint32(0), uint64(5), validSend(1))
	poll := append([]byte{proto.ConsumerSingle}, proto.AppendNumericID(nil, 0)...)
	poll = append(topicID(poll), 1, 1, 0, 0, 0, proto.PollOffset)
	poll = proto.AppendU64(poll, 0)
	poll = append(proto.AppendU32(poll, 10), 1)
	f.Add(proto.OpNonReplicated, proto.CodePollMessages, uint64(6), poll)
	off := append([]byte{proto.ConsumerSingle}, proto.AppendStringID(nil, "kafka.cg.g")...)
	off = append(topicID(off), 1, 1, 0, 0, 0)
	f.Add(proto.OpNonReplicated, proto.CodeGetConsumerOffset, uint64(7), off)
	f.Add(proto.OpStoreConsumerOffset, uint32(0), uint64(8), append(proto.AppendU64(append([]byte(nil), off...), 1), 1))
	f.Add(proto.OpDeleteConsumerOffset, uint32(0), uint64(9), append(append([]byte(nil), off...), 1))
	f.Add(proto.OpCreateConsumerGroup, uint32(0), uint64(102), proto.AppendName(topicID(nil), "grp"))
	f.Add(proto.OpJoinConsumerGroup, uint32(0), uint64(103), proto.AppendNumericID(topicID(nil), 0))
	f.Add(proto.OpNonReplicated, proto.CodeSyncConsumerGroup, uint64(10), proto.AppendNumericID(topicID(nil), 0))
	f.Add(proto.OpNonReplicated, proto.CodeGetTopic, uint64(11), topicID(nil))
	f.Add(proto.OpCreatePartitions, uint32(0), uint64(104), proto.AppendU32(topicID(nil), 2))

	s := New(Config{})
	st := &connState{connID: 1}
	setup := func(op uint8, code uint32, req uint64, body []byte) {
		frame := make([]byte, proto.HeaderSize)
		proto.PutRequestHeader(frame, len(body), proto.ClientID{Lo: 1}, req, op, st.session, code)
		s.process(st, append(frame, body...), nil)
	}
	setup(proto.OpRegister, proto.CodeLoginRegister, 0, proto.AppendLoginBody(nil, "f", "0", "iggy", "iggy"))
	setup(proto.OpCreateStream, 0, 1, proto.AppendName(nil, "s"))
	setup(proto.OpCreateTopic, 0, 2, proto.AppendName(proto.AppendU32(proto.AppendNumericID(nil, 0), 2), "t"))
	setup(proto.OpSendMessages, 0, 3, validSend(1))
	if !st.bound {
		f.Fatal("setup login failed")
	}

	f.Fuzz(func(t *testing.T, op uint8, code uint32, req uint64, body []byte) {
		frame := make([]byte, proto.HeaderSize, proto.HeaderSize+len(body))
		proto.PutRequestHeader(frame, len(body), st.client, req, op, st.session, code)
		frame = append(frame, body...)
		out, _ := s.process(st, frame, nil)
		checkFrames(t, out)
		// The same bytes as a raw frame (header included) from the fuzzer.
		if len(body) >= proto.HeaderSize {
			raw := append([]byte(nil), body...)
			out, _ = s.process(&connState{connID: 2}, raw, nil)
			checkFrames(t, out)
		}
		if !st.bound { // a Logout: log in again for the next input
			st.client = proto.ClientID{Lo: 1}
			setup(proto.OpRegister, proto.CodeLoginRegister, 0, proto.AppendLoginBody(nil, "f", "0", "iggy", "iggy"))
		}
	})
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
