package bridge

import (
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/wire"
)

// brokerEndpoint returns b's address for listener, ok=false when b
// advertises none for it (Kafka leaves such a broker out of the answer).
func brokerEndpoint(b *store.Broker, listener string) (store.Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	return store.Endpoint{}, false
}

// leaderCode is the error a request for a partition gets from this
// instance: 0 when it serves the partition. epoch is the client's current
// leader epoch (-1 = unknown, not checked). As Kafka's
// Partition.checkCurrentLeaderEpoch, docs/design/cluster.md §6: "an epoch
// older than the partition's is FENCED_LEADER_EPOCH (74), a newer one
// UNKNOWN_LEADER_EPOCH (75); then a partition led elsewhere is
// NOT_LEADER_OR_FOLLOWER (6)".
func (g *Gateway) leaderCode(topic string, partition, epoch int32) wire.ErrorCode {
	pl := g.cfg.Placement
	if pl == nil {
		return wire.NoError
	}
	r := pl.Leader(topic, partition)
	switch {
	case epoch >= 0 && epoch < r.Epoch:
		return wire.FencedLeaderEpoch
	case epoch > r.Epoch:
		return wire.UnknownLeaderEpoch
	case !r.Serving:
		return wire.NotLeaderOrFollower
	}
	return wire.NoError
}

// leaderEpoch is a partition's leader epoch, -1 for a single instance.
func (g *Gateway) leaderEpoch(topic string, partition int32) int32 {
	if g.cfg.Placement == nil {
		return -1
	}
	return g.cfg.Placement.Leader(topic, partition).Epoch
}

// leaderHint is the KIP-951 CurrentLeader a Produce or Fetch answer
// carries with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
// (docs/design/cluster.md §6): the partition's leader and its epoch from
// the placement, so the client can go there without asking Metadata. None
// for a single instance or when no instance is live.
func (g *Gateway) leaderHint(topic string, partition int32, code wire.ErrorCode) wire.LeaderHint {
	if g.cfg.Placement == nil || (code != wire.NotLeaderOrFollower && code != wire.FencedLeaderEpoch) {
		return wire.LeaderHint{}
	}
	r := g.cfg.Placement.Leader(topic, partition)
	if r.Leader < 0 {
		return wire.LeaderHint{}
	}
	return wire.LeaderHint{Valid: true, LeaderID: r.Leader, LeaderEpoch: r.Epoch}
}

// appendNodeEndpoint adds node's address for the connection's listener to
// eps, once: the NodeEndpoints of a Produce answer that hints node as a
// leader (as Kafka, a leader without that listener is left out).
func (g *Gateway) appendNodeEndpoint(c *call, eps []wire.NodeEndpoint, node int32) []wire.NodeEndpoint {
	for _, e := range eps {
		if e.NodeID == node {
			return eps
		}
	}
	host, port, ok := g.brokerAddr(c, node)
	if !ok {
		return eps
	}
	return append(eps, wire.NodeEndpoint{NodeID: node, Host: host, Port: port})
}

// notCoordinator reports whether this instance must answer a request for
// group with NOT_COORDINATOR (16) (docs/design/cluster.md §7).
func (g *Gateway) notCoordinator(group string) bool {
	if g.cfg.Placement == nil {
		return false
	}
	_, local := g.cfg.Placement.Coordinator(group)
	return !local
}

// brokerAddr returns node's address for the connection's listener.
func (g *Gateway) brokerAddr(c *call, node int32) (string, int32, bool) {
	if g.cfg.Placement == nil {
		host, port := g.advertisedAddr(c)
		return host, port, node == g.cfg.NodeID
	}
	for _, b := range g.cfg.Placement.Brokers() {
		if b.NodeID == node {
			if e, ok := brokerEndpoint(&b, c.req.Conn().Listener); ok {
				return e.Host, e.Port, true
			}
		}
	}
	return "", -1, false
}

// metadataBrokers appends the brokers a Metadata answer lists and returns
// the controller id: this gateway alone, or every live instance that
// advertises the connection's listener, the lowest node id as the
// controller (docs/design/cluster.md §3).
func (g *Gateway) metadataBrokers(c *call, dst []wire.MetadataResponseBroker) ([]wire.MetadataResponseBroker, int32) {
	if g.cfg.Placement == nil {
		host, port := g.advertisedAddr(c)
		return append(dst, wire.MetadataResponseBroker{NodeID: g.cfg.NodeID, Host: host, Port: port}), g.cfg.NodeID
	}
	listener := c.req.Conn().Listener
	controller := int32(-1)
	for _, b := range g.cfg.Placement.Brokers() {
		if e, ok := brokerEndpoint(&b, listener); ok {
			dst = append(dst, wire.MetadataResponseBroker{NodeID: b.NodeID, Host: e.Host, Port: e.Port})
			if controller < 0 {
				controller = b.NodeID
			}
		}
	}
	if len(dst) == 0 {
		// No live instance yet (this one has not read its own
		// announcement): list this gateway so the client keeps a broker to
		// ask again.
		host, port := g.advertisedAddr(c)
		dst = append(dst, wire.MetadataResponseBroker{NodeID: g.cfg.NodeID, Host: host, Port: port})
	}
	return dst, controller
}
