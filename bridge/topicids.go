package bridge

// The gateway's map of topic ids to names (docs/design/record-mapping.md
// §8). Fetch v13+, Produce v13, OffsetCommit v10 and OffsetFetch v10 name
// topics by id on every request, so a lookup must cost a map read and
// allocate nothing; the backend only lists topics (store.Log.Topics).
//
// Coherence. The map is a cache of what the backend's listings said, kept
// current by what this gateway sees:
//   - a listing (Metadata for all topics, DescribeTopicPartitions, a miss)
//     replaces it whole;
//   - a topic this gateway creates, or finds by name (Metadata,
//     DescribeTopicPartitions), is noted with its id, replacing an older id
//     of the same name (a delete and re-create elsewhere);
//   - a topic this gateway deletes, or finds gone by name, is forgotten;
//   - a lookup that misses lists the topics before the caller answers
//     UNKNOWN_TOPIC_ID, so a topic another gateway or an Iggy-native client
//     created is found on first use. One request lists at most once,
//     however many unknown ids it names (listed), so it costs no more than
//     a Metadata request for all topics;
//   - on a shared store, the gateway lists the topics again every
//     5 s, or every Config.StateRefresh if that is longer (sharedstate.go,
//     topicListInterval).
//
// What it can miss: a topic deleted or re-created elsewhere keeps its entry
// until one of the above happens, so a request by its old id is served by
// name until then: answered as for a deleted name
// (UNKNOWN_TOPIC_OR_PARTITION), or from the re-created topic. A Kafka
// client refreshes its metadata on that error, which forgets the name.
//
// A listing begun before a forget must not bring the forgotten id back:
// forget bumps gen, and a listing replaces the map only if gen is what it
// was when the listing began.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// topicIDs maps topic ids to names, and names to ids (to replace a name's
// older id). The zero value is empty and ready.
type topicIDs struct {
	mu     sync.RWMutex
	byID   map[[16]byte]string
	byName map[string][16]byte
	gen    uint64 // bumped by forget, under mu

	// refresh serializes the listings misses make; started counts them, so
	// a miss that waited for another's listing begun after it uses that one.
	refresh sync.Mutex
	started atomic.Uint64
}

// name returns the topic id names, if the map has it. It allocates nothing.
func (m *topicIDs) name(id [16]byte) (string, bool) {
	m.mu.RLock()
	n, ok := m.byID[id]
	m.mu.RUnlock()
	return n, ok
}

// generation returns the count of forgets so far, to pass to replace.
func (m *topicIDs) generation() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.gen
}

// replace makes the map hold exactly list, unless a forget happened since
// gen was read (the listing may predate it: the map is left as it is).
func (m *topicIDs) replace(list []store.TopicInfo, gen uint64) {
	if m.holds(list) {
		return // the usual case: nothing changed, nothing to allocate
	}
	byID := make(map[[16]byte]string, len(list))
	byName := make(map[string][16]byte, len(list))
	for _, t := range list {
		if t.ID != ([16]byte{}) {
			byID[t.ID], byName[t.Name] = t.Name, t.ID
		}
	}
	m.mu.Lock()
	if m.gen == gen {
		m.byID, m.byName = byID, byName
	}
	m.mu.Unlock()
}

// holds reports whether the map is exactly list (topics with an id).
func (m *topicIDs) holds(list []store.TopicInfo) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := 0
	for _, t := range list {
		if t.ID == ([16]byte{}) {
			continue
		}
		if name, ok := m.byID[t.ID]; !ok || name != t.Name {
			return false
		}
		n++
	}
	return n == len(m.byID) && n == len(m.byName)
}

// note records that topic name has id now, dropping an older id of the name;
// the map keeps a copy of name. Noting what the map already holds takes only
// the read lock.
func (m *topicIDs) note(name string, id [16]byte) {
	if id == ([16]byte{}) {
		return
	}
	m.mu.RLock()
	cur, ok := m.byName[name]
	m.mu.RUnlock()
	if ok && cur == id {
		return
	}
	name = strings.Clone(name) // callers pass views of request frames
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID, m.byName = map[[16]byte]string{}, map[string][16]byte{}
	}
	if old, ok := m.byName[name]; ok && old != id {
		delete(m.byID, old)
	}
	if other, ok := m.byID[id]; ok && other != name {
		delete(m.byName, other)
	}
	m.byID[id], m.byName[name] = name, id
}

// forget drops topic name and its id.
func (m *topicIDs) forget(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	if id, ok := m.byName[name]; ok {
		delete(m.byID, id)
		delete(m.byName, name)
	}
}

// listTopics lists the backend's topics and replaces the id map with them.
func (g *Gateway) listTopics(ctx context.Context) ([]store.TopicInfo, error) {
	gen := g.topicIDs.generation()
	list, err := g.store.Topics(ctx)
	if err == nil {
		g.topicIDs.replace(list, gen)
	}
	return list, err
}

// topicNameByID returns the name of the topic id names. A miss lists the
// topics once (sharing a listing another miss began after this one) before
// it fails with store.ErrUnknownTopic, unless *listed says the request has
// listed them already; it sets *listed when it lists. The all-zero id names
// no topic. A hit allocates nothing.
func (g *Gateway) topicNameByID(id [16]byte, listed *bool) (string, error) {
	if id == ([16]byte{}) {
		return "", store.ErrUnknownTopic
	}
	if n, ok := g.topicIDs.name(id); ok {
		return n, nil
	}
	if *listed {
		return "", fmt.Errorf("%w: id %x", store.ErrUnknownTopic, id)
	}
	*listed = true
	m := &g.topicIDs
	before := m.started.Load()
	m.refresh.Lock()
	defer m.refresh.Unlock()
	if m.started.Load() == before {
		m.started.Add(1)
		if _, err := g.listTopics(g.ctx); err != nil {
			return "", err
		}
	}
	if n, ok := m.name(id); ok {
		return n, nil
	}
	return "", fmt.Errorf("%w: id %x", store.ErrUnknownTopic, id)
}

// topicByID finds the topic whose Kafka topic id is id, or fails with
// store.ErrUnknownTopic (the all-zero id names no topic): the id map's name
// (topicNameByID), then the topic by that name, which must still have the
// id (else it was deleted and re-created elsewhere: the topics are listed
// again). For Metadata, DeleteTopics and DescribeTopicPartitions, which
// need the whole TopicInfo.
func (g *Gateway) topicByID(id [16]byte) (store.TopicInfo, error) {
	for try := 0; ; try++ {
		listed := false
		name, err := g.topicNameByID(id, &listed)
		if err != nil {
			return store.TopicInfo{}, err
		}
		info, err := g.store.Topic(g.ctx, name)
		if err == nil && info.ID == id {
			return info, nil
		}
		if err != nil && !errors.Is(err, store.ErrUnknownTopic) {
			return store.TopicInfo{}, err
		}
		// Gone, or another topic now: the name's entry is stale.
		g.topicIDs.forget(name)
		if err == nil {
			g.topicIDs.note(name, info.ID)
		}
		if try == 1 {
			return store.TopicInfo{}, fmt.Errorf("%w: id %x", store.ErrUnknownTopic, id)
		}
	}
}
