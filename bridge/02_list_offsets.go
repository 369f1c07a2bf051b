// ListOffsets (API key 2): versions 1–10 (wire.APIs); v0 was removed by
// KIP-896.
//
// As Kafka (docs/design/kafka-protocol.md §2.4). Differs from Kafka: there are
// no transactions, so the last stable offset read_committed asks for is the
// high watermark.

package bridge

import (
	"math"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyListOffsets, (*Gateway).listOffsets) }

// ListOffsets special timestamps (docs/design/kafka-protocol.md §2.4).
const (
	listLatest       = -1
	listEarliest     = -2
	listMaxTimestamp = -3
	listLocalStart   = -4
)

// listOffsets answers ListOffsets v1–10: latest (-1, the high watermark; the
// LSO for read_committed, which equals it), earliest (-2, the log start),
// max-timestamp (-3), local log start (-4), and by timestamp (the first
// offset whose timestamp is ≥ the target, or -1 if none).
func (g *Gateway) listOffsets(c *call) bool {
	ms := c.state
	req := &ms.listOffsetsReq
	if !decodeOrClose(c, req) {
		return false
	}
	resp := &ms.listOffsetsResp
	resp.Topics = resp.Topics[:0]
	for i := range req.Topics {
		t := &req.Topics[i]
		var parts []wire.ListOffsetsResponseTopicPartition
		if len(resp.Topics) < cap(resp.Topics) {
			parts = resp.Topics[:len(resp.Topics)+1][len(resp.Topics)].Partitions[:0]
		}
		denied := g.topicCode(c, acl.OpDescribe, t.Topic) // KafkaApis: DESCRIBE on the topic
		for _, p := range t.Partitions {
			if denied != wire.NoError {
				parts = append(parts, wire.ListOffsetsResponseTopicPartition{Partition: p.Partition, ErrorCode: denied, Timestamp: -1, Offset: -1, LeaderEpoch: -1})
				continue
			}
			parts = append(parts, g.listOffset(t.Topic, p, req.IsolationLevel))
		}
		resp.Topics = append(resp.Topics, wire.ListOffsetsResponseTopic{Topic: t.Topic, Partitions: parts})
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// listOffset answers one partition. At isolation level 1 (read_committed)
// the latest offset is the last stable offset, and a timestamp found at or
// past it is not found (UnifiedLog.fetchOffsetByTimestamp's
// lastFetchableOffset).
func (g *Gateway) listOffset(topic string, p wire.ListOffsetsRequestTopicPartition, isolation int8) wire.ListOffsetsResponseTopicPartition {
	out := wire.ListOffsetsResponseTopicPartition{Partition: p.Partition, Timestamp: -1, Offset: -1, LeaderEpoch: -1}
	if out.ErrorCode = g.leaderCode(topic, p.Partition, p.CurrentLeaderEpoch); out.ErrorCode != wire.NoError {
		return out // docs/design/cluster.md §6
	}
	if isolation == 1 && g.transactionsServed() && (!g.txnReady.Load() || g.txnPartitionCode(topic, p.Partition) != wire.NoError) {
		// The last stable offset is not known until the partition's
		// transactions are loaded (as in Fetch).
		out.ErrorCode = wire.NotLeaderOrFollower
		return out
	}
	wm, err := g.watermarks(g.ctx, topic, p.Partition) // DeleteRecords' log start applied
	if err != nil {
		out.ErrorCode = fetchCode(err)
		return out
	}
	fetchable := wm.High
	if isolation == 1 {
		fetchable = g.lastStable(topic, p.Partition, wm.High)
	}
	switch ts := p.Timestamp; {
	case ts == listLatest:
		out.Offset = fetchable
	case ts == listEarliest || ts == listLocalStart:
		out.Offset = wm.LogStart
	case ts == listMaxTimestamp:
		// The offset of the record with the largest timestamp: a scan,
		// which is what this rare admin query costs here.
		best, bestTS := int64(-1), int64(math.MinInt64)
		_, err := g.store.Read(g.ctx, topic, p.Partition, wm.LogStart, math.MaxInt32, func(m *message.Message) bool {
			var dec = m.OriginTimestamp
			if dec == 0 {
				dec = m.Timestamp
			}
			if t := int64(dec / 1000); t >= bestTS {
				best, bestTS = m.Offset, t
			}
			return true
		})
		if err != nil {
			out.ErrorCode = fetchCode(err)
		} else if best >= 0 {
			out.Offset, out.Timestamp = best, bestTS
		}
	case ts >= 0:
		if ts > math.MaxInt64/1000 {
			return out
		}
		off, ok, err := g.store.OffsetForTime(g.ctx, topic, p.Partition, uint64(ts)*1000)
		if err != nil {
			out.ErrorCode = fetchCode(err)
		} else if ok && off < fetchable {
			off = max(off, wm.LogStart) // nothing below the log start is served
			out.Offset = off
			out.Timestamp = ts
			// Report the found record's own timestamp, as Kafka does.
			g.store.Read(g.ctx, topic, p.Partition, off, 1, func(m *message.Message) bool {
				if m.OriginTimestamp != 0 {
					out.Timestamp = int64(m.OriginTimestamp / 1000)
				}
				return false
			})
		}
	default:
		out.ErrorCode = wire.UnsupportedVersion
	}
	return out
}
