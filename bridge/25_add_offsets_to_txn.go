// AddOffsetsToTxn (API key 25): versions 0–4 (wire.APIs).

package bridge

import (
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyAddOffsetsToTxn, (*Gateway).addOffsetsToTxn) }

// addOffsetsToTxn answers AddOffsetsToTxn (KafkaApis.handleAddOffsetsToTxnRequest):
// WRITE on the transactional id, READ on the group, then the coordinator
// adds the group to the transaction, whose TxnOffsetCommit offsets it
// commits with it.
func (g *Gateway) addOffsetsToTxn(c *call) bool {
	var req wire.AddOffsetsToTxnRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := wire.AddOffsetsToTxnResponse{ErrorCode: g.txnCode()}
	switch {
	case resp.ErrorCode != wire.NoError:
	case !g.allowed(c, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		resp.ErrorCode = wire.TransactionalIDAuthFailed
	case g.groupCode(c, acl.OpRead, req.Group) != wire.NoError:
		resp.ErrorCode = wire.GroupAuthorizationFailed
	case req.Group == "":
		resp.ErrorCode = wire.InvalidGroupID
	default:
		release, code := g.txnRoute(req.TransactionalID)
		if resp.ErrorCode = code; code == wire.NoError {
			resp.ErrorCode = g.txn.AddOffsets(g.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, c.hdr.APIVersion)
			release()
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
