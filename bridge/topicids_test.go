package bridge

import (
	"testing"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestTopicIDMap: the id map's rules (topicids.go) — a note replaces a
// name's older id, a forget drops both directions, a listing replaces the
// whole map unless a forget happened since it began, and the names it keeps
// are its own copies, not the callers' buffers.
func TestTopicIDMap(t *testing.T) {
	var m topicIDs
	a1, a2, b := [16]byte{1}, [16]byte{2}, [16]byte{3}
	want := func(id [16]byte, name string) {
		t.Helper()
		got, ok := m.name(id)
		if ok != (name != "") || got != name {
			t.Fatalf("name(%x) = %q %v, want %q", id, got, ok, name)
		}
	}
	want(a1, "")
	buf := []byte("a")
	m.note(string(buf), a1) // a view the caller overwrites next
	buf[0] = 'z'
	want(a1, "a")
	m.note("a", a2) // re-created elsewhere: the old id names nothing
	want(a1, "")
	want(a2, "a")
	m.note("b", b)
	m.note("", [16]byte{}) // the zero id is never noted
	want([16]byte{}, "")

	gen := m.generation()
	m.forget("a")
	want(a2, "")
	want(b, "b")
	// A listing begun before the forget must not bring "a" back.
	m.replace([]store.TopicInfo{{Name: "a", ID: a2}, {Name: "b", ID: b}}, gen)
	want(a2, "")
	// One begun after it replaces the map: "b" is gone, "c" is new.
	c := [16]byte{4}
	m.replace([]store.TopicInfo{{Name: "c", ID: c}}, m.generation())
	want(b, "")
	want(c, "c")
	if !m.holds([]store.TopicInfo{{Name: "c", ID: c}}) || m.holds([]store.TopicInfo{{Name: "c", ID: c}, {Name: "b", ID: b}}) ||
		m.holds(nil) {
		t.Fatal("holds does not compare the map with a listing")
	}
}
