// ListPartitionReassignments (API key 46): version 0 (wire.APIs).
//
// No reassignment is ever in progress (45_alter_partition_reassignments.go
// completes or refuses each at once), so the list is always empty:
// `kafka-reassign-partitions --list` and `--verify` see none.

package bridge

import (
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyListPartitionReassignments, (*Gateway).listPartitionReassignments) }

// listPartitionReassignments answers ListPartitionReassignments as Kafka's
// controller does: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED;
// then the ongoing reassignments of the partitions asked for (null: all),
// here none.
func (g *Gateway) listPartitionReassignments(c *call) bool {
	var req wire.ListPartitionReassignmentsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := wire.ListPartitionReassignmentsResponse{}
	if g.clusterCode(c, acl.OpDescribe) != wire.NoError {
		resp.ErrorCode, resp.ErrorMessage = wire.ClusterAuthorizationFailed, wire.NullStringOf(msgClusterAuthFailed)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
