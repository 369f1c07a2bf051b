package bridge

import (
	"context"
	"sync"
)

// SystemStore keeps kiggy's own state, the records Kafka keeps in its
// metadata log: SCRAM credentials, ACLs, topic configs Iggy has no field
// for, log start offsets set by DeleteRecords. A Log implements it where that
// state can outlive the process (the Iggy backend: in the reserved system
// stream, docs/design/record-mapping.md §7); the gateway falls back to an
// in-memory store otherwise (the embedded log, which forgets everything at
// exit anyway).
//
// State is grouped in namespaces ("scram", "acl", "topic-config",
// "log-start"), each a map from key to an opaque value its owner encodes.
type SystemStore interface {
	// LoadSystem returns every live entry of namespace ns.
	LoadSystem(ctx context.Context, ns string) (map[string][]byte, error)
	// PutSystem stores value under key in namespace ns; a nil value deletes
	// the key. It returns once the change is stored as durably as an
	// acknowledged record (docs/IGGY.md, "Durability").
	PutSystem(ctx context.Context, ns, key string, value []byte) error
}

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
func (m *memSystem) PutSystem(_ context.Context, ns, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if value == nil {
		delete(m.ns[ns], key)
		return nil
	}
	if m.ns[ns] == nil {
		m.ns[ns] = map[string][]byte{}
	}
	m.ns[ns][key] = append([]byte(nil), value...)
	return nil
}

// systemOf returns store's SystemStore, or a fresh in-memory one.
func systemOf(store Log) SystemStore {
	if s, ok := store.(SystemStore); ok {
		return s
	}
	return newMemSystem()
}
