package iggy

import (
	"errors"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestRebindLearnsLostWriteOutcome: on 0.12 an append whose connection
// breaks after the server stored it, or whose reply never comes, is sent
// again on the same session bound to a new connection (BindSession) and
// answered with the first receipt: the append succeeds at its offset and
// the records are stored once. On 0.11 the same fault leaves the outcome
// unknown, as before.
func TestRebindLearnsLostWriteOutcome(t *testing.T) {
	for _, c := range []struct {
		name    string
		dialect proto.Dialect
		fault   iggytest.Fault
	}{
		{"0.12 connection broken", proto.Dialect012, iggytest.Fault{Op: proto.OpSendMessages, Drop: true, Apply: true, Close: true}},
		{"0.12 reply lost", proto.Dialect012, iggytest.Fault{Op: proto.OpSendMessages, Drop: true, Apply: true}},
		{"0.11 connection broken", proto.Dialect011, iggytest.Fault{Op: proto.OpSendMessages, Drop: true, Apply: true, Close: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{c.dialect}})
			cl := open(t, Config{Addr: addr, PoolSize: 1, RequestTimeout: 500 * time.Millisecond})
			cx := ctx(t)
			if _, err := cl.CreateTopic(cx, "rb", 1, store.TopicConfig{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.Append(cx, "rb", 0, batchOf(1, "a", 3)); err != nil {
				t.Fatal(err)
			}
			c.fault.Count = 1
			srv.InjectFault(c.fault)
			base, err := cl.Append(cx, "rb", 0, batchOf(1, "b", 2))
			if c.dialect == proto.Dialect011 {
				if !errors.Is(err, store.ErrUnknownOutcome) {
					t.Fatalf("0.11: got %d, %v; want ErrUnknownOutcome", base, err)
				}
				return
			}
			if err != nil || base != 3 {
				t.Fatalf("got base %d, %v; want 3", base, err)
			}
			var n int
			if _, err := cl.Read(cx, "rb", 0, 0, 1<<20, func(*message.Message) bool { n++; return true }); err != nil {
				t.Fatal(err)
			}
			if n != 5 {
				t.Fatalf("%d records stored, want 5 (the append stored once)", n)
			}
			wantLines(t, scrape(cl), `kiggy_iggy_session_rebinds_total 1`)
			// The session goes on under its number: the next append works.
			if base, err := cl.Append(cx, "rb", 0, batchOf(1, "c", 1)); err != nil || base != 5 {
				t.Fatalf("after the rebind: %d, %v", base, err)
			}
		})
	}
}

// TestRebindRefusedSession: when the server refuses to bind the session
// again (it no longer knows it, say), the append's outcome stays unknown and
// the client logs in afresh for the next request.
func TestRebindRefusedSession(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}})
	cl := open(t, Config{Addr: addr, PoolSize: 1, RequestTimeout: 500 * time.Millisecond})
	cx := ctx(t)
	if _, err := cl.CreateTopic(cx, "rr", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Count: 1, Drop: true, Apply: true, Close: true})
	srv.InjectFault(iggytest.Fault{Op: proto.OpNonReplicated, Code: proto.CodeBindSession, Count: 1, Status: uint32(proto.CodeUnauthenticated)})
	if _, err := cl.Append(cx, "rr", 0, batchOf(1, "x", 1)); !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("got %v, want ErrUnknownOutcome", err)
	}
	wantLines(t, scrape(cl), `kiggy_iggy_session_rebinds_total 0`)
	if base, err := cl.Append(cx, "rr", 0, batchOf(1, "y", 1)); err != nil || base != 1 {
		t.Fatalf("the next append: %d, %v", base, err)
	}
}
