// FindCoordinator (API key 10): versions 0–6 (wire.APIs).
//
// Differs from Kafka: the coordinator of every group is this gateway (with
// Config.Placement, the instance the placement names), and so is the
// coordinator of every transactional id; in cluster mode key type 1
// (transaction) is INVALID_REQUEST with a message: transactions are served
// on a single instance only (docs/design/transactions.md §6).

package bridge

import (
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyFindCoordinator, (*Gateway).findCoordinator) }

// Coordinator key types (FindCoordinator v1+).
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

// findCoordinator answers FindCoordinator v0–6: this gateway coordinates
// every group (single-instance coordination, docs/LIMITS.md). Transaction
// coordinators are refused with a message the Java client prints.
func (g *Gateway) findCoordinator(c *call) bool {
	gs := &c.state.group
	req := &gs.findReq
	v := c.hdr.APIVersion
	if !decodeOrClose(c, req) {
		return false
	}
	host, port := g.advertisedAddr(c)
	answer := func(key string) wire.FindCoordinatorResponseCoordinator {
		if req.CoordinatorType == coordinatorGroup && g.groupCode(c, acl.OpDescribe, key) != wire.NoError {
			// KafkaApis: DESCRIBE on the group.
			return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: -1, Port: -1,
				ErrorCode: wire.GroupAuthorizationFailed, ErrorMessage: wire.NullStringOf(wire.GroupAuthorizationFailed.String())}
		}
		switch {
		case req.CoordinatorType == coordinatorTransaction && !g.allowed(c, acl.OpDescribe, acl.ResourceTransactionalID, key):
			// KafkaApis: DESCRIBE on the transactional id.
			return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: -1, Port: -1,
				ErrorCode: wire.TransactionalIDAuthFailed, ErrorMessage: wire.NullStringOf(wire.TransactionalIDAuthFailed.String())}
		case req.CoordinatorType == coordinatorTransaction && g.transactionsServed() && g.cfg.Placement == nil:
			return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: g.cfg.NodeID, Host: host, Port: port}
		case req.CoordinatorType == coordinatorTransaction && g.transactionsServed():
			// docs/design/transactions.md §7: the leader of the id's
			// partition of __transaction_state.
			node := g.txnCoordinatorNode(key)
			h, p, ok := g.brokerAddr(c, node)
			if !ok {
				return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: -1, Port: -1,
					ErrorCode: wire.CoordinatorNotAvailable}
			}
			return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: node, Host: h, Port: p}
		case req.CoordinatorType != coordinatorGroup:
			// TransactionManager reports an unexpected FindCoordinator error
			// as "Could not find a coordinator ... due to unexpected error:
			// <message>"; INVALID_REQUEST is not retriable, so it stops.
			msg := errTxnCluster
			if req.CoordinatorType != coordinatorTransaction {
				msg = "unknown coordinator key type"
			}
			return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: -1, Port: -1,
				ErrorCode: wire.InvalidRequest, ErrorMessage: wire.NullStringOf(msg)}
		}
		if g.cfg.Placement != nil {
			// docs/design/cluster.md §7: groups are spread like partitions.
			node, _ := g.cfg.Placement.Coordinator(key)
			h, p, ok := g.brokerAddr(c, node)
			if !ok {
				return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: -1, Port: -1,
					ErrorCode: wire.CoordinatorNotAvailable}
			}
			return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: node, Host: h, Port: p}
		}
		return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: g.cfg.NodeID, Host: host, Port: port}
	}
	resp := &gs.findResp
	*resp = wire.FindCoordinatorResponse{Coordinators: resp.Coordinators[:0]}
	if v >= 4 {
		// KIP-699: one entry per requested key.
		for _, k := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, answer(k))
		}
	} else {
		a := answer(req.CoordinatorKey)
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = a.ErrorCode, a.ErrorMessage, a.NodeID, a.Host, a.Port
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}
