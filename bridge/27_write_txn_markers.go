// WriteTxnMarkers (API key 27): versions 0–1 (wire.APIs).
//
// Kafka's inter-broker request, as Kafka serves it: the transaction
// coordinator has each partition's leader append the marker that ends a
// transaction there (docs/design/transactions.md §7), and
// `kafka-transactions abort` sends it to end a hanging transaction. A
// partition of __consumer_offsets names the groups whose offsets the
// transaction kept: their coordinator stops holding them as pending.

package bridge

import (
	"context"
	"errors"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyWriteTxnMarkers, (*Gateway).writeTxnMarkers) }

// writeTxnMarkers answers WriteTxnMarkers
// (KafkaApis.handleWriteTxnMarkersRequest): CLUSTER_ACTION on the cluster,
// else every partition CLUSTER_AUTHORIZATION_FAILED; then each marker is
// applied to each of its partitions this instance leads.
func (g *Gateway) writeTxnMarkers(c *call) bool {
	var req wire.WriteTxnMarkersRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	allowed := g.allowed(c, acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName)
	var resp wire.WriteTxnMarkersResponse
	for _, m := range req.Markers {
		marker := mapping.Control{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.TransactionResult}
		out := wire.WriteTxnMarkerResult{ProducerID: m.ProducerID}
		for _, t := range m.Topics {
			tr := wire.WriteTxnMarkerTopicResult{Name: t.Name}
			for _, p := range t.PartitionIndexes {
				code := wire.ClusterAuthorizationFailed
				if allowed {
					code = g.applyMarker(t.Name, p, marker)
				}
				tr.Partitions = append(tr.Partitions, wire.WriteTxnMarkerPartitionResult{PartitionIndex: p, ErrorCode: code})
			}
			out.Topics = append(out.Topics, tr)
		}
		resp.Markers = append(resp.Markers, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// applyMarker applies marker to topic/partition at its leader, or, for a
// partition of __consumer_offsets, resolves the pending offsets of its
// groups here and reads the commits made meanwhile, so an OffsetFetch
// that follows sees what the transaction committed.
func (g *Gateway) applyMarker(topic string, partition int32, marker mapping.Control) wire.ErrorCode {
	ctx, cancel := context.WithTimeout(g.ctx, g.cfg.ProduceTimeoutCap)
	defer cancel()
	if topic == offsetsTopic {
		if cs, ok := g.store.(store.CommitSyncer); ok {
			if err := cs.SyncCommits(ctx); err != nil {
				return wire.CoordinatorNotAvailable
			}
		}
		g.txn.ResolvePendingWhere(marker.ProducerID, func(group string) bool {
			return kafkaPartition(group, offsetsPartitions) == partition
		})
		return wire.NoError
	}
	if code := g.txnCode(); code != wire.NoError {
		return code
	}
	if pl := g.cfg.Placement; pl != nil {
		// Held, as an append is, so the partition is not handed over
		// before the marker and its index are stored
		// (docs/design/cluster.md §5).
		tok := pl.Hold()
		defer pl.Release(tok)
	}
	if code := g.leaderCode(topic, partition, -1); code != wire.NoError {
		return code
	}
	if code := g.txnPartitionCode(topic, partition); code != wire.NoError {
		return code
	}
	if err := g.txn.ApplyMarker(ctx, topic, partition, marker); err != nil {
		g.cfg.Logger.Warn("transactions: applying a marker failed", "topic", topic, "partition", partition, "err", err)
		if errors.Is(err, store.ErrUnavailable) {
			return wire.NotLeaderOrFollower
		}
		return wire.KafkaStorageError
	}
	return wire.NoError
}
