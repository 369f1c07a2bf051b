package iggy

import (
	"os"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
)

// TestTopicIDDerivation: the id is a function of the stream, the Iggy topic
// id, created_at and the name, each of which changes it, and is shaped as
// Kafka draws ids (docs/design/record-mapping.md §8).
func TestTopicIDDerivation(t *testing.T) {
	base := topicID("kafka", 3, 1_796_215_534_518_332, []byte("orders"))
	if base != topicID("kafka", 3, 1_796_215_534_518_332, []byte("orders")) {
		t.Fatal("the same topic gave two ids")
	}
	if base != store.TopicID(base) {
		t.Fatalf("id %x is not shaped by store.TopicID", base)
	}
	for name, other := range map[string][16]byte{
		"stream":     topicID("kafka2", 3, 1_796_215_534_518_332, []byte("orders")),
		"topic id":   topicID("kafka", 4, 1_796_215_534_518_332, []byte("orders")),
		"created_at": topicID("kafka", 3, 1_796_215_534_518_333, []byte("orders")),
		"name":       topicID("kafka", 3, 1_796_215_534_518_332, []byte("orderz")),
		// Length prefixes keep the stream and the name apart.
		"split": topicID("kafkao", 3, 1_796_215_534_518_332, []byte("rders")),
	} {
		if other == base {
			t.Errorf("another %s gave the same id", name)
		}
	}
}

// TestTopicIDsOnServer: against the real iggy-server when one is found (the
// model otherwise), Topic, Topics and CreateTopic give a topic one id, a new
// client gives it again, a delete and re-create (which reuses the Iggy topic
// id) another one; a real server stopped and restarted over its data keeps
// it.
func TestTopicIDsOnServer(t *testing.T) {
	var node *iggyserver.Node
	addr, stream := "", "kafka"
	if os.Getenv(envAddr) == "" && realServer(t) {
		node = iggyserver.StartT(t)
		addr = node.Addr
	} else {
		addr, stream = target(t)
	}
	cx := ctx(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	created, err := c.CreateTopic(cx, "ids", 2, store.TopicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	idOf := func(c *Client) [16]byte {
		t.Helper()
		info, err := c.Topic(cx, "ids")
		if err != nil {
			t.Fatal(err)
		}
		all, err := c.Topics(cx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range all {
			if x.Name == "ids" && x.ID != info.ID {
				t.Fatalf("Topics gave id %x, Topic %x", x.ID, info.ID)
			}
		}
		return info.ID
	}
	id := idOf(c)
	if id != created.ID || id == ([16]byte{}) {
		t.Fatalf("CreateTopic gave id %x, Topic %x", created.ID, id)
	}
	if got := idOf(open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})); got != id {
		t.Fatalf("another client: %x, want %x", got, id)
	}
	if node != nil {
		c.Close()
		node.Stop()
		if err := node.Restart(); err != nil {
			t.Fatal(err)
		}
		c = open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
		if got := idOf(c); got != id {
			t.Fatalf("after a server restart: %x, want %x", got, id)
		}
	}
	if err := c.DeleteTopic(cx, "ids"); err != nil {
		t.Fatal(err)
	}
	again, err := c.CreateTopic(cx, "ids", 2, store.TopicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == id || idOf(c) != again.ID {
		t.Fatalf("re-created topic: id %x (Topic %x), the deleted one's %x", again.ID, idOf(c), id)
	}
}
