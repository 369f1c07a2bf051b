//go:build linux && !race

package engine

import (
	"bytes"
	"io"
	"testing"
)

// inlineEcho answers with the correlation id and 2 bytes, inline in Serve.
var inlineEcho = HandlerFunc(func(r *Request) {
	f := r.Frame()
	b := append(r.ResponseBuffer(), f[4:8]...)
	r.Respond(append(b, 0, 0))
})

// TestEpollZeroAllocs: one request/response cycle through the epoll engine
// on a loopback socket allocates nothing in steady state (docs/design/style.md habit 7),
// counting the client's side too, alone and with 5 requests pipelined.
func TestEpollZeroAllocs(t *testing.T) {
	ts := startServer(t, KindEpoll, Config{Loops: 1}, inlineEcho)
	c := ts.dial(t)
	for _, depth := range []int{1, 5} {
		var req []byte
		for i := range depth {
			req = append(req, frame(apiEcho, int32(i), make([]byte, 42)...)...)
		}
		resp := make([]byte, depth*10)
		cycle := func() {
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, resp); err != nil {
				t.Fatal(err)
			}
		}
		for range 2000 {
			cycle()
		}
		if !bytes.Equal(resp[:10], []byte{0, 0, 0, 6, 0, 0, 0, 0, 0, 0}) {
			t.Fatalf("response %x", resp[:10])
		}
		if a := testing.AllocsPerRun(2000, cycle); a != 0 {
			t.Errorf("depth %d: %v allocations per cycle, want 0", depth, a)
		}
	}
}

// TestNetAllocs: the net engine is allocation-free per request too.
func TestNetAllocs(t *testing.T) {
	ts := startServer(t, KindNet, Config{}, inlineEcho)
	c := ts.dial(t)
	req := frame(apiEcho, 1, make([]byte, 42)...)
	resp := make([]byte, 10)
	cycle := func() {
		c.Write(req)
		io.ReadFull(c, resp)
	}
	for range 2000 {
		cycle()
	}
	if a := testing.AllocsPerRun(2000, cycle); a != 0 {
		t.Errorf("%v allocations per cycle, want 0", a)
	}
}
