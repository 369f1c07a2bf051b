package engine

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"testing"
	"time"
)

// authHandler echoes, and marks the connection authenticated at an
// apiNoResp request (answered with nothing).
type authHandler struct{}

func (authHandler) Serve(r *Request) {
	f := r.Frame()
	if len(f) >= 2 && f[1] == byte(apiNoResp) {
		r.Conn().Authenticated()
		r.NoResponse()
		return
	}
	echo(r)
}

// TestMaxFrameBeforeAuth: on a listener with MaxFrameBeforeAuth (Kafka's
// sasl.server.max.receive.size) a connection that has not authenticated is
// closed at a frame declaring more, before its body arrives, and counted as
// frame_too_large; a frame within it is served; once the handler called
// Authenticated the connection's frames are bounded by MaxFrameSize only. A
// listener without it serves the large frame before authentication.
func TestMaxFrameBeforeAuth(t *testing.T) {
	const limit = 1024
	big := frame(apiEcho, 2, bytes.Repeat([]byte{'b'}, 4096)...)
	forEach(t, func(t *testing.T, kind string) {
		srv, err := New(kind, Config{}, authHandler{})
		if err != nil {
			t.Fatal(err)
		}
		serve := func(max int32) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(&Listener{Listener: ln, Name: "SASL_PLAINTEXT", MaxFrameBeforeAuth: max})
			return ln.Addr().String()
		}
		limited, open := serve(limit), serve(0)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
		})
		dial := func(addr string) (net.Conn, *bufio.Reader) {
			c, err := net.DialTimeout("tcp", addr, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c, bufio.NewReader(c)
		}
		echoed := func(c net.Conn, br *bufio.Reader, req []byte) {
			t.Helper()
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			corr, body, err := readResp(br)
			if err != nil || corr != corrOf(req[4:]) || !bytes.Equal(body, req[4:]) {
				t.Fatalf("echo of %d bytes: corr %d, %d bytes, %v", len(req), corr, len(body), err)
			}
		}

		// Before authentication: a small frame is served, a big one closes
		// the connection at its size prefix.
		c, br := dial(limited)
		echoed(c, br, frame(apiEcho, 1, 'h', 'i'))
		if _, err := c.Write(big[:4]); err != nil {
			t.Fatal(err)
		}
		expectEOF(t, c, 10*time.Second)
		waitFor(t, 10*time.Second, "a frame_too_large close", func() bool { return srv.Stats().Closes[ReasonFrameTooLarge] == 1 })

		// After authentication: the big frame is served.
		c, br = dial(limited)
		if _, err := c.Write(frame(apiNoResp, 1)); err != nil {
			t.Fatal(err)
		}
		echoed(c, br, big)

		// A listener without the bound.
		c, br = dial(open)
		echoed(c, br, big)
		if n := srv.Stats().Closes[ReasonFrameTooLarge]; n != 1 {
			t.Errorf("%d frame_too_large closes, want 1", n)
		}
	})
}
