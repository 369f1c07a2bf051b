package iggy

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// aliasing returns a string that aliases b, as the bridge's zero-copy
// decoder hands topic, group and metadata strings over (they point into the
// Kafka request frame, which is reused after the request).
func aliasing(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// TestNamesOutliveTheRequest: strings the client keeps in its caches (topic
// names, buffered-topic warnings, commits and their metadata) are copied,
// so reusing the request frame they came from changes nothing. Found by
// hand: a topic created with Iggy's defaults was warned about three times
// and counted three times in kiggy_iggy_buffered_topics.
func TestNamesOutliveTheRequest(t *testing.T) {
	_, addr := startServer(t, iggytest.Config{})
	cx := ctx(t)
	other := open(t, Config{Addr: addr, Durability: store.DurabilityBuffered, PoolSize: 1})
	if _, err := other.CreateTopic(cx, "foreign", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	c := open(t, Config{Addr: addr, PoolSize: 1})
	frame := []byte("foreign")
	for range 3 {
		copy(frame, "foreign")
		if _, err := c.Append(cx, aliasing(frame), 0, batchOf(1, "m", 1)); err != nil {
			t.Fatal(err)
		}
		copy(frame, "XXXXXXX") // the frame is reused for another request
		if _, err := c.Topic(cx, "foreign"); err != nil {
			t.Fatal(err)
		}
	}
	var m strings.Builder
	c.WriteMetrics(&m)
	if !strings.Contains(m.String(), "kiggy_iggy_buffered_topics 1\n") {
		t.Errorf("one buffered topic counted more than once:\n%s", grepLines(m.String(), "kiggy_iggy_buffered"))
	}

	group, meta := []byte("g1"), []byte("metadata-1")
	if err := c.CommitOffset(cx, aliasing(group), aliasing(frame[:0:0])+"foreign", 0, 0, aliasing(meta)); err != nil {
		t.Fatal(err)
	}
	copy(group, "zz")
	copy(meta, "XXXXXXXXXX")
	off, md, ok, err := c.FetchOffset(cx, "g1", "foreign", 0)
	if err != nil || !ok || off != 0 || md != "metadata-1" {
		t.Fatalf("commit after its request frame was reused: %d %q %v %v", off, md, ok, err)
	}
}
