package iggy

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
)

// TestDialectAuto: with Protocol auto the client speaks whichever dialect
// the server takes, learns it from the first login, and every later session
// logs in with it at once; the metric names it.
func TestDialectAuto(t *testing.T) {
	for _, d := range proto.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			_, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{d}})
			c := open(t, Config{Addr: addr, PoolSize: 3, PasswordLogins: true})
			if got := c.Dialect(); got != d {
				t.Fatalf("dialect %v, want %v", got, d)
			}
			cx := ctx(t)
			// Work on every session: each logs in.
			var held []*session
			for range 3 {
				s, err := c.acquire(cx)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, s)
			}
			for _, s := range held {
				if s.dialect != d {
					t.Errorf("a session speaks %v, want %v", s.dialect, d)
				}
				c.release(s)
			}
			// The newest is tried first: a 0.11 server costs the first
			// session one evicted login, no later session any.
			logins := 3
			if d != proto.Dialects[0] {
				logins++
			}
			out := scrape(c)
			wantLines(t, out, `kiggy_iggy_protocol{protocol="`+d.String()+`"} 1`,
				`kiggy_iggy_request_duration_seconds_count{command="LoginRegister"} `+strconv.Itoa(logins))
		})
	}
}

// TestDialectForced: a forced dialect the server does not take fails Open
// with ErrProtocol and a message that names the server's window and what
// kiggy sent; it does not fall back.
func TestDialectForced(t *testing.T) {
	_, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}})
	_, err := openErr(t, Config{Addr: addr, Protocol: proto.Dialect011})
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %v, want ErrProtocol", err)
	}
	for _, want := range []string{"accepts protocol 0.12.0 to 0.12.0", "kiggy sent 0.11.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// TestDialectWindowExcludesBoth: a server whose window holds neither
// dialect stops Open with one line naming the window and the versions kiggy
// speaks.
func TestDialectWindowExcludesBoth(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	future := proto.PackVersion(0, 13, 0)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				h := make([]byte, proto.HeaderSize)
				if _, err := io.ReadFull(conn, h); err != nil {
					return
				}
				if _, err := io.CopyN(io.Discard, conn, int64(proto.FrameSize(h))-proto.HeaderSize); err != nil {
					return
				}
				req := proto.ParseRequestHeader(h)
				proto.PutEvictionHeader(h, req.Client, proto.EvictIncompatibleProtocol, future, future)
				conn.Write(h)
			}()
		}
	}()
	_, err = openErr(t, Config{Addr: ln.Addr().String()})
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %v, want ErrProtocol", err)
	}
	for _, want := range []string{"accepts protocol 0.13.0 to 0.13.0", "kiggy speaks 0.11.0 (Iggy 0.9) and 0.12.0 (Iggy 0.10)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// TestDialectRealServer: against the real Iggy 0.9 server auto speaks 0.11
// (the server's version gate evicts the 0.12 login and names 0.11), and a
// forced 0.12 is refused with the window.
func TestDialectRealServer(t *testing.T) {
	if os.Getenv("KIGGY_TEST_IGGY") == "model" {
		t.Skip("KIGGY_TEST_IGGY=model: the model run does not start real servers")
	}
	iggyserver.Require(t) // missing: a failure in CI, a printed skip elsewhere
	srv := iggyserver.StartT(t)
	c := open(t, Config{Addr: srv.Addr, PoolSize: 1})
	if got := c.Dialect(); got != proto.Dialect011 {
		t.Fatalf("auto against Iggy 0.9 speaks %v", got)
	}
	_, err := openErr(t, Config{Addr: srv.Addr, Protocol: proto.Dialect012})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "accepts protocol 0.11.0") {
		t.Fatalf("forced 0.12 against Iggy 0.9: %v", err)
	}
}

// TestUpdateTopicLimits: the message expiry and size cap set by UpdateTopic
// read back, and unsetting them reads back as none, in the dialect the
// target speaks (0.11 UpdateTopic; 0.12 UpdateResource, which resets them).
func TestUpdateTopicLimits(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "limits", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	set := store.TopicConfig{MessageExpiry: 90 * time.Minute, MaxBytes: 4 << 30}
	if err := c.UpdateTopic(cx, "limits", set); err != nil {
		t.Fatal(err)
	}
	info, err := c.topic(cx, "limits")
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MessageExpiry != set.MessageExpiry || info.Config.MaxBytes != set.MaxBytes {
		t.Fatalf("after set (%v): %+v", c.Dialect(), info.Config)
	}
	if err := c.UpdateTopic(cx, "limits", store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	c.forget("limits")
	if info, err = c.topic(cx, "limits"); err != nil {
		t.Fatal(err)
	}
	if info.Config.MessageExpiry != 0 || info.Config.MaxBytes != 0 {
		t.Fatalf("after unset (%v): %+v", c.Dialect(), info.Config)
	}
}

func openErr(t *testing.T, cfg Config) (*Client, error) {
	t.Helper()
	cfg.Logger = quiet
	cfg.DialTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Open(ctx, cfg)
	if err == nil {
		c.Close()
	}
	return c, err
}
