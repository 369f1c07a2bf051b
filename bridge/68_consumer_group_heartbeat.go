// ConsumerGroupHeartbeat (API key 68): versions 0–1 (wire.APIs).
//
// The consumer group protocol of KIP-848 (bridge/group/consumer.go follows
// Kafka's GroupMetadataManager). Groups are stored in the system store a
// moment after each change (docs/design/consumer-groups.md §6), and a
// running classic group is upgraded online (docs/design/consumer-groups.md
// §5). Differs from Kafka: a group is stored after the answer, not before
// (docs/LIMITS.md).

package bridge

import (
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyConsumerGroupHeartbeat, (*Gateway).consumerGroupHeartbeat) }

// consumerGroupHeartbeat answers ConsumerGroupHeartbeat v0–1.
func (g *Gateway) consumerGroupHeartbeat(c *call) bool {
	gs := &c.state.group
	req := &gs.cghbReq
	if !decodeOrClose(c, req) {
		return false
	}
	resp := &gs.cghbResp
	*resp = wire.ConsumerGroupHeartbeatResponse{Assignment: resp.Assignment[:0]}
	code := g.groupCode(c, acl.OpRead, req.Group) // KafkaApis: READ on the group
	if code == wire.NoError && req.HasSubscribedTopicNames {
		// KafkaApis.handleConsumerGroupHeartbeat: DESCRIBE on every
		// subscribed topic, else TOPIC_AUTHORIZATION_FAILED.
		for _, t := range req.SubscribedTopicNames {
			if code = g.topicCode(c, acl.OpDescribe, t); code != wire.NoError {
				break
			}
		}
	}
	if code == wire.NoError && g.notCoordinator(req.Group) {
		code = wire.NotCoordinator // docs/design/cluster.md §7
	}
	if code == wire.NoError && !g.cgLoaded.Load() {
		code = wire.CoordinatorLoadInProgress // the stored groups are not loaded yet
	}
	var unstored uint64
	if code == wire.NoError {
		unstored = g.heartbeatConsumer(c, req, resp)
	} else {
		resp.ErrorCode = code
	}
	resp.CountErrors(g.errorCounter(c))
	// An answer that may tell the member of a change waits until the change
	// is stored (group.Config.AwaitStore), as Kafka's coordinator answers
	// once the change's records are written; resp stays in c's state, which
	// the connection's next request waits for.
	if unstored != 0 && g.groups.AfterConsumerStored(unstored, func() {
		g.answerParked(c, func() []byte { return resp.AppendTo(c.responseBuffer(), c.hdr.APIVersion) })
	}) {
		return true
	}
	respond(c, resp)
	return false
}

// heartbeatConsumer runs the coordinator's part of a heartbeat into resp
// and returns the group's unstored change the answer must wait for (0:
// none).
func (g *Gateway) heartbeatConsumer(c *call, req *wire.ConsumerGroupHeartbeatRequest, resp *wire.ConsumerGroupHeartbeatResponse) uint64 {
	topics, err := g.consumerTopics(g.ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = wire.CoordinatorNotAvailable, wire.NullStringOf(err.Error())
		return 0
	}
	gs := &c.state.group
	gs.cghbOwned = gs.cghbOwned[:0]
	for _, t := range req.Topics {
		gs.cghbOwned = append(gs.cghbOwned, group.TopicPartitions{TopicID: t.TopicID, Partitions: t.Partitions})
	}
	hb := &group.ConsumerHeartbeat{
		Version: c.hdr.APIVersion, GroupID: req.Group, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch,
		InstanceID: req.InstanceID.S, HasInstanceID: req.InstanceID.Valid,
		RackID: req.RackID.S, HasRackID: req.RackID.Valid,
		RebalanceTimeoutMillis:  req.RebalanceTimeoutMillis,
		SubscribedTopicNames:    req.SubscribedTopicNames,
		HasSubscribedTopicNames: req.HasSubscribedTopicNames,
		SubscribedTopicRegex:    req.SubscribedTopicRegex.S, HasSubscribedTopicRegex: req.SubscribedTopicRegex.Valid,
		ServerAssignor: req.ServerAssignor.S, HasServerAssignor: req.ServerAssignor.Valid,
		Owned: gs.cghbOwned, HasOwned: req.HasTopics,
		ClientID: c.hdr.ClientID.S, ClientHost: clientHost(c),
		Topics: topics,
	}
	// KAFKA-18813: a regex subscription matches only topics its members
	// may DESCRIBE.
	hb.CanDescribe, hb.Identity = g.describeFilter(c)
	r := g.groups.ConsumerGroupHeartbeat(hb)
	if (r.Error == int16(wire.GroupIDNotFound) || r.Error == int16(wire.UnknownMemberID)) && req.MemberEpoch > 0 &&
		g.cfg.Placement != nil && g.loadConsumerGroup(g.ctx, req.Group) {
		// A member of a group this instance just took over: the group as
		// its last coordinator stored it (docs/design/consumer-groups.md §6).
		r = g.groups.ConsumerGroupHeartbeat(hb)
	}
	if g.consumerRestoredBehind(r.Error, req.Group, req.MemberID, req.MemberEpoch) {
		r = g.groups.ConsumerGroupHeartbeat(hb)
	}
	resp.ErrorCode = wire.ErrorCode(r.Error)
	if r.Error != 0 {
		resp.ErrorMessage = nullIfEmpty(r.ErrorMessage)
		return r.StoreSeq
	}
	resp.MemberID = wire.NullStringOf(r.MemberID)
	resp.MemberEpoch = r.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(r.HeartbeatInterval.Milliseconds())
	resp.HasAssignment = r.HasAssignment
	for _, t := range r.Assignment {
		resp.Assignment = append(resp.Assignment, wire.ConsumerGroupHeartbeatTopic{TopicID: t.TopicID, Partitions: t.Partitions})
	}
	return r.StoreSeq
}
