// OffsetDelete (API key 47): version 0 (wire.APIs); the flexible v1
// (KIP-1313) is not served.
//
// As Kafka's GroupCoordinator.handleDeleteOffsets; a group known only by its
// committed offsets counts as an empty group, as for DeleteGroups.

package bridge

import (
	"errors"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyOffsetDelete, (*Gateway).offsetDelete) }

// offsetDelete answers OffsetDelete v0 (KIP-496) as Kafka's
// KafkaApis.handleOffsetDeleteRequest and GroupCoordinator.handleDeleteOffsets
// do. A group error (INVALID_GROUP_ID 24 for "", GROUP_ID_NOT_FOUND 69,
// NON_EMPTY_GROUP 68 for a non-consumer group with members) is the whole
// answer. Otherwise each partition is UNKNOWN_TOPIC_OR_PARTITION (3) when
// the topic or partition does not exist, GROUP_SUBSCRIBED_TO_TOPIC (86) when
// a live member subscribes to its topic, and else NONE, its committed offset
// (if any) deleted through Log.CommitOffset with a negative offset. A group
// the coordinator does not know but that has committed offsets counts as
// an empty group, as in deleteGroups.
func (g *Gateway) offsetDelete(c *call) bool {
	gs := &c.state.group
	req := &gs.offDelReq
	if !decodeOrClose(c, req) {
		return false
	}
	resp := &gs.offDelResp
	if req.Group != "" && g.notCoordinator(req.Group) && g.allowed(c, acl.OpDelete, acl.ResourceGroup, req.Group) {
		// docs/design/cluster.md §7.
		resp.ErrorCode, resp.Topics = wire.NotCoordinator, resp.Topics[:0]
	} else {
		resp.ErrorCode, resp.Topics = g.deleteOffsets(c, req, resp.Topics[:0])
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// deleteOffsets does offsetDelete's work: the group error, or the
// per-partition results appended to out.
// Authorization (KafkaApis.handleOffsetDeleteRequest): DELETE on the group,
// else GROUP_AUTHORIZATION_FAILED; READ on each topic, else
// TOPIC_AUTHORIZATION_FAILED on its partitions.
func (g *Gateway) deleteOffsets(c *call, req *wire.OffsetDeleteRequest, out []wire.OffsetDeleteResponseTopic) (wire.ErrorCode, []wire.OffsetDeleteResponseTopic) {
	if code := g.groupCode(c, acl.OpDelete, req.Group); code != wire.NoError {
		return code, out
	}
	if req.Group == "" {
		return wire.InvalidGroupID, out // GroupCoordinator.isValidGroupId
	}
	scope := g.groups.OffsetDeleteScope(req.Group)
	if code := wire.ErrorCode(scope.Error); code == wire.GroupIDNotFound {
		found, err := g.anyCommitted(req.Group)
		switch {
		case err != nil:
			g.cfg.Logger.Warn("offset delete", "group", req.Group, "err", err)
			return wire.CoordinatorLoadInProgress, out // docs/design/record-mapping.md §5
		case !found:
			return code, out
		}
	} else if code != wire.NoError {
		return code, out
	}
	for _, rt := range req.Topics {
		t := wire.OffsetDeleteResponseTopic{Topic: rt.Topic, Partitions: make([]wire.OffsetDeleteResponsePartition, 0, len(rt.Partitions))}
		n, known, err := g.partitionCount(rt.Topic)
		if err != nil {
			g.cfg.Logger.Warn("offset delete", "group", req.Group, "topic", rt.Topic, "err", err)
			return wire.CoordinatorLoadInProgress, out
		}
		subscribed := scope.Subscribed != nil && scope.Subscribed(rt.Topic)
		denied := g.topicCode(c, acl.OpRead, rt.Topic)
		for _, p := range rt.Partitions {
			code := wire.NoError
			switch {
			case denied != wire.NoError:
				code = denied
			case !known || p < 0 || p >= n:
				code = wire.UnknownTopicOrPartition // KafkaApis: !metadataCache.contains(tp)
			case subscribed:
				code = wire.GroupSubscribedToTopic
			default:
				if err := g.deleteOffset(req.Group, rt.Topic, p); err != nil {
					g.cfg.Logger.Warn("offset delete", "group", req.Group, "topic", rt.Topic, "partition", p, "err", err)
					return wire.CoordinatorLoadInProgress, out
				}
			}
			t.Partitions = append(t.Partitions, wire.OffsetDeleteResponsePartition{Partition: p, ErrorCode: code})
		}
		out = append(out, t)
	}
	return wire.NoError, out
}

// partitionCount returns topic's partition count, known false when the
// topic does not exist.
func (g *Gateway) partitionCount(topic string) (n int32, known bool, err error) {
	topics, err := g.store.Topics(g.ctx)
	if err != nil {
		return 0, false, err
	}
	for _, t := range topics {
		if t.Name == topic {
			return int32(t.Partitions), true, nil
		}
	}
	return 0, false, nil
}

// deleteOffset deletes group id's committed offset of one partition, if
// it has one.
func (g *Gateway) deleteOffset(id, topic string, p int32) error {
	_, _, ok, err := g.store.FetchOffset(g.ctx, id, topic, p)
	switch {
	case errors.Is(err, store.ErrInvalidGroup):
		return nil // an id the backend cannot key offsets by has none
	case err != nil:
		return err
	case !ok:
		return nil
	}
	return g.store.CommitOffset(g.ctx, id, topic, p, -1, "")
}

// anyCommitted reports whether group id has a committed offset in any
// partition, looked up as deleteCommitted does.
func (g *Gateway) anyCommitted(id string) (bool, error) {
	topics, err := g.store.Topics(g.ctx)
	if err != nil {
		return false, err
	}
	for _, t := range topics {
		for p := range t.Partitions {
			_, _, ok, err := g.store.FetchOffset(g.ctx, id, t.Name, p)
			switch {
			case errors.Is(err, store.ErrInvalidGroup):
				return false, nil
			case err != nil:
				return false, err
			case ok:
				return true, nil
			}
		}
	}
	return false, nil
}
