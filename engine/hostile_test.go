package engine

import (
	"bufio"
	"context"
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

// TestReadTimeout: a partial header, or a partial body, then silence is
// closed after ReadTimeout (slowloris); others keep being served.
func TestReadTimeout(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{ReadTimeout: 200 * time.Millisecond}, newTestHandler())
		stop := canary(t, ts)
		for i, partial := range [][]byte{{0, 0}, frame(apiEcho, 1, make([]byte, 100)...)[:50]} {
			c := ts.dial(t)
			c.Write(partial)
			start := time.Now()
			expectEOF(t, c, 5*time.Second)
			if d := time.Since(start); d < 150*time.Millisecond {
				t.Fatalf("closed after %v, before ReadTimeout", d)
			}
			ts.waitClosed(t, ReasonReadTimeout, uint64(i+1))
		}
		stop()
	})
}

// TestIdleTimeout: an idle connection is closed after IdleTimeout, but not
// one whose request is in flight.
func TestIdleTimeout(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := newTestHandler()
		ts := startServer(t, kind, Config{IdleTimeout: 150 * time.Millisecond}, h)
		c := ts.dial(t)
		br := bufio.NewReader(c)
		if err := roundTrip(c, br, 1); err != nil {
			t.Fatal(err)
		}
		c.Write(frame(apiHold, 2))
		r := <-h.held
		time.Sleep(500 * time.Millisecond) // the request is in flight for over 3 idle timeouts
		echo(r)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if corr, _, err := readResp(br); err != nil || corr != 2 {
			t.Fatalf("in-flight request over idle timeout: %d, %v", corr, err)
		}
		expectEOF(t, c, 5*time.Second)
		ts.waitClosed(t, ReasonIdleTimeout, 1)
	})
}

// TestHugeDeclaredFrame: a 2 GiB declared frame closes the connection with
// no big allocation; a negative size closes too.
func TestHugeDeclaredFrame(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{}, newTestHandler())
		stop := canary(t, ts)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := ts.dial(t)
		c.Write([]byte{0x7f, 0xff, 0xff, 0xff, 0, 1, 2, 3})
		expectEOF(t, c, 5*time.Second)
		ts.waitClosed(t, ReasonFrameTooLarge, 1)
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 32<<20 {
			t.Fatalf("allocated %d bytes for a rejected frame", d)
		}
		c = ts.dial(t)
		c.Write([]byte{0xff, 0xff, 0xff, 0xfe})
		expectEOF(t, c, 5*time.Second)
		ts.waitClosed(t, ReasonNegativeSize, 1)

		// A declared 100 MiB frame that never arrives costs its first chunk.
		runtime.ReadMemStats(&before)
		c = ts.dial(t)
		c.Write([]byte{0x06, 0x40, 0x00, 0x00, 1, 2, 3})
		time.Sleep(100 * time.Millisecond) // the server reads the 7 bytes (nothing to poll for)
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 32<<20 {
			t.Fatalf("allocated %d bytes for 7 bytes of a 100 MiB frame", d)
		}
		stop()
	})
}

// TestNeverReads: a peer that pipelines requests for big responses and never
// reads them is throttled (bounded memory) and closed after WriteTimeout.
func TestNeverReads(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := newTestHandler()
		ts := startServer(t, kind, Config{
			MaxInFlight:    5,
			MaxOutputBytes: 1 << 20,
			WriteTimeout:   500 * time.Millisecond,
		}, h)
		stop := canary(t, ts)
		c := ts.dial(t)
		c.(*net.TCPConn).SetReadBuffer(4096)
		const respSize = 256 << 10
		var sent atomic.Int64
		go func() {
			req := frameArg(apiBig, 1, respSize)
			for range 10000 {
				c.SetWriteDeadline(time.Now().Add(3 * time.Second))
				if _, err := c.Write(req); err != nil {
					return
				}
				sent.Add(1)
			}
		}()
		ts.waitClosed(t, ReasonWriteTimeout, 1)
		// Kernel buffers (a few MiB of loopback send buffer) plus
		// MaxOutputBytes plus MaxInFlight responses; without backpressure it
		// would be all 10000 (2.5 GiB).
		if n := h.big.Load(); n > 40 {
			t.Fatalf("served %d requests for a peer that never reads (sent %d); stats %+v", n, sent.Load(), ts.srv.Stats())
		}
		t.Logf("served %d of %d sent before closing; stats %+v", h.big.Load(), sent.Load(), ts.srv.Stats())
		stop()
	})
}

// TestDisconnectMidResponse: the peer goes away while a large response is
// being written.
func TestDisconnectMidResponse(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{}, newTestHandler())
		stop := canary(t, ts)
		for range 5 {
			c := ts.dial(t)
			c.Write(frameArg(apiBig, 1, 16<<20))
			io.ReadFull(c, make([]byte, 1000))
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
		waitFor(t, 30*time.Second, "connections closed", func() bool { return ts.srv.Stats().Open == 1 })
		stop()
	})
}

// TestManyConnections: 2,000 connections open at once, all served.
func TestManyConnections(t *testing.T) {
	const conns = 2000
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{}, newTestHandler())
		cs := make([]net.Conn, conns)
		for i := range cs {
			cs[i] = ts.dial(t)
		}
		waitFor(t, 30*time.Second, "all accepted", func() bool { return ts.srv.Stats().Open == conns })
		var wg sync.WaitGroup
		errc := make(chan error, conns)
		const workers = 100
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < conns; i += workers {
					c := cs[i]
					c.SetDeadline(time.Now().Add(30 * time.Second))
					br := bufio.NewReader(c)
					for k := range int32(3) {
						if err := roundTrip(c, br, int32(i)*10+k); err != nil {
							errc <- err
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		if st := ts.srv.Stats(); st.Requests != 3*conns {
			t.Fatalf("requests %d, want %d", st.Requests, 3*conns)
		}
		for _, c := range cs {
			c.Close()
		}
		waitFor(t, 30*time.Second, "all closed", func() bool { return ts.srv.Stats().Open == 0 })
	})
}

// TestConnectStorm: connections opened and dropped in every state.
func TestConnectStorm(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := newTestHandler()
		ts := startServer(t, kind, Config{}, h)
		stop := canary(t, ts)
		var wg sync.WaitGroup
		for g := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					c, err := net.Dial("tcp", ts.addr)
					if err != nil {
						continue
					}
					switch (g + i) % 5 {
					case 1:
						c.Write([]byte{0, 0})
					case 2:
						c.Write(frame(apiEcho, 1))
					case 3:
						c.Write(frameArg(apiDelay, 1, 5))
					case 4:
						c.Write(frameArg(apiBig, 1, 1<<20))
						c.(*net.TCPConn).SetLinger(0)
					}
					c.Close()
				}
			}()
		}
		wg.Wait()
		waitFor(t, 30*time.Second, "storm connections closed", func() bool { return ts.srv.Stats().Open == 1 })
		stop()
	})
}

// TestMaxConnections: beyond the limit connections are accepted and closed.
func TestMaxConnections(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{MaxConnections: 3}, newTestHandler())
		for i := range 3 {
			c := ts.dial(t)
			if err := roundTrip(c, bufio.NewReader(c), int32(i)); err != nil {
				t.Fatal(err)
			}
		}
		c := ts.dial(t)
		c.Write(frame(apiEcho, 9))
		expectEOF(t, c, 5*time.Second)
		st := ts.srv.Stats()
		if st.Refused != 1 || st.Closes[ReasonMaxConnections] != 1 || st.Open != 3 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// TestDrain: Shutdown answers in-flight requests, closes idle connections,
// refuses new ones and returns within its deadline.
func TestDrain(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{}, newTestHandler())
		busy := ts.dial(t)
		idle := ts.dial(t)
		if err := roundTrip(idle, bufio.NewReader(idle), 1); err != nil {
			t.Fatal(err)
		}
		busy.Write(append(frameArg(apiDelay, 7, 300), frameArg(apiDelay, 8, 100)...))
		waitFor(t, 5*time.Second, "requests in flight", func() bool { return ts.srv.Stats().Requests == 3 })
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- ts.stop(5 * time.Second) }()
		expectEOF(t, idle, 5*time.Second)
		if d := time.Since(start); d > time.Second {
			t.Errorf("idle connection closed after %v", d)
		}
		if c, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Error("new connection served during drain")
			}
			c.Close()
		}
		br := bufio.NewReader(busy)
		busy.SetReadDeadline(time.Now().Add(5 * time.Second))
		for _, want := range []int32{7, 8} {
			corr, _, err := readResp(br)
			if err != nil || corr != want {
				t.Fatalf("in-flight request %d: got %d, %v", want, corr, err)
			}
		}
		expectEOF(t, busy, 5*time.Second)
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("Shutdown took %v", d)
		}
		if st := ts.srv.Stats(); st.Closes[ReasonShutdown] != 2 || st.Open != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestDrainDeadline: a request that never completes makes Shutdown force
// the close at its deadline and return ctx.Err().
func TestDrainDeadline(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := newTestHandler()
		ts := startServer(t, kind, Config{}, h)
		c := ts.dial(t)
		c.Write(frame(apiHold, 1))
		r := <-h.held
		start := time.Now()
		err := ts.stop(300 * time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown: %v, want deadline exceeded", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Shutdown took %v with a 300ms deadline", d)
		}
		expectEOF(t, c, 2*time.Second)
		ci := r.Conn()
		echo(r) // completing after shutdown is harmless
		if !ci.Closed() {
			t.Fatal("ConnInfo not closed")
		}
	})
}

// TestNeverReadsOneResponse: a single response bigger than the socket
// buffers, to a peer that never reads: the first write is short and no
// response ever completes, and WriteTimeout must still close.
func TestNeverReadsOneResponse(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{WriteTimeout: 300 * time.Millisecond}, newTestHandler())
		stop := canary(t, ts)
		c := ts.dial(t)
		c.(*net.TCPConn).SetReadBuffer(4096)
		c.Write(frameArg(apiBig, 1, 32<<20))
		ts.waitClosed(t, ReasonWriteTimeout, 1)
		if p := ts.srv.Stats().Pauses; p[PauseOutputBytes] == 0 {
			t.Errorf("pauses %v, want max_output_bytes", p)
		}
		stop()
	})
}

// TestMaxConnectionsPerIP: beyond MaxConnectionsPerIP a client address's
// connections are accepted and closed, while another address is still
// served; a close makes room again.
func TestMaxConnectionsPerIP(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{MaxConnectionsPerIP: 2}, newTestHandler())
		from := func(ip string) net.Conn {
			d := net.Dialer{Timeout: 30 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
			c, err := d.Dial("tcp", ts.addr)
			if err != nil {
				testtools.Require(t, "source address "+ip, false, fmt.Sprintf("dialling from it failed (%v)", err))
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		served := func(c net.Conn, corr int32) {
			t.Helper()
			if err := roundTrip(c, bufio.NewReader(c), corr); err != nil {
				t.Fatal(err)
			}
		}
		a1, a2 := from("127.0.0.1"), from("127.0.0.1")
		served(a1, 1)
		served(a2, 2)
		a3 := from("127.0.0.1")
		a3.Write(frame(apiEcho, 3))
		expectEOF(t, a3, 5*time.Second)
		served(from("127.0.0.2"), 4)
		st := ts.srv.Stats()
		if st.Refused != 1 || st.Closes[ReasonMaxConnectionsPerIP] != 1 || st.Open != 3 {
			t.Fatalf("stats %+v", st)
		}
		a1.Close()
		waitFor(t, 5*time.Second, "the closed connection counted", func() bool { return ts.srv.Stats().Open == 2 })
		served(from("127.0.0.1"), 5)
		if st := ts.srv.Stats(); st.Refused != 1 {
			t.Fatalf("refused %d after a close made room", st.Refused)
		}
	})
}
