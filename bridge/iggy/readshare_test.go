package iggy

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestReadsLeaveSessionsForAppends: polls hold at most Config.ReadSessions
// of the pool's sessions, so an append sent while more polls are in flight
// than the pool has sessions gets one of the others at once (docs/IGGY.md,
// "Sessions"). With the share set to the whole pool the same append waits
// behind the polls, which is what the test tells apart: the server holds
// every poll's reply for 2 s, the append is given 0.7 s.
func TestReadsLeaveSessionsForAppends(t *testing.T) {
	const (
		pool  = 4
		parts = 6
	)
	for _, tc := range []struct {
		name     string
		share    int
		appendOK bool
	}{
		{"default share", 0, true},
		{"whole pool", pool, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, addr := startServer(t, iggytest.Config{})
			c := openConnected(t, Config{Addr: addr, Stream: "kafka", PoolSize: pool, ReadSessions: tc.share}, "appends")
			cx := ctx(t)
			if _, err := c.CreateTopic(cx, "reads", parts, store.TopicConfig{}); err != nil {
				t.Fatal(err)
			}
			for p := range int32(parts) {
				if _, err := c.Append(cx, "reads", p, seqBatch("r", 0, 1)); err != nil {
					t.Fatal(err)
				}
			}
			srv.InjectFault(iggytest.Fault{Op: proto.OpNonReplicated, Code: proto.CodePollMessages, Count: parts, Delay: 2 * time.Second})
			var wg sync.WaitGroup
			errs := make(chan error, parts)
			for p := range int32(parts) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := c.Read(cx, "reads", p, 0, 1<<20, func(*message.Message) bool { return true })
					errs <- err
				}()
			}
			// Every session the reads may take is taken, and the other
			// reads wait for one.
			want := int64(min(max(tc.share, pool-pool/4), pool))
			testtools.WaitFor(t, 5*time.Second, "the reads to take their sessions", func() bool { return c.metrics.inUse.Load() == want })
			actx, cancel := context.WithTimeout(cx, 700*time.Millisecond)
			_, err := c.Append(actx, "appends", 0, seqBatch("a", 0, 1))
			cancel()
			switch {
			case tc.appendOK && err != nil:
				t.Errorf("an append beside %d polls in flight: %v; want it answered from the sessions kept for it", parts, err)
			case !tc.appendOK && !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("an append beside polls holding every session: %v; want it to wait behind them (the test cannot tell the share's effect)", err)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("read: %v", err)
				}
			}
			if waits := c.metrics.readSessionWaits.Load(); tc.share == 0 && waits == 0 {
				t.Error("kiggy_iggy_read_session_waits_total stayed 0 with more polls than the read share")
			}
			if got := c.metrics.inUse.Load(); got != 0 {
				t.Errorf("%d sessions in use after every request ended", got)
			}
			if got := len(c.reads); got != 0 {
				t.Errorf("%d read tokens held after every read ended", got)
			}
		})
	}
}
