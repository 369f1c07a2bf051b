// ElectLeaders (API key 43): versions 0–2 (wire.APIs).
//
// Every partition's one replica is its leader (replicas.go), so there is
// nothing to elect: each partition that exists is ELECTION_NOT_NEEDED, as
// Kafka answers for a partition whose preferred replica leads it, and
// `kafka-leader-election --all-topic-partitions` reports that no election
// was needed.

package bridge

import (
	"context"
	"strconv"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyElectLeaders, (*Gateway).electLeaders) }

// Election types (ElectLeadersRequest.json ElectionType; KIP-460).
const (
	electPreferred int8 = 0
	electUnclean   int8 = 1
)

// electLeaders answers ElectLeaders as Kafka's controller does
// (ReplicationControlManager.electLeaders): ALTER on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for the request and each partition; an
// election type other than preferred (0) or unclean (1) is INVALID_REQUEST
// for both; then per partition UNKNOWN_TOPIC_OR_PARTITION or
// ELECTION_NOT_NEEDED (PREFERRED_LEADER_NOT_AVAILABLE or
// ELIGIBLE_LEADERS_NOT_AVAILABLE while no instance is live to lead it). A
// null list asks for every partition and is answered with every topic and
// none of the partitions that needed no election.
func (g *Gateway) electLeaders(c *call) bool {
	var req wire.ElectLeadersRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := wire.ElectLeadersResponse{}
	fail := func(code wire.ErrorCode, msg wire.NullString) {
		resp.ErrorCode = code
		for _, t := range req.Topics {
			rt := wire.TopicResults{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, wire.PartitionResult{Partition: p, ErrorCode: code, ErrorMessage: msg})
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	switch {
	case g.clusterCode(c, acl.OpAlter) != wire.NoError:
		fail(wire.ClusterAuthorizationFailed, wire.NullString{})
	case req.ElectionType != electPreferred && req.ElectionType != electUnclean:
		fail(wire.InvalidRequest, wire.NullStringOf("Unknown election type "+strconv.Itoa(int(req.ElectionType))))
	default:
		ctx, cancel := context.WithTimeout(g.ctx, describeLogDirsTimeout)
		defer cancel()
		seen := topicLookups{}
		if req.Topics == nil {
			list, err := g.listTopics(ctx)
			if err != nil {
				fail(wire.KafkaStorageError, wire.NullStringOf(err.Error()))
				break
			}
			for _, t := range list {
				rt := wire.TopicResults{Topic: t.Name}
				for p := range t.Partitions {
					if r := g.electOne(ctx, seen, req.ElectionType, t.Name, p); r.ErrorCode != wire.ElectionNotNeeded {
						rt.Partitions = append(rt.Partitions, r)
					}
				}
				resp.Topics = append(resp.Topics, rt)
			}
			break
		}
		for _, t := range req.Topics {
			rt := wire.TopicResults{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, g.electOne(ctx, seen, req.ElectionType, t.Topic, p))
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// electOne is one partition's election result.
func (g *Gateway) electOne(ctx context.Context, seen topicLookups, kind int8, topic string, p int32) wire.PartitionResult {
	r := wire.PartitionResult{Partition: p, ErrorCode: wire.ElectionNotNeeded}
	if code, msg := g.partitionCheck(ctx, seen, topic, p); code != wire.NoError {
		r.ErrorCode, r.ErrorMessage = code, msg
		return r
	}
	if g.replicaOf(topic, p) < 0 {
		r.ErrorCode = wire.PreferredLeaderNotAvailable
		if kind == electUnclean {
			r.ErrorCode = wire.EligibleLeadersNotAvailable
		}
	}
	return r
}
