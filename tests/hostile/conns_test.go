//go:build linux

package hostile

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestConnectionsPerIPFlood (issue #35): one client address (127.0.0.2)
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
				d := net.Dialer{Timeout: dialTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
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
		d := net.Dialer{Timeout: dialTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		var c net.Conn
		if c, err = d.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
		}
	}
	testtools.Require(t, "source address 127.0.0.2", err == nil, fmt.Sprintf("dialling from it failed (%v)", err))
}
