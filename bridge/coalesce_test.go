package bridge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
)

// frameBatch builds a batch of frames with the given origin timestamps (µs).
func frameBatch(origin uint64, payload string, ts ...uint64) *message.Batch {
	b := new(message.Batch)
	b.Reset(origin)
	for i, t := range ts {
		b.Begin(t)
		b.AppendPayloadString(payload + string(rune('a'+i)))
		b.MarkHeaders()
		b.AppendHeader(message.KindString, "k", message.KindRaw, []byte{byte(i)})
		b.End()
	}
	return b
}

// TestAppendFrames: batches joined for one round trip keep every message's
// payload, headers and origin timestamp; offset deltas count through the
// joined batch.
func TestAppendFrames(t *testing.T) {
	a := frameBatch(1_000, "a", 1_000, 1_500)
	b := frameBatch(5_000, "b", 5_000, 5_001, 9_000)
	if last, ok := lastTimestamp(b); !ok || last != 9_000 {
		t.Fatalf("lastTimestamp = %d, %v", last, ok)
	}
	var f flushSet
	f.add(&queuedAppend{batch: a})
	if !f.fits(b) {
		t.Fatal("b does not fit")
	}
	f.add(&queuedAppend{batch: b})
	if f.min != 1_000 || f.max != 9_000 || f.count != 5 {
		t.Fatalf("set spans %d..%d, %d messages", f.min, f.max, f.count)
	}
	far := frameBatch(1_000+message.MaxTimestampSpan, "c", 1_000+message.MaxTimestampSpan+1)
	if f.fits(far) {
		t.Fatal("a batch past the timestamp span fits")
	}
	j := new(message.Batch)
	j.Reset(f.min)
	appendFrames(j, a)
	appendFrames(j, b)
	if j.Count != 5 || j.Size() != a.Size()+b.Size() {
		t.Fatalf("joined %d frames, %d bytes", j.Count, j.Size())
	}
	want := []struct {
		payload string
		ts      uint64
	}{{"aa", 1_000}, {"ab", 1_500}, {"ba", 5_000}, {"bb", 5_001}, {"bc", 9_000}}
	fr := j.Frames()
	for i, w := range want {
		m, err := message.ParseFrame(fr)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload) != w.payload || j.Origin+uint64(m.TimestampDelta) != w.ts || m.OffsetDelta != uint32(i) || len(m.Headers) == 0 {
			t.Fatalf("frame %d: %q at %d, offset delta %d", i, m.Payload, j.Origin+uint64(m.TimestampDelta), m.OffsetDelta)
		}
		fr = fr[m.Size:]
	}
	if len(fr) != 0 {
		t.Fatalf("%d bytes after the frames", len(fr))
	}
}

// TestDeadlineCtx: the reusable Produce deadline reports its deadline and
// DeadlineExceeded after it, closes Done at the deadline or when its parent
// ends, and starts afresh after release.
func TestDeadlineCtx(t *testing.T) {
	var c deadlineCtx
	c.start(context.Background(), time.Now().Add(30*time.Millisecond))
	if d, ok := c.Deadline(); !ok || time.Until(d) > 30*time.Millisecond {
		t.Fatalf("deadline %v %v", d, ok)
	}
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed at the deadline")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v", c.Err())
	}
	c.release()

	parent, cancel := context.WithCancel(context.Background())
	c.start(parent, time.Now().Add(time.Hour))
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
	done := c.Done()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed when the parent ended")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err = %v", c.Err())
	}
	c.release()

	// A shorter parent deadline wins.
	pd, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	c.start(pd, time.Now().Add(time.Hour))
	if d, _ := c.Deadline(); time.Until(d) > time.Minute {
		t.Fatalf("deadline %v past the parent's", d)
	}
	c.release()
}
