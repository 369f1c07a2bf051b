// OffsetCommit (API key 8): versions 2–10 (wire.APIs); v10 names topics by
// id, looked up in the gateway's id map (topicids.go): an id it does not
// know after listing the topics is UNKNOWN_TOPIC_ID (100) on each of the
// topic's partitions, as KafkaApis.handleOffsetCommitRequest answers.
//
// Kafka's checks, made by the group coordinator (bridge/group). Differs from
// Kafka: the offset is stored through store.Log, not in __consumer_offsets
// (docs/design/record-mapping.md §5), and an empty group id is
// INVALID_GROUP_ID (24).

package bridge

import (
	"errors"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyOffsetCommit, (*Gateway).offsetCommit) }

// offsetMetadataMax is Kafka's offset.metadata.max.bytes default.
const offsetMetadataMax = 4096

// offsetCommit answers OffsetCommit v2–10: the generation and member are
// checked by the coordinator, then each offset is stored through Log.
func (g *Gateway) offsetCommit(c *call) bool {
	gs := &c.state.group
	req := &gs.commitReq
	if !decodeOrClose(c, req) {
		return false
	}
	denied := g.groupCode(c, acl.OpRead, req.Group) // KafkaApis: READ on the group, then READ on each topic
	groupCode := denied
	switch {
	case groupCode != wire.NoError:
	case req.Group == "":
		groupCode = wire.InvalidGroupID
	case g.notCoordinator(req.Group):
		groupCode = wire.NotCoordinator // docs/design/cluster.md §7
	case !g.classicGroupReady(req.Group, req.Generation >= 0 || req.MemberID != "" || req.InstanceID.Valid, req.Generation):
		groupCode = wire.CoordinatorLoadInProgress
	default:
		groupCode = wire.ErrorCode(g.groups.ValidateCommit(req.Group, req.MemberID, req.InstanceID.S, req.InstanceID.Valid, req.Generation))
	}
	resp := &gs.commitResp
	resp.Topics = resp.Topics[:0]
	listed := false // topicNameByID
	for i := range req.Topics {
		t := &req.Topics[i]
		out := wire.OffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		if len(resp.Topics) < cap(resp.Topics) {
			out.Partitions = resp.Topics[:len(resp.Topics)+1][len(resp.Topics)].Partitions[:0]
		}
		// KafkaApis.handleOffsetCommitRequest resolves ids before the
		// coordinator sees the commit: an unknown id is UNKNOWN_TOPIC_ID
		// whatever the group's state (seen on Kafka 4.4: a commit from an
		// unknown member got UNKNOWN_MEMBER_ID on a known topic, 100 on an
		// unknown id).
		topicCode := denied
		if topicCode == wire.NoError && c.hdr.APIVersion >= 10 {
			topicCode = g.nameTopicByID(&t.Topic, t.TopicID, &listed, wire.CoordinatorLoadInProgress)
		}
		if topicCode == wire.NoError {
			topicCode = groupCode
		}
		if topicCode == wire.NoError {
			topicCode = g.topicCode(c, acl.OpRead, t.Topic)
		}
		var parts int32 = -1
		if topicCode == wire.NoError {
			parts, topicCode = g.topicPartitions(t.Topic, wire.CoordinatorLoadInProgress)
		}
		for _, p := range t.Partitions {
			code := topicCode
			switch {
			case code != wire.NoError:
			case p.Partition < 0 || p.Partition >= parts:
				code = wire.UnknownTopicOrPartition
			case len(p.Metadata.S) > offsetMetadataMax:
				code = wire.OffsetMetadataTooLarge
			default:
				if err := g.store.CommitOffset(g.ctx, req.Group, t.Topic, p.Partition, p.Offset, p.Metadata.S); errors.Is(err, store.ErrInvalidGroup) {
					// docs/design/record-mapping.md §5: a group id over 246 bytes does
					// not fit an Iggy consumer name.
					code = wire.InvalidGroupID
				} else if err != nil {
					// docs/design/record-mapping.md §5: retriable failures go back as
					// COORDINATOR_LOAD_IN_PROGRESS.
					code = wire.CoordinatorLoadInProgress
					g.cfg.Logger.Warn("offset commit", "group", req.Group, "topic", t.Topic, "partition", p.Partition, "err", err)
				}
			}
			out.Partitions = append(out.Partitions, wire.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// nameTopicByID sets *name to the name of the topic id names, for a request
// that names topics by id: UNKNOWN_TOPIC_ID when the id names none,
// unavailable (the code the API retries on) when the topics could not be
// listed (topicNameByID, which listed is for).
func (g *Gateway) nameTopicByID(name *string, id [16]byte, listed *bool, unavailable wire.ErrorCode) wire.ErrorCode {
	n, err := g.topicNameByID(id, listed)
	switch {
	case errors.Is(err, store.ErrUnknownTopic):
		return wire.UnknownTopicID
	case err != nil:
		return unavailable
	}
	*name = n
	return wire.NoError
}

// topicPartitions returns topic's partition count for a request that names
// its partitions: UNKNOWN_TOPIC_OR_PARTITION when the topic does not exist,
// unavailable (the code the API retries on) when the backend cannot say.
func (g *Gateway) topicPartitions(topic string, unavailable wire.ErrorCode) (int32, wire.ErrorCode) {
	info, err := g.store.Topic(g.ctx, topic)
	switch {
	case errors.Is(err, store.ErrUnknownTopic):
		return -1, wire.UnknownTopicOrPartition
	case err != nil:
		return -1, unavailable
	}
	return info.Partitions, wire.NoError
}
