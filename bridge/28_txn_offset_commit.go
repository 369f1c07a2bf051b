// TxnOffsetCommit (API key 28): versions 0–5 (wire.APIs).
//
// The offsets are kept with the transaction (bridge/txn) and committed
// through store.Log when it commits; until then OffsetFetch with
// require_stable answers UNSTABLE_OFFSET_COMMIT for them.

package bridge

import (
	"context"

	"github.com/kiggy-io/kiggy/bridge/txn"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyTxnOffsetCommit, (*Gateway).txnOffsetCommit) }

// txnOffsetCommit answers TxnOffsetCommit (KafkaApis.handleTxnOffsetCommitRequest):
// WRITE on the transactional id, READ on the group (else every partition
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED or GROUP_AUTHORIZATION_FAILED),
// READ on each topic; the member and generation are checked as a
// transactional commit is (v3+, KIP-447: with generation -1 and no member
// the commit is not checked against the group, and a rebalance in progress
// does not refuse it); then the coordinator keeps the offsets.
func (g *Gateway) txnOffsetCommit(c *call) bool {
	var req wire.TxnOffsetCommitRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	all, forward := g.txnOffsetCommitCheck(c, &req)
	codes, offsets := g.txnOffsetCommitPartitions(c, &req, all)
	if len(offsets) > 0 && forward {
		g.forwardTxnOffsets(&req, codes)
	} else if len(offsets) > 0 {
		code := wire.NoError
		if release, rc := g.txnRoute(req.TransactionalID); rc != wire.NoError {
			code = rc
		} else {
			code = g.txn.CommitOffsets(g.ctx, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, offsets)
			release()
		}
		if code != wire.NoError {
			for i := range codes {
				for j := range codes[i] {
					if codes[i][j] == wire.NoError {
						codes[i][j] = code
					}
				}
			}
		}
	}
	var resp wire.TxnOffsetCommitResponse
	for i, t := range req.Topics {
		out := wire.TxnOffsetCommitResponseTopic{Topic: t.Topic}
		for j, p := range t.Partitions {
			out.Partitions = append(out.Partitions, wire.TxnOffsetCommitResponsePartition{Partition: p.Partition, ErrorCode: codes[i][j]})
		}
		resp.Topics = append(resp.Topics, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// txnOffsetCommitCheck makes the request's checks, the transactional id's
// and the group's, and returns the code every partition gets (NoError if
// they passed) and whether the offsets go to the transaction's coordinator
// on another instance.
func (g *Gateway) txnOffsetCommitCheck(c *call, req *wire.TxnOffsetCommitRequest) (all wire.ErrorCode, forward bool) {
	all = g.txnCode()
	// In a cluster (docs/design/transactions.md §7) the group's coordinator
	// checks the member and forwards the offsets to the transaction's
	// coordinator, which takes them from it without the group check.
	forwarded := false
	if all == wire.NoError && g.cfg.Placement != nil {
		txnLocal := g.txnCoordinatorNode(req.TransactionalID) == g.cfg.NodeID
		switch {
		case !g.notCoordinator(req.Group):
			forward = !txnLocal
		case txnLocal && g.allowed(c, acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName):
			forwarded = true
		default:
			all = wire.NotCoordinator
		}
	}
	switch {
	case all != wire.NoError:
	case !g.allowed(c, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		all = wire.TransactionalIDAuthFailed
	case g.groupCode(c, acl.OpRead, req.Group) != wire.NoError:
		all = wire.GroupAuthorizationFailed
	case req.Group == "":
		all = wire.InvalidGroupID
	case forwarded:
	case !g.classicGroupReady(req.Group, req.Generation >= 0 || req.MemberID != "" || req.InstanceID.Valid, req.Generation):
		all = wire.CoordinatorLoadInProgress
	case req.Generation >= 0 || req.MemberID != "" || req.InstanceID.Valid:
		code := wire.ErrorCode(g.groups.ValidateCommit(req.Group, req.MemberID, req.InstanceID.S, req.InstanceID.Valid, req.Generation))
		if code != wire.RebalanceInProgress {
			all = code
		}
	}
	return all, forward
}

// txnOffsetCommitPartitions gives each partition its code, all unless that
// is NoError, else the topic's READ and existence checks and the metadata's
// size, and returns the offsets that passed.
func (g *Gateway) txnOffsetCommitPartitions(c *call, req *wire.TxnOffsetCommitRequest, all wire.ErrorCode) ([][]wire.ErrorCode, []txn.Offset) {
	codes := make([][]wire.ErrorCode, len(req.Topics))
	var offsets []txn.Offset
	for i, t := range req.Topics {
		codes[i] = make([]wire.ErrorCode, len(t.Partitions))
		topicCode := all
		if topicCode == wire.NoError {
			topicCode = g.topicCode(c, acl.OpRead, t.Topic)
		}
		var count int32 = -1
		if topicCode == wire.NoError {
			count, topicCode = g.topicPartitions(t.Topic, wire.CoordinatorLoadInProgress)
		}
		for j, p := range t.Partitions {
			code := topicCode
			switch {
			case code != wire.NoError:
			case p.Partition < 0 || p.Partition >= count:
				code = wire.UnknownTopicOrPartition
			case len(p.Metadata.S) > offsetMetadataMax:
				code = wire.OffsetMetadataTooLarge
			default:
				offsets = append(offsets, txn.Offset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
					LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata.S})
			}
			codes[i][j] = code
		}
	}
	return codes, offsets
}

// txnOffsetCommitForwardVersion is the TxnOffsetCommit version a group
// coordinator forwards in.
const txnOffsetCommitForwardVersion = 3

// forwardTxnOffsets sends the offsets req's checks let through to the
// transaction's coordinator on another instance, sets each one's code from
// its answer, and holds those it took as pending for the group
// (docs/design/transactions.md §7).
func (g *Gateway) forwardTxnOffsets(req *wire.TxnOffsetCommitRequest, codes [][]wire.ErrorCode) {
	fwd := wire.TxnOffsetCommitRequest{TransactionalID: req.TransactionalID, Group: req.Group,
		ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Generation: -1}
	for i, t := range req.Topics {
		ft := wire.TxnOffsetCommitRequestTopic{Topic: t.Topic}
		for j, p := range t.Partitions {
			if codes[i][j] == wire.NoError {
				ft.Partitions = append(ft.Partitions, p)
			}
		}
		if len(ft.Partitions) > 0 {
			fwd.Topics = append(fwd.Topics, ft)
		}
	}
	setAll := func(code wire.ErrorCode) {
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == wire.NoError {
					codes[i][j] = code
				}
			}
		}
	}
	node := g.txnCoordinatorNode(req.TransactionalID)
	if node < 0 || g.cfg.Peers == nil {
		setAll(wire.CoordinatorNotAvailable)
		return
	}
	ctx, cancel := context.WithTimeout(g.ctx, peerTimeout)
	defer cancel()
	body := fwd.AppendTo(nil, txnOffsetCommitForwardVersion)
	out, err := g.cfg.Peers.Call(ctx, node, int16(wire.KeyTxnOffsetCommit), txnOffsetCommitForwardVersion, true, body)
	var resp wire.TxnOffsetCommitResponse
	if err == nil {
		err = resp.Decode(out, txnOffsetCommitForwardVersion)
	}
	if err != nil {
		g.cfg.Logger.Warn("transactions: forwarding TxnOffsetCommit to the transaction's coordinator failed", "node", node, "err", err)
		setAll(wire.CoordinatorNotAvailable)
		return
	}
	var taken []txn.Offset
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			if codes[i][j] != wire.NoError {
				continue
			}
			code := wire.UnknownServerError // not answered
			for _, rt := range resp.Topics {
				if rt.Topic != t.Topic {
					continue
				}
				for _, rp := range rt.Partitions {
					if rp.Partition == p.Partition {
						code = rp.ErrorCode
					}
				}
			}
			if codes[i][j] = code; code == wire.NoError {
				taken = append(taken, txn.Offset{Topic: t.Topic, Partition: p.Partition})
			}
		}
	}
	if len(taken) > 0 {
		g.txn.NotePending(req.TransactionalID, req.ProducerID, req.Group, taken)
	}
}
