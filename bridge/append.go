package bridge

// The append of a mapped Produce partition entry (00_produce.go), the one
// path under the idempotent (idempotence.go), coalesced (coalesce.go) and
// concurrent (fanout.go) appends, and the Kafka codes of its errors.

import (
	"context"
	"errors"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/producer"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/bridge/txn"
	"github.com/kiggy-io/kiggy/wire"
)

// appendMapped appends one mapped partition entry: through duplicate
// detection when its batch is idempotent. A backend with network round trips
// gets it through the partition's queue, coalesced with the appends of other
// requests to the partition (coalesce.go).
func (g *Gateway) appendMapped(ctx context.Context, topic string, index int32, b *message.Batch, pb *producer.Batch) (wire.ErrorCode, int64) {
	if pb.Transactional {
		// The coordinator admits the batch and holds its transaction's
		// markers back until the append is done (docs/design/transactions.md §2).
		admitted, code := g.admitTransactional(ctx, topic, index, pb)
		if code != wire.NoError {
			return code, -1
		}
		defer admitted.Done()
	}
	if !g.caps.LocalLatency {
		return g.appendCoalesced(ctx, topic, index, b, pb)
	}
	if pb.ID >= 0 {
		return g.appendIdempotent(ctx, topic, index, b, pb)
	}
	return g.appendPartition(ctx, topic, index, b)
}

// admitTransactional admits a transactional batch: by the coordinator on a
// single instance; in a cluster by the partition's leader, which learns
// of the transaction here (docs/design/transactions.md §7), and by the
// coordinator too when it is this instance.
func (g *Gateway) admitTransactional(ctx context.Context, topic string, index int32, pb *producer.Batch) (txn.Produce, wire.ErrorCode) {
	if g.cfg.Placement == nil {
		return g.txn.CheckProduce(pb.ID, pb.Epoch, topic, index)
	}
	if code := g.txnPartitionCode(topic, index); code != wire.NoError {
		return txn.Produce{}, code
	}
	var check func() (txn.Produce, wire.ErrorCode)
	if id, ok := g.txn.Coordinates(pb.ID); ok {
		// The coordinator's own check too, when it is this instance; an
		// id that moved here and is not loaded yet, or that moved away and
		// is not dropped yet, is not checked against a stale state.
		switch r := g.cfg.Placement.Leader(txnStateTopic, kafkaPartition(id, txnStatePartitions)); {
		case r.Leader != g.cfg.NodeID:
		case int64(r.Epoch) > g.txnSyncedView():
			g.kickTxnSync()
			return txn.Produce{}, wire.NotLeaderOrFollower
		default:
			check = func() (txn.Produce, wire.ErrorCode) { return g.txn.CheckProduce(pb.ID, pb.Epoch, topic, index) }
		}
	}
	return g.txn.AdmitAppend(ctx, pb.ID, pb.Epoch, topic, index, check)
}

// appendPartition appends one mapped partition entry to the log.
func (g *Gateway) appendPartition(ctx context.Context, topic string, index int32, b *message.Batch) (wire.ErrorCode, int64) {
	base, err := g.store.Append(ctx, topic, index, b)
	return g.appended(topic, index, b.Count, base, err)
}

// appended is the outcome of an append of count messages to a partition
// (appendPartition, and a coalesced round sent by a JoinedAppender): the
// partition's error code and base offset, the records counted and parked
// Fetches woken when it succeeded.
func (g *Gateway) appended(topic string, index int32, count int, base int64, err error) (wire.ErrorCode, int64) {
	if err != nil {
		return logCode(err), -1
	}
	g.metrics.recordsIn.Add(uint64(count))
	g.notify.signal(topic, index)
	return wire.NoError, base
}

// logCode maps a Log error to a Kafka code.
func logCode(err error) wire.ErrorCode {
	switch {
	case errors.Is(err, store.ErrUnknownTopic), errors.Is(err, store.ErrUnknownPartition):
		return wire.UnknownTopicOrPartition
	case errors.Is(err, store.ErrUnknownOutcome), errors.Is(err, context.DeadlineExceeded):
		// The records may be stored: never NOT_LEADER (which promises they
		// were not).
		return wire.RequestTimedOut
	case errors.Is(err, store.ErrUnavailable):
		return wire.NotLeaderOrFollower
	case errors.Is(err, store.ErrTooLarge):
		return wire.MessageTooLarge
	default:
		return wire.UnknownServerError
	}
}
