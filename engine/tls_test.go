package engine

import (
	"bufio"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testcerts"
)

// tlsFixture is a server certificate and the client configuration that
// trusts it.
type tlsFixture struct {
	server *tls.Config
	client *tls.Config
}

func newTLSFixture(t testing.TB) *tlsFixture {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	srv := ca.Server(t, dir, "server")
	cl := ca.Client(t, dir, "client", pkix.Name{CommonName: "client"})
	return &tlsFixture{
		server: &tls.Config{Certificates: []tls.Certificate{srv.TLS}, ClientCAs: ca.Pool(), ClientAuth: tls.VerifyClientCertIfGiven},
		client: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{cl.TLS}},
	}
}

// serveListener adds a listener to ts's server and returns its address.
func (ts *testServer) serveListener(t testing.TB, name string, cfg *tls.Config, timeout time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ts.srv.Serve(&Listener{Listener: ln, Name: name, TLS: cfg, HandshakeTimeout: timeout})
	return ln.Addr().String()
}

func dialTLS(t testing.TB, addr string, cfg *tls.Config) *tls.Conn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestTLSListener: one server serves a plaintext and a TLS listener side by
// side; each connection carries its listener's name, TLS connections their
// handshake state, and ids stay unique across both.
func TestTLSListener(t *testing.T) {
	fx := newTLSFixture(t)
	forEach(t, func(t *testing.T, kind string) {
		infos := make(chan *ConnInfo, 4)
		ts := startServer(t, kind, Config{}, HandlerFunc(func(r *Request) {
			infos <- r.Conn()
			echo(r)
		}))
		plainAddr := ts.serveListener(t, "PLAINTEXT", nil, 0)
		tlsAddr := ts.serveListener(t, "SSL", fx.server, 0)

		pc, err := net.DialTimeout("tcp", plainAddr, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		if err := roundTrip(pc, bufio.NewReader(pc), 1); err != nil {
			t.Fatal(err)
		}
		pi := <-infos
		tc := dialTLS(t, tlsAddr, fx.client)
		if err := roundTrip(tc, bufio.NewReader(tc), 2); err != nil {
			t.Fatal(err)
		}
		ti := <-infos
		if pi.Listener != "PLAINTEXT" || pi.TLS != nil {
			t.Errorf("plaintext connection: listener %q, TLS %v", pi.Listener, pi.TLS)
		}
		if ti.Listener != "SSL" || ti.TLS == nil || !ti.TLS.HandshakeComplete || len(ti.TLS.PeerCertificates) != 1 ||
			ti.TLS.PeerCertificates[0].Subject.CommonName != "client" {
			t.Errorf("TLS connection: listener %q, TLS %+v", ti.Listener, ti.TLS)
		}
		if pi.ID == ti.ID {
			t.Errorf("both connections have id %d", pi.ID)
		}
		if ti.LocalAddr != tlsAddr {
			t.Errorf("TLS LocalAddr %s, want %s", ti.LocalAddr, tlsAddr)
		}
		if st := ts.srv.Stats(); st.Accepted != 2 || st.Open != 2 || st.Requests != 2 {
			t.Errorf("stats %+v, want 2 accepted, 2 open, 2 requests (both listeners counted)", st)
		}
		// A plaintext client on the TLS port is closed as tls_handshake.
		bad, err := net.DialTimeout("tcp", tlsAddr, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer bad.Close()
		bad.Write(frame(apiEcho, 3))
		expectEOF(t, bad, 10*time.Second)
		ts.waitClosed(t, ReasonTLSHandshake, 1)
		if err := ts.stop(5 * time.Second); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if st := ts.srv.Stats(); st.Open != 0 {
			t.Errorf("%d connections open after Shutdown", st.Open)
		}
	})
}

// TestTLSHandshakeStall: a thousand connections that never finish their
// handshake (silent, or a partial ClientHello) do not delay a client that
// does: it is served while they are all still open, and they are closed
// as tls_handshake once HandshakeTimeout passes.
func TestTLSHandshakeStall(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1000 connections")
	}
	fx := newTLSFixture(t)
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{}, newTestHandler())
		const timeout = 3 * time.Second
		addr := ts.serveListener(t, "SSL", fx.server, timeout)
		const n = 1000
		var wg sync.WaitGroup
		conns := make([]net.Conn, n)
		errs := make(chan error, n)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 8 {
					c, err := net.DialTimeout("tcp", addr, 30*time.Second)
					if err != nil {
						errs <- err
						return
					}
					if i%2 == 1 {
						// The first bytes of a TLS record header of a ClientHello.
						c.Write([]byte{0x16, 0x03, 0x01, 0x02})
					}
					conns[i] = c
				}
			}()
		}
		start := time.Now()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		waitFor(t, 30*time.Second, "stalled connections accepted", func() bool { return ts.srv.Stats().Open >= n })
		tc := dialTLS(t, addr, fx.client)
		if err := roundTrip(tc, bufio.NewReader(tc), 1); err != nil {
			t.Fatal(err)
		}
		st := ts.srv.Stats()
		if time.Since(start) < timeout && st.Closes[ReasonTLSHandshake] != 0 {
			t.Fatalf("handshakes timed out early: %d", st.Closes[ReasonTLSHandshake])
		}
		if st.Open < n+1 {
			t.Logf("note: %d open when the good client was served (the timeout had passed)", st.Open)
		}
		ts.waitClosed(t, ReasonTLSHandshake, n)
		for _, c := range conns[:10] {
			expectEOF(t, c, 5*time.Second)
		}
		if err := roundTrip(tc, bufio.NewReader(tc), 2); err != nil {
			t.Fatalf("the good client after the stalled ones were closed: %v", err)
		}
	})
}

// BenchmarkTLS compares plaintext and TLS round trips of Produce-sized
// (64 KiB) and small (50 B) requests, 5 pipelined, over 1 and 64
// connections. Plaintext runs on each engine; TLS always runs on the net
// engine's goroutines (Listener).
func BenchmarkTLS(b *testing.B) {
	fx := newTLSFixture(b)
	for _, kind := range kinds {
		for _, secure := range []bool{false, true} {
			name := fmt.Sprintf("engine=%s/tls=%v", kind, secure)
			b.Run(name, func(b *testing.B) {
				ts := startServer(b, kind, Config{}, benchHandler)
				addr := ts.addr
				if secure {
					addr = ts.serveListener(b, "SSL", fx.server, 0)
				}
				for _, conns := range []int{1, 64} {
					cs := make([]net.Conn, conns)
					for i := range cs {
						if secure {
							cs[i] = dialTLS(b, addr, fx.client)
						} else {
							c, err := net.Dial("tcp", addr)
							if err != nil {
								b.Fatal(err)
							}
							b.Cleanup(func() { c.Close() })
							cs[i] = c
						}
					}
					for _, size := range []int{50, 64 << 10} {
						b.Run(fmt.Sprintf("conns=%d/size=%s/depth=5", conns, sizeName(size)), func(b *testing.B) {
							benchRoundTrips(b, cs, size, 5)
						})
					}
				}
			})
		}
	}
}

// TestTLSPipelineCoalesced: pipelined responses of mixed sizes on a TLS
// connection (small ones share a TLS record, big ones go alone) arrive
// whole and in order.
func TestTLSPipelineCoalesced(t *testing.T) {
	fx := newTLSFixture(t)
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{}, newTestHandler())
		c := dialTLS(t, ts.serveListener(t, "SSL", fx.server, 0), fx.client)
		sizes := []int{10, 40 << 10, 30, 5, 16 << 10, 16<<10 - 8, 1, 200 << 10, 7}
		var req []byte
		for i, n := range sizes {
			req = append(req, frameArg(apiBig, int32(i), n)...)
		}
		for round := range 3 {
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for i, n := range sizes {
				corr, body, err := readResp(br)
				if err != nil || corr != int32(i) || len(body) != n {
					t.Fatalf("round %d response %d: corr %d, %d bytes, %v; want %d bytes", round, i, corr, len(body), err, n)
				}
			}
		}
	})
}
