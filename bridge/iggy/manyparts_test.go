package iggy

import (
	"testing"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestCreateTopicPastRequestLimit: a topic of more partitions than Iggy
// creates per request (1,000) is created in steps, and CreatePartitions
// grows one by more than 1,000 the same way (iggytest, or a real server
// with KIGGY_IGGY_ADDR).
func TestCreateTopicPastRequestLimit(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream})
	cx := ctx(t)
	info, err := c.CreateTopic(cx, "wide", 1500, store.TopicConfig{})
	if err != nil || info.Partitions != 1500 {
		t.Fatalf("create 1,500: %+v %v", info, err)
	}
	if err := c.CreatePartitions(cx, "wide", 2600); err != nil {
		t.Fatalf("grow to 2,600: %v", err)
	}
	c.forget("wide")
	if info, err := c.topic(cx, "wide"); err != nil || info.Partitions != 2600 {
		t.Fatalf("after growing: %+v %v", info, err)
	}
	if _, err := c.CreateTopic(cx, "huge", maxTopicPartitions+1, store.TopicConfig{}); err == nil {
		t.Fatal("a topic past maxTopicPartitions was created")
	}
	if err := c.DeleteTopic(cx, "wide"); err != nil {
		t.Fatal(err)
	}
}
