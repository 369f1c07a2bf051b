package iggy

import (
	"errors"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestSettleInheritedWrite: a write whose reply was lost with its
// connection and that the server commits only behind a later write
// (iggytest Fault.Inherit: a new primary's inherited write) is not in the
// partition's watermarks until the partition is settled, and is after.
func TestSettleInheritedWrite(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect011}})
	c := open(t, Config{Addr: addr, PoolSize: 2})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "settle", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "settle", 0, batchOf(1, "first", 2)); err != nil {
		t.Fatal(err)
	}
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Count: 1, Drop: true, Inherit: true, Close: true})
	if _, err := c.Append(cx, "settle", 0, batchOf(1, "held", 3)); !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("held write: %v, want an unknown outcome", err)
	}
	if wm, err := c.Watermarks(cx, "settle", 0); err != nil || wm.High != 2 {
		t.Fatalf("before settling: %+v %v, want high 2 (the held write not shown)", wm, err)
	}
	if err := c.Settle(cx, "settle", 0); err != nil {
		t.Fatal(err)
	}
	if wm, err := c.Watermarks(cx, "settle", 0); err != nil || wm.High != 5 {
		t.Fatalf("settled: %+v %v, want high 5 (the held write shown)", wm, err)
	}
	msgs, _ := readAll(t, c, "settle", 0, 0, 1<<20)
	if len(msgs) != 5 || msgs[2].payload != "held0" {
		t.Fatalf("settled: %+v", msgs)
	}
}

// TestSettle: settling a partition with records stores offset 0 of
// kiggy's own consumer and returns; an empty one is taken for empty after
// settleEmptyWait; an unknown topic or partition is ErrUnknownTopic or
// ErrUnknownPartition. On the real server where one is found.
func TestSettle(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "settled", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "settled", 0, batchOf(1, "r", 3)); err != nil {
		t.Fatal(err)
	}
	if err := c.Settle(cx, "settled", 0); err != nil {
		t.Fatalf("a partition with records: %v", err)
	}
	s, err := c.acquire(cx)
	if err != nil {
		t.Fatal(err)
	}
	body, _, err := s.do(cx, proto.CodeGetConsumerOffset, c.consumerRequest(s, "", settleConsumer, "settled", 0))
	c.release(s)
	if err != nil || len(body) == 0 {
		t.Fatalf("GetConsumerOffset of %s: %x %v", settleConsumer, body, err)
	}
	if stored, err := decodeStoredOffset(body); err != nil || stored != 0 {
		t.Fatalf("%s's stored offset: %d %v, want 0", settleConsumer, stored, err)
	}

	start := time.Now()
	if err := c.Settle(cx, "settled", 1); err != nil {
		t.Fatalf("an empty partition: %v", err)
	}
	if waited := time.Since(start); waited < settleEmptyWait {
		t.Fatalf("an empty partition was settled after %v, before settleEmptyWait (%v): its refusal was not asked again", waited, settleEmptyWait)
	}
	if err := c.Settle(cx, "no-such-topic", 0); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
	if err := c.Settle(cx, "settled", 7); !errors.Is(err, store.ErrUnknownPartition) {
		t.Fatalf("unknown partition: %v", err)
	}
}
