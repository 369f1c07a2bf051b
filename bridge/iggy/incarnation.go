package iggy

// Topic incarnations (docs/IGGY.md, "Topic incarnations"). Iggy 0.9 recycles
// the ids of a deleted topic for the next one created, so the new topic's
// partitions have the same (stream, topic, partition) ids as the old one's,
// and until the server has torn the old partitions down it answers a
// PollMessages of the new topic from the old topic's messages: the server
// fences partition writes against the wrong incarnation, not polls.
// Seen against iggy-server 0.9.0-edge.5: a topic created right after another
// was deleted was polled back with tens of thousands of the deleted topic's
// messages (TestIncarnationFence).
//
// Every message of a topic was appended after the topic was created, so a
// poll reply holding a batch appended (the server's base_timestamp) before
// the topic's created_at belongs to an earlier incarnation: the reply is
// dropped, never cached or served, and the read answers unavailable, which
// the gateway turns into a retriable Kafka error; the next poll, once the
// server has finished the teardown, reads the new topic. The check runs for
// incarnationFenceWindow after the client learns the incarnation: a
// partition primary whose clock lags the metadata primary's can stamp a new
// topic's first batches before its created_at, and such a batch must not be
// refused for ever; the old partitions are gone long before the window ends.

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// incarnationFenceWindow is how long after its creation a topic's reads
// are checked against earlier incarnations.
const incarnationFenceWindow = 30 * time.Second

// unknownFence fences every batch: a reply read under it is refused, and
// the next read asks for the incarnation again.
const unknownFence = math.MaxUint64

// errStaleIncarnation: a poll was answered from a deleted topic's
// partitions that share the topic's ids.
var errStaleIncarnation = errors.New("iggy: the server answered a poll from a deleted topic with the same ids (a stale incarnation); retry")

// fence returns the created_at (µs) a read of topic checks batches
// against: 0 (no check) when its creation is older than
// incarnationFenceWindow, and unknownFence when the client could not learn
// it. It asks the server (GetTopic) the first time a topic is read; call it
// before taking a session for the read.
func (c *Client) fence(ctx context.Context, topic string) uint64 {
	e, ok := c.cached(topic)
	if !ok {
		d, found, err := c.lookupTopic(ctx, topic)
		if err != nil || !found {
			// GetTopic did not find it (or failed), yet a poll may: the
			// topic was created a moment ago, and that is when the old
			// partitions may still answer. Refuse every message until the
			// incarnation is known; a poll of a topic that does not exist
			// fails as unknown anyway.
			return unknownFence
		}
		e = d.entry()
	}
	if e.created == 0 || uint64(time.Now().UnixMicro()) > e.created+uint64(incarnationFenceWindow/time.Microsecond) {
		return 0
	}
	return e.created
}

// servedIncarnation returns the partition incarnation a 0.12 poll reply was
// served from (§9: the reply's 40-byte head ends with its PartitionContext,
// incarnation first); 0 in 0.11 or when the reply is too short.
func servedIncarnation(d proto.Dialect, body []byte) uint64 {
	if d != proto.Dialect012 || len(body) < d.PollReplyHeaderSize() {
		return 0
	}
	return binary.LittleEndian.Uint64(body[16:])
}

// staleServed reports whether a 0.12 poll reply of topic's partition was
// served from another incarnation of the partition than the one GetTopic
// named (a deleted topic's partition answering for its recycled ids, or a
// topic recreated since kiggy looked). Either way what kiggy knows of the
// topic is dropped, and the read is retried: the next lookup learns the
// current incarnation. The created_at fence above stays: it also holds on
// 0.11, and before the first lookup.
func (c *Client) staleServed(topic string, partition int32, served uint64) bool {
	if served == 0 {
		return false
	}
	e, ok := c.cached(topic)
	if !ok || partition < 0 || int(partition) >= len(e.incarnations) {
		return false
	}
	if known := e.incarnations[partition]; known == 0 || known == served {
		return false
	}
	c.forget(topic)
	c.cache.invalidateTopic(topic)
	return true
}
