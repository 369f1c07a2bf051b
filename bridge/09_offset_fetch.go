// OffsetFetch (API key 9): versions 1–10 (wire.APIs); v10 names topics by
// id (topicids.go): an id that names no topic is UNKNOWN_TOPIC_ID (100) on
// each requested partition, and all topics (null) lists those with an id.
//
// Differs from Kafka: committed offsets come from store.Log
// (docs/design/record-mapping.md §5); a backend failure is COORDINATOR_LOAD_IN_PROGRESS (14) for
// the whole group (docs/LIMITS.md).

package bridge

import (
	"errors"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyOffsetFetch, (*Gateway).offsetFetch) }

// offsetFetch answers OffsetFetch v1–10 (v8+ several groups): committed
// offsets through Log, -1 where none; null topics means every partition
// with a committed offset.
func (g *Gateway) offsetFetch(c *call) bool {
	gs := &c.state.group
	req := &gs.fetchReq
	v := c.hdr.APIVersion
	if !decodeOrClose(c, req) {
		return false
	}
	resp := &gs.fetchResp
	*resp = wire.OffsetFetchResponse{}
	if v >= 8 {
		for i := range req.Groups {
			rg := &req.Groups[i]
			topics, code := g.committed(c, rg.Group, rg.Topics, req.RequireStable, v >= 10)
			resp.Groups = append(resp.Groups, wire.OffsetFetchResponseGroup{Group: rg.Group, Topics: topics, ErrorCode: code})
		}
	} else {
		resp.Topics, resp.ErrorCode = g.committed(c, req.Group, req.Topics, req.RequireStable, false)
		if v < 2 && resp.ErrorCode == wire.CoordinatorLoadInProgress {
			// v1 has no top-level error code: say it per partition.
			resp.Topics = loadingPartitions(req.Topics)
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// committed reads a group's committed offsets for topics (nil = all), named
// by id when byID (v10).
//
// A backend that cannot answer makes the whole group's answer
// COORDINATOR_LOAD_IN_PROGRESS, which clients retry: the Java consumer
// retries that code at the group level only and fails on it as a
// partition error ("Unexpected error in fetch offset response", seen by hand
// with an iggy-server restarting; docs/LIMITS.md). A topic or partition the
// backend does not know has no committed offset (-1), as in Kafka.
//
// Authorization (KafkaApis.handleOffsetFetchRequest): DESCRIBE on the group,
// else GROUP_AUTHORIZATION_FAILED for the group; all topics means those the
// principal may DESCRIBE; a named topic it may not is
// TOPIC_AUTHORIZATION_FAILED on each of its partitions.
//
// With requireStable (v7+, KIP-447), a partition an open transaction holds
// an offset for is UNSTABLE_OFFSET_COMMIT, which the client retries until
// the transaction ends (GroupMetadataManager.getOffsets).
func (g *Gateway) committed(c *call, groupID string, topics []wire.OffsetFetchRequestTopic, requireStable, byID bool) ([]wire.OffsetFetchResponseTopic, wire.ErrorCode) {
	if code := g.groupCode(c, acl.OpDescribe, groupID); code != wire.NoError {
		return nil, code
	}
	if groupID == "" {
		return nil, wire.InvalidGroupID
	}
	if g.notCoordinator(groupID) {
		return nil, wire.NotCoordinator
	}
	var out []wire.OffsetFetchResponseTopic
	failed := false
	one := func(topic string, p int32) wire.OffsetFetchResponseTopicPartition {
		r := wire.OffsetFetchResponseTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, Metadata: wire.NullStringOf("")}
		if requireStable && g.txn.PendingOffset(groupID, topic, p) {
			r.ErrorCode = wire.UnstableOffsetCommit
			return r
		}
		off, md, ok, err := g.store.FetchOffset(g.ctx, groupID, topic, p)
		switch {
		case errors.Is(err, store.ErrUnknownTopic) || errors.Is(err, store.ErrUnknownPartition):
		case err != nil:
			failed = true
		case ok:
			r.Offset, r.Metadata = off, wire.NullStringOf(md)
		}
		return r
	}
	if topics == nil {
		all, err := g.listTopics(g.ctx)
		if err != nil {
			return nil, wire.CoordinatorLoadInProgress
		}
		for _, t := range all {
			if !g.allowed(c, acl.OpDescribe, acl.ResourceTopic, t.Name) {
				continue
			}
			var parts []wire.OffsetFetchResponseTopicPartition
			for p := int32(0); p < t.Partitions; p++ {
				if r := one(t.Name, p); r.Offset >= 0 {
					parts = append(parts, r)
				}
			}
			if len(parts) > 0 {
				out = append(out, wire.OffsetFetchResponseTopic{Topic: t.Name, TopicID: t.ID, Partitions: parts})
			}
		}
	} else {
		listed := false // topicNameByID
		for _, t := range topics {
			ot := wire.OffsetFetchResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
			denied := wire.NoError
			if byID {
				denied = g.nameTopicByID(&t.Topic, t.TopicID, &listed, wire.CoordinatorLoadInProgress)
				if denied == wire.CoordinatorLoadInProgress {
					return nil, denied // as a failed read: the whole group
				}
			}
			if denied == wire.NoError {
				denied = g.topicCode(c, acl.OpDescribe, t.Topic)
			}
			for _, p := range t.Partitions {
				if denied != wire.NoError {
					ot.Partitions = append(ot.Partitions, wire.OffsetFetchResponseTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1,
						Metadata: wire.NullStringOf(""), ErrorCode: denied})
					continue
				}
				ot.Partitions = append(ot.Partitions, one(t.Topic, p))
			}
			out = append(out, ot)
		}
	}
	if failed {
		return nil, wire.CoordinatorLoadInProgress
	}
	return out, wire.NoError
}

// loadingPartitions answers every requested partition with
// COORDINATOR_LOAD_IN_PROGRESS (OffsetFetch v1, which has no group error).
func loadingPartitions(topics []wire.OffsetFetchRequestTopic) []wire.OffsetFetchResponseTopic {
	var out []wire.OffsetFetchResponseTopic
	for _, t := range topics {
		ot := wire.OffsetFetchResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			ot.Partitions = append(ot.Partitions, wire.OffsetFetchResponseTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1,
				Metadata: wire.NullStringOf(""), ErrorCode: wire.CoordinatorLoadInProgress})
		}
		out = append(out, ot)
	}
	return out
}
