// AlterPartitionReassignments (API key 45): versions 0–1 (wire.APIs).
//
// A partition's one replica is placed by kiggy (replicas.go): a
// reassignment to the replica it has is done at once, as Kafka completes a
// reassignment whose target is the current replica set; any other target
// is refused with INVALID_REPLICA_ASSIGNMENT and a message saying why, after
// the checks Kafka's controller makes of every target.

package bridge

import (
	"context"
	"fmt"
	"strconv"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyAlterPartitionReassignments, (*Gateway).alterPartitionReassignments) }

// alterPartitionReassignments answers AlterPartitionReassignments as
// Kafka's controller does (ControllerApis, ReplicationControlManager.
// alterPartitionReassignment): ALTER on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for the request and each partition; then per
// partition UNKNOWN_TOPIC_OR_PARTITION, NO_REASSIGNMENT_IN_PROGRESS for a
// cancellation (none is ever in progress), Kafka's INVALID_REPLICA_ASSIGNMENT
// checks of the target (empty, a broker twice, a broker not registered, a
// replication factor change when not allowed), then success when the target
// is the partition's replica and INVALID_REPLICA_ASSIGNMENT otherwise.
func (g *Gateway) alterPartitionReassignments(c *call) bool {
	var req wire.AlterPartitionReassignmentsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := wire.AlterPartitionReassignmentsResponse{AllowReplicationFactorChange: req.AllowReplicationFactorChange}
	denied := g.clusterCode(c, acl.OpAlter) != wire.NoError
	if denied {
		resp.ErrorCode, resp.ErrorMessage = wire.ClusterAuthorizationFailed, wire.NullStringOf(msgClusterAuthFailed)
	}
	ctx, cancel := context.WithTimeout(g.ctx, describeLogDirsTimeout)
	defer cancel()
	seen := topicLookups{}
	for _, t := range req.Topics {
		rt := wire.TopicResults{Topic: t.Topic}
		for _, p := range t.Partitions {
			r := wire.PartitionResult{Partition: p.Partition}
			if denied {
				r.ErrorCode, r.ErrorMessage = resp.ErrorCode, resp.ErrorMessage
			} else {
				r.ErrorCode, r.ErrorMessage = g.reassignOne(ctx, seen, t.Topic, p, req.AllowReplicationFactorChange)
			}
			rt.Partitions = append(rt.Partitions, r)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// reassignOne is one partition's reassignment result.
func (g *Gateway) reassignOne(ctx context.Context, seen topicLookups, topic string, p wire.ReassignablePartition, allowRF bool) (wire.ErrorCode, wire.NullString) {
	if code, msg := g.partitionCheck(ctx, seen, topic, p.Partition); code != wire.NoError {
		return code, msg
	}
	if p.Replicas == nil {
		// ReplicationControlManager.cancelPartitionReassignment.
		return wire.NoReassignmentInProgress, wire.NullStringOf("No ongoing reassignment for " + topic + "-" + strconv.Itoa(int(p.Partition)) + ".")
	}
	invalid := func(format string, args ...any) (wire.ErrorCode, wire.NullString) {
		return wire.InvalidReplicaAssignment, wire.NullStringOf(fmt.Sprintf(format, args...))
	}
	// ReplicationControlManager.validateManualPartitionAssignment.
	if len(p.Replicas) == 0 {
		return invalid("The manual partition assignment includes an empty replica list.")
	}
	seenBroker := map[int32]bool{}
	for _, b := range p.Replicas {
		if seenBroker[b] {
			return invalid("The manual partition assignment includes the broker %d more than once.", b)
		}
		seenBroker[b] = true
		if !g.brokerLive(b) {
			return invalid("The manual partition assignment includes broker %d, but no such broker is registered.", b)
		}
	}
	if !allowRF && len(p.Replicas) != 1 {
		return invalid("The replication factor is changed from 1 to %d but AllowReplicationFactorChange is false", len(p.Replicas))
	}
	replica := g.replicaOf(topic, p.Partition)
	if len(p.Replicas) == 1 && p.Replicas[0] == replica {
		return wire.NoError, wire.NullString{} // the target is the current replica set
	}
	return invalid("kiggy keeps one replica per partition and places it itself (on the instance that leads it); %s-%d is on broker %d and cannot be reassigned to %v",
		topic, p.Partition, replica, p.Replicas)
}
