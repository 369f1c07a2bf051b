package bridge

// Kafka transactions (docs/design/transactions.md): the coordinator is
// bridge/txn; this file gives it the gateway's log (high watermarks,
// marker appends, offset commits), loads its state at start and runs its
// timer, and answers the questions Produce, Fetch and ListOffsets ask of
// it. The handlers are 22_init_producer_id.go, 24_add_partitions_to_txn.go,
// 25_add_offsets_to_txn.go, 26_end_txn.go, 28_txn_offset_commit.go,
// 65_describe_transactions.go and 66_list_transactions.go.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/producer"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/bridge/txn"
	"github.com/kiggy-io/kiggy/internal/metric"
	"github.com/kiggy-io/kiggy/wire"
)

// errTxnCluster is what a transactional client is told in cluster mode.
const errTxnCluster = "this kiggy cluster does not serve Kafka transactions: its instances send each other transaction markers over a PLAINTEXT or SASL_PLAINTEXT inter-broker listener with PLAIN (--inter-broker-listener-name, --inter-broker-sasl-username), and it has none"

// DefaultMaxTransactionalIDs is Config.MaxTransactionalIDs when 0.
const DefaultMaxTransactionalIDs = 100_000

// transactionsServed reports whether this gateway serves transactions: a
// single instance, or an instance of a cluster that can reach the others
// (Config.Peers: the markers of a transaction are appended by the leaders
// of its partitions, docs/design/transactions.md §7).
func (g *Gateway) transactionsServed() bool { return g.cfg.Placement == nil || g.cfg.Peers != nil }

// txnTick is how often open transactions are checked against their
// timeouts (Kafka: transaction.abort.timed.out.transaction.cleanup.interval.ms).
const txnTick = time.Second

// initTransactions creates the coordinator, loads its state (retrying in
// the background until the system store answers) and starts its timer.
func (g *Gateway) initTransactions() {
	cfg := txn.Config{
		MaxTimeout:   g.cfg.TransactionMaxTimeout,
		IDExpiration: g.cfg.TransactionalIDExpiration,
		MaxIDs:       max(g.cfg.MaxTransactionalIDs, 0),
		Logger:       g.cfg.Logger,
	}
	g.txnSynced.Store(-1)
	g.txnc.kick = make(chan struct{}, 1)
	if g.cfg.Placement != nil && g.cfg.Peers != nil {
		cfg.Cluster = g.clusterHooks()
	}
	g.txn = txn.New(cfg, txnBackend{g}, g.system)
	if !g.transactionsServed() {
		return
	}
	if cfg.Cluster != nil {
		// What this instance coordinates and leads is loaded as it moves
		// here, the first time at start (txncluster.go).
		g.wg.Add(2)
		go g.txnSyncLoop()
		go g.txnLoop()
		g.kickTxnSync()
		return
	}
	var err error
	load := func() bool {
		ctx, cancel := context.WithTimeout(g.ctx, 30*time.Second)
		defer cancel()
		if err = g.txn.Load(ctx); err != nil {
			return false
		}
		g.txnReady.Store(true)
		g.txn.Recover(ctx)
		return true
	}
	if !load() {
		g.cfg.Logger.Warn("transactions: loading the stored transactions failed; retrying", "err", err)
		g.retryInBackground(load)
	}
	g.wg.Add(1)
	go g.txnLoop()
}

// txnLoop aborts timed-out transactions and completes interrupted ones.
func (g *Gateway) txnLoop() {
	defer g.wg.Done()
	t := time.NewTicker(txnTick)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-t.C:
			// Nothing to do (and nothing allocated, which the allocation
			// tests of other paths would count) until a transactional id
			// exists.
			if g.txnReady.Load() && (g.txn.Known() || g.txn.Index.Active()) {
				ctx, cancel := context.WithTimeout(g.ctx, g.cfg.ProduceTimeoutCap)
				g.txn.Tick(ctx)
				if tick%abortedPruneTicks == 0 {
					g.pruneAborted(ctx)
				}
				cancel()
			}
		case <-g.ctx.Done():
			return
		}
	}
}

// abortedPruneTicks is how many txnTicks apart the aborted indexes are
// pruned of transactions whose records retention removed.
const abortedPruneTicks = 60

// pruneAborted drops the aborted transactions below each partition's log
// start (retention, DeleteRecords, the embedded log's caps): no Fetch can
// reach them.
func (g *Gateway) pruneAborted(ctx context.Context) {
	g.txn.Index.WithAborted(func(topic string, partition int32) {
		if pl := g.cfg.Placement; pl != nil {
			// In a cluster only the partition's leader stores its index
			// (docs/design/transactions.md §7).
			tok := pl.Hold()
			defer pl.Release(tok)
			if g.leaderCode(topic, partition, -1) != wire.NoError || g.txnPartitionCode(topic, partition) != wire.NoError {
				return
			}
		}
		wm, err := g.watermarks(ctx, topic, partition)
		if err != nil {
			return // a deleted topic is dropped by DeleteTopics; else the next round
		}
		if err := g.txn.PruneAborted(ctx, topic, partition, wm.LogStart); err != nil {
			g.cfg.Logger.Warn("transactions: pruning aborted transactions failed", "topic", topic, "partition", partition, "err", err)
		}
	})
}

// txnCode is the code of a transaction request the coordinator cannot
// take yet (its state still loading) or at all (cluster mode), NoError
// when it can.
func (g *Gateway) txnCode() wire.ErrorCode {
	switch {
	case !g.transactionsServed():
		return wire.CoordinatorNotAvailable
	case !g.txnReady.Load():
		return wire.CoordinatorLoadInProgress
	}
	return wire.NoError
}

// lastStable is topic/partition's last stable offset given its high
// watermark.
func (g *Gateway) lastStable(topic string, partition int32, high int64) int64 {
	return g.txn.Index.LastStable(topic, partition, high)
}

// readCommitted prepares r for a read of topic/partition at isolation
// level isolation: a read_committed read of a partition with transactions
// stops at the last stable offset and keeps transactional batches whole.
func (g *Gateway) readCommitted(r *partReader, topic string, partition int32, isolation int8) {
	r.committed = false
	if isolation != 1 {
		return
	}
	r.stopAt, r.committed = g.txn.Index.Touched(topic, partition)
}

// abortedFor fills p.AbortedTransactions for a read_committed read of
// topic/partition from offset with a byte limit of limit: every aborted
// transaction the read can meet. A stored message takes at least one byte
// of the limit, so the read ends before offset+limit+1 (KIP-74's one
// record past the limit included); listing one it does not reach is
// harmless: the consumer skips a producer's batches only from the
// transaction's first offset to its marker.
func (g *Gateway) abortedFor(p *wire.FetchResponseTopicPartition, scratch []txn.Aborted, topic string, partition int32, offset int64, limit int) []txn.Aborted {
	scratch = g.txn.Index.AbortedIn(scratch[:0], topic, partition, offset, offset+int64(limit)+1)
	listAborted(p, scratch)
	return scratch
}

// listAborted sets p.AbortedTransactions to aborted.
func listAborted(p *wire.FetchResponseTopicPartition, aborted []txn.Aborted) {
	list := p.AbortedTransactions[:0]
	for _, a := range aborted {
		list = append(list, wire.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.First})
	}
	p.AbortedTransactions = list
}

// abortedChanged reports whether the aborted transactions a read_committed
// read of topic/partition from offset with a byte limit of limit can meet
// differ from those abortedFor listed in fs.aborted before the read: one
// ended since, and its records may be in the read. The list as it is now
// is left in fs.abortedNow.
func (g *Gateway) abortedChanged(fs *fetchState, topic string, partition int32, offset int64, limit int) bool {
	fs.abortedNow = g.txn.Index.AbortedIn(fs.abortedNow[:0], topic, partition, offset, offset+int64(limit)+1)
	return !slices.Equal(fs.abortedNow, fs.aborted)
}

// txnBackend is the gateway as the coordinator's Backend.
type txnBackend struct{ g *Gateway }

// HighWatermark implements txn.Backend.
func (b txnBackend) HighWatermark(ctx context.Context, topic string, partition int32) (int64, error) {
	wm, err := b.g.watermarks(ctx, topic, partition)
	return wm.High, err
}

// WriteMarker implements txn.Backend: the marker is appended as any record
// is, through the partition's append queue, so it follows every append the
// coordinator let in before it.
func (b txnBackend) WriteMarker(ctx context.Context, topic string, partition int32, c mapping.Control) (int64, error) {
	g := b.g
	origin := uint64(time.Now().UnixMicro())
	var m message.Batch
	m.Checksums = !g.caps.NoFrameChecksums
	m.Reset(origin)
	mapping.AppendControl(&m, c, origin)
	pb := producer.Batch{ID: -1, LastTS: origin}
	code, base := g.appendMapped(ctx, topic, partition, &m, &pb)
	switch code {
	case wire.NoError:
		if base < 0 {
			return 0, fmt.Errorf("marker appended to %s/%d without an offset", topic, partition)
		}
		g.metrics.txnMarkers.Add(1)
		return base, nil
	case wire.UnknownTopicOrPartition:
		return 0, store.ErrUnknownTopic
	}
	return 0, fmt.Errorf("appending a transaction marker to %s/%d: %s", topic, partition, code)
}

// CommitOffsets implements txn.Backend.
func (b txnBackend) CommitOffsets(ctx context.Context, group string, offsets []txn.Offset) error {
	for _, o := range offsets {
		if err := b.g.store.CommitOffset(ctx, group, o.Topic, o.Partition, o.Offset, o.Metadata); err != nil {
			if errors.Is(err, store.ErrUnknownTopic) || errors.Is(err, store.ErrUnknownPartition) {
				continue // the topic is gone: nothing to commit
			}
			return err
		}
	}
	return nil
}

// NewProducerID implements txn.Backend.
func (b txnBackend) NewProducerID() int64 { return b.g.producerIDs.New() }

// writeTxnMetrics writes the transaction coordinator's metrics.
func (g *Gateway) writeTxnMetrics(w io.Writer) {
	st := &g.txn.Stats
	metric.Header(w, "kiggy_transactions_total", "counter", "Transactions completed, by outcome (committed, aborted); timed_out counts the aborts of transactions past their transaction.timeout.ms.")
	fmt.Fprintf(w, "kiggy_transactions_total{outcome=\"committed\"} %d\n", st.Committed.Load())
	fmt.Fprintf(w, "kiggy_transactions_total{outcome=\"aborted\"} %d\n", st.Aborted.Load())
	fmt.Fprintf(w, "kiggy_transactions_total{outcome=\"timed_out\"} %d\n", st.TimedOut.Load())
	metric.Single(w, "kiggy_transactions_open", "gauge", "Transactions open now (ongoing, or being committed or aborted).", uint64(g.txn.Open()))
	metric.Single(w, "kiggy_transactional_ids", "gauge", "Transactional ids the coordinator holds (--max-transactional-ids).", g.txn.IDs())
	metric.Header(w, "kiggy_transactional_ids_refused_total", "counter", "InitProducerId requests for a new transactional id refused, by reason: limit (--max-transactional-ids; COORDINATOR_NOT_AVAILABLE).")
	fmt.Fprintf(w, "kiggy_transactional_ids_refused_total{reason=\"limit\"} %d\n", st.Refused.Load())
	metric.Single(w, "kiggy_txn_markers_total", "counter", "Transaction commit and abort markers appended to partitions.", g.metrics.txnMarkers.Load())
	metric.Single(w, "kiggy_fetch_stable_rereads_total", "counter", "read_committed partition reads done again because a transaction opened below where they ended.", g.metrics.stableRereads.Load())
	metric.Single(w, "kiggy_fetch_aborted_relists_total", "counter", "read_committed partition reads whose aborted transactions were listed again after the read, because one aborted while it ran.", g.metrics.abortedRelists.Load())
}
