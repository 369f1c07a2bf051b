package iggy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestErrors012: the status codes Iggy 0.10 added map to the storage
// outcome they mean, and a code kiggy does not know is an error, never a
// success.
func TestErrors012(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}})
	c := open(t, Config{Addr: addr, PoolSize: 1, RequestTimeout: 2 * time.Second})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "e", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		code proto.Code
		want error // nil: an error that is neither unavailable nor unknown outcome
	}{
		{proto.CodeLifecycleBusy, store.ErrUnavailable},
		{proto.CodeHistoryUnavailable, store.ErrUnavailable},
		{proto.CodeRequestTooOld, store.ErrUnknownOutcome},
		{proto.CodeOperationUncertain, store.ErrUnknownOutcome},
		{9999, nil},
	} {
		srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Count: 1, Status: uint32(tc.code)})
		_, err := c.Append(cx, "e", 0, batchOf(1, "x", 1))
		switch {
		case err == nil:
			t.Errorf("code %d: the append succeeded", tc.code)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("code %d: %v, want %v", tc.code, err, tc.want)
		case tc.want == nil && (errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrUnknownOutcome)):
			t.Errorf("code %d: %v: an unknown code is neither retriable nor of unknown outcome", tc.code, err)
		}
	}
	// HistoryUnavailable on a poll: unavailable, and the topic is looked up again.
	srv.InjectFault(iggytest.Fault{Op: proto.OpNonReplicated, Code: proto.CodePollMessages, Count: 1, Status: uint32(proto.CodeHistoryUnavailable)})
	_, err := c.read(cx, time.Time{}, "e", 0, 0, 1<<20, func(*message.Message) bool { return true })
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("poll answered HistoryUnavailable: %v", err)
	}
	if _, ok := c.cached("e"); ok {
		t.Error("the topic of another incarnation is still cached")
	}
}

// TestNotPrimaryReroutes: a 0.10 backup's NotPrimary (89) is 0.11's 58:
// the write goes to the partition's primary.
func TestNotPrimaryReroutes(t *testing.T) {
	cl := iggytest.NewCluster(3, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}})
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 1, RequestTimeout: 2 * time.Second})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "np", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	primary := cl.Primary()
	owner := (primary + 1) % 3
	cl.SetPartitionPrimary("np", 0, owner)
	cl.Node(primary).InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Count: 1, Status: uint32(proto.CodeNotPrimary)})
	if _, err := c.Append(cx, "np", 0, batchOf(1, "n", 1)); err != nil {
		t.Fatalf("NotPrimary did not reroute: %v", err)
	}
}
