package engine

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"
)

// Test APIs of throttleHandler (after engine_test.go's).
const (
	apiThrottle      = 8 // Throttle for payload int32 ms inside Serve, then echo
	apiThrottleAsync = 9 // from a goroutine after Serve returned: Throttle, then echo
)

// throttleTolerance is how much earlier than its throttle's end a request
// may be served: only the clocks' reading differences (the engines compare
// wall-clock ends; the tests measure with the monotonic clock).
const throttleTolerance = 5 * time.Millisecond

// throttleHandler echoes every request, throttling first for
// apiThrottle(Async), and records when each correlation id was served, when
// its throttle was set and its connection.
type throttleHandler struct {
	mu     sync.Mutex
	served map[int32]time.Time
	set    map[int32]time.Time
	conns  map[int32]*ConnInfo
}

func newThrottleHandler() *throttleHandler {
	return &throttleHandler{served: map[int32]time.Time{}, set: map[int32]time.Time{}, conns: map[int32]*ConnInfo{}}
}

func (h *throttleHandler) Serve(r *Request) {
	f := r.Frame()
	corr := corrOf(f)
	h.mu.Lock()
	h.served[corr] = time.Now()
	h.conns[corr] = r.Conn()
	h.mu.Unlock()
	var d time.Duration
	if len(f) >= 12 {
		d = time.Duration(binary.BigEndian.Uint32(f[8:12])) * time.Millisecond
	}
	switch binary.BigEndian.Uint16(f) {
	case apiThrottle:
		h.throttle(r.Conn(), corr, d)
		echo(r)
	case apiThrottleAsync:
		go func() {
			h.throttle(r.Conn(), corr, d)
			echo(r)
		}()
	default:
		echo(r)
	}
}

// throttle throttles c for d, recorded under corr.
func (h *throttleHandler) throttle(c *ConnInfo, corr int32, d time.Duration) {
	now := time.Now()
	c.Throttle(d)
	h.mu.Lock()
	h.set[corr] = now
	h.mu.Unlock()
}

func (h *throttleHandler) servedAt(corr int32) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.served[corr]
}

func (h *throttleHandler) setAt(corr int32) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.set[corr]
}

func (h *throttleHandler) conn(corr int32) *ConnInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[corr]
}

// expectResps reads responses and checks their correlation ids, in order.
func expectResps(t *testing.T, c net.Conn, br *bufio.Reader, corrs ...int32) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for _, want := range corrs {
		got, _, err := readResp(br)
		if err != nil {
			t.Fatalf("reading response %d: %v", want, err)
		}
		if got != want {
			t.Fatalf("got response %d, want %d", got, want)
		}
	}
}

// checkMuted checks that corr was served no earlier than d after the
// throttle of setCorr was set.
func (h *throttleHandler) checkMuted(t *testing.T, corr, setCorr int32, d time.Duration) {
	t.Helper()
	served, set := h.servedAt(corr), h.setAt(setCorr)
	if served.IsZero() || set.IsZero() {
		t.Fatalf("request %d served at %v, throttle set at %v", corr, served, set)
	}
	got := served.Sub(set)
	if got < d-throttleTolerance {
		t.Fatalf("request %d served %v after a %v throttle was set", corr, got, d)
	}
	t.Logf("request %d served %v after a %v throttle was set", corr, got, d)
}

func TestThrottleAPI(t *testing.T) {
	var c ConnInfo
	if !c.ThrottledUntil().IsZero() {
		t.Fatal("a new connection is throttled")
	}
	c.Throttle(0)
	c.Throttle(-time.Second)
	if !c.ThrottledUntil().IsZero() || c.throttleEnd.Load() != 0 {
		t.Fatal("d <= 0 throttled")
	}
	before := time.Now()
	c.Throttle(time.Hour)
	c.Throttle(time.Millisecond) // the later end wins
	if u := c.ThrottledUntil(); u.Before(before.Add(time.Hour)) || u.After(time.Now().Add(time.Hour)) {
		t.Fatalf("throttled until %v, want an hour from %v", u, before)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() { c.Throttle(time.Duration(i+2) * time.Hour) })
	}
	wg.Wait()
	if u := c.ThrottledUntil(); u.Before(before.Add(17 * time.Hour)) {
		t.Fatalf("after concurrent throttles of up to 17h: until %v", u)
	}
	c.Throttle(1 << 62) // capped, not overflowed into the past
	if u := c.ThrottledUntil(); u.Before(before.Add(24 * time.Hour)) {
		t.Fatalf("a huge throttle ends at %v", u)
	}

	var p ConnInfo
	p.Throttle(time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if !p.ThrottledUntil().IsZero() || p.throttleEnd.Load() != 0 {
		t.Fatal("a passed throttle is still in force or not reset")
	}
}

// TestThrottleMutes: a throttle set inside Serve of request 1 mutes the
// connection: requests 2 and 3, pipelined in the same write, are not served
// before the throttle ends, and come back in order; the pause is counted.
func TestThrottleMutes(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := newThrottleHandler()
		ts := startServer(t, kind, Config{}, h)
		c := ts.dial(t)
		br := bufio.NewReader(c)
		const d = 300 * time.Millisecond
		req := append(frameArg(apiThrottle, 1, int(d/time.Millisecond)), frame(apiEcho, 2)...)
		c.Write(append(req, frame(apiEcho, 3)...))
		expectResps(t, c, br, 1, 2, 3)
		h.checkMuted(t, 2, 1, d)
		if h.servedAt(3).Before(h.servedAt(2)) {
			t.Fatal("request 3 served before request 2")
		}
		if n := ts.srv.Stats().Pauses[PauseThrottle]; n != 1 {
			t.Fatalf("%d throttle pauses counted, want 1", n)
		}
		if err := roundTrip(c, br, 4); err != nil {
			t.Fatal(err)
		}
	})
}

// TestThrottleAsync: a throttle set off the serving goroutine after Serve
// returned mutes too: by a handler's worker before it responds, and by
// another goroutine on an idle connection (noticed on the next read).
func TestThrottleAsync(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		const d = 300 * time.Millisecond
		t.Run("worker", func(t *testing.T) {
			h := newThrottleHandler()
			ts := startServer(t, kind, Config{}, h)
			c := ts.dial(t)
			br := bufio.NewReader(c)
			c.Write(frameArg(apiThrottleAsync, 1, int(d/time.Millisecond)))
			expectResps(t, c, br, 1)
			c.Write(append(frame(apiEcho, 2), frame(apiEcho, 3)...))
			expectResps(t, c, br, 2, 3)
			h.checkMuted(t, 2, 1, d)
			if n := ts.srv.Stats().Pauses[PauseThrottle]; n > 1 {
				t.Fatalf("%d throttle pauses counted for one throttle", n)
			}
		})
		t.Run("idle", func(t *testing.T) {
			h := newThrottleHandler()
			ts := startServer(t, kind, Config{}, h)
			c := ts.dial(t)
			br := bufio.NewReader(c)
			if err := roundTrip(c, br, 1); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // the server is back waiting for reads
			h.throttle(h.conn(1), 1, d)
			c.Write(append(frame(apiEcho, 2), frame(apiEcho, 3)...))
			expectResps(t, c, br, 2, 3)
			h.checkMuted(t, 2, 1, d)
		})
	})
}

// TestThrottleOtherConnections: a throttled connection delays no other
// connection, and Shutdown does not wait for its throttle.
func TestThrottleOtherConnections(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := newThrottleHandler()
		ts := startServer(t, kind, Config{Loops: 1}, h) // one loop: both connections on it
		a := ts.dial(t)
		abr := bufio.NewReader(a)
		a.Write(append(frameArg(apiThrottle, 100, 15000), frame(apiEcho, 101)...))
		expectResps(t, a, abr, 100)
		b := ts.dial(t)
		bbr := bufio.NewReader(b)
		for i := range int32(10) {
			b.SetDeadline(time.Now().Add(10 * time.Second))
			if err := roundTrip(b, bbr, 200+i); err != nil {
				t.Fatalf("other connection, round trip %d: %v", i, err)
			}
		}
		if !h.servedAt(101).IsZero() {
			t.Fatal("the throttled connection's request 101 was served during its 15 s throttle")
		}
		if err := ts.stop(10 * time.Second); err != nil {
			t.Fatalf("Shutdown with a connection throttled for 15 s: %v", err)
		}
		if !h.servedAt(101).IsZero() {
			t.Fatal("request 101 served during the throttle")
		}
	})
}

// TestThrottlePeerCloses: a throttled connection the peer closes (FIN, or
// RST) during its throttle is closed and released: nothing is left open,
// and the epoll loops no longer track it. An RST reaches the epoll engine
// at once, even with reads off, so there the throttle is longer than the
// test waits: the close must have dropped it.
func TestThrottlePeerCloses(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		for _, reset := range []bool{false, true} {
			h := newThrottleHandler()
			ts := startServer(t, kind, Config{}, h)
			c := ts.dial(t)
			br := bufio.NewReader(c)
			d := 300 * time.Millisecond
			if reset && kind == KindEpoll {
				d = time.Minute
			}
			req := append(frameArg(apiThrottle, 1, int(d/time.Millisecond)), frame(apiEcho, 2)...)
			c.Write(append(req, frame(apiEcho, 3)...))
			expectResps(t, c, br, 1)
			if reset {
				c.(*net.TCPConn).SetLinger(0)
			}
			c.Close()
			waitFor(t, 10*time.Second, "the throttled connection's close", func() bool {
				st := ts.srv.Stats()
				return st.Open == 0 && st.Closes[ReasonPeerClosed]+st.Closes[ReasonIOError] == 1
			})
			if err := ts.stop(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			if n := mutedLeft(ts.srv); n > 0 {
				t.Fatalf("reset %v: %d closed connections still on a loop's muted list", reset, n)
			}
		}
	})
}

// TestThrottleNotIdle: a throttle longer than IdleTimeout does not close
// the connection as idle: the silence is the server's pause.
func TestThrottleNotIdle(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := newThrottleHandler()
		ts := startServer(t, kind, Config{IdleTimeout: 100 * time.Millisecond}, h)
		c := ts.dial(t)
		br := bufio.NewReader(c)
		const d = time.Second
		c.Write(frameArg(apiThrottle, 1, int(d/time.Millisecond)))
		expectResps(t, c, br, 1)
		time.Sleep(300 * time.Millisecond) // three idle timeouts into the throttle
		c.Write(frame(apiEcho, 2))
		expectResps(t, c, br, 2)
		h.checkMuted(t, 2, 1, d)
		if n := ts.srv.Stats().Closes[ReasonIdleTimeout]; n != 0 {
			t.Fatalf("%d idle closes", n)
		}
	})
}

// TestEngineTime: each engine charges a connection the time it spends on
// it, its inline Serve calls included (a request whose Serve sleeps 20 ms
// adds at least that).
func TestEngineTime(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		var mu sync.Mutex
		var ci *ConnInfo
		ts := startServer(t, kind, Config{}, HandlerFunc(func(r *Request) {
			mu.Lock()
			ci = r.Conn()
			mu.Unlock()
			if corrOf(r.Frame()) == 2 {
				time.Sleep(20 * time.Millisecond)
			}
			echo(r)
		}))
		c := ts.dial(t)
		br := bufio.NewReader(c)
		if err := roundTrip(c, br, 1); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		conn := ci
		mu.Unlock()
		// The response can reach the client before the engine adds the
		// time of the dispatch that sent it (the net engine's writer
		// writes while its reader is still in Serve): wait for it.
		charged := func(atLeast time.Duration) time.Duration {
			var got time.Duration
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if got = conn.EngineTime(); got >= atLeast {
					break
				}
			}
			return got
		}
		first := charged(1)
		if first <= 0 {
			t.Fatal("no engine time charged after a round trip")
		}
		if err := roundTrip(c, br, 2); err != nil {
			t.Fatal(err)
		}
		if grew := charged(first+20*time.Millisecond) - first; grew < 20*time.Millisecond {
			t.Fatalf("a request whose Serve slept 20 ms added %v of engine time", grew)
		}
	})
}

// TestThrottleEndsWhilePausing: a throttle that ends while the epoll loop
// is turning a connection's reads off for it (between its decision and
// arming the wake-up; under load the loop can be descheduled there) must
// not leave the connection paused for good. The hook sleeps past the
// throttle's end at that point; the pipelined requests behind it must
// still be served. (Before the fix the loop read the throttle again, found
// none, armed no wake-up, and the connection stalled.)
func TestThrottleEndsWhilePausing(t *testing.T) {
	var once sync.Once
	// Sleeps until the throttle has ended (a wait on the clock the
	// throttle itself is measured by), once.
	hook := func(c *ConnInfo) {
		once.Do(func() {
			end := time.Unix(0, c.throttleEnd.Load())
			time.Sleep(time.Until(end) + 5*time.Millisecond)
		})
	}
	h := newThrottleHandler()
	ts := startServer(t, "epoll", Config{hookPaused: hook}, h)
	c := ts.dial(t)
	br := bufio.NewReader(c)
	var reqs []byte
	reqs = append(reqs, frameArg(apiThrottle, 1, 20)...)
	for corr := int32(2); corr <= 40; corr++ {
		reqs = append(reqs, frame(apiEcho, corr)...)
	}
	c.Write(reqs)
	var corrs []int32
	for corr := int32(1); corr <= 40; corr++ {
		corrs = append(corrs, corr)
	}
	expectResps(t, c, br, corrs...)
}
