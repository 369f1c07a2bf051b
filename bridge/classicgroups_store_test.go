package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// boundedStore is a SystemStore that refuses, as the Iggy system store
// does, any change holding a value over limit bytes (store.ErrTooLarge),
// and records what it stored.
type boundedStore struct {
	limit  int
	stored map[string][]byte
	puts   int
}

func (s *boundedStore) LoadSystem(context.Context, string) (map[string][]byte, error) {
	return maps.Clone(s.stored), nil
}

func (s *boundedStore) PutSystem(ctx context.Context, ns, key string, v []byte) error {
	return s.PutSystemAll(ctx, ns, []store.SystemEntry{{Key: key, Value: v}})
}

func (s *boundedStore) PutSystemAll(_ context.Context, _ string, entries []store.SystemEntry) error {
	for _, e := range entries {
		if len(e.Value) > s.limit {
			return fmt.Errorf("entry %q: %w", e.Key, store.ErrTooLarge)
		}
	}
	s.puts++
	for _, e := range entries {
		if e.Value == nil {
			delete(s.stored, e.Key)
		} else {
			s.stored[e.Key] = e.Value
		}
	}
	return nil
}

// TestStoreClassicGroupsTooLarge: a change of stored classic groups that
// the store refuses as too large is written group by group; the group too
// large to store is removed instead (no older form of it is restored), and
// the others of the change are stored.
func TestStoreClassicGroupsTooLarge(t *testing.T) {
	s := &boundedStore{limit: 100, stored: map[string][]byte{"big": []byte("an older form")}}
	g := &Gateway{system: s, cfg: Config{Logger: slog.New(slog.DiscardHandler)}}
	g.storeClassicGroups([]store.SystemEntry{
		{Key: "a", Value: []byte("small a")},
		{Key: "big", Value: make([]byte, 101)},
		{Key: "gone", Value: nil},
		{Key: "z", Value: []byte("small z")},
	})
	want := map[string][]byte{"a": []byte("small a"), "z": []byte("small z")}
	if !maps.EqualFunc(s.stored, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("stored %q, want %q", s.stored, want)
	}
	s.puts = 0
	g.storeClassicGroups([]store.SystemEntry{{Key: "a", Value: []byte("a again")}, {Key: "z", Value: nil}})
	if s.puts != 1 || string(s.stored["a"]) != "a again" || s.stored["z"] != nil {
		t.Fatalf("a change within bounds: %d writes, stored %q", s.puts, s.stored)
	}
}
