//go:build !race

package nullbroker

import (
	"net"
	"testing"
)

// TestHandleProduceAllocs proves the Produce path allocates nothing once the
// connection has seen the topic: header parse, decode into reused structs,
// offset bookkeeping and the response encode.
func TestHandleProduceAllocs(t *testing.T) {
	s := New(Config{Partitions: 4})
	cs := newConnState(s, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9092})
	frame := produceFrame(t, 1, -1, "t", 3, 10)
	buf := make([]byte, len(frame))
	run := func() {
		copy(buf, frame) // the frame buffer is reused per request
		resp, err := cs.handle(buf)
		if err != nil || resp == nil {
			t.Fatalf("handle: %v", err)
		}
	}
	run()
	if n := testing.AllocsPerRun(1000, run); n != 0 {
		t.Fatalf("Produce allocates %v times per request, want 0", n)
	}
}
