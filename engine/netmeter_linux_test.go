//go:build linux

package engine

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ioHandler answers api 1 with its correlation id alone, whatever the
// frame's size, and api 2 with arg bytes; it keeps the connection and the
// time its Serve calls took, so a test can tell the engine's I/O from
// them.
type ioHandler struct {
	mu    sync.Mutex
	conn  *ConnInfo
	serve atomic.Int64 // nanoseconds in Serve
	big   []byte
}

func (h *ioHandler) Serve(r *Request) {
	t0 := time.Now()
	defer func() { h.serve.Add(int64(time.Since(t0))) }()
	h.mu.Lock()
	h.conn = r.Conn()
	h.mu.Unlock()
	f := r.Frame()
	b := binary.BigEndian.AppendUint32(r.ResponseBuffer(), uint32(corrOf(f)))
	if binary.BigEndian.Uint16(f) == 2 {
		b = append(b, h.big[:binary.BigEndian.Uint32(f[8:12])]...)
	}
	r.Respond(b)
}

// charged is the connection's engine time beyond its Serve calls.
func (h *ioHandler) charged() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conn.EngineTime() - time.Duration(h.serve.Load())
}

// TestNetChargesIO: the net engine charges a connection what its reads
// and writes cost (the system calls, and TLS's crypto), and not the time
// they waited for the peer (netmeter.go): a 64 MiB request and a 64 MiB
// response add at least a millisecond each beyond the handler's own time,
// over plain TCP and TLS; a second of the client's silence before a
// request, or of its not reading a response, is not charged.
func TestNetChargesIO(t *testing.T) {
	const size = 64 << 20
	fx := newTLSFixture(t)
	for _, mode := range []string{"tcp", "tls"} {
		t.Run(mode, func(t *testing.T) {
			h := &ioHandler{big: make([]byte, size)}
			ts := startServer(t, KindNet, Config{}, h)
			var c net.Conn
			if mode == "tcp" {
				c = ts.dial(t)
			} else {
				c = dialTLS(t, ts.serveListener(t, "tls", fx.server, 10*time.Second), fx.client)
			}
			br := bufio.NewReaderSize(c, 64<<10)
			send := func(b []byte) {
				t.Helper()
				if _, err := c.Write(b); err != nil {
					t.Fatal(err)
				}
			}
			answer := func(corr int32, n int) {
				t.Helper()
				var hdr [8]byte
				if _, err := io.ReadFull(br, hdr[:]); err != nil {
					t.Fatal(err)
				}
				if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr || binary.BigEndian.Uint32(hdr[:4]) != uint32(4+n) {
					t.Fatalf("response %x, want correlation id %d and %d bytes", hdr, corr, n)
				}
				if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
					t.Fatal(err)
				}
			}
			// grows waits until the charge passes from+atLeast (a write
			// is charged once it returned, after the peer has its bytes).
			grows := func(from, atLeast time.Duration) time.Duration {
				var got time.Duration
				for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
					if got = h.charged() - from; got >= atLeast {
						break
					}
				}
				return got
			}

			send(frame(1, 1))
			answer(1, 0)
			base := grows(0, 0)

			// A client quiet for a second: the reader waited in Read.
			time.Sleep(time.Second)
			send(frame(1, 2))
			answer(2, 0)
			if d := grows(base, 0); d > 500*time.Millisecond {
				t.Fatalf("a request after a second's silence was charged %v: the wait was counted", d)
			}

			base = h.charged()
			send(frame(1, 3, make([]byte, size)...))
			answer(3, 0)
			if d := grows(base, time.Millisecond); d < time.Millisecond {
				t.Fatalf("reading a %d MiB request was charged %v beyond Serve", size>>20, d)
			}

			// A response the client reads only after a second: the
			// writer waited for a full socket buffer to drain.
			base = grows(0, 0)
			send(frameArg(2, 4, size))
			time.Sleep(time.Second)
			answer(4, size)
			d := grows(base, time.Millisecond)
			if d < time.Millisecond {
				t.Fatalf("writing a %d MiB response was charged %v beyond Serve", size>>20, d)
			}
			if d > 600*time.Millisecond {
				t.Fatalf("a response its client left unread for a second was charged %v: the wait was counted", d)
			}
			t.Logf("64 MiB response charged %v", d)
		})
	}
}
