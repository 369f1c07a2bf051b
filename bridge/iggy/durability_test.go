package iggy

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestDurabilityOptions: each level creates topics with the options that
// make the server confirm as promised (docs/IGGY.md, "Durability"), and
// reads them back as that level; a per-topic fsync request wins over the
// gateway's weaker level.
func TestDurabilityOptions(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	for _, tc := range []struct {
		level, asked, want store.Durability
	}{
		{store.DurabilityDefault, store.DurabilityDefault, store.DurabilityWritten},
		{store.DurabilityWritten, store.DurabilityDefault, store.DurabilityWritten},
		{store.DurabilityFsync, store.DurabilityDefault, store.DurabilityFsync},
		{store.DurabilityBuffered, store.DurabilityDefault, store.DurabilityBuffered},
		{store.DurabilityWritten, store.DurabilityFsync, store.DurabilityFsync},
		{store.DurabilityBuffered, store.DurabilityFsync, store.DurabilityFsync},
	} {
		c := open(t, Config{Addr: addr, Stream: stream, Durability: tc.level})
		name := "d-" + tc.level.String() + "-" + tc.asked.String()
		info, err := c.CreateTopic(cx, name, 1, store.TopicConfig{Durability: tc.asked})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if info.Config.Durability != tc.want {
			t.Errorf("%s: CreateTopic durability %v, want %v", name, info.Config.Durability, tc.want)
		}
		got, err := c.Topic(cx, name)
		if err != nil || got.Config.Durability != tc.want {
			t.Errorf("%s: Topic durability %v (%v), want %v", name, got.Config.Durability, err, tc.want)
		}
	}
}

// TestBufferedTopicReported: a topic created with Iggy's buffered defaults
// (here by a buffered client, as the Iggy CLI would) is detected at its first
// use by a client that promises more: one warning, the gauge and the append
// counter in /metrics. A topic kiggy created is not reported.
func TestBufferedTopicReported(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	// other keeps its own system store: the commit log topic a buffered
	// client creates is buffered too, and would be reported as well.
	other := open(t, Config{Addr: addr, Stream: stream, SystemStream: "__other", Durability: store.DurabilityBuffered})
	if _, err := other.CreateTopic(cx, "foreign", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	var logs testtools.SyncBuffer
	c := open(t, Config{Addr: addr, Stream: stream, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if _, err := c.CreateTopic(cx, "ours", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, topic := range []string{"foreign", "ours"} {
			if _, err := c.Append(cx, topic, 0, batchOf(1, "m", 2)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.Topic(cx, "foreign"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "confirms writes before they are written"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "topic=foreign") {
		t.Errorf("warning does not name the topic:\n%s", logs.String())
	}
	var m strings.Builder
	c.WriteMetrics(&m)
	for _, want := range []string{"kiggy_iggy_buffered_topics 1\n", "kiggy_iggy_buffered_appends_total 3\n", "kiggy_iggy_durability_level 1\n"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestCrashKeepsWrittenTopics: against iggytest's journal model, an
// iggy-server crash loses the acknowledged appends of a buffered topic and
// none of a written or fsync one, and hands the lost offsets out again.
func TestCrashKeepsWrittenTopics(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	cx := ctx(t)
	levels := []store.Durability{store.DurabilityWritten, store.DurabilityFsync, store.DurabilityBuffered}
	for _, d := range levels {
		c := open(t, Config{Addr: addr, Durability: d})
		if _, err := c.CreateTopic(cx, d.String(), 1, store.TopicConfig{}); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if base, err := c.Append(cx, d.String(), 0, batchOf(1, "m", 5)); err != nil || base != int64(5*i) {
				t.Fatalf("%v append %d: base %d, %v", d, i, base, err)
			}
		}
		c.Close()
	}
	if lost := srv.Crash(); lost != 50 {
		t.Fatalf("crash lost %d messages, want the buffered topic's 50", lost)
	}
	if _, err := srv.Start(addr); err != nil {
		t.Fatal(err)
	}
	c := open(t, Config{Addr: addr})
	for _, d := range levels {
		wm, err := c.Watermarks(cx, d.String(), 0)
		want := int64(50)
		if d == store.DurabilityBuffered {
			want = 0
		}
		if err != nil || wm.High != want {
			t.Errorf("%v after crash: high %d (%v), want %d", d, wm.High, err, want)
		}
	}
	// The buffered topic hands offset 0 out again.
	if base, err := c.Append(cx, "buffered", 0, batchOf(1, "n", 1)); err != nil || base != 0 {
		t.Errorf("buffered re-append: base %d, %v", base, err)
	}
}
