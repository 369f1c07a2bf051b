// DeleteRecords (API key 21): versions 0–2 (wire.APIs).
//
// As Kafka's UnifiedLog.deleteRecordsOnLeader. Differs from Kafka: the log
// start is kept in the system store; on Iggy the records below it stay on
// disk, hidden (docs/LIMITS.md "DeleteRecords").

package bridge

import (
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDeleteRecords, (*Gateway).deleteRecords) }

// deleteRecordsState is the DeleteRecords handler's scratch space.
type deleteRecordsState struct {
	req  wire.DeleteRecordsRequest
	resp wire.DeleteRecordsResponse
	// offset holds each partition's offset to answer (the last one the
	// request names), topicAt each topic's entry in resp; both cleared per
	// request.
	offset  map[partKey]int64
	topicAt map[string]int
}

// deleteRecords answers DeleteRecords v0–2: per partition, the log start
// moves forward to the requested offset (−1 = the high watermark), as
// Kafka's UnifiedLog.deleteRecordsOnLeader does. An offset above the high
// watermark, or negative other than −1, is OFFSET_OUT_OF_RANGE; an offset
// at or below the current log start changes nothing. The answer carries
// the log start after the call (low_watermark).
func (g *Gateway) deleteRecords(c *call) bool {
	ds := &c.state.deleteRecords
	req := &ds.req
	if !decodeOrClose(c, req) {
		return false
	}
	// A partition named twice is answered once, with the last offset the
	// request names for it, and a topic named twice in one entry: KafkaApis
	// collects the partitions in a map (authorizedForDeleteTopicOffsets),
	// as Kafka 4.4 answers (TestDeleteRecordsPartitionTwice).
	if ds.offset == nil {
		ds.offset, ds.topicAt = map[partKey]int64{}, map[string]int{}
	}
	clear(ds.offset)
	clear(ds.topicAt)
	for i := range req.Topics {
		for _, p := range req.Topics[i].Partitions {
			ds.offset[partKey{req.Topics[i].Topic, p.Partition}] = p.Offset
		}
	}
	resp := &ds.resp
	resp.Topics = resp.Topics[:0]
	for i := range req.Topics {
		t := &req.Topics[i]
		ti, ok := ds.topicAt[t.Topic]
		if !ok {
			ti = len(resp.Topics)
			ds.topicAt[t.Topic] = ti
			resp.Topics = append(resp.Topics, wire.DeleteRecordsResponseTopic{Topic: t.Topic})
		}
		denied := g.topicCode(c, acl.OpDelete, t.Topic) // KafkaApis: DELETE on the topic
		for _, p := range t.Partitions {
			key := partKey{t.Topic, p.Partition}
			offset, pending := ds.offset[key]
			if !pending {
				continue // answered already
			}
			delete(ds.offset, key)
			low, code := int64(-1), denied
			if code == wire.NoError {
				code = g.leaderCode(t.Topic, p.Partition, -1) // docs/design/cluster.md §6
			}
			if code == wire.NoError {
				low, code = g.deleteRecordsOne(t.Topic, p.Partition, offset)
			}
			out := &resp.Topics[ti]
			out.Partitions = append(out.Partitions, wire.DeleteRecordsResponsePartition{Partition: p.Partition, LowWatermark: low, ErrorCode: code})
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

func (g *Gateway) deleteRecordsOne(topic string, partition int32, offset int64) (int64, wire.ErrorCode) {
	if partition < 0 {
		return -1, wire.UnknownTopicOrPartition
	}
	wm, err := g.watermarks(g.ctx, topic, partition)
	if err != nil {
		return -1, fetchCode(err)
	}
	if offset == -1 {
		offset = wm.High
	}
	if offset < 0 || offset > wm.High {
		return -1, wire.OffsetOutOfRange
	}
	if offset <= wm.LogStart {
		return wm.LogStart, wire.NoError
	}
	// Stored first: once answered, Fetch and ListOffsets of every instance
	// sharing the system store honour it, and a restart keeps it.
	if err := g.putLogStart(g.ctx, topic, partition, offset); err != nil {
		return -1, wire.KafkaStorageError
	}
	// Another gateway may have moved it further meanwhile: the answer is
	// the start now (Kafka's low_watermark).
	offset = max(offset, g.logStartOf(topic, partition))
	g.fetchCache.DropTopic(topic) // Fetch checks the log start itself; this frees the memory
	if err := g.txn.PruneAborted(g.ctx, topic, partition, offset); err != nil {
		g.cfg.Logger.Warn("delete records: pruning aborted transactions failed", "topic", topic, "partition", partition, "err", err)
	}
	if a, ok := g.store.(store.LogStartAdvancer); ok {
		// A failure leaves the records in place below the logical start,
		// which hides them: only the space is not reclaimed.
		_ = a.AdvanceLogStart(g.ctx, topic, partition, offset)
	}
	return offset, wire.NoError
}
