// ConsumerGroupDescribe (API key 69): versions 0–1 (wire.APIs).
//
// As Kafka (KIP-848); a classic group answers GROUP_ID_NOT_FOUND, as
// there, and a group whose assignments name a topic the client may not
// DESCRIBE, TOPIC_AUTHORIZATION_FAILED (KAFKA-18813); the authorized
// operations of each group described when asked for (KIP-430).

package bridge

import (
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyConsumerGroupDescribe, (*Gateway).consumerGroupDescribe) }

// consumerGroupDescribe answers ConsumerGroupDescribe v0–1.
func (g *Gateway) consumerGroupDescribe(c *call) bool {
	gs := &c.state.group
	req := &gs.cgDescReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.ConsumerGroupDescribeResponse
	topics, terr := g.consumerTopics(g.ctx)
	for _, id := range req.Groups {
		out := wire.ConsumerGroupDescribeGroup{Group: id, AuthorizedOperations: authorizedOperationsUnknown}
		switch {
		case g.groupCode(c, acl.OpDescribe, id) != wire.NoError: // KafkaApis: DESCRIBE on each group
			out.ErrorCode = wire.GroupAuthorizationFailed
		case id == "":
			out.ErrorCode = wire.InvalidGroupID
		case g.notCoordinator(id):
			out.ErrorCode = wire.NotCoordinator // docs/design/cluster.md §7
		case !g.cgLoaded.Load():
			out.ErrorCode = wire.CoordinatorLoadInProgress
		case terr != nil:
			out.ErrorCode, out.ErrorMessage = wire.CoordinatorNotAvailable, wire.NullStringOf(terr.Error())
		default:
			d := g.groups.DescribeConsumerGroup(id)
			out.ErrorCode, out.ErrorMessage = wire.ErrorCode(d.Error), nullIfEmpty(d.ErrorMessage)
			if out.ErrorCode == wire.NoError { // as Kafka: a group not described has none
				out.AuthorizedOperations = g.authorizedOperationsIf(req.IncludeAuthorizedOperations, c, acl.ResourceGroup, id)
			}
			out.State, out.Epoch, out.AssignmentEpoch, out.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName
			for _, m := range d.Members {
				out.Members = append(out.Members, wire.ConsumerGroupDescribeMember{
					MemberID: m.MemberID, InstanceID: wire.NullString{S: m.InstanceID, Valid: m.HasInstanceID},
					RackID: wire.NullString{S: m.RackID, Valid: m.HasRackID}, MemberEpoch: m.MemberEpoch,
					ClientID: m.ClientID, ClientHost: m.ClientHost, SubscribedTopicNames: m.SubscribedTopicNames,
					SubscribedTopicRegex: wire.NullString{S: m.SubscribedTopicRegex, Valid: m.HasRegex},
					Assignment:           describeAssignment(topics, m.Assignment),
					TargetAssignment:     describeAssignment(topics, m.TargetAssignment),
					MemberType:           memberType(m.Classic),
				})
			}
			if !g.mayDescribeTopicsOf(c, out.Members) {
				// KafkaApis (KAFKA-18813): clients are not shown a group
				// whose assignments name a topic they may not DESCRIBE.
				out = wire.ConsumerGroupDescribeGroup{Group: id, AuthorizedOperations: authorizedOperationsUnknown,
					ErrorCode: wire.TopicAuthorizationFailed, ErrorMessage: wire.NullStringOf(topicsNotDescribable)}
			}
		}
		resp.Groups = append(resp.Groups, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// topicsNotDescribable is Kafka's message for a group ConsumerGroupDescribe
// does not show (TOPIC_AUTHORIZATION_FAILED).
const topicsNotDescribable = "The group has described topic(s) that the client is not authorized to describe."

// mayDescribeTopicsOf reports whether c may DESCRIBE every topic in the
// members' assignments and target assignments.
func (g *Gateway) mayDescribeTopicsOf(c *call, members []wire.ConsumerGroupDescribeMember) bool {
	if g.acl.authz == nil {
		return true
	}
	for _, m := range members {
		for _, set := range [...][]wire.ConsumerGroupDescribeTopic{m.Assignment, m.TargetAssignment} {
			for _, t := range set {
				if t.Topic != "" && g.topicCode(c, acl.OpDescribe, t.Topic) != wire.NoError { // "": deleted
					return false
				}
			}
		}
	}
	return true
}

// describeAssignment names the topics of an assignment.
func describeAssignment(topics *topicSnapshot, tps []group.TopicPartitions) []wire.ConsumerGroupDescribeTopic {
	out := make([]wire.ConsumerGroupDescribeTopic, 0, len(tps))
	for _, t := range tps {
		name, _ := topics.ByID(t.TopicID)
		out = append(out, wire.ConsumerGroupDescribeTopic{TopicID: t.TopicID, Topic: name, Partitions: t.Partitions})
	}
	return out
}

// memberType is ConsumerGroupDescribe v1's MemberType: 0 for a classic
// member (online migration), 1 for a consumer-protocol one.
func memberType(classic bool) int8 {
	if classic {
		return 0
	}
	return 1
}
