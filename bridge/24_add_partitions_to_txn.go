// AddPartitionsToTxn (API key 24): versions 0–3 (wire.APIs), the client
// versions; v4+ (broker-to-broker verification, KIP-890) is not served.
//
// The coordinator (bridge/txn) records each partition with its high
// watermark, the lowest offset the transaction can have there
// (docs/design/transactions.md §3).

package bridge

import (
	"github.com/kiggy-io/kiggy/bridge/txn"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyAddPartitionsToTxn, (*Gateway).addPartitionsToTxn) }

// addPartitionsToTxn answers AddPartitionsToTxn v0–3 as
// KafkaApis.handleAddPartitionsToTxnRequest does: WRITE on the
// transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
// partition; WRITE on each topic, else TOPIC_AUTHORIZATION_FAILED there;
// an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; with any of
// these the other partitions are OPERATION_NOT_ATTEMPTED. Otherwise all
// partitions get the coordinator's one answer.
func (g *Gateway) addPartitionsToTxn(c *call) bool {
	var req wire.AddPartitionsToTxnRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	var resp wire.AddPartitionsToTxnResponse
	codes := make([][]wire.ErrorCode, len(req.Topics))
	all := g.txnCode()
	if all == wire.NoError && !g.allowed(c, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		all = wire.TransactionalIDAuthFailed
	}
	var parts []txn.Partition
	failed := false
	for i, t := range req.Topics {
		codes[i] = make([]wire.ErrorCode, len(t.Partitions))
		if all != wire.NoError {
			continue
		}
		topicCode := g.topicCode(c, acl.OpWrite, t.Topic)
		var count int32 = -1
		if topicCode == wire.NoError {
			count, topicCode = g.topicPartitions(t.Topic, wire.CoordinatorNotAvailable)
		}
		for j, p := range t.Partitions {
			code := topicCode
			if code == wire.NoError && (p < 0 || p >= count) {
				code = wire.UnknownTopicOrPartition
			}
			codes[i][j] = code
			failed = failed || code != wire.NoError
			parts = append(parts, txn.Partition{Topic: t.Topic, Partition: p})
		}
	}
	switch {
	case all != wire.NoError:
	case failed:
		// The partitions that passed were not attempted.
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == wire.NoError {
					codes[i][j] = wire.OperationNotAttempted
				}
			}
		}
	default:
		release, code := g.txnRoute(req.TransactionalID)
		if all = code; code == wire.NoError {
			all = g.txn.AddPartitions(g.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, c.hdr.APIVersion)
			release()
		}
	}
	for i, t := range req.Topics {
		out := wire.AddPartitionsToTxnResponseTopic{Topic: t.Topic}
		for j, p := range t.Partitions {
			code := codes[i][j]
			if all != wire.NoError {
				code = all
			}
			out.Partitions = append(out.Partitions, wire.AddPartitionsToTxnResponsePartition{Partition: p, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
