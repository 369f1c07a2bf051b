package bridge

import (
	"context"
	"sync"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// memSystem is the in-memory SystemStore.
type memSystem struct {
	mu sync.Mutex
	ns map[string]map[string][]byte
}

func newMemSystem() *memSystem { return &memSystem{ns: map[string]map[string][]byte{}} }

// LoadSystem implements SystemStore.
func (m *memSystem) LoadSystem(_ context.Context, ns string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]byte, len(m.ns[ns]))
	for k, v := range m.ns[ns] {
		out[k] = append([]byte(nil), v...)
	}
	return out, nil
}

// PutSystem implements SystemStore.
func (m *memSystem) PutSystem(ctx context.Context, ns, key string, value []byte) error {
	return m.PutSystemAll(ctx, ns, []store.SystemEntry{{Key: key, Value: value}})
}

// PutSystemAll implements SystemStore.
func (m *memSystem) PutSystemAll(_ context.Context, ns string, entries []store.SystemEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ns[ns] == nil {
		m.ns[ns] = map[string][]byte{}
	}
	store.ApplySystemEntries(m.ns[ns], entries)
	return nil
}

// systemOf returns backend's SystemStore, or a fresh in-memory one.
func systemOf(backend store.Log) store.SystemStore {
	if s, ok := backend.(store.SystemStore); ok {
		return s
	}
	return newMemSystem()
}
