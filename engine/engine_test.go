package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// Test frames: int16 api, int16 version, int32 correlation id, payload; the
// test handler picks its behaviour from the api key. It parses the
// correlation id itself at frame bytes [4:8] (no dependency on package wire).
const (
	apiEcho      = 0 // respond inline: correlation id + the whole frame
	apiNoResp    = 1 // NoResponse (acks=0)
	apiClose     = 2 // Close(ReasonProtocolError)
	apiDelay     = 3 // respond from a goroutine after payload int32 ms
	apiBig       = 4 // respond with payload int32 bytes of 'x'
	apiHold      = 5 // park the request on testHandler.held
	apiPanic     = 6 // panic inside Serve
	apiCloseIdle = 7 // Close(ReasonIdleTimeout): another reason
)

// kinds are the engines every test runs against: both on Linux, the net
// engine elsewhere (NewEpoll returns ErrUnsupported there).
var kinds = func() []string {
	if runtime.GOOS == "linux" {
		return []string{KindEpoll, KindNet}
	}
	return []string{KindNet}
}()

func corrOf(frame []byte) int32 {
	if len(frame) < 8 {
		return -1
	}
	return int32(binary.BigEndian.Uint32(frame[4:8]))
}

type testHandler struct {
	held   chan *Request
	served atomic.Int64
	big    atomic.Int64 // apiBig requests served
}

// xs is apiBig's fill.
var xs = bytes.Repeat([]byte{'x'}, 64<<10)

func newTestHandler() *testHandler { return &testHandler{held: make(chan *Request, 1<<16)} }

func echo(r *Request) {
	f := r.Frame()
	b := r.ResponseBufferSize(4 + len(f))
	b = binary.BigEndian.AppendUint32(b, uint32(corrOf(f)))
	b = append(b, f...)
	r.Respond(b)
}

func (h *testHandler) Serve(r *Request) {
	h.served.Add(1)
	f := r.Frame()
	if len(f) < 8 {
		r.Close(ReasonProtocolError, "")
		return
	}
	arg := 0
	if len(f) >= 12 {
		arg = int(binary.BigEndian.Uint32(f[8:12]))
	}
	switch binary.BigEndian.Uint16(f) {
	case apiEcho:
		echo(r)
	case apiNoResp:
		r.NoResponse()
	case apiClose:
		r.Close(ReasonProtocolError, "")
	case apiCloseIdle:
		r.Close(ReasonIdleTimeout, "")
	case apiDelay:
		go func() {
			time.Sleep(time.Duration(arg) * time.Millisecond) // a slow handler: the delay is the request's
			echo(r)
		}()
	case apiBig:
		h.big.Add(1)
		b := r.ResponseBufferSize(4 + arg)
		b = binary.BigEndian.AppendUint32(b, uint32(corrOf(f)))
		// Whole blocks, not byte by byte: under -race a byte loop over
		// 1 MiB cost the storm tests seconds of CPU per request.
		for n := arg; n > 0; n -= len(xs) {
			b = append(b, xs[:min(n, len(xs))]...)
		}
		r.Respond(b)
	case apiHold:
		h.held <- r
	case apiPanic:
		panic("test handler panic")
	default:
		r.Close(ReasonProtocolError, "")
	}
}

// frame builds a size-prefixed test request.
func frame(api int16, corr int32, payload ...byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(payload)))
	b = binary.BigEndian.AppendUint16(b, uint16(api))
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return append(b, payload...)
}

func frameArg(api int16, corr int32, arg int) []byte {
	return frame(api, corr, binary.BigEndian.AppendUint32(nil, uint32(arg))...)
}

// readResp reads one response: its correlation id and the rest.
func readResp(r io.Reader) (int32, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 4 || n > 256<<20 {
		return 0, nil, fmt.Errorf("bad response size %d", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:], nil
}

type testServer struct {
	t    testing.TB
	srv  Server
	addr string
	errc chan error
	once sync.Once
}

func startServer(t testing.TB, kind string, cfg Config, h Handler) *testServer {
	t.Helper()
	srv, err := New(kind, cfg, h)
	if err != nil {
		t.Fatalf("New(%q): %v", kind, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, srv: srv, addr: ln.Addr().String(), errc: make(chan error, 1)}
	go func() { ts.errc <- srv.Serve(ln) }()
	t.Cleanup(func() { ts.stop(5 * time.Second) })
	return ts
}

// stop shuts the server down and checks Serve returned nil.
func (ts *testServer) stop(d time.Duration) error {
	var err error
	ts.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		err = ts.srv.Shutdown(ctx)
		select {
		case serr := <-ts.errc:
			if serr != nil {
				ts.t.Errorf("Serve returned %v", serr)
			}
		case <-time.After(5 * time.Second):
			ts.t.Errorf("Serve did not return after Shutdown")
		}
	})
	return err
}

func (ts *testServer) dial(t testing.TB) net.Conn {
	t.Helper()
	// Generous: loaded CI machines have taken over 5 s for a loopback
	// connect amid a 2,000-connection burst; the tests check the engine.
	c, err := net.DialTimeout("tcp", ts.addr, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testtools.WaitFor(t, d, what, cond)
}

func (ts *testServer) waitClosed(t testing.TB, r CloseReason, n uint64) {
	t.Helper()
	waitFor(t, 30*time.Second, r.String()+" closes", func() bool {
		st := ts.srv.Stats()
		return st.Closes[r] >= n
	})
}

// expectEOF checks the server closed c within d.
func expectEOF(t testing.TB, c net.Conn, d time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 1<<16)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open after %v", d)
		}
		return // EOF or reset: closed
	}
}

// roundTrip sends an echo request and checks the response.
func roundTrip(c net.Conn, br *bufio.Reader, corr int32) error {
	req := frame(apiEcho, corr, 'h', 'i')
	if _, err := c.Write(req); err != nil {
		return err
	}
	got, body, err := readResp(br)
	if err != nil {
		return err
	}
	if got != corr || !bytes.Equal(body, req[4:]) {
		return fmt.Errorf("response %d %q, want %d", got, body, corr)
	}
	return nil
}

// canary keeps a well-behaved client doing round trips until stopped and
// returns how many it did; any failure fails the test.
func canary(t *testing.T, ts *testServer) (stop func() int) {
	t.Helper()
	c := ts.dial(t)
	br := bufio.NewReader(c)
	done := make(chan struct{})
	// first is closed after the first round trip (or a failure): stop
	// waits for it, so a test whose disturbance is over in less than the
	// canary's first turn still checks that the canary got through
	// (on a loaded machine its goroutine may not have run yet).
	first := make(chan struct{})
	var n int
	var err error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			if n == 0 {
				close(first)
			}
		}()
		for corr := int32(0); ; corr++ {
			select {
			case <-done:
				return
			default:
			}
			c.SetDeadline(time.Now().Add(30 * time.Second))
			if err = roundTrip(c, br, corr); err != nil {
				return
			}
			if n++; n == 1 {
				close(first)
			}
			time.Sleep(time.Millisecond) // paces the client: a request every millisecond
		}
	}()
	return func() int {
		select {
		case <-first:
		case <-time.After(30 * time.Second):
		}
		close(done)
		wg.Wait()
		if err != nil {
			t.Errorf("canary connection failed after %d round trips: %v", n, err)
		}
		if n == 0 {
			t.Errorf("canary made no round trip")
		}
		return n
	}
}

func forEach(t *testing.T, fn func(t *testing.T, kind string)) {
	for _, k := range kinds {
		t.Run("engine="+k, func(t *testing.T) { fn(t, k) })
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if c.Loops != runtime.GOMAXPROCS(0) || c.MaxConnections != 10000 || c.MaxFrameSize != 100<<20 ||
		c.MaxInFlight != 100 || c.MaxOutputBytes != 16<<20 || c.IdleTimeout != 10*time.Minute ||
		c.ReadTimeout != 30*time.Second || c.WriteTimeout != 30*time.Second || c.Logger == nil {
		t.Fatalf("defaults: %+v", c)
	}
	for _, bad := range []Config{{Loops: -1}, {MaxFrameSize: -5}, {MaxInFlight: -1}, {ReadTimeout: -1}} {
		if _, err := bad.normalize(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if _, err := New("bogus", Config{}, newTestHandler()); err == nil {
		t.Error("New(bogus): no error")
	}
}

// TestLoopsFollowGOMAXPROCS: the default number of event loops is the
// threads that can run them (kiggy --gomaxprocs), not the machine's CPUs.
func TestLoopsFollowGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c, err := Config{}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if c.Loops != 1 {
		t.Errorf("GOMAXPROCS 1 (of %d CPUs): %d loops, want 1", runtime.NumCPU(), c.Loops)
	}
}

func TestCloseReasonNames(t *testing.T) {
	for r := CloseReason(0); r < NumCloseReasons; r++ {
		if ParseCloseReason(r.String()) != r {
			t.Errorf("%v does not round-trip", r)
		}
	}
	if ParseCloseReason("bad api key") != ReasonProtocolError {
		t.Error("free text not counted as protocol_error")
	}
}

// TestGoldenFramesSplit: the golden stream delivered split at every offset,
// and one byte at a time, yields the same requests.
func TestGoldenFramesSplit(t *testing.T) {
	stream, frames := goldenStream()
	forEach(t, func(t *testing.T, kind string) {
		var mu sync.Mutex
		var got [][]byte
		h := HandlerFunc(func(r *Request) {
			mu.Lock()
			got = append(got, bytes.Clone(r.Frame()))
			n := len(got)
			mu.Unlock()
			b := binary.BigEndian.AppendUint32(r.ResponseBuffer(), uint32(n))
			r.Respond(b)
		})
		ts := startServer(t, kind, Config{}, h)
		c := ts.dial(t)
		br := bufio.NewReader(c)
		check := func(name string) {
			t.Helper()
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for range frames {
				if _, _, err := readResp(br); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != len(frames) {
				t.Fatalf("%s: %d frames, want %d", name, len(got), len(frames))
			}
			for i := range frames {
				if !bytes.Equal(got[i], frames[i]) {
					t.Fatalf("%s: frame %d differs", name, i)
				}
			}
			got = got[:0]
		}
		// write sends b and waits until the server has read it, so that
		// the next write reaches it in a read of its own.
		base, written := ts.srv.Stats().BytesIn, uint64(0)
		write := func(b []byte) {
			t.Helper()
			c.Write(b)
			written += uint64(len(b))
			if !testtools.EventuallyEvery(5*time.Second, 20*time.Microsecond, func() bool { return ts.srv.Stats().BytesIn-base >= written }) {
				t.Fatalf("the server read %d of the %d bytes written", ts.srv.Stats().BytesIn-base, written)
			}
		}
		for i := 0; i <= len(stream); i++ {
			write(stream[:i]) // the server reads the first part alone
			write(stream[i:])
			check(fmt.Sprintf("split at %d", i))
		}
		for i := range stream {
			write(stream[i : i+1]) // one byte per read
		}
		check("byte at a time")
	})
}

// TestPipelineReverse: 5 requests in flight, completed in reverse order,
// come back in request order; a NoResponse in the middle is skipped.
func TestPipelineReverse(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := newTestHandler()
		ts := startServer(t, kind, Config{}, h)
		c := ts.dial(t)
		br := bufio.NewReader(c)
		for round := range 20 {
			var req []byte
			var frames [][]byte
			for i := range 5 {
				f := frame(apiHold, int32(round*10+i), bytes.Repeat([]byte{byte(round*10 + i)}, 100+i)...)
				frames = append(frames, f)
				req = append(req, f...)
			}
			c.Write(req)
			held := make([]*Request, 5)
			for i := range held {
				select {
				case held[i] = <-h.held:
				case <-time.After(5 * time.Second):
					t.Fatal("requests did not all arrive while earlier ones were in flight")
				}
			}
			for i := 4; i >= 0; i-- {
				if i == 2 {
					held[i].NoResponse()
				} else {
					echo(held[i]) // echoes the frame: it must still be intact
				}
				time.Sleep(100 * time.Microsecond) // the answers come in reverse order, spread out
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for _, i := range []int{0, 1, 3, 4} {
				corr, body, err := readResp(br)
				if err != nil {
					t.Fatal(err)
				}
				if want := int32(round*10 + i); corr != want {
					t.Fatalf("round %d: got correlation %d, want %d", round, corr, want)
				}
				if !bytes.Equal(body, frames[i][4:]) {
					t.Fatalf("round %d: frame %d changed while later requests completed", round, i)
				}
			}
		}
		if err := roundTrip(c, br, 999); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPipelineMixed: a long pipeline of inline, async, NoResponse and big
// responses keeps request order.
func TestPipelineMixed(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{MaxInFlight: 7}, newTestHandler())
		c := ts.dial(t)
		var want []int32
		var req []byte
		for i := range int32(500) {
			switch i % 5 {
			case 0:
				req = append(req, frame(apiEcho, i)...)
			case 1:
				req = append(req, frameArg(apiDelay, i, int(i%3))...)
			case 2:
				req = append(req, frame(apiNoResp, i)...)
				continue
			case 3:
				req = append(req, frameArg(apiBig, i, int(i)*301)...)
			case 4:
				req = append(req, frameArg(apiDelay, i, 0)...)
			}
			want = append(want, i)
		}
		go c.Write(req)
		br := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		for _, w := range want {
			corr, body, err := readResp(br)
			if err != nil {
				t.Fatal(err)
			}
			if corr != w {
				t.Fatalf("got correlation %d, want %d", corr, w)
			}
			if w%5 == 3 && len(body) != int(w)*301 {
				t.Fatalf("big response %d: %d bytes", w, len(body))
			}
		}
	})
}

// TestLargeFrames: frames far bigger than the read buffers, pipelined.
func TestLargeFrames(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{}, newTestHandler())
		c := ts.dial(t)
		payload := make([]byte, 3<<20+5)
		for i := range payload {
			payload[i] = byte(i * 13)
		}
		var reqs [][]byte
		for i := range int32(4) {
			reqs = append(reqs, frame(apiEcho, i, payload[:len(payload)-int(i)*100003]...))
		}
		go func() {
			for _, r := range reqs {
				c.Write(r)
			}
		}()
		br := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		for i, r := range reqs {
			corr, body, err := readResp(br)
			if err != nil {
				t.Fatal(err)
			}
			if corr != int32(i) || !bytes.Equal(body, r[4:]) {
				t.Fatalf("frame %d came back different", i)
			}
		}
	})
}

// TestHandlerClose: Close flushes the responses of earlier requests, then
// closes; later requests are dropped; counted by reason.
func TestHandlerClose(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{}, newTestHandler())
		stop := canary(t, ts)
		for i, api := range []int16{apiClose, apiCloseIdle} {
			c := ts.dial(t)
			var req []byte
			req = append(req, frame(apiEcho, 1)...)
			req = append(req, frameArg(apiDelay, 2, 50)...)
			req = append(req, frame(api, 3)...)
			req = append(req, frame(apiEcho, 4)...)
			c.Write(req)
			br := bufio.NewReader(c)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for _, want := range []int32{1, 2} {
				corr, _, err := readResp(br)
				if err != nil || corr != want {
					t.Fatalf("got %d, %v; want response %d before the close", corr, err, want)
				}
			}
			if _, _, err := readResp(br); err == nil {
				t.Fatal("response after Close")
			}
			if i == 0 {
				ts.waitClosed(t, ReasonProtocolError, 1)
			} else {
				ts.waitClosed(t, ReasonIdleTimeout, 1)
			}
		}
		stop()
	})
}

// TestHandlerPanic: a panicking handler closes only its connection.
func TestHandlerPanic(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{}, newTestHandler())
		stop := canary(t, ts)
		c := ts.dial(t)
		c.Write(frame(apiPanic, 1))
		expectEOF(t, c, 5*time.Second)
		ts.waitClosed(t, ReasonProtocolError, 1)
		stop()
	})
}

// TestMaxInFlight: beyond MaxInFlight the engine stops reading until
// responses drain.
func TestMaxInFlight(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := newTestHandler()
		ts := startServer(t, kind, Config{MaxInFlight: 5}, h)
		c := ts.dial(t)
		var req []byte
		for i := range int32(20) {
			req = append(req, frame(apiHold, i)...)
		}
		c.Write(req)
		waitFor(t, 5*time.Second, "5 held", func() bool { return len(h.held) == 5 })
		if !testtools.Consistently(50*time.Millisecond, func() bool { return len(h.held) == 5 }) {
			t.Fatalf("%d requests in flight, MaxInFlight 5", len(h.held))
		}
		if p := ts.srv.Stats().Pauses; p[PauseInFlight] == 0 || p[PauseInFlightBytes] != 0 || p[PauseOutputBytes] != 0 {
			t.Fatalf("pauses %v, want max_in_flight only", p)
		}
		br := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for i := range int32(20) {
			echo(<-h.held)
			corr, _, err := readResp(br)
			if err != nil || corr != i {
				t.Fatalf("got %d, %v; want %d", corr, err, i)
			}
		}
	})
}

// TestConnInfo: addresses and ids are filled and Closed flips on close.
func TestConnInfo(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		infos := make(chan *ConnInfo, 2)
		ts := startServer(t, kind, Config{}, HandlerFunc(func(r *Request) {
			infos <- r.Conn()
			echo(r)
		}))
		c := ts.dial(t)
		br := bufio.NewReader(c)
		if err := roundTrip(c, br, 1); err != nil {
			t.Fatal(err)
		}
		ci := <-infos
		if ci.ID == 0 || ci.RemoteAddr != c.LocalAddr().String() || ci.LocalAddr != c.RemoteAddr().String() {
			t.Fatalf("ConnInfo %+v, client %v -> %v", ci, c.LocalAddr(), c.RemoteAddr())
		}
		if ci.Closed() {
			t.Fatal("Closed before close")
		}
		c.Close()
		waitFor(t, 5*time.Second, "Closed", ci.Closed)
		ts.waitClosed(t, ReasonPeerClosed, 1)
		st := ts.srv.Stats()
		if st.Requests != 1 || st.Accepted != 1 || st.BytesIn == 0 || st.BytesOut == 0 || st.Open != 0 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// TestMaxInFlightBytes: reads pause once the frames in flight exceed
// MaxInFlightBytes.
func TestMaxInFlightBytes(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := newTestHandler()
		ts := startServer(t, kind, Config{MaxInFlightBytes: 1000}, h)
		c := ts.dial(t)
		var req []byte
		for i := range int32(6) {
			req = append(req, frame(apiHold, i, make([]byte, 592)...)...) // 600-byte frames
		}
		c.Write(req)
		waitFor(t, 5*time.Second, "2 held", func() bool { return len(h.held) == 2 })
		if !testtools.Consistently(50*time.Millisecond, func() bool { return len(h.held) == 2 }) {
			t.Fatalf("%d requests of 600 bytes in flight, MaxInFlightBytes 1000", len(h.held))
		}
		if p := ts.srv.Stats().Pauses; p[PauseInFlightBytes] == 0 || p[PauseInFlight] != 0 || p[PauseOutputBytes] != 0 {
			t.Fatalf("pauses %v, want max_in_flight_bytes only", p)
		}
		br := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for i := range int32(6) {
			echo(<-h.held)
			if corr, _, err := readResp(br); err != nil || corr != i {
				t.Fatalf("got %d, %v; want %d", corr, err, i)
			}
		}
	})
}

// plainListener hides the concrete listener type, as a TLS listener would.
type plainListener struct{ net.Listener }

func TestServeErrors(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		srv, err := New(kind, Config{}, newTestHandler())
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if kind == KindEpoll {
			if err := srv.Serve(plainListener{ln}); !errors.Is(err, ErrListener) {
				t.Fatalf("Serve(wrapped listener) = %v, want ErrListener", err)
			}
		}
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := srv.Serve(ln); !errors.Is(err, ErrServerClosed) {
			t.Fatalf("Serve after Shutdown = %v, want ErrServerClosed", err)
		}
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Fatalf("second Shutdown: %v", err)
		}
	})
	if s := NewNet(Config{MaxInFlight: -1}, newTestHandler()); s.Serve(nil) != ErrConfig {
		t.Fatal("NewNet with a bad config serves")
	}
}
