package iggy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

func scrape(c *Client) string {
	var b strings.Builder
	c.WriteMetrics(&b)
	return b.String()
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l+"\n") {
			t.Errorf("metrics lack %q", l)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", out)
	}
}

// TestMetrics: requests are timed by command, failures counted by kind,
// transient replays, session use and reconnects after a server restart.
func TestMetrics(t *testing.T) {
	// One dialect, the one auto tries first: one login per session.
	srv, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}})
	c := open(t, Config{Addr: addr, PoolSize: 2, PasswordLogins: true, ReconnectBackoffMin: 10 * time.Millisecond, ReconnectBackoffMax: 50 * time.Millisecond})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "m", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Append(cx, "m", 0, batchOf(1, "x", 2)); err != nil {
			t.Fatal(err)
		}
	}
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Status: uint32(proto.CodeTransientNotCommitted), Count: 2})
	if _, err := c.Append(cx, "m", 0, batchOf(1, "x", 1)); err != nil {
		t.Fatal(err)
	}
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Status: 777})
	c.Append(cx, "m", 0, batchOf(1, "x", 1))
	// Only the dropped request gets a short deadline: on a loaded machine
	// a 300 ms RequestTimeout also expired the transient replays above.
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Drop: true})
	short, cancel := context.WithTimeout(cx, 300*time.Millisecond)
	c.Append(short, "m", 0, batchOf(1, "x", 1))
	cancel()

	out := scrape(c)
	wantLines(t, out,
		`kiggy_iggy_request_duration_seconds_count{command="SendMessages"} 6`,
		`kiggy_iggy_request_duration_seconds_count{command="LoginRegister"} 2`,
		`kiggy_iggy_request_errors_total{command="SendMessages",kind="server"} 1`,
		`kiggy_iggy_request_errors_total{command="SendMessages",kind="timeout"} 1`,
		`kiggy_iggy_transient_retries_total 2`,
		`kiggy_iggy_sessions 2`,
		`kiggy_iggy_sessions_in_use 0`,
		`kiggy_iggy_reconnects_total 0`,
		`kiggy_iggy_protocol{protocol="0.12"} 1`,
	)
	// The timeout dropped one session's connection: one of two is up.
	wantLines(t, out, `kiggy_iggy_sessions_connected 1`)

	// Restart the server: sessions fail, then reconnect.
	srv.Stop()
	c.Append(cx, "m", 0, batchOf(1, "down", 1)) // the live connection is found closed before use, connecting fails
	c.Append(cx, "m", 0, batchOf(1, "down", 1)) // so does connecting anew
	c.Append(cx, "m", 0, batchOf(1, "down", 1))
	if _, err := srv.Start(addr); err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(5*time.Second, func() bool {
		_, err := c.Append(cx, "m", 0, batchOf(1, "after", 1))
		return err == nil
	})
	out = scrape(c)
	if strings.Contains(out, "kiggy_iggy_reconnects_total 0\n") || strings.Contains(out, "kiggy_iggy_connect_failures_total 0\n") {
		t.Fatalf("restart not counted:\n%s", out)
	}
	// No request was sent on the closed connection (stale.go).
	wantLines(t, out, `kiggy_iggy_sessions_in_use 0`, `kiggy_iggy_stale_sessions_total 1`, `kiggy_iggy_read_retries_total 0`, `kiggy_iggy_login_waits_total 0`, `kiggy_iggy_session_token_refusals_total 0`)
	if strings.Contains(out, `kind="connection"`) {
		t.Fatalf("a request failed on a connection found closed:\n%s", grepLines(out, `kind="connection"`))
	}
}

func TestObserveAllocs(t *testing.T) {
	var m clientMetrics
	if n := testing.AllocsPerRun(100, func() { m.observe(proto.CodeSendMessages, time.Millisecond, nil) }); n != 0 {
		t.Fatalf("observe allocates %v", n)
	}
}
