package bridge

// Replica placement as the placement admin APIs see it (43_elect_leaders.go,
// 45_alter_partition_reassignments.go, 46_list_partition_reassignments.go):
// every partition has one replica, its leader. A single gateway holds them
// all; in a cluster the instance that leads a partition is its replica,
// chosen by rendezvous hashing over the live instances
// (docs/design/cluster.md §4), so there is never a preferred leader to
// elect nor a replica to move by hand.

import (
	"context"
	"errors"
	"strconv"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/wire"
)

// replicaOf is a partition's one replica: this gateway, or in a cluster
// the instance that leads it (-1 when no instance is live).
func (g *Gateway) replicaOf(topic string, partition int32) int32 {
	if g.cfg.Placement == nil {
		return g.cfg.NodeID
	}
	return g.cfg.Placement.Leader(topic, partition).Leader
}

// brokerLive reports whether node is a live broker of this cluster.
func (g *Gateway) brokerLive(node int32) bool {
	if g.cfg.Placement == nil {
		return node == g.cfg.NodeID
	}
	for _, b := range g.cfg.Placement.Brokers() {
		if b.NodeID == node {
			return true
		}
	}
	return false
}

// topicLookups remembers, for one request, what the backend said of each
// topic it names.
type topicLookups map[string]topicLookup

type topicLookup struct {
	info store.TopicInfo
	err  error
}

// partitionCheck looks partition of topic up as Kafka's controller does
// before it acts on one: UNKNOWN_TOPIC_OR_PARTITION with
// ReplicationControlManager's message when the topic or the partition does
// not exist, KAFKA_STORAGE_ERROR when the backend does not answer.
func (g *Gateway) partitionCheck(ctx context.Context, seen topicLookups, topic string, partition int32) (wire.ErrorCode, wire.NullString) {
	l, ok := seen[topic]
	if !ok {
		l.info, l.err = g.store.Topic(ctx, topic)
		seen[topic] = l
	}
	switch {
	case errors.Is(l.err, store.ErrUnknownTopic):
		return wire.UnknownTopicOrPartition, wire.NullStringOf("No such topic as " + topic)
	case l.err != nil:
		return wire.KafkaStorageError, wire.NullStringOf(l.err.Error())
	case partition < 0 || partition >= l.info.Partitions:
		return wire.UnknownTopicOrPartition, wire.NullStringOf("No such partition as " + topic + "-" + strconv.Itoa(int(partition)))
	}
	return wire.NoError, wire.NullString{}
}
