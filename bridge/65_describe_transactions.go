// DescribeTransactions (API key 65): version 0 (wire.APIs), KIP-664.

package bridge

import (
	"slices"

	"github.com/kiggy-io/kiggy/bridge/txn"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeTransactions, (*Gateway).describeTransactions) }

// describeTransactions answers DescribeTransactions
// (TransactionCoordinator.handleDescribeTransactions): per id, DESCRIBE on
// it (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), TRANSACTIONAL_ID_NOT_FOUND
// when unknown, else its state, timeout, start time (-1 unless a
// transaction is open), producer and the partitions of topics the
// principal may DESCRIBE, so `kafka-transactions describe` works.
func (g *Gateway) describeTransactions(c *call) bool {
	var req wire.DescribeTransactionsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	var resp wire.DescribeTransactionsResponse
	ready := g.txnCode()
	for _, id := range req.TransactionalIDs {
		out := wire.DescribeTransactionsState{TransactionalID: id, StartTimeMillis: -1, ProducerID: -1, ProducerEpoch: -1}
		t, ok := txn.Txn{}, false
		switch {
		case ready != wire.NoError:
			out.ErrorCode = ready
		case !g.allowed(c, acl.OpDescribe, acl.ResourceTransactionalID, id):
			out.ErrorCode = wire.TransactionalIDAuthFailed
		default:
			release, code := g.txnRoute(id)
			if out.ErrorCode = code; code != wire.NoError {
				break
			}
			if t, ok = g.txn.Describe(id); !ok {
				out.ErrorCode = wire.TransactionalIDNotFound
			}
			release()
		}
		if ok {
			out.State = t.State.String()
			out.TimeoutMillis = t.TimeoutMs
			if t.State == txn.Ongoing || t.State == txn.PrepareCommit || t.State == txn.PrepareAbort {
				out.StartTimeMillis = t.StartMs
			}
			out.ProducerID, out.ProducerEpoch = t.ProducerID, t.Epoch
			for _, p := range t.Partitions {
				if !g.allowed(c, acl.OpDescribe, acl.ResourceTopic, p.Topic) {
					continue
				}
				i := slices.IndexFunc(out.Topics, func(x wire.DescribeTransactionsTopic) bool { return x.Topic == p.Topic })
				if i < 0 {
					out.Topics = append(out.Topics, wire.DescribeTransactionsTopic{Topic: p.Topic})
					i = len(out.Topics) - 1
				}
				out.Topics[i].Partitions = append(out.Topics[i].Partitions, p.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
