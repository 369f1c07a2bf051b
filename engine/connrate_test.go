package engine

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// dialFrom dials addr from source address ip, or skips t (fails it under
// KIGGY_REQUIRE_TOOLS=1) when this machine cannot use ip as a source.
func dialFrom(t *testing.T, addr, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 30 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		testtools.Require(t, "source address "+ip, false, fmt.Sprintf("dialling from it failed (%v)", err))
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConnectionCreationRatePerIP (KIP-612): an address that opens
// connections faster than ConnectionCreationRatePerIP has the one over the
// rate refused: held unserved for its throttle, then closed; another
// address is still served, and the refused one was taken back out of the
// rate. The window (2 samples of 10 s) measures a first burst over at
// least 10 s: at 1 a second, 10 connections are within the rate and the
// 11th is over it by a tenth, a throttle of 1 s.
func TestConnectionCreationRatePerIP(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{ConnectionCreationRatePerIP: 1, RateSamples: 2, RateWindow: 10 * time.Second}, newTestHandler())
		served := func(c net.Conn, corr int32) {
			t.Helper()
			if err := roundTrip(c, bufio.NewReader(c), corr); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 10 {
			served(dialFrom(t, ts.addr, "127.0.0.2"), int32(i))
		}
		over := dialFrom(t, ts.addr, "127.0.0.2")
		over.Write(frame(apiEcho, 10))
		expectEOF(t, over, 10*time.Second) // closed without an answer
		served(dialFrom(t, ts.addr, "127.0.0.1"), 11)
		st := ts.srv.Stats()
		if st.Refused != 1 || st.Closes[ReasonConnectionRate] != 1 || st.IPRateThrottles != 1 || st.Open != 11 || st.IPRates != 2 {
			t.Fatalf("stats %+v: want 1 refused for the connection rate, 11 open, 2 addresses metered", st)
		}
		if st.IPRateThrottleTime < 900*time.Millisecond || st.IPRateThrottleTime > time.Second {
			t.Fatalf("held for %v, want (1.1−1)/1 × 10 s = 1 s", st.IPRateThrottleTime)
		}
	})
}

// TestMaxConnectionCreationRate (KIP-612): past MaxConnectionCreationRate
// the acceptor waits before serving the next connection; nothing is
// refused. At 2 a second over at least 10 s, 20 connections pass and the
// 21st waits (2.1−2)/2 × 10 s = 0.5 s.
func TestMaxConnectionCreationRate(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		ts := startServer(t, kind, Config{MaxConnectionCreationRate: 2, RateSamples: 2, RateWindow: 10 * time.Second}, newTestHandler())
		for i := range 21 {
			c := dialFrom(t, ts.addr, "127.0.0.1")
			if err := roundTrip(c, bufio.NewReader(c), int32(i)); err != nil {
				t.Fatalf("connection %d: %v", i+1, err)
			}
		}
		st := ts.srv.Stats()
		if st.Refused != 0 || st.Open != 21 || st.AcceptThrottles != 1 {
			t.Fatalf("stats %+v: want 21 open, none refused, the acceptor throttled once", st)
		}
		if st.AcceptThrottleTime < 450*time.Millisecond || st.AcceptThrottleTime > 500*time.Millisecond {
			t.Fatalf("the acceptor waited %v, want 0.5 s", st.AcceptThrottleTime)
		}
	})
}
