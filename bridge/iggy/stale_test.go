package iggy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// restartable starts a server a test can take down and bring back on the
// same address: a real iggy-server when one is found (SIGKILL, then a start
// over its data directory), else iggytest (its Crash, then Start after
// staleCheckIdle: a real server is down for longer than that, which is
// what the idle check relies on when no request lost its connection).
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
	return addr, func() {
		srv.Crash()
		time.Sleep(staleCheckIdle)
		if _, err := srv.Start(addr); err != nil {
			t.Fatal(err)
		}
	}
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

// TestNoStaleSessionKilledUnderLoad: the server is killed (SIGKILL on a
// real iggy-server) while a quarter of the pool's sessions serve appending
// workers, and restarted on the same address while they go on; then the
// load grows to a worker per session, so the sessions idle since before
// the kill are used too. What is acceptable around a crash is told apart
// from what a stale session would cost:
//
//   - an append that began before the restart finished may fail either
//     way: in flight at the kill (outcome unknown) or refused while the
//     server was down or the session's reconnect backoff ran;
//   - an append that began after the restart may be refused before it was
//     sent (store.ErrUnavailable: a session still in its backoff), but
//     never fail after it was sent: that is a connection from before the
//     kill, used as if alive;
//   - once one append has succeeded on the new server, every append begun
//     after it succeeds: the backoff earned against a dead server is void
//     once a login to the new one succeeded;
//   - every acknowledged record is read back.
func TestNoStaleSessionKilledUnderLoad(t *testing.T) {
	addr, restart := restartable(t)
	const (
		pool       = 32
		workers    = pool
		early      = pool / 4 // the workers before and through the kill
		partitions = 4
	)
	c := open(t, Config{Addr: addr, PoolSize: pool})
	if _, err := c.CreateTopic(ctx(t), "kl", partitions, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	connectAll(t, c)

	type outcome struct {
		begun, ended time.Time
		payload      string
		partition    int32
		err          error
	}
	stop := make(chan struct{})
	results := make([][]outcome, workers)
	var wg sync.WaitGroup
	work := func(w int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var backoff time.Duration
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				o := outcome{begun: time.Now(), payload: fmt.Sprintf("w%d-%d-", w, k), partition: int32(w % partitions)}
				cx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, o.err = c.Append(cx, "kl", o.partition, batchOf(1, o.payload, 1))
				cancel()
				o.ended = time.Now()
				results[w] = append(results[w], o)
				if o.err == nil {
					backoff = 0
					continue
				}
				// A Kafka producer's retry backoff (retry.backoff.ms
				// 100, doubled up to retry.backoff.max.ms 1 s): the
				// workers do not cycle through every session while
				// the server is down.
				backoff = min(max(2*backoff, 100*time.Millisecond), time.Second)
				select {
				case <-stop:
					return
				case <-time.After(backoff):
				}
			}
		}()
	}
	for w := range early {
		work(w)
	}
	time.Sleep(300 * time.Millisecond)
	restart()
	restarted := time.Now()
	for w := early; w < workers; w++ {
		work(w)
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	var all []outcome
	for _, r := range results {
		all = append(all, r...)
	}
	firstOK := time.Time{}
	for _, o := range all {
		if o.err == nil && o.begun.After(restarted) && (firstOK.IsZero() || o.ended.Before(firstOK)) {
			firstOK = o.ended
		}
	}
	if firstOK.IsZero() {
		t.Fatal("no append succeeded in the second after the restart")
	}
	// How long the workers started after the restart waited for their
	// first append: a session each, every one of them to log in.
	var lateFirst time.Duration
	for _, r := range results[early:] {
		if len(r) > 0 {
			lateFirst = max(lateFirst, r[0].ended.Sub(restarted))
		}
	}
	var before, refused, after int
	acked := map[int32][]string{}
	for _, o := range all {
		switch {
		case o.err == nil:
			acked[o.partition] = append(acked[o.partition], o.payload+"0")
		case !o.begun.After(restarted):
			before++
		case errors.Is(o.err, store.ErrUnavailable) && o.begun.Before(firstOK):
			refused++
		default:
			after++
			t.Errorf("an append begun %v after the restart failed: %v", o.begun.Sub(restarted), o.err)
		}
	}
	t.Logf("%d appends: %d failed around the kill, %d refused after the restart (first success %v after it; the new workers' first appends all done %v after it), %d failed after; stale sessions found %d, logins waited for %d",
		len(all), before, refused, firstOK.Sub(restarted), lateFirst, after, c.metrics.staleSessions.Load(), c.metrics.loginWaits.Load())
	if before == 0 && realServer(t) {
		// iggytest's crash and start take no time: the load may not
		// meet them; a killed iggy-server is down for a while.
		t.Error("no append failed around the kill: the load did not meet it")
	}

	for p, want := range acked {
		stored := map[string]bool{}
		for from := int64(0); ; {
			msgs, wm := readAll(t, c, "kl", p, from, 1<<20)
			for _, m := range msgs {
				stored[m.payload] = true
				from = m.off + 1
			}
			if len(msgs) == 0 || from >= wm.High {
				break
			}
		}
		for _, payload := range want {
			if !stored[payload] {
				t.Fatalf("partition %d: acknowledged record %q not read back (%d acknowledged, %d stored)", p, payload, len(want), len(stored))
			}
		}
	}
}

// TestLoginsTakeTurns: after a restart every session must log in again. A
// request whose session must log in while another logs in waits for its
// turn, and takes a session another request gives back connected if one
// comes first (logins.go). And a waiter whose turn comes after a login failed
// while it waited fails as that one did, without a dial of its own.
func TestLoginsTakeTurns(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	c := openConnected(t, Config{Addr: addr, PoolSize: 3, PingInterval: -1}, "lt")
	cx := ctx(t)
	restartModel(t, srv, addr)
	time.Sleep(staleCheckIdle) // every session is checked, found closed, and must log in

	// One session logs in at once and is held: the connected one to give
	// back later.
	held, err := c.acquire(cx)
	if err != nil {
		t.Fatal(err)
	}
	// The next login's reply comes late: its session holds the turn.
	srv.InjectFault(iggytest.Fault{Op: proto.OpRegister, Count: 1, Delay: 2 * time.Second})
	slow := make(chan error, 1)
	go func() {
		s, err := c.acquire(cx)
		if err == nil {
			c.release(s)
		}
		slow <- err
	}()
	if !testtools.Eventually(5*time.Second, func() bool { return srv.PendingFaults() == 0 }) {
		t.Fatal("the slow login did not reach the server")
	}
	// The third session must log in too: it waits for the turn.
	got := make(chan *session, 1)
	go func() {
		s, err := c.acquire(cx)
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	if !testtools.Eventually(5*time.Second, func() bool { return c.metrics.loginWaits.Load() == 1 }) {
		t.Fatal("the third request did not wait for the login turn")
	}
	c.release(held)
	select {
	case s := <-got:
		if s != held {
			t.Fatal("the waiting request logged in a session of its own instead of taking the one given back")
		}
		c.release(s)
	case <-slow:
		t.Fatal("the waiting request was served only after the slow login")
	}
	if err := <-slow; err != nil {
		t.Fatal(err)
	}

	// The server goes down during a login: it fails, and the request
	// waiting behind it fails as it did, without a dial of its own.
	connectAll(t, c)
	restartModel(t, srv, addr)
	time.Sleep(staleCheckIdle)
	srv.InjectFault(iggytest.Fault{Op: proto.OpRegister, Count: 1, Delay: time.Second})
	dials := c.metrics.connectFailures.Load()
	failed := make(chan error, 2)
	try := func() {
		s, err := c.acquire(cx)
		if err == nil {
			c.release(s)
		}
		failed <- err
	}
	go try()
	if !testtools.Eventually(5*time.Second, func() bool { return srv.PendingFaults() == 0 }) {
		t.Fatal("the slow login did not reach the server")
	}
	go try()
	if !testtools.Eventually(5*time.Second, func() bool { return c.metrics.loginWaits.Load() == 2 }) {
		t.Fatal("the second request did not wait for the login turn")
	}
	srv.Crash()
	for range 2 {
		if err := <-failed; err == nil {
			t.Fatal("a request succeeded with the server down")
		}
	}
	if got := c.metrics.connectFailures.Load() - dials; got != 1 {
		t.Fatalf("%d failed logins, want 1: the waiter dialled too", got)
	}
}

// TestIdleSessionPastItsDeadlineKept: a session idle past the deadline of
// its last request is alive, and the check before its next use must say
// so. It did not: RawConn.Read does not poll a socket whose read deadline
// has passed, the check took the error for a closed connection, and every
// idle session of an idle gateway was connected and logged in again about
// every 7.5 s (a keep-alive ping's 5 s deadline, then the next round).
func TestIdleSessionPastItsDeadlineKept(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, PingInterval: -1})
	connects := c.metrics.connects.Load()
	for i := range 3 {
		short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := c.Ready(short) // a Ping whose deadline passes 50 ms later
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * staleCheckIdle) // past it, and idle long enough to be checked
		if err := c.Ready(ctx(t)); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	if n, stale := c.metrics.connects.Load()-connects, c.metrics.staleSessions.Load(); n != 0 || stale != 0 {
		t.Fatalf("the idle session was connected again %d times (%d found stale); want 0", n, stale)
	}
}
