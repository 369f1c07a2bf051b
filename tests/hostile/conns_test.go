//go:build linux

package hostile

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/testcerts"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestConnectionsPerIPFlood: one client address (127.0.0.2)
// opens 2,000 connections and holds them, beside the steady producer and
// consumer group (from 127.0.0.1), against --max-connections-per-ip 100:
// 100 stay open, the other 1,900 are closed at once and counted, and the
// steady clients, from another address, lose nothing.
func TestConnectionsPerIPFlood(t *testing.T) {
	const (
		perIP = 100
		n     = 2000
	)
	raiseNoFile(t, 4*n)
	requireLoopbackAddr(t)
	k := startFloodKiggy(t, "--max-connections-per-ip", strconv.Itoa(perIP))
	s := startSteady(t, k)
	m0 := k.metrics(t)
	before := k.rss(t)
	peak := k.peak(t)
	var conns []net.Conn
	var mu sync.Mutex
	var closedAtOnce int
	s.flood(func() {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := floodDialer()
				c, err := d.Dial("tcp", k.Addr)
				if err != nil {
					t.Errorf("dial from 127.0.0.2: %v", err)
					return
				}
				// A refused connection is closed at once; a kept one
				// stays silent until the read deadline.
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, err = c.Read(make([]byte, 1))
				mu.Lock()
				defer mu.Unlock()
				if err == io.EOF || isReset(err) {
					closedAtOnce++
					c.Close()
					return
				}
				conns = append(conns, c)
			}()
		}
		wg.Wait()
	})
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if t.Failed() {
		t.FailNow()
	}
	high := peak()
	k.waitClosed(t, m0, "max_connections_per_ip", n-perIP, 10*time.Second)
	m := k.metrics(t)
	t.Logf("%d connections from one address: %d kept, %d closed at once; RSS %.1f MiB before, peak %.1f MiB; %v open",
		n, len(conns), closedAtOnce, mib(before), mib(high), m.open())
	if len(conns) != perIP || closedAtOnce != n-perIP {
		t.Errorf("kept %d and closed %d, want %d and %d", len(conns), closedAtOnce, perIP, n-perIP)
	}
	if got := m.closed("max_connections_per_ip") - m0.closed("max_connections_per_ip"); got != n-perIP {
		t.Errorf("closed{reason=max_connections_per_ip} rose by %v, want %d", got, n-perIP)
	}
	if got := m["kiggy_connections_refused_total"] - m0["kiggy_connections_refused_total"]; got != n-perIP {
		t.Errorf("kiggy_connections_refused_total rose by %v, want %d", got, n-perIP)
	}
	if grew := high - before; grew >= 32<<20 {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < 32", mib(grew))
	}
	s.check(t)
}

// floodDialer dials from 127.0.0.2, the floods' client address
// (requireLoopbackAddr), so the steady clients on 127.0.0.1 are another
// address.
func floodDialer() net.Dialer {
	return net.Dialer{Timeout: dialTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
}

// isReset reports a connection reset by the peer.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// requireLoopbackAddr skips t (fails it under KIGGY_REQUIRE_TOOLS=1) when
// this machine cannot use 127.0.0.2 as a source address: Linux routes all
// of 127.0.0.0/8 to the loopback interface, some sandboxes do not.
func requireLoopbackAddr(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		defer ln.Close()
		d := floodDialer()
		var c net.Conn
		if c, err = d.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
		}
	}
	testtools.Require(t, "source address 127.0.0.2", err == nil, fmt.Sprintf("dialling from it failed (%v)", err))
}

// TestConnectionChurnFlood (KIP-612): one client address
// (127.0.0.2) reconnects in a loop for 3 s (8 goroutines, each dialling,
// sending one ApiVersions, reading its answer or the close, and dialling
// again) beside the steady producer and consumer group (from 127.0.0.1),
// against --connection-creation-rate-per-ip 100 over 11 windows of
// 100 ms: past its first burst the address's connections are held for
// their throttle and closed unanswered, so it is served at most 100 a
// second over the span; every refusal is counted, and the steady clients,
// from another address, lose nothing. KIGGY_HOSTILE_NO_QUOTA=1 runs it
// without the rate (the figure it is judged against).
func TestConnectionChurnFlood(t *testing.T) { churnFlood(t, false) }

// TestTLSConnectionChurnFlood is TestConnectionChurnFlood against an SSL
// listener, where a connection costs the gateway a TLS handshake (an
// ECDSA signature and a key exchange): the rate applies to every listener,
// and a refused connection is closed before its handshake, so the flood
// costs the gateway at most 100 handshakes a second.
func TestTLSConnectionChurnFlood(t *testing.T) { churnFlood(t, true) }

// churnFlood runs the reconnect flood, over TLS to an SSL listener when
// overTLS.
func churnFlood(t *testing.T, overTLS bool) {
	const (
		rate    = 100
		clients = 8
		span    = 1100 * time.Millisecond // 11 windows of 100 ms
		lasting = 3 * time.Second
	)
	requireLoopbackAddr(t)
	var args []string
	limited := os.Getenv(noQuotaEnv) != "1"
	if limited {
		args = []string{"--connection-creation-rate-per-ip", strconv.Itoa(rate), "--quota-window-size", "100ms"}
	} else {
		t.Logf("no connection creation rate (%s=1)", noQuotaEnv)
	}
	var clientTLS *tls.Config
	if overTLS {
		dir := t.TempDir()
		ca := testcerts.NewCA(t, dir, "ca")
		srv := ca.Server(t, dir, "server")
		clientTLS = &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
		args = append(args, "--listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
			"--ssl-cert-file", srv.CertFile, "--ssl-key-file", srv.KeyFile)
	}
	k := startFloodKiggy(t, args...)
	addr := k.Addr
	if overTLS {
		addr = k.Listeners["SSL"]
	}
	s := startSteady(t, k) // on the PLAINTEXT listener
	m0 := k.metrics(t)
	before := k.rss(t)
	peak := k.peak(t)
	var served, refused atomic.Int64
	var took time.Duration
	s.flood(func() {
		start := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := floodDialer()
				for time.Since(start) < lasting {
					c, err := d.Dial("tcp", addr)
					if err != nil {
						t.Errorf("dial from 127.0.0.2: %v", err)
						return
					}
					if overTLS {
						// The handshake runs with the first write; a
						// connection closed for the rate fails it.
						c.SetDeadline(time.Now().Add(dialTimeout))
						c = tls.Client(c, clientTLS)
					}
					kc := kafkawire.NewConn(c, "hostile")
					req := kmsg.NewPtrApiVersionsRequest()
					req.Version = 3
					req.ClientSoftwareName, req.ClientSoftwareVersion = "hostile", "1"
					if _, err := kc.RoundTrip(req); err == nil {
						served.Add(1)
					} else {
						refused.Add(1) // closed unanswered
					}
					c.Close()
				}
			}()
		}
		wg.Wait()
		took = time.Since(start)
	})
	if t.Failed() {
		t.FailNow()
	}
	high := peak()
	m := k.metrics(t)
	counted := m.closed("connection_creation_rate") - m0.closed("connection_creation_rate")
	t.Logf("%d connections from one address in %v: %d served, %d closed unanswered (%v counted); RSS %.1f MiB before, peak %.1f MiB",
		served.Load()+refused.Load(), took.Round(time.Millisecond), served.Load(), refused.Load(), counted, mib(before), mib(high))
	if limited {
		// The meter allows rate × the span it measures over, at least
		// the span: whatever the machine's speed, no more than this.
		if most := int64(rate * (took + span).Seconds()); served.Load() > most {
			t.Errorf("served %d connections in %v, want at most %d at %d a second", served.Load(), took, most, rate)
		}
		if refused.Load() == 0 || counted != float64(refused.Load()) {
			t.Errorf("%d connections closed unanswered, %v counted under connection_creation_rate: want the same, more than 0", refused.Load(), counted)
		}
		if got := m["kiggy_connections_refused_total"] - m0["kiggy_connections_refused_total"]; got != counted {
			t.Errorf("kiggy_connections_refused_total rose by %v, want %v", got, counted)
		}
	} else if refused.Load() != 0 {
		t.Errorf("%d connections closed unanswered without a connection rate", refused.Load())
	}
	if grew := high - before; grew >= 32<<20 {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < 32", mib(grew))
	}
	s.check(t)
}
