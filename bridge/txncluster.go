package bridge

// Transactions across the instances of a kiggy cluster
// (docs/design/transactions.md §7). As in Kafka, three roles meet in a
// transaction, each played by the instance that holds it:
//
//   - the transaction coordinator of a transactional id is the leader of
//     the id's partition of a virtual __transaction_state topic (Kafka's
//     partitionFor over 50 partitions), so ids move between instances with
//     the same hand-over as partitions (docs/design/cluster.md §5);
//   - each partition's leader appends the transaction's batches and its
//     marker (WriteTxnMarkers from the coordinator), and keeps the
//     partition's open and aborted transactions;
//   - each group's coordinator takes TxnOffsetCommit, forwards it to the
//     transaction's coordinator, which keeps the offsets with the
//     transaction, and answers UNSTABLE_OFFSET_COMMIT for them until the
//     coordinator tells it the transaction is complete (a WriteTxnMarkers
//     for the group's partition of __consumer_offsets).
//
// All of them persist to the one system store the instances share; an
// instance that takes over ids, partitions or groups after a view change
// reads it once (txnSync) before it serves them.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/bridge/txn"
	"github.com/kiggy-io/kiggy/wire"
)

// Peers sends Kafka requests to the other instances of a cluster
// (internal/kclient.Pool): the transaction coordinator's WriteTxnMarkers to
// partition leaders and group coordinators, and a group coordinator's
// TxnOffsetCommit to the transaction coordinator.
type Peers interface {
	// Call sends one request (its encoded body) to node and returns the
	// response body.
	Call(ctx context.Context, node int32, apiKey, version int16, flexible bool, body []byte) ([]byte, error)
}

// Kafka's internal topics whose partitions name coordinators: a
// transactional id's coordinator leads its partition of the first, a
// group's marker names its partition of the second (Kafka's
// transaction.state.log.num.partitions and offsets.topic.num.partitions).
const (
	txnStateTopic      = "__transaction_state"
	txnStatePartitions = 50
	offsetsTopic       = "__consumer_offsets"
	offsetsPartitions  = 50
)

// kafkaPartition is Kafka's partitionFor: Utils.abs(key.hashCode()) % n,
// the hash Java's String gives over its UTF-16 code units.
func kafkaPartition(key string, n int32) int32 {
	var h int32
	for _, r := range key {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + r
	}
	if h == math.MinInt32 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % n
}

// txnSyncInterval is how often an instance of a cluster looks for ids,
// partitions and groups a view change gave it (txnSyncLoop).
const txnSyncInterval = 200 * time.Millisecond

// peerTimeout bounds one request to another instance.
const peerTimeout = 10 * time.Second

// txnClusterState is the gateway's part of transactions in a cluster,
// owned by txnSyncLoop but for kick.
type txnClusterState struct {
	// kick asks txnSyncLoop for a sync now.
	kick chan struct{}
	// lastSync is when the last sync ended: offsets noted pending that
	// stay unresolved are reconciled by a sync at most every
	// pendingRecheck.
	lastSync time.Time
}

// pendingRecheck is how long offsets noted pending may stay unresolved
// before a sync reconciles what a lost notice left.
const pendingRecheck = 10 * time.Second

// txnSynced is the view the last sync adopted: ids, partitions and groups
// whose leader epoch is above it moved here since and are not served until
// the next sync (-1 before the first).
func (g *Gateway) txnSyncedView() int64 { return g.txnSynced.Load() }

// kickTxnSync asks for a sync without waiting for it.
func (g *Gateway) kickTxnSync() {
	select {
	case g.txnc.kick <- struct{}{}:
	default:
	}
}

// ackedView is the newest view every live instance acknowledged.
func (g *Gateway) ackedView() int64 {
	if va, ok := g.cfg.Placement.(store.ViewAcker); ok {
		return int64(va.AckedView())
	}
	return 0
}

// txnRoute is the code of a request for transactional id: NoError when this
// instance coordinates it and has its state (then act, and call release);
// NOT_COORDINATOR when another instance does; COORDINATOR_LOAD_IN_PROGRESS
// while its state loads.
func (g *Gateway) txnRoute(id string) (release func(), code wire.ErrorCode) {
	nop := func() {}
	if code := g.txnCode(); code != wire.NoError {
		return nop, code
	}
	pl := g.cfg.Placement
	if pl == nil {
		return nop, wire.NoError
	}
	tok := pl.Hold()
	r := pl.Leader(txnStateTopic, kafkaPartition(id, txnStatePartitions))
	switch {
	case !r.Serving:
		pl.Release(tok)
		return nop, wire.NotCoordinator
	case int64(r.Epoch) > g.txnSyncedView():
		pl.Release(tok)
		g.kickTxnSync()
		return nop, wire.CoordinatorLoadInProgress
	}
	return func() { pl.Release(tok) }, wire.NoError
}

// txnCoordinatorNode is the node that coordinates transactional id (-1
// when none is live).
func (g *Gateway) txnCoordinatorNode(id string) int32 {
	return g.cfg.Placement.Leader(txnStateTopic, kafkaPartition(id, txnStatePartitions)).Leader
}

// txnPartitionCode is, in a cluster, the code of a transactional request
// on topic/partition at its leader: NOT_LEADER_OR_FOLLOWER until the
// partition's transactions are loaded after it moved here.
func (g *Gateway) txnPartitionCode(topic string, partition int32) wire.ErrorCode {
	if g.cfg.Placement == nil {
		return wire.NoError
	}
	if int64(g.cfg.Placement.Leader(topic, partition).Epoch) > g.txnSyncedView() {
		g.kickTxnSync()
		return wire.NotLeaderOrFollower
	}
	return wire.NoError
}

// clusterHooks are the coordinator's txn.Cluster.
func (g *Gateway) clusterHooks() *txn.Cluster {
	return &txn.Cluster{
		SendMarker: g.sendMarker,
		ResolveGroup: func(ctx context.Context, group string, marker mapping.Control) (bool, error) {
			node, local := g.cfg.Placement.Coordinator(group)
			if local || node == g.cfg.NodeID {
				g.txn.ResolvePending(marker.ProducerID, group)
				return true, nil
			}
			if node < 0 {
				return false, errors.New("no instance coordinates the group")
			}
			return false, g.callMarker(ctx, node, offsetsTopic, kafkaPartition(group, offsetsPartitions), marker)
		},
		Own: func(id string) (func(), bool) {
			release, code := g.txnRoute(id)
			return release, code == wire.NoError
		},
	}
}

// sendMarker is txn.Cluster.SendMarker: WriteTxnMarkers to the partition's
// leader, when it is another instance. When this instance leads the
// partition the marker is applied here, through the same checks as one
// another instance sends (applyMarker): a partition that just moved here
// is not marked before its transactions are loaded, or the abort would
// find the transaction not open and record nothing.
func (g *Gateway) sendMarker(ctx context.Context, topic string, partition int32, marker mapping.Control) (bool, error) {
	node := g.cfg.Placement.Leader(topic, partition).Leader
	if node < 0 {
		return true, errors.New("no instance leads the partition")
	}
	if node == g.cfg.NodeID {
		return true, retryMarker(ctx, "marker at this instance", func(context.Context) (wire.ErrorCode, error) {
			return g.applyMarker(topic, partition, marker), nil
		})
	}
	return true, g.callMarker(ctx, node, topic, partition, marker)
}

// retryMarker runs once until it answers NoError, an error or a code that
// is not retriable; a retriable code (the partition moving, its
// transactions loading) is retried for up to peerTimeout.
func retryMarker(ctx context.Context, where string, once func(context.Context) (wire.ErrorCode, error)) error {
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	for {
		code, err := once(ctx)
		switch {
		case err != nil:
			return err
		case code == wire.NoError:
			return nil
		case !code.Retriable():
			return fmt.Errorf("%s: %s", where, code)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s", where, code)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeTxnMarkersVersion is the WriteTxnMarkers version instances send
// each other.
const writeTxnMarkersVersion = 1

// callMarker sends one marker for topic/partition to node (retryMarker)
// and returns the partition's error.
func (g *Gateway) callMarker(ctx context.Context, node int32, topic string, partition int32, marker mapping.Control) error {
	req := wire.WriteTxnMarkersRequest{Markers: []wire.WriteTxnMarker{{
		ProducerID: marker.ProducerID, ProducerEpoch: marker.ProducerEpoch, TransactionResult: marker.Commit,
		Topics: []wire.WriteTxnMarkerTopic{{Name: topic, PartitionIndexes: []int32{partition}}},
	}}}
	body := req.AppendTo(nil, writeTxnMarkersVersion)
	return retryMarker(ctx, fmt.Sprintf("WriteTxnMarkers to node %d", node), func(ctx context.Context) (wire.ErrorCode, error) {
		return g.markerOnce(ctx, node, body, topic, partition)
	})
}

// markerOnce sends body (a WriteTxnMarkers request of one partition) to
// node and returns the partition's code.
func (g *Gateway) markerOnce(ctx context.Context, node int32, body []byte, topic string, partition int32) (wire.ErrorCode, error) {
	out, err := g.cfg.Peers.Call(ctx, node, int16(wire.KeyWriteTxnMarkers), writeTxnMarkersVersion, true, body)
	if err != nil {
		return 0, fmt.Errorf("WriteTxnMarkers to node %d: %w", node, err)
	}
	var resp wire.WriteTxnMarkersResponse
	if err := resp.Decode(out, writeTxnMarkersVersion); err != nil {
		return 0, fmt.Errorf("WriteTxnMarkers to node %d: %w", node, err)
	}
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				if t.Name == topic && p.PartitionIndex == partition {
					return p.ErrorCode, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("WriteTxnMarkers to node %d: no answer for %s/%d", node, topic, partition)
}

// txnSyncLoop syncs after every view change, when a request finds state it
// needs not loaded yet, and when offsets noted pending stay unresolved.
func (g *Gateway) txnSyncLoop() {
	defer g.wg.Done()
	t := time.NewTicker(txnSyncInterval)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
			stale := g.txn.RemotePending() && time.Since(g.txnc.lastSync) > pendingRecheck
			if g.txnReady.Load() && g.ackedView() <= g.txnSyncedView() && !stale {
				continue
			}
		case <-g.txnc.kick:
		}
		ctx, cancel := context.WithTimeout(g.ctx, 30*time.Second)
		if err := g.txnSync(ctx); err != nil && g.ctx.Err() == nil {
			g.cfg.Logger.Warn("transactions: loading the state of what moved here failed; retrying", "err", err)
		}
		cancel()
	}
}

// txnSync adopts from the shared system store what moved here since the
// last sync: the transactional ids this instance now coordinates (their
// prepared transactions completed), the open and aborted transactions of
// the partitions it now leads, and the pending offsets of the groups it now
// coordinates; and drops what moved away.
func (g *Gateway) txnSync(ctx context.Context) error {
	pl := g.cfg.Placement
	// The view first, then the store: every instance has let go of what a
	// view up to acked took from it, and stored what it did before that.
	acked := g.ackedView()
	prev := g.txnSyncedView()
	snap, err := g.txn.LoadSnapshot(ctx)
	if err != nil {
		return err
	}
	self := g.cfg.NodeID
	moved := func(epoch int32) bool { return int64(epoch) > prev && int64(epoch) <= acked }
	idRoute := func(id string) store.Route {
		return pl.Leader(txnStateTopic, kafkaPartition(id, txnStatePartitions))
	}
	own := func(id string) bool { return idRoute(id).Leader == self }
	loaded := g.txn.Adopt(snap, own, func(id string) bool { return moved(idRoute(id).Epoch) })
	g.txn.SyncPartitions(snap,
		func(topic string, p int32) bool { return pl.Leader(topic, p).Leader == self },
		func(topic string, p int32) bool { return moved(pl.Leader(topic, p).Epoch) })
	g.txn.SyncPending(snap, own, func(group string) bool {
		node, _ := pl.Coordinator(group)
		return node == self
	})
	g.txnc.lastSync = time.Now()
	if acked > prev {
		g.txnSynced.Store(acked)
	}
	g.txnReady.Store(true)
	if len(loaded) > 0 {
		g.cfg.Logger.Info("transactions: took over transactional ids", "ids", len(loaded))
		g.txn.Recover(ctx)
	}
	return nil
}
