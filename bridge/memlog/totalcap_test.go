package memlog

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// fakeClock advances a millisecond per reading, so append times order the
// appends across partitions.
func fakeClock() func() time.Time {
	t := time.Unix(1_700_000_000, 0)
	return func() time.Time {
		t = t.Add(time.Millisecond)
		return t
	}
}

// TestTotalCapDropsOldestFirst fills many partitions far past the total cap:
// the memory held never passes it, the partition holding the oldest data
// loses it first (whole chunks, advancing its log start), the newest data of
// every partition survives, offsets keep counting, and the drops are
// counted.
func TestTotalCapDropsOldestFirst(t *testing.T) {
	const total = 1 << 20
	l := New(Config{TotalBytes: total, ChunkSize: 16 << 10, Now: fakeClock()})
	const parts = 64
	for _, name := range []string{"old", "new"} {
		if _, err := l.CreateTopic(ctx, name, parts, store.TopicConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	value := strings.Repeat("v", 1000)
	appends := map[string]int64{}
	appendTo := func(topic string, p int32, i int) {
		t.Helper()
		if _, err := l.Append(ctx, topic, p, batchOf(fmt.Sprintf("%s-%d-%06d-%s", topic, p, i, value))); err != nil {
			t.Fatal(err)
		}
		appends[fmt.Sprint(topic, p)]++
		if h := l.held.Load(); h > total {
			t.Fatalf("%d bytes held after an append, cap %d", h, total)
		}
	}
	// The oldest data: 200 KiB in old/0.
	for i := range 200 {
		appendTo("old", 0, i)
	}
	// Then 4 MiB round-robin over the 64 partitions of "new".
	dropNewAt := -1
	for i := range 4096 {
		p := int32(i % parts)
		appendTo("new", p, i)
		owm, _ := l.Watermarks(ctx, "old", 0)
		for q := range int32(parts) {
			if nwm, _ := l.Watermarks(ctx, "new", q); nwm.LogStart > 0 && dropNewAt < 0 {
				dropNewAt = i
				// Nothing newer went before old/0's data was all gone.
				if owm.LogStart != owm.High {
					t.Fatalf("new/%d dropped data (log start %d) while old/0 still holds %d messages", q, nwm.LogStart, owm.High-owm.LogStart)
				}
			}
		}
	}
	if dropNewAt < 0 {
		t.Fatal("the cap was never reached")
	}
	t.Logf("new data first dropped at append %d; %d bytes held, %d dropped", dropNewAt, l.held.Load(), l.dropped[limitTotal].Load())
	// Every partition of "new" was written round-robin: each lost its oldest
	// messages, and each still ends with its newest.
	for q := range int32(parts) {
		wm, _ := l.Watermarks(ctx, "new", q)
		if wm.High != appends[fmt.Sprint("new", q)] || wm.LogStart == 0 || wm.LogStart >= wm.High {
			t.Errorf("new/%d: watermarks %+v after %d appends", q, wm, appends[fmt.Sprint("new", q)])
		}
		got := readAll(t, l, "new", q, 0) // below the log start reads from it
		if len(got) != int(wm.High-wm.LogStart) || !strings.HasPrefix(got[len(got)-1], fmt.Sprintf("new-%d-%06d-", q, 4096-parts+int(q))) {
			t.Errorf("new/%d: read %d messages, last %.20q", q, len(got), got[len(got)-1])
		}
	}
	if h := l.held.Load(); h < total/2 {
		t.Errorf("%d bytes held: the cap dropped far more than needed", h)
	}
	if l.dropped[limitTotal].Load() == 0 || l.dropped[limitPartition].Load() != 0 {
		t.Errorf("dropped: total %d, partition %d", l.dropped[limitTotal].Load(), l.dropped[limitPartition].Load())
	}
	var m strings.Builder
	l.WriteMetrics(&m)
	for _, want := range []string{
		fmt.Sprintf("kiggy_memlog_bytes %d\n", l.held.Load()),
		fmt.Sprintf("kiggy_memlog_limit_bytes %d\n", total),
		fmt.Sprintf("kiggy_memlog_dropped_bytes_total{limit=\"total\"} %d\n", l.dropped[limitTotal].Load()),
		"kiggy_memlog_dropped_bytes_total{limit=\"partition\"} 0\n",
	} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, m.String())
		}
	}
	// Deleting a topic hands its memory back.
	before := l.held.Load()
	if err := l.DeleteTopic(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if h := l.held.Load(); h >= before || h < 0 {
		t.Errorf("held %d after deleting the topic holding most data (was %d)", h, before)
	}
}

// TestHeldTracksChunks: the memory the log reports is exactly the capacity
// of the chunks its partitions hold, through the per-partition cap's trims
// and topic deletion; chunks start small and grow.
func TestHeldTracksChunks(t *testing.T) {
	l := New(Config{PartitionBytes: 64 << 10, TotalBytes: -1, Now: fakeClock()})
	l.CreateTopic(ctx, "a", 3, store.TopicConfig{})
	l.CreateTopic(ctx, "b", 1, store.TopicConfig{})
	value := strings.Repeat("x", 3000)
	sum := func() int64 {
		var n int64
		for _, name := range []string{"a", "b"} {
			for p := range int32(3) {
				part, err := l.partition(name, p)
				if err != nil {
					continue
				}
				for _, c := range part.snapshot().chunks {
					n += int64(cap(c))
				}
			}
		}
		return n
	}
	for i := range 500 {
		l.Append(ctx, "a", int32(i%3), batchOf(value))
		l.Append(ctx, "b", 0, batchOf(value[:i]))
		if got, want := l.held.Load(), sum(); got != want {
			t.Fatalf("append %d: held %d, chunks hold %d", i, got, want)
		}
	}
	if l.dropped[limitPartition].Load() == 0 {
		t.Fatal("the per-partition cap never dropped")
	}
	part, _ := l.partition("b", 0)
	if c := part.snapshot().chunks; cap(c[0]) > firstChunk*4 {
		t.Errorf("a 64 KiB partition holds a %d-byte chunk", cap(c[0]))
	}
	l.DeleteTopic(ctx, "a")
	if got, want := l.held.Load(), sum(); got != want {
		t.Fatalf("after delete: held %d, chunks hold %d", got, want)
	}
	if _, err := l.Append(ctx, "a", 0, batchOf("late")); err == nil {
		t.Fatal("append to a deleted topic succeeded")
	}
}

// TestTotalCapConcurrent: appenders and readers of many partitions at once
// under the total cap (run with -race): no deadlock, and once they are done
// the memory held is within the cap.
func TestTotalCapConcurrent(t *testing.T) {
	const total = 512 << 10
	l := New(Config{TotalBytes: total, ChunkSize: 8 << 10})
	l.CreateTopic(ctx, "t", 16, store.TopicConfig{})
	value := strings.Repeat("c", 700)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 500 {
				if _, err := l.Append(ctx, "t", int32((w+i)%16), batchOf(value)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 500 {
				l.Read(ctx, "t", int32((w+i)%16), 0, 1<<20, func(*message.Message) bool { return true })
			}
		}()
	}
	wg.Wait()
	if h := l.held.Load(); h > total || h <= 0 {
		t.Fatalf("%d bytes held, cap %d", h, total)
	}
	if l.dropped[limitTotal].Load() == 0 {
		t.Fatal("the cap never dropped")
	}
}
