package bridge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/producer"
	"github.com/kiggy-io/kiggy/wire"
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
	var f flushSet
	f.add(&queuedAppend{batch: a, pb: producer.Batch{LastTS: 1_500}})
	mb := &queuedAppend{batch: b, pb: producer.Batch{LastTS: 9_000}}
	if !f.fits(mb) {
		t.Fatal("b does not fit")
	}
	f.add(mb)
	if f.min != 1_000 || f.max != 9_000 || f.count != 5 {
		t.Fatalf("set spans %d..%d, %d messages", f.min, f.max, f.count)
	}
	far := frameBatch(1_000+message.MaxTimestampSpan, "c", 1_000+message.MaxTimestampSpan+1)
	if f.fits(&queuedAppend{batch: far, pb: producer.Batch{LastTS: 1_000 + message.MaxTimestampSpan + 1}}) {
		t.Fatal("a batch past the timestamp span fits")
	}
	j := new(message.Batch)
	j.Reset(f.min)
	j.Join(a)
	j.Join(b)
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

// TestMappedLastTimestamp: the largest origin timestamp mapPartition reports
// for a batch is the largest its frames hold (coalescing relies on it to keep
// a round within one batch's timestamp span), with timestamps spread, out of
// order and past the span (clamped).
func TestMappedLastTimestamp(t *testing.T) {
	g := &Gateway{}
	st := new(state)
	for _, deltas := range [][]int64{{0}, {5, 0, 3}, {0, 1 << 40}, {7, 2, 2}} {
		var bld batch.Builder
		base := int64(1_700_000_000_000)
		bld.Reset(nil, 0, base, batch.NoCompression)
		for i, d := range deltas {
			bld.Append(int32(i), d, nil, []byte("v"))
		}
		records := bld.Finish()
		h, err := batch.Validate(records)
		if err != nil {
			t.Fatal(err)
		}
		var dst message.Batch
		var last uint64
		budget := batch.Budget{MaxBytes: 1 << 30, MaxRecords: 1 << 20}
		if code := g.mapPartition(st, &dst, records, h, &budget, produceRules{appendTime: -1}, &last); code != wire.NoError {
			t.Fatalf("%v: code %d", deltas, code)
		}
		var want uint64
		fr := dst.Frames()
		for len(fr) > 0 {
			m, err := message.ParseFrame(fr)
			if err != nil {
				t.Fatal(err)
			}
			want = max(want, dst.Origin+uint64(m.TimestampDelta))
			fr = fr[m.Size:]
		}
		if last != want {
			t.Fatalf("%v: last %d, frames' largest %d", deltas, last, want)
		}
	}
}

// TestDeadlineCtxDerived: a context derived from the reusable deadline hooks
// its cancellation through AfterFunc (no goroutine left calling Done after
// the deadline's use ended), ends when the deadline does, and cancelling it
// first leaves the deadline reusable.
func TestDeadlineCtxDerived(t *testing.T) {
	var c deadlineCtx
	c.start(context.Background(), time.Now().Add(20*time.Millisecond))
	child, cancel := context.WithTimeout(&c, time.Hour)
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the derived context did not end with the deadline")
	}
	cancel()
	c.release()
	for range 3 {
		c.start(context.Background(), time.Now().Add(time.Hour))
		child, cancel := context.WithCancel(&c)
		cancel()
		<-child.Done()
		c.release()
	}
}
