package iggy

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
)

// requestCount is kiggy_iggy_request_duration_seconds_count for a command.
func requestCount(t *testing.T, c *Client, command string) int {
	t.Helper()
	re := regexp.MustCompile(`kiggy_iggy_request_duration_seconds_count\{command="` + command + `"\} (\d+)`)
	m := re.FindStringSubmatch(scrape(c))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// wait012 opens a client on a 0.12 model with topic "w" of 3 partitions.
func wait012(t *testing.T, scfg iggytest.Config, cfg Config) (*iggytest.Server, string, *Client) {
	t.Helper()
	scfg.Dialects = []proto.Dialect{proto.Dialect012}
	srv, addr := startServer(t, scfg)
	cfg.Addr = addr
	c := open(t, cfg)
	if _, err := c.CreateTopic(ctx(t), "w", 3, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	return srv, addr, c
}

// TestWaitForAppend: on protocol 0.12 a wait returns at once when a
// partition already holds a message at its offset, returns when another
// client appends (without a single poll), returns not ready when the wait
// passes, and is cancelled by its context.
func TestWaitForAppend(t *testing.T) {
	_, addr, c := wait012(t, iggytest.Config{}, Config{})
	other := open(t, Config{Addr: addr})
	cx := ctx(t)
	if _, err := other.Append(cx, "w", 1, batchOf(1, "a", 2)); err != nil {
		t.Fatal(err)
	}
	polls := requestCount(t, c, "PollMessages")

	t.Run("already there", func(t *testing.T) {
		began := time.Now()
		ready, err := c.WaitForAppend(cx, "w", []int32{0, 1}, []int64{0, 1}, 5*time.Second)
		if err != nil || !ready || time.Since(began) > time.Second {
			t.Fatalf("ready %v err %v after %v, want ready at once", ready, err, time.Since(began))
		}
	})
	t.Run("appended by another client", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			_, err := other.Append(context.Background(), "w", 2, batchOf(1, "b", 1))
			done <- err
		}()
		began := time.Now()
		ready, err := c.WaitForAppend(cx, "w", []int32{0, 1, 2}, []int64{0, 2, 0}, 10*time.Second)
		took := time.Since(began)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err != nil || !ready || took < 250*time.Millisecond || took > 3*time.Second {
			t.Fatalf("ready %v err %v after %v, want ready at the append (~300ms)", ready, err, took)
		}
	})
	t.Run("the wait passes", func(t *testing.T) {
		began := time.Now()
		ready, err := c.WaitForAppend(cx, "w", []int32{0, 2}, []int64{0, 1}, 300*time.Millisecond)
		took := time.Since(began)
		if err != nil || ready || took < 280*time.Millisecond || took > 3*time.Second {
			t.Fatalf("ready %v err %v after %v, want not ready after 300ms", ready, err, took)
		}
	})
	t.Run("a zero wait", func(t *testing.T) {
		if ready, err := c.WaitForAppend(cx, "w", []int32{2}, []int64{1}, 0); err != nil || ready {
			t.Fatalf("ready %v err %v", ready, err)
		}
		if ready, err := c.WaitForAppend(cx, "w", []int32{2}, []int64{0}, 0); err != nil || !ready {
			t.Fatalf("ready %v err %v", ready, err)
		}
	})
	t.Run("a partition named twice waits for the lower offset", func(t *testing.T) {
		ready, err := c.WaitForAppend(cx, "w", []int32{1, 1}, []int64{5, 1}, 5*time.Second)
		if err != nil || !ready {
			t.Fatalf("ready %v err %v", ready, err)
		}
	})
	t.Run("cancelled by its context", func(t *testing.T) {
		cancels := c.metrics.waitCancels.Load()
		wctx, cancel := context.WithTimeout(cx, 200*time.Millisecond)
		defer cancel()
		began := time.Now()
		ready, err := c.WaitForAppend(wctx, "w", []int32{0}, []int64{0}, 10*time.Second)
		if took := time.Since(began); ready || !errors.Is(err, context.DeadlineExceeded) && err != nil || took > 2*time.Second {
			t.Fatalf("ready %v err %v after %v", ready, err, took)
		}
		// A deadline cuts the wait itself too: the server may answer first.
		wctx2, cancel2 := context.WithCancel(cx)
		time.AfterFunc(200*time.Millisecond, cancel2)
		began = time.Now()
		ready, err = c.WaitForAppend(wctx2, "w", []int32{0}, []int64{0}, 10*time.Second)
		if took := time.Since(began); ready || !errors.Is(err, context.Canceled) || took > 2*time.Second {
			t.Fatalf("ready %v err %v after %v, want context.Canceled at once", ready, err, took)
		}
		waitFor(t, func() bool { return c.metrics.waitCancels.Load() > cancels })
		// The wait sessions serve the next waits.
		for range 2 * c.cfg.WaitSessions {
			if ready, err := c.WaitForAppend(cx, "w", []int32{1}, []int64{0}, time.Second); err != nil || !ready {
				t.Fatalf("after a cancel: ready %v err %v", ready, err)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		if _, err := c.WaitForAppend(cx, "w", []int32{7}, []int64{0}, time.Second); !errors.Is(err, store.ErrUnknownPartition) {
			t.Errorf("partition 7: %v", err)
		}
		if _, err := c.WaitForAppend(cx, "w", []int32{-1}, []int64{0}, time.Second); !errors.Is(err, store.ErrUnknownPartition) {
			t.Errorf("partition -1: %v", err)
		}
		if _, err := c.WaitForAppend(cx, "nope", []int32{0}, []int64{0}, time.Second); !errors.Is(err, store.ErrUnknownTopic) {
			t.Errorf("unknown topic: %v", err)
		}
		if _, err := c.WaitForAppend(cx, "w", []int32{0, 1}, []int64{0}, time.Second); err == nil {
			t.Error("2 partitions and 1 offset accepted")
		}
		if _, err := c.WaitForAppend(cx, "w", nil, nil, time.Second); err == nil {
			t.Error("no partitions accepted")
		}
	})
	if n := requestCount(t, c, "PollMessages"); n != polls {
		t.Errorf("the waits sent %d PollMessages", n-polls)
	}
	if requestCount(t, c, "WaitForMessages") == 0 {
		t.Error("no WaitForMessages counted")
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatal("condition not met in 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWaitForAppendSilentCancel: a server that never answers a cancelled
// wait costs its session a reconnect, not a hang or a desynchronised
// stream.
func TestWaitForAppendSilentCancel(t *testing.T) {
	_, _, c := wait012(t, iggytest.Config{SilentCancel: true}, Config{WaitSessions: 1})
	cx := ctx(t)
	wctx, cancel := context.WithCancel(cx)
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := c.WaitForAppend(wctx, "w", []int32{0}, []int64{0}, 10*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	// The one wait session reads on for cancelGrace, then reconnects.
	var err error
	began := time.Now()
	for time.Since(began) < cancelGrace+3*time.Second {
		var ready bool
		ready, err = c.WaitForAppend(cx, "w", []int32{0}, []int64{0}, 200*time.Millisecond)
		if err == nil {
			if ready {
				t.Fatal("ready on an empty partition")
			}
			return
		}
		if !errors.Is(err, ErrWaitBusy) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the wait session did not come back: %v", err)
}

// TestWaitForAppendBusy: with every wait session parked, a wait fails at
// once with ErrWaitBusy (store.ErrUnavailable), and Produce is not held up.
func TestWaitForAppendBusy(t *testing.T) {
	_, _, c := wait012(t, iggytest.Config{}, Config{WaitSessions: 1, PoolSize: 1})
	cx := ctx(t)
	parked := make(chan error, 1)
	go func() {
		_, err := c.WaitForAppend(cx, "w", []int32{0}, []int64{5}, 3*time.Second)
		parked <- err
	}()
	waitFor(t, func() bool { return len(c.waits.idle) == 0 })
	if _, err := c.WaitForAppend(cx, "w", []int32{1}, []int64{0}, time.Second); !errors.Is(err, ErrWaitBusy) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("err %v, want ErrWaitBusy", err)
	}
	// The only pool session is free for appends while the wait is parked.
	for i := range 6 {
		if _, err := c.Append(cx, "w", 0, batchOf(1, "p", 1)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if err := <-parked; err != nil {
		t.Fatal(err)
	}
}

// TestWaitForAppendPartitionsOverLimit: more partitions than one request
// takes are waited on in several requests.
func TestWaitForAppendPartitionsOverLimit(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}})
	_ = srv
	c := open(t, Config{Addr: addr, WaitSessions: 3})
	cx := ctx(t)
	const n = proto.MaxPartitionsPerRequest + 200
	if _, err := c.CreateTopic(cx, "many", n, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	parts, offs := make([]int32, n), make([]int64, n)
	for i := range parts {
		parts[i] = int32(i)
	}
	if ready, err := c.WaitForAppend(cx, "many", parts, offs, 100*time.Millisecond); err != nil || ready {
		t.Fatalf("empty: ready %v err %v", ready, err)
	}
	if _, err := c.Append(cx, "many", n-1, batchOf(1, "z", 1)); err != nil {
		t.Fatal(err)
	}
	if ready, err := c.WaitForAppend(cx, "many", parts, offs, 5*time.Second); err != nil || !ready {
		t.Fatalf("after an append to the last partition: ready %v err %v", ready, err)
	}
	// Two requests for the first wait; for the second the request of the
	// last 200 answers at once, and the other may be cancelled unsent.
	if got := requestCount(t, c, "WaitForMessages"); got < 3 {
		t.Errorf("%d WaitForMessages, want 2 for the first wait and 1 or 2 for the second", got)
	}
}

// TestWaitForAppend011: protocol 0.11 (Iggy 0.9) has no readiness wait: the
// client answers store.ErrUnsupported without a round trip, and the server
// answers the code with 3 InvalidCommand. On the 0.11 model and, when one
// is available, the real Iggy 0.9 server.
func TestWaitForAppend011(t *testing.T) {
	t.Run("model", func(t *testing.T) {
		_, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect011}})
		checkNoWaits(t, open(t, Config{Addr: addr}))
	})
	t.Run("iggy-server", func(t *testing.T) {
		if os.Getenv("KIGGY_TEST_IGGY") == "model" {
			t.Skip("KIGGY_TEST_IGGY=model")
		}
		if !realServer(t) {
			t.Skip("no iggy-server (KIGGY_TEST_IGGY=server requires one)")
		}
		checkNoWaits(t, open(t, Config{Addr: iggyserver.StartT(t).Addr}))
	})
}

func checkNoWaits(t *testing.T, c *Client) {
	t.Helper()
	if c.Dialect() != proto.Dialect011 {
		t.Fatalf("dialect %v", c.Dialect())
	}
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "w", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	ready, err := c.WaitForAppend(cx, "w", []int32{0}, []int64{0}, 5*time.Second)
	if ready || !errors.Is(err, store.ErrUnsupported) || time.Since(began) > time.Second {
		t.Fatalf("ready %v err %v after %v, want store.ErrUnsupported at once", ready, err, time.Since(began))
	}
	t.Log(err)
	if n := requestCount(t, c, "WaitForMessages"); n != 0 {
		t.Errorf("%d WaitForMessages sent", n)
	}
	// What the server answers the code: 3 InvalidCommand, and the session
	// stays in step.
	s, err := c.acquire(cx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.release(s)
	body := proto.AppendWaitForMessages(s.begin(), c.cfg.Stream, "w", 1000, 2_000_000, []uint32{0}, []uint64{0})
	if _, _, err := s.do(cx, proto.CodeWaitForMessages, body); codeOf(err) != proto.CodeInvalidCommand {
		t.Fatalf("WaitForMessages on 0.11: %v, want InvalidCommand", err)
	}
	if _, _, err := s.do(cx, proto.CodePing, s.begin()); err != nil {
		t.Fatalf("ping after: %v", err)
	}
}

// TestWaitForAppendRouted: on a cluster, a partition whose reads go to its
// own primary is waited on there, the others on the metadata primary, in
// one call; an append to either wakes it.
func TestWaitForAppendRouted(t *testing.T) {
	cl := iggytest.NewCluster(3, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}})
	cl.ElectionDelay = 300 * time.Millisecond
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	// Two wait sessions per call, and room for a call's before its
	// sessions are back from their last reply (on a loaded machine the
	// next call can come first, and would find them busy).
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 2, WaitSessions: 4, ReadCacheBytes: -1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "r", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	cl.SetPartitionPrimary("r", 1, 2) // the metadata primary stays node 0
	base1, err := c.Append(cx, "r", 1, batchOf(1, "x", 1))
	if err != nil {
		t.Fatal(err)
	}
	if c.routeOf("r", 1) == nil {
		t.Fatal("partition 1 has no route after its append")
	}
	waits0, waits2 := cl.Reads(0, proto.CodeWaitForMessages), cl.Reads(2, proto.CodeWaitForMessages)
	ready, err := c.WaitForAppend(cx, "r", []int32{0, 1}, []int64{0, base1 + 1}, 200*time.Millisecond)
	if err != nil || ready {
		t.Fatalf("nothing new: ready %v err %v", ready, err)
	}
	if n0, n2 := cl.Reads(0, proto.CodeWaitForMessages)-waits0, cl.Reads(2, proto.CodeWaitForMessages)-waits2; n0 != 1 || n2 != 1 {
		t.Fatalf("waits: %d on the metadata primary, %d on partition 1's route; want 1 and 1", n0, n2)
	}
	for _, p := range []int32{1, 0} {
		done := make(chan error, 1)
		go func() {
			time.Sleep(200 * time.Millisecond)
			_, err := c.Append(context.Background(), "r", p, batchOf(1, "y", 1))
			done <- err
		}()
		wm0, err := c.Watermarks(cx, "r", 0)
		if err != nil {
			t.Fatal(err)
		}
		wm1, err := c.Watermarks(cx, "r", 1)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		ready, err := c.WaitForAppend(cx, "r", []int32{0, 1}, []int64{wm0.High, wm1.High}, 10*time.Second)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err != nil || !ready || time.Since(began) > 5*time.Second {
			t.Fatalf("append to partition %d: ready %v err %v after %v", p, ready, err, time.Since(began))
		}
	}
}

// TestWaitForAppendRoutedSessionsStay: calls that wait on two nodes (a
// routed partition and the metadata primary) reuse wait sessions already
// connected where each wait goes. A wait session moving to another node
// logs in there without counting as a reconnect and without voiding the
// read cache: the node did not restart.
func TestWaitForAppendRoutedSessionsStay(t *testing.T) {
	cl := iggytest.NewCluster(3, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}})
	cl.ElectionDelay = 300 * time.Millisecond
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	const waitSessions = 6
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 2, WaitSessions: waitSessions})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "r", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	cl.SetPartitionPrimary("r", 1, 2)
	if _, err := c.Append(cx, "r", 1, batchOf(1, "x", 1)); err != nil {
		t.Fatal(err)
	}
	if c.routeOf("r", 1) == nil {
		t.Fatal("partition 1 has no route after its append")
	}
	c.Read(cx, "r", 1, 0, 1<<20, func(*message.Message) bool { return true })
	gen := c.cache.generation()
	connects := c.metrics.connects.Load()
	for i := range 30 {
		if ready, err := c.WaitForAppend(cx, "r", []int32{0, 1}, []int64{0, 1}, 5*time.Millisecond); err != nil || ready {
			t.Fatalf("call %d: ready %v err %v", i, ready, err)
		}
	}
	if n := c.metrics.reconnects.Load(); n != 0 {
		t.Errorf("%d reconnects counted for wait sessions moving between nodes", n)
	}
	if g := c.cache.generation(); g != gen {
		t.Errorf("the read cache was voided (generation %d → %d)", gen, g)
	}
	// Each wait session logs in at most once per node it serves.
	if n := c.metrics.connects.Load() - connects; n > 2*waitSessions {
		t.Errorf("%d logins for 30 calls on %d wait sessions", n, waitSessions)
	}
}

// TestWaitForAppendClose: Close ends parked waits at once; their callers
// get an error, not a hang.
func TestWaitForAppendClose(t *testing.T) {
	_, _, c := wait012(t, iggytest.Config{}, Config{WaitSessions: 2})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.WaitForAppend(context.Background(), "w", []int32{0}, []int64{0}, time.Minute)
			errs <- err
		}()
	}
	waitFor(t, func() bool { return len(c.waits.idle) == 0 })
	time.Sleep(50 * time.Millisecond) // the waits are on the wire
	began := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err == nil {
			t.Error("a wait parked at Close returned no error")
		}
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("Close took %v with waits parked", took)
	}
	if _, err := c.WaitForAppend(context.Background(), "w", []int32{0}, []int64{0}, time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestWaitForAppendChurn: concurrent waits, some ready at once, some
// cancelled at random moments, some left to expire, over few wait
// sessions: a wait on an empty partition is never answered ready (no
// result of one call reaches another), every error is a context's or
// ErrWaitBusy, and every wait session comes back.
func TestWaitForAppendChurn(t *testing.T) {
	_, _, c := wait012(t, iggytest.Config{}, Config{WaitSessions: 3})
	cx := ctx(t)
	if _, err := c.Append(cx, "w", 2, batchOf(1, "r", 1)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := range 40 {
				var ready bool
				var err error
				switch (g + i) % 3 {
				case 0: // ready at once
					ready, err = c.WaitForAppend(cx, "w", []int32{2, 0}, []int64{0, 0}, time.Second)
					if err == nil && !ready {
						done <- errors.New("partition 2 holds a message but the wait expired")
						return
					}
				case 1: // cancelled
					wctx, cancel := context.WithTimeout(cx, time.Duration(i%7)*3*time.Millisecond)
					ready, err = c.WaitForAppend(wctx, "w", []int32{0}, []int64{0}, 5*time.Second)
					cancel()
					if err != nil && !errors.Is(err, context.DeadlineExceeded) {
						break
					}
					err = nil
				default: // expires
					ready, err = c.WaitForAppend(cx, "w", []int32{0, 1}, []int64{0, 0}, 20*time.Millisecond)
				}
				if (g+i)%3 != 0 && ready {
					done <- errors.New("a wait on empty partitions answered ready")
					return
				}
				if err != nil && !errors.Is(err, ErrWaitBusy) {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return len(c.waits.idle) == 3 })
}

// TestIdleWaiterNeverFalselyBusy: as many callers as wait sessions, each
// taking a session and handing it back at once, never find them all busy:
// a caller scanning the idle sessions for one on its node holds several
// for a moment, and another caller must not take that for "all busy"
// (CI once saw TestWaitForAppendClose's second wait refused so).
func TestIdleWaiterNeverFalselyBusy(t *testing.T) {
	const n = 4
	_, _, c := wait012(t, iggytest.Config{}, Config{WaitSessions: n})
	var busy atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100_000 {
				w := c.idleWaiter(nil)
				if w == nil {
					busy.Add(1)
					continue
				}
				c.waits.idle <- w
			}
		}()
	}
	wg.Wait()
	if b := busy.Load(); b != 0 {
		t.Fatalf("%d of %d takes found every session busy with %d sessions and %d callers", b, n*100_000, n, n)
	}
}
