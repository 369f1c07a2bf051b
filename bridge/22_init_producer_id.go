// InitProducerId (API key 22): versions 0–5 (wire.APIs).
//
// Idempotent producers get an id from producer.IDs; a transactional id is
// the transaction coordinator's (bridge/txn, docs/design/transactions.md).
// Differs from Kafka: an instance of a cluster that cannot reach the others
// (no usable inter-broker listener, transactionsServed) refuses a
// transactional id with TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

package bridge

import (
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyInitProducerID, (*Gateway).initProducerID) }

// initProducerID answers InitProducerId: for a transactional id, the
// coordinator's id and next epoch (fencing the id's previous producer);
// for an idempotent producer, a fresh id at epoch 0, or, when it sends its
// current id and epoch (v3+, KIP-360), the same id at the next epoch
// (docs/design/record-mapping.md §6; producer.IDs.Grant).
func (g *Gateway) initProducerID(c *call) bool {
	st := c.state
	req := &st.initPIDReq
	if !decodeOrClose(c, req) {
		return false
	}
	resp := wire.InitProducerIDResponse{ProducerID: -1, ProducerEpoch: -1}
	switch {
	case req.TransactionalID.Valid && req.TransactionalID.S != "":
		// An empty id counts as absent (KafkaApis).
		id := req.TransactionalID.S
		switch {
		case !g.transactionsServed():
			resp.ErrorCode = wire.TransactionalIDAuthFailed // errTxnCluster, at FindCoordinator
		case !g.allowed(c, acl.OpWrite, acl.ResourceTransactionalID, id):
			// KafkaApis.handleInitProducerIdRequest: WRITE on the id.
			resp.ErrorCode = wire.TransactionalIDAuthFailed
		default:
			release, code := g.txnRoute(id)
			if resp.ErrorCode = code; code == wire.NoError {
				resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = g.txn.InitProducerID(g.ctx, id,
					req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch, c.hdr.APIVersion)
				release()
			}
		}
	case !g.canIdempotentWrite(c):
		// KafkaApis.handleInitProducerIdRequest: IDEMPOTENT_WRITE on the
		// cluster, or WRITE on any topic (KIP-679).
		resp.ErrorCode = wire.ClusterAuthorizationFailed
	default:
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = g.producerIDs.Grant(req.ProducerID, req.ProducerEpoch, c.hdr.APIVersion)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
