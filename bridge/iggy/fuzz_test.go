package iggy

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
)

// readHex reads a test vector's hex file.
func readHex(f *testing.F, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		f.Fatal(err)
	}
	return raw
}

// FuzzReply feeds arbitrary server bytes to every client-side reply decoder:
// the VSR reply/eviction header, the result section, topic details and
// lists, the cluster metadata, the login and BindSession reply, the stored
// consumer offset, the SendMessages confirmation, the PollMessages record
// walk (in the dialect op%2 picks: even 0.12, odd 0.11) and the read
// cache's scan of a reply.
// None may panic, and a poll walk must only hand out in-bounds views.
func FuzzReply(f *testing.F) {
	// TV12, a 0.11 poll reply: walked as 0.11 (op 1) and as 0.12 (op 2),
	// and as a 0.12 reply, the partition context after its 16-byte head.
	poll := readHex(f, "proto/testdata/tv12_poll_body.hex")
	f.Add(uint8(proto.OpNonReplicated), poll)
	f.Add(uint8(proto.OpRegister), poll)
	poll012 := proto.AppendPartitionContext(append([]byte(nil), poll[:16]...), proto.PartitionContext{Incarnation: 7, OwnerGeneration: 1, MetadataOp: 9})
	f.Add(uint8(proto.OpNonReplicated), append(poll012, poll[16:]...))
	// A login reply (after its result section; BindSession's has none) and
	// a GetConsumerOffset reply.
	login := proto.AppendResultOK(nil)
	login = proto.AppendU32(login, 0)
	login = proto.AppendU64(login, 5)
	login = proto.AppendU32(login, proto.Dialect012.Version())
	f.Add(uint8(proto.OpRegister), proto.AppendName(login, "0.10.0"))
	f.Add(uint8(proto.OpNonReplicated), proto.AppendU64(proto.AppendU64(proto.AppendU32(nil, 1), 10), 4))
	f.Add(uint8(proto.OpSendMessages), []byte{1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint8(proto.OpCreateStream), []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xf4, 3, 0, 0})
	topic := proto.AppendResultOK(nil)
	topic = proto.AppendU32(topic, 0)
	topic = proto.AppendU64(topic, 1)
	topic = proto.AppendU32(topic, 1)
	topic = append(topic, make([]byte, 33)...)
	topic = proto.AppendName(topic, "orders")
	topic = proto.AppendU32(topic, 0)
	topic = proto.AppendU32(topic, 0)
	topic = append(topic, make([]byte, 40)...)
	f.Add(uint8(proto.OpCreateTopic), topic)
	hdr := make([]byte, proto.HeaderSize)
	proto.PutEvictionHeader(hdr, proto.ClientID{Lo: 1}, proto.EvictIncompatibleProtocol, 1, 2)
	f.Add(uint8(0), hdr)

	c := &Client{cfg: Config{Stream: "kafka"}}
	s := newSession(c)
	f.Fuzz(func(t *testing.T, op uint8, data []byte) {
		if len(data) >= proto.HeaderSize {
			checkReplyHeader(data[:proto.HeaderSize])
		}
		body, _, err := resultSection(op, 0, data)
		if err != nil {
			body = data
		}
		for _, d := range proto.Dialects {
			decodeTopic(body, d, "kafka")
			decodeTopics(body, d, "kafka")
			decodeClusterMetadata(body, d)
		}
		decodeConfirmation(body)
		if sess, server, err := decodeLoginReply(body); err == nil && (sess == 0 || len(server) > len(body)) {
			t.Fatalf("login reply: session %d, server version of %d bytes in %d", sess, len(server), len(body))
		}
		if stored, err := decodeStoredOffset(body); err == nil && stored >= 1<<62 {
			t.Fatalf("stored offset %d", stored)
		}
		if _, err := decodePartitionRoute(body); err == nil && len(body) != 25 {
			t.Fatalf("a partition route of %d bytes decoded (it is 25)", len(body))
		}
		s.dialect = proto.Dialects[op%2]
		n := 0
		s.walkPoll(data, 0, 1<<30, true, 0, func(m *message.Message) bool {
			n++
			if len(m.Payload) > len(data) || len(m.Headers) > len(data) {
				t.Fatalf("view larger than the reply")
			}
			return n < 1<<16
		})
		// The read cache's scan of a reply it keeps: what it reports must
		// agree with what a walk of the same records delivers.
		if len(data) >= 16 {
			first, end, _, _, polled, marks, _, ok := scanRecords(data[16:], 3, 2, nil)
			var it proto.RecordIter
			var msg message.Message
			var offs []int64
			res, werr := walkRecords(&it, &msg, data[16:], walkMark{}, 3, 1<<30, true, true, 0, func(m *message.Message) bool {
				if ok && (uint64(m.Offset) < 3 || uint64(m.Offset) >= end || uint64(m.Offset) < first) {
					t.Fatalf("offset %d outside the scanned [%d, %d)", m.Offset, first, end)
				}
				offs = append(offs, m.Offset)
				return true
			})
			if ok && werr == nil && res.polled != polled {
				t.Fatalf("scan counted %d messages, walk %d", polled, res.polled)
			}
			if !ok || werr != nil {
				return
			}
			// The incarnation fence (incarnation.go): a fence past every
			// batch's append time delivers nothing and says why; a fence
			// at the oldest batch's time refuses none of them.
			_, _, _, _, _, _, oldest, _ := scanRecords(data[16:], 3, 2, nil)
			fenced, ferr := walkRecords(&it, &msg, data[16:], walkMark{}, 3, 1<<30, true, true, unknownFence, func(*message.Message) bool {
				t.Fatal("a message delivered past the fence")
				return true
			})
			if polled > 0 && (ferr != errStaleIncarnation || fenced.delivered != 0) {
				t.Fatalf("unknown fence: %v, %d delivered", ferr, fenced.delivered)
			}
			if polled > 0 {
				if again, aerr := walkRecords(&it, &msg, data[16:], walkMark{}, 3, 1<<30, true, true, oldest, func(*message.Message) bool { return true }); aerr != nil || again.delivered != res.delivered {
					t.Fatalf("fence at the oldest batch: %v, %d delivered, want %d", aerr, again.delivered, res.delivered)
				}
			}
			// A walk from any mark delivers what the walk from the start
			// delivers from the mark's offset on.
			for _, mk := range marks {
				var got []int64
				ch := &chunk{marks: marks}
				if m := ch.mark(mk.off); m != mk {
					t.Fatalf("mark(%d) = %+v, want %+v", mk.off, m, mk)
				}
				if _, err := walkRecords(&it, &msg, data[16:], mk, mk.off, 1<<30, true, false, 0, func(m *message.Message) bool {
					got = append(got, m.Offset)
					return true
				}); err != nil {
					t.Fatalf("walk from mark %+v: %v", mk, err)
				}
				var want []int64
				for _, o := range offs {
					if uint64(o) >= mk.off {
						want = append(want, o)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("walk from mark %+v delivered %v, want %v", mk, got, want)
				}
			}
		}
	})
}
