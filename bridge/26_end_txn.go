// EndTxn (API key 26): versions 0–5 (wire.APIs).
//
// Differs from Kafka: the answer comes once the markers are written and
// the offsets committed, not once the outcome is prepared
// (docs/design/transactions.md §2); the transaction version is 1, so the
// v5 response's producer id and epoch are the request's.

package bridge

import (
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyEndTxn, (*Gateway).endTxn) }

// endTxn answers EndTxn (KafkaApis.handleEndTxnRequest): WRITE on the
// transactional id, then the coordinator commits or aborts.
func (g *Gateway) endTxn(c *call) bool {
	var req wire.EndTxnRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := wire.EndTxnResponse{ErrorCode: g.txnCode(), ProducerID: -1, ProducerEpoch: -1}
	switch {
	case resp.ErrorCode != wire.NoError:
	case !g.allowed(c, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		resp.ErrorCode = wire.TransactionalIDAuthFailed
	default:
		release, code := g.txnRoute(req.TransactionalID)
		if resp.ErrorCode = code; code != wire.NoError {
			break
		}
		resp.ErrorCode = g.txn.End(g.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Committed, c.hdr.APIVersion)
		release()
		if resp.ErrorCode == wire.NoError {
			resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
