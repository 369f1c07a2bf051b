package memlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

var ctx = context.Background()

func batchOf(payloads ...string) *message.Batch {
	var b message.Batch
	b.Reset(1000)
	for i, p := range payloads {
		b.Begin(1000 + uint64(i))
		b.AppendPayloadString(p)
		b.MarkHeaders()
		b.AppendHeader(message.KindString, "k", message.KindRaw, []byte("v"))
		b.End()
	}
	return &b
}

func readAll(t *testing.T, l *Log, topic string, p int32, from int64) []string {
	t.Helper()
	var out []string
	next := from
	_, err := l.Read(ctx, topic, p, from, 1<<30, func(m *message.Message) bool {
		if m.Offset < next {
			t.Fatalf("offset %d after %d", m.Offset, next)
		}
		next = m.Offset + 1
		out = append(out, string(m.Payload))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAppendRead(t *testing.T) {
	l := New(Config{})
	if _, err := l.CreateTopic(ctx, "t", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "t", 2, store.TopicConfig{}); !errors.Is(err, store.ErrTopicExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	base, err := l.Append(ctx, "t", 1, batchOf("a", "b", "c"))
	if err != nil || base != 0 {
		t.Fatalf("append: %d %v", base, err)
	}
	base, _ = l.Append(ctx, "t", 1, batchOf("d"))
	if base != 3 {
		t.Fatalf("second base %d", base)
	}
	if got := fmt.Sprint(readAll(t, l, "t", 1, 0)); got != "[a b c d]" {
		t.Fatalf("read %s", got)
	}
	if got := fmt.Sprint(readAll(t, l, "t", 1, 2)); got != "[c d]" {
		t.Fatalf("read from 2: %s", got)
	}
	wm, _ := l.Watermarks(ctx, "t", 1)
	if wm != (store.Watermarks{LogStart: 0, High: 4}) {
		t.Fatalf("watermarks %+v", wm)
	}
	if _, err := l.Append(ctx, "t", 2, batchOf("x")); !errors.Is(err, store.ErrUnknownPartition) {
		t.Fatalf("bad partition: %v", err)
	}
	if _, err := l.Append(ctx, "nope", 0, batchOf("x")); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("bad topic: %v", err)
	}
	off, ok, _ := l.OffsetForTime(ctx, "t", 1, 1001)
	if !ok || off != 1 {
		t.Fatalf("OffsetForTime = %d %v", off, ok)
	}
	// maxBytes: at least one message, then stop.
	n := 0
	l.Read(ctx, "t", 1, 0, 1, func(*message.Message) bool { n++; return true })
	if n != 1 {
		t.Fatalf("maxBytes 1 delivered %d", n)
	}
}

func TestByteCapAdvancesLogStart(t *testing.T) {
	l := New(Config{PartitionBytes: 200})
	l.CreateTopic(ctx, "t", 1, store.TopicConfig{})
	for i := range 10 {
		l.Append(ctx, "t", 0, batchOf(fmt.Sprintf("message-%02d", i)))
	}
	wm, _ := l.Watermarks(ctx, "t", 0)
	if wm.High != 10 || wm.LogStart == 0 {
		t.Fatalf("watermarks %+v", wm)
	}
	got := readAll(t, l, "t", 0, 0) // below the log start reads from it
	if len(got) != int(wm.High-wm.LogStart) || got[len(got)-1] != "message-09" {
		t.Fatalf("read %v", got)
	}
}

func TestConcurrentAppendsKeepOrder(t *testing.T) {
	l := New(Config{ChunkSize: 1024})
	l.CreateTopic(ctx, "t", 1, store.TopicConfig{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				l.Append(ctx, "t", 0, batchOf(fmt.Sprintf("%d-%03d", w, i)))
			}
		}()
	}
	wg.Wait()
	got := readAll(t, l, "t", 0, 0)
	if len(got) != 800 {
		t.Fatalf("%d messages", len(got))
	}
	last := map[byte]string{}
	for _, s := range got {
		if s <= last[s[0]] {
			t.Fatalf("writer %c out of order: %s after %s", s[0], s, last[s[0]])
		}
		last[s[0]] = s
	}
}

func TestOffsetsAndPartitions(t *testing.T) {
	l := New(Config{})
	l.CreateTopic(ctx, "t", 1, store.TopicConfig{})
	if err := l.CreatePartitions(ctx, "t", 1); !errors.Is(err, store.ErrInvalidPartitions) {
		t.Fatalf("shrink: %v", err)
	}
	if err := l.CreatePartitions(ctx, "t", 3); err != nil {
		t.Fatal(err)
	}
	if info, _ := l.Topic(ctx, "t"); info.Partitions != 3 {
		t.Fatalf("partitions %d", info.Partitions)
	}
	group := []byte("group")
	l.CommitOffset(ctx, string(group), "t", 2, 17, "meta")
	group[0] = 'X' // the stored key must not alias the caller's bytes
	off, md, ok, _ := l.FetchOffset(ctx, "group", "t", 2)
	if !ok || off != 17 || md != "meta" {
		t.Fatalf("fetch %d %q %v", off, md, ok)
	}
	l.CommitOffset(ctx, "group", "t", 2, -1, "")
	if _, _, ok, _ := l.FetchOffset(ctx, "group", "t", 2); ok {
		t.Fatal("negative commit did not delete")
	}
	if err := l.DeleteTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Topic(ctx, "t"); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("deleted topic: %v", err)
	}
}

// TestTrimDropsChunks: chunks no stored message uses are released as the
// log start advances, while a reader's snapshot taken before stays readable.
func TestTrimDropsChunks(t *testing.T) {
	l := New(Config{PartitionBytes: 4096, ChunkSize: 512})
	l.CreateTopic(ctx, "t", 1, store.TopicConfig{})
	part, _ := l.partition("t", 0)
	var old view
	for i := range 1000 {
		if _, err := l.Append(ctx, "t", 0, batchOf(fmt.Sprintf("message-%04d", i), "second")); err != nil {
			t.Fatal(err)
		}
		if i == 10 {
			old = part.snapshot()
		}
	}
	v := part.snapshot()
	// Two batches fit in a chunk: about 4096/360 chunks hold the kept
	// messages; without the release it would be ~500.
	if len(v.chunks) > 16 {
		t.Fatalf("%d chunks kept for a 4 KiB partition of 512 B chunks", len(v.chunks))
	}
	if v.chunkBase == 0 || v.entries[0].chunk < v.chunkBase {
		t.Fatalf("chunk base %d, first entry's chunk %d", v.chunkBase, v.entries[0].chunk)
	}
	got := readAll(t, l, "t", 0, 0)
	if len(got) != int(v.wm.High-v.wm.LogStart) || got[len(got)-2] != "message-0999" {
		t.Fatalf("read %d messages, want %d", len(got), v.wm.High-v.wm.LogStart)
	}
	// The old snapshot still names its frames.
	for i := range old.entries {
		f, err := message.ParseFrame(old.entries[i].frame(old.chunks, old.chunkBase))
		if err != nil {
			t.Fatalf("old snapshot entry %d: %v", i, err)
		}
		if want := []string{fmt.Sprintf("message-%04d", i/2), "second"}[i%2]; string(f.Payload) != want {
			t.Fatalf("old snapshot entry %d: %q, want %q", i, f.Payload, want)
		}
	}
}
