package iggy

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// FuzzWaitReply: any WaitForMessages reply body, for any partitions asked,
// is either refused as malformed (the session dropped as out of step) or
// read exactly as the wire format says (responses/messages/
// wait_for_messages.rs: "[partitions_count:4 LE] partitions_count x
// [partition_id:4 LE]", at most MAX_PARTITIONS_PER_REQUEST), naming only
// partitions asked; it never panics, and ready means a partition was named.
func FuzzWaitReply(f *testing.F) {
	le := binary.LittleEndian
	f.Add([]byte{0, 0, 0, 0}, []byte{0, 0, 0, 0})
	f.Add(le.AppendUint32(le.AppendUint32(nil, 1), 7), le.AppendUint32(nil, 7))
	f.Add(le.AppendUint32(le.AppendUint32(nil, 1), 8), le.AppendUint32(nil, 7))
	f.Add(le.AppendUint32(nil, 2), []byte{})
	f.Add(le.AppendUint32(nil, proto.MaxPartitionsPerRequest+1), []byte{})
	f.Add([]byte{1, 0, 0}, []byte{1})
	f.Add(le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, 1), 7), 0), le.AppendUint32(nil, 7))
	c := &Client{}
	w := &waiter{c: c, s: &session{c: c}} // no connection: reply only reads and closes
	f.Fuzz(func(t *testing.T, body, asked []byte) {
		w.parts = w.parts[:0]
		for len(asked) >= 4 {
			w.parts = append(w.parts, le.Uint32(asked))
			asked = asked[4:]
		}
		slices.Sort(w.parts)
		w.parts = slices.Compact(w.parts)

		// What the format says.
		wellFormed := len(body) >= 4 && le.Uint32(body) <= proto.MaxPartitionsPerRequest &&
			uint64(len(body)) == 4+4*uint64(le.Uint32(body))
		var named []uint32
		allAsked := true
		if wellFormed {
			for i := range int(le.Uint32(body)) {
				p := le.Uint32(body[4+4*i:])
				named = append(named, p)
				_, ok := slices.BinarySearch(w.parts, p)
				allAsked = allAsked && ok
			}
		}

		rep, err := proto.DecodeWaitReply(body)
		if wellFormed != (err == nil) {
			t.Fatalf("DecodeWaitReply(%x): %v, well-formed %v", body, err, wellFormed)
		}
		if err == nil {
			if rep.Len() != len(named) {
				t.Fatalf("%d partitions, want %d", rep.Len(), len(named))
			}
			for i, p := range named {
				if rep.Partition(i) != p {
					t.Fatalf("partition %d: %d, want %d", i, rep.Partition(i), p)
				}
			}
		}

		h := proto.ReplyHeader{Request: 9, Operation: proto.OpNonReplicated}
		ready, err := w.reply(h, body, nil, 9, false)
		switch {
		case !wellFormed || !allAsked:
			if err == nil || !errors.Is(err, errDesync) {
				t.Fatalf("a malformed reply or one naming a partition not asked: %v", err)
			}
		case err != nil:
			t.Fatalf("a good reply refused: %v", err)
		case ready != (len(named) > 0):
			t.Fatalf("ready %v with %d partitions named", ready, len(named))
		}
		// A reply to another request, or with a status, whatever its body.
		if _, err := w.reply(proto.ReplyHeader{Request: 8, Operation: proto.OpNonReplicated}, body, nil, 9, false); !errors.Is(err, errDesync) {
			t.Fatalf("a reply to request 8 taken for 9: %v", err)
		}
		if _, err := w.reply(proto.ReplyHeader{Request: 9, Operation: proto.OpNonReplicated, Status: 3}, nil, nil, 9, false); codeOf(err) != proto.CodeInvalidCommand {
			t.Fatalf("status 3: %v", err)
		}
	})
}
