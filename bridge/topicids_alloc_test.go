//go:build !race

package bridge

import "testing"

// TestTopicIDLookupAllocs: a hit allocates nothing.
func TestTopicIDLookupAllocs(t *testing.T) {
	var m topicIDs
	id := [16]byte{9}
	m.note("orders", id)
	if n := testing.AllocsPerRun(100, func() {
		if name, ok := m.name(id); !ok || name != "orders" {
			t.Fatal("miss")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per lookup", n)
	}
}
