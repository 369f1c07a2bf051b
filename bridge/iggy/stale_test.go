package iggy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// restartable starts a server a test can take down and bring back on the
// same address: a real iggy-server when one is found (SIGKILL, then a start
// over its data directory), else iggytest (its Crash, then Start).
func restartable(t *testing.T) (addr string, restart func()) {
	t.Helper()
	if realServer(t) {
		n := iggyserver.StartT(t)
		return n.Addr, func() {
			n.Kill()
			if err := n.Restart(); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv, addr := startServer(t, iggytest.Config{})
	return addr, func() { restartModel(t, srv, addr) }
}

// restartModel crashes iggytest and starts it again on addr.
func restartModel(t *testing.T, srv *iggytest.Server, addr string) {
	t.Helper()
	srv.Crash()
	if _, err := srv.Start(addr); err != nil {
		t.Fatal(err)
	}
}

// openConnected opens a client as cfg says, creates topic (one partition)
// and connects every session of its pool.
func openConnected(t *testing.T, cfg Config, topic string) *Client {
	t.Helper()
	c := open(t, cfg)
	if _, err := c.CreateTopic(ctx(t), topic, 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	connectAll(t, c)
	return c
}

// appendsSucceed appends n records to topic one by one after a restart,
// each of which must succeed, and checks that the client found wantStale
// sessions closed before use.
func appendsSucceed(t *testing.T, c *Client, topic string, n int, wantStale uint64) {
	t.Helper()
	for i := range n {
		if _, err := c.Append(ctx(t), topic, 0, batchOf(1, "after", 1)); err != nil {
			t.Fatalf("append %d after the restart: %v", i, err)
		}
	}
	if got := c.metrics.staleSessions.Load(); got != wantStale {
		t.Fatalf("stale sessions found: %d, want %d", got, wantStale)
	}
}

// connectAll holds every session of c's pool at once, so each has its own
// connection, and gives them back.
func connectAll(t *testing.T, c *Client) {
	t.Helper()
	var held []*session
	for range len(c.sessions) {
		s, err := c.acquire(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
	}
	for _, s := range held {
		c.release(s)
	}
}

// TestNoStaleSessionAfterRestart: after the server restarts, every pooled
// session still holds a connection from before it. None of them may fail a
// request: each is found closed before use (a poll of its socket, no round trip) and
// connected again. Writes are the point: a write that fails after it was
// sent is of unknown outcome, and is not sent again.
func TestNoStaleSessionAfterRestart(t *testing.T) {
	addr, restart := restartable(t)
	const pool = 8
	c := openConnected(t, Config{Addr: addr, PoolSize: pool, PingInterval: -1}, "st")
	if got := c.metrics.connected.Load(); got != pool {
		t.Fatalf("%d sessions connected, want %d", got, pool)
	}
	restart()
	// Nothing asked the server anything since: only the sessions' idle time
	// (a real restart takes longer than this) tells them to look.
	time.Sleep(staleCheckIdle)
	appendsSucceed(t, c, "st", 2*pool, pool)
	msgs, _ := readAll(t, c, "st", 0, 0, 1<<20)
	if len(msgs) < 2*pool {
		t.Fatalf("read %d records, want at least %d", len(msgs), 2*pool)
	}
}

// TestStaleSessionsAfterALoss: right after a restart, before the sessions
// have been idle long, one request may find its connection gone (it was
// sent; a write's outcome is then unknown). That loss makes every other
// idle session look at its own before use: at most one request fails, not
// one per session. A read is sent again by itself.
func TestStaleSessionsAfterALoss(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	const pool = 8
	c := openConnected(t, Config{Addr: addr, PoolSize: pool, PingInterval: -1}, "sl")
	cx := ctx(t)
	restartModel(t, srv, addr)
	failed := 0
	for range 2 * pool {
		if _, err := c.Append(cx, "sl", 0, batchOf(1, "after", 1)); err != nil {
			failed++
		}
	}
	if failed > 1 {
		t.Fatalf("%d appends failed after the restart, want at most 1 (stale sessions found: %d)", failed, c.metrics.staleSessions.Load())
	}
	if found := c.metrics.staleSessions.Load(); found < pool-1 {
		t.Fatalf("stale sessions found: %d, want at least %d", found, pool-1)
	}

	// A read on a connection closed under it is sent again, once.
	connectAll(t, c)
	restartModel(t, srv, addr)
	before := c.metrics.staleSessions.Load() + c.metrics.readRetries.Load()
	for i := range 2 * pool {
		if _, err := c.Read(cx, "sl", 0, 0, 1<<20, func(*message.Message) bool { return true }); err != nil {
			t.Fatalf("read %d after the restart: %v", i, err)
		}
	}
	if got := c.metrics.staleSessions.Load() + c.metrics.readRetries.Load() - before; got != pool {
		t.Fatalf("sessions found stale or reads sent again: %d, want %d", got, pool)
	}
}

// TestPeerClosed: the check tells an idle connection that is alive from
// one its peer closed, and from one holding bytes nobody asked for.
func TestPeerClosed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the idle-connection check polls the socket on Linux only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, addr := startServer(t, iggytest.Config{})
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1})
	peer := make(chan net.Conn, 1)
	dialled := func() *session {
		t.Helper()
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				close(peer)
				return
			}
			peer <- conn
		}()
		s := newSession(c)
		if err := s.dial(context.Background(), ln.Addr().String()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.close)
		return s
	}

	s := dialled()
	p := <-peer
	if s.peerClosed() {
		t.Fatal("a live idle connection taken as closed")
	}
	if n := testing.AllocsPerRun(100, func() { s.peerClosed() }); n != 0 {
		t.Fatalf("the check allocates %v times", n)
	}
	p.Close()
	if !testtools.Eventually(5*time.Second, s.peerClosed) {
		t.Fatal("a connection the peer closed taken as alive")
	}

	s = dialled()
	p = <-peer
	if _, err := p.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	if !testtools.Eventually(5*time.Second, s.peerClosed) {
		t.Fatal("a connection holding unasked bytes taken as usable")
	}
	s.tls = true // under TLS the bytes may be the TLS layer's own
	if s.peerClosed() {
		t.Fatal("a TLS connection with a pending record taken as closed")
	}
	// The peer's close is seen behind the bytes still queued (Linux: the
	// peek's POLLRDHUP).
	p.Close()
	if !testtools.Eventually(5*time.Second, s.peerClosed) {
		t.Fatal("a TLS connection its peer closed behind a pending record taken as alive")
	}
}

// TestNoStaleTLSSessionAfterRestart: sessions over TLS that served no
// request since their handshake still hold the server's TLS 1.3 session
// tickets unread; the server's close behind them is seen all the same, and
// no append fails after a restart.
func TestNoStaleTLSSessionAfterRestart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the idle-connection check polls the socket on Linux only")
	}
	ca := newTestCA(t)
	serverCert := ca.issue(t, "iggy", x509.ExtKeyUsageServerAuth)
	srv, addr := startServer(t, iggytest.Config{TLS: &tls.Config{Certificates: []tls.Certificate{serverCert}}})
	const pool = 4
	// The other sessions connect with no request on them after the login.
	c := openConnected(t, Config{Addr: addr, PoolSize: pool, PingInterval: -1, TLS: &tls.Config{RootCAs: ca.pool}}, "tl")
	restartModel(t, srv, addr)
	time.Sleep(staleCheckIdle)
	appendsSucceed(t, c, "tl", 2*pool, pool)
}
