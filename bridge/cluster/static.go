package cluster

import (
	"errors"
	"slices"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// Static is a fixed cluster from a peer list (§8): every peer is taken for
// live, always, so partitions and groups are spread over all of them by the
// same rendezvous hashing, epochs never change, and nothing fails over — a
// peer that is down leaves its partitions unavailable until it is back.
type Static struct {
	self    int32
	live    []int32
	brokers []store.Broker
}

var _ store.Placement = (*Static)(nil)

// NewStatic returns the placement of a fixed peer list; self must be in it.
func NewStatic(self int32, peers []store.Broker) (*Static, error) {
	s := &Static{self: self}
	found := false
	for _, p := range peers {
		if slices.Contains(s.live, p.NodeID) {
			return nil, errors.New("cluster: a node id appears twice in the peer list")
		}
		s.live = append(s.live, p.NodeID)
		found = found || p.NodeID == self
	}
	if !found {
		return nil, errors.New("cluster: this node's id is not in the peer list")
	}
	s.brokers = slices.Clone(peers)
	slices.SortFunc(s.brokers, func(a, b store.Broker) int { return int(a.NodeID) - int(b.NodeID) })
	slices.Sort(s.live)
	return s, nil
}

// Brokers implements store.Placement.
func (s *Static) Brokers() []store.Broker { return s.brokers }

// Leader implements store.Placement; the epoch is always 0.
func (s *Static) Leader(topic string, partition int32) store.Route {
	l := pick(s.live, partitionKey(topic, partition))
	return store.Route{Leader: l, Epoch: 0, Serving: l == s.self}
}

// Coordinator implements store.Placement.
func (s *Static) Coordinator(group string) (int32, bool) {
	n := pick(s.live, groupKey(group))
	return n, n == s.self
}

// Hold implements store.Placement: nothing moves, nothing to hold.
func (s *Static) Hold() uint64 { return 0 }

// Release implements store.Placement.
func (s *Static) Release(uint64) {}
