package engine

import (
	"bytes"
	"testing"
)

// TestGrowResponse: growth keeps the contents, moves the response into a
// pooled buffer the request owns (released with it), and is a no-op when
// there is room.
func TestGrowResponse(t *testing.T) {
	r := getRequest()
	defer putRequest(r)
	buf := r.ResponseBuffer()
	if same := r.GrowResponse(buf, 100); &same[:1][0] != &buf[:1][0] {
		t.Fatal("grew although the buffer had room")
	}
	want := append([]byte(nil), buf...) // the size prefix space, not zeroed
	for i := range 3 * defaultResponseBuffer {
		buf = r.GrowResponse(buf, 1)
		if cap(buf) == len(buf) {
			t.Fatalf("no room after GrowResponse at %d", len(buf))
		}
		buf = append(buf, byte(i))
		want = append(want, byte(i))
	}
	if !bytes.Equal(buf, want) {
		t.Fatal("contents changed while growing")
	}
	if &(*r.rbuf)[0] != &buf[0] {
		t.Fatal("the grown response is not the request's buffer")
	}
	if c := cap(buf); c&(c-1) != 0 || classFor(c) < 0 {
		t.Fatalf("grown buffer of %d bytes is not a pooled class", c)
	}
	big := r.GrowResponse(buf, 1<<20)
	if cap(big)-len(big) < 1<<20 || !bytes.Equal(big, want) {
		t.Fatal("a large request for room was not met")
	}
}
