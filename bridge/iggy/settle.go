package iggy

// Settling a partition (store.Settler; docs/IGGY.md, "Writes whose outcome
// was unknown"). Iggy orders a partition's writes in one consensus pipeline
// and shows reads only what it has committed. A SendMessages whose reply was
// lost (the connection dropped, the deadline passed, the primary was killed)
// may still be committed after the client has looked: on one node once the
// pipeline reaches it, in a cluster by the new primary, which takes the old
// view's uncommitted writes over, starts accepting new writes, and commits
// the inherited ones a round trip later (Iggy 0.9, cc269ef70: reads are
// served from each node's committed state, with no gate). A tail read made
// in between misses the write, and an idempotent producer's retry of it is
// stored a second time.
//
// Settle puts a write of its own through the same pipeline and waits for
// its reply: a quorum StoreConsumerOffset of a consumer of kiggy's own on
// the partition. Iggy commits a partition's writes in order and replies
// after the commit, so once it is answered every write accepted before it
// is committed, and a read from the node that answered (the partition's
// route, which the reads that follow use) shows it. A 58 (not accepted: a
// backup, a view change in progress) is tried at the other nodes
// (sendPartition) and is ErrUnavailable when none accepts it: the caller
// answers a retriable error rather than read a tail that may be stale.
//
// Iggy refuses a stored offset on a partition whose committed state is
// empty (4100 InvalidOffset, before the write enters the pipeline), which
// is no barrier: the partition may be empty, or its first writes may still
// be uncommitted at a new primary. Settle asks again every settleEmptyPoll
// for up to settleEmptyWait, then takes the partition for empty.

import (
	"context"
	"fmt"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// settleConsumer is the Iggy consumer (kind 1) whose offset Settle stores
// (always 0): no Kafka group maps to it (theirs are groupPrefix + group).
const settleConsumer = "kiggy.settle"

// How long Settle waits for a partition whose committed state is empty to
// show a write, and how often it asks.
const (
	settleEmptyWait = time.Second
	settleEmptyPoll = 10 * time.Millisecond
)

// Settle implements store.Settler (see the file's comment).
func (c *Client) Settle(ctx context.Context, topic string, partition int32) error {
	if partition < 0 {
		return fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, partition)
	}
	if !validName(topic) {
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	}
	start := time.Now()
	for {
		err := c.settleOnce(ctx, topic, partition)
		if err == nil {
			c.log.Debug("iggy: partition settled", "topic", topic, "partition", partition, "took", time.Since(start))
			return nil
		}
		if codeOf(err) != proto.CodeInvalidOffset {
			return c.offsetError(ctx, topic, partition, err)
		}
		if time.Since(start) >= settleEmptyWait {
			c.log.Debug("iggy: partition settled empty", "topic", topic, "partition", partition, "took", time.Since(start))
			return nil
		}
		t := time.NewTimer(settleEmptyPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return unavailable(ctx.Err())
		case <-t.C:
		}
	}
}

// settleOnce stores settleConsumer's offset 0 on the partition with quorum
// acknowledgement.
func (c *Client) settleOnce(ctx context.Context, topic string, partition int32) error {
	return c.storeConsumerOffset(ctx, "", settleConsumer, topic, partition, 0)
}
