package bridge

// What the consumer group protocol's handlers (68_consumer_group_heartbeat.go,
// 69_consumer_group_describe.go) share: the topic metadata the coordinator
// assigns from (docs/design/consumer-groups.md §4).

import (
	"context"
	"slices"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// topicSnapshotMaxAge is how stale the topic metadata consumer groups
// assign from may be: a topic created or grown is assigned within it plus
// a heartbeat interval.
const topicSnapshotMaxAge = time.Second

// topicSnapshot is every topic at one moment, by name and by id; it
// implements group.TopicLookup and is never mutated once published.
type topicSnapshot struct {
	at     time.Time
	byName map[string]store.TopicInfo
	byID   map[[16]byte]string
	names  []string
}

// ByName returns a topic's id and partition count.
func (s *topicSnapshot) ByName(name string) ([16]byte, int32, bool) {
	t, ok := s.byName[name]
	return t.ID, t.Partitions, ok
}

// ByID returns a topic's name.
func (s *topicSnapshot) ByID(id [16]byte) (string, bool) {
	n, ok := s.byID[id]
	return n, ok
}

// Names returns every topic name, sorted.
func (s *topicSnapshot) Names() []string { return s.names }

// consumerTopics returns topic metadata at most topicSnapshotMaxAge old,
// listing the topics again when it is older. On a backend with network
// round trips the caller runs on a worker.
func (g *Gateway) consumerTopics(ctx context.Context) (*topicSnapshot, error) {
	if s := g.ctopics.Load(); s != nil && time.Since(s.at) < topicSnapshotMaxAge {
		return s, nil
	}
	ts, err := g.store.Topics(ctx)
	if err != nil {
		return nil, err
	}
	s := &topicSnapshot{at: time.Now(), byName: make(map[string]store.TopicInfo, len(ts)), byID: make(map[[16]byte]string, len(ts))}
	for _, t := range ts {
		s.byName[t.Name] = t
		s.byID[t.ID] = t.Name
		s.names = append(s.names, t.Name)
	}
	slices.Sort(s.names)
	g.ctopics.Store(s)
	return s, nil
}
