// DescribeTopicPartitions (API key 75): version 0 (wire.APIs), KIP-966.
//
// Kafka 4.x's Admin describeTopics (`kafka-topics --describe`) uses it when
// it is advertised. Answered as DescribeTopicPartitionsRequestHandler and
// KRaftMetadataCache.describeTopicResponse do, from the backend's topics
// with their ids (docs/design/record-mapping.md §8) and the partition
// leaders Metadata gives. Differs from Kafka: the eligible leader replicas
// (KIP-966's ELR) are always empty, as one replica is all there is; a
// cursor Kafka refuses with InvalidRequestException answers
// INVALID_REQUEST on every topic asked for.

package bridge

import (
	"errors"
	"slices"
	"strings"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeTopicPartitions, (*Gateway).describeTopicPartitions) }

// maxDescribePartitions is the most partitions one DescribeTopicPartitions
// answer holds, whatever the request's limit (Kafka's
// max.request.partition.size.limit, default 2000).
const maxDescribePartitions = 2000

// describeTopicPartitions answers DescribeTopicPartitions v0: the topics
// named (every topic when none is) from the cursor on, sorted by name, with
// at most ResponsePartitionLimit partitions in all; NextCursor says where
// the next request starts when the limit cut the answer short.
func (g *Gateway) describeTopicPartitions(c *call) bool {
	var req wire.DescribeTopicPartitionsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	var resp wire.DescribeTopicPartitionsResponse
	all := len(req.Topics) == 0
	names, infos, err := g.describeTopicsFrom(&req, all)
	if err != nil {
		// DescribeTopicPartitionsRequest.getErrorResponse: every topic
		// asked for, with the error.
		code := wire.InvalidRequest
		if !errors.Is(err, errBadCursor) {
			g.cfg.Logger.Warn("describe topic partitions: listing topics", "err", err)
			code = logCode(err)
		}
		for _, name := range req.Topics {
			resp.Topics = append(resp.Topics, wire.DescribeTopicPartitionsResponseTopic{
				ErrorCode: code, Topic: wire.NullStringOf(name), AuthorizedOperations: authorizedOperationsUnknown,
			})
		}
		resp.CountErrors(g.errorCounter(c))
		respond(c, &resp)
		return false
	}
	// Kafka: max(min(max.request.partition.size.limit, limit), 1).
	remaining := max(min(req.ResponsePartitionLimit, maxDescribePartitions), 1)
	var denied []wire.DescribeTopicPartitionsResponseTopic
	for i, name := range names {
		if !g.allowed(c, acl.OpDescribe, acl.ResourceTopic, name) {
			// Named topics the principal may not describe are answered
			// last, with no id; unnamed ones are left out.
			if !all {
				denied = append(denied, wire.DescribeTopicPartitionsResponseTopic{
					ErrorCode: wire.TopicAuthorizationFailed, Topic: wire.NullStringOf(name), AuthorizedOperations: authorizedOperationsUnknown,
				})
			}
			continue
		}
		if remaining == 0 {
			// The cursor points at the start of the next topic.
			resp.HasNextCursor, resp.NextCursor = true, wire.DescribeTopicPartitionsCursor{Topic: name}
			break
		}
		info := infos[i]
		if info.Name == "" { // not found, or not a valid name
			code := wire.UnknownTopicOrPartition
			if !validTopicName(name) {
				code = wire.InvalidTopicException
			}
			resp.Topics = append(resp.Topics, wire.DescribeTopicPartitionsResponseTopic{
				ErrorCode: code, Topic: wire.NullStringOf(name), AuthorizedOperations: authorizedOperationsUnknown,
			})
			continue
		}
		first := int32(0)
		if req.HasCursor && name == req.Cursor.Topic {
			first = req.Cursor.Partition
		}
		out := wire.DescribeTopicPartitionsResponseTopic{
			Topic: wire.NullStringOf(name), TopicID: info.ID,
			// Always computed, as Kafka 4.4 does (the request has no flag
			// for it; TestAuthorizedOperations).
			AuthorizedOperations: g.authorizedOperations(c, acl.ResourceTopic, name),
		}
		p := first
		for ; p < info.Partitions && remaining > 0; p++ {
			out.Partitions = append(out.Partitions, g.describePartition(name, p))
			remaining--
		}
		resp.Topics = append(resp.Topics, out)
		if p < info.Partitions {
			resp.HasNextCursor, resp.NextCursor = true, wire.DescribeTopicPartitionsCursor{Topic: name, Partition: p}
			break
		}
	}
	resp.Topics = append(resp.Topics, denied...)
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// errBadCursor is a cursor Kafka refuses (InvalidRequestException): a
// negative partition, or a topic not among those asked for.
var errBadCursor = errors.New("DescribeTopicPartitionsRequest topic list should contain the cursor topic")

// describeTopicsFrom returns the names to describe, sorted and from the
// cursor's topic on, with each one's TopicInfo (zero when there is none):
// every topic when all, else the distinct names asked for.
func (g *Gateway) describeTopicsFrom(req *wire.DescribeTopicPartitionsRequest, all bool) ([]string, []store.TopicInfo, error) {
	from := ""
	if req.HasCursor {
		from = req.Cursor.Topic
		if req.Cursor.Partition < 0 {
			return nil, nil, errBadCursor
		}
	}
	var names []string
	var infos []store.TopicInfo
	if all {
		topics, err := g.listTopics(g.ctx)
		if err != nil {
			return nil, nil, err
		}
		slices.SortFunc(topics, func(a, b store.TopicInfo) int { return strings.Compare(a.Name, b.Name) })
		for _, t := range topics {
			if t.Name >= from {
				names, infos = append(names, t.Name), append(infos, t)
			}
		}
	} else {
		for _, name := range req.Topics {
			if name >= from {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		names = slices.Compact(names)
		infos = make([]store.TopicInfo, len(names))
		for i, name := range names {
			if !validTopicName(name) {
				continue
			}
			info, err := g.store.Topic(g.ctx, name)
			switch {
			case err == nil:
				g.topicIDs.note(name, info.ID)
				infos[i] = info
			case !errors.Is(err, store.ErrUnknownTopic):
				return nil, nil, err
			}
		}
	}
	if req.HasCursor && !slices.Contains(names, from) {
		return nil, nil, errBadCursor
	}
	return names, infos, nil
}

// describePartition describes one partition as Metadata does: this node
// leads it, or the placement's leader in cluster mode.
func (g *Gateway) describePartition(topic string, p int32) wire.DescribeTopicPartitionsResponsePartition {
	node := []int32{g.cfg.NodeID}
	mp := wire.MetadataResponsePartition{PartitionIndex: p, LeaderID: g.cfg.NodeID, LeaderEpoch: -1, ReplicaNodes: node, IsrNodes: node}
	if g.cfg.Placement != nil {
		g.placePartition(&mp, topic)
	}
	return wire.DescribeTopicPartitionsResponsePartition{
		ErrorCode: mp.ErrorCode, Partition: p, Leader: mp.LeaderID, LeaderEpoch: mp.LeaderEpoch,
		Replicas: mp.ReplicaNodes, ISR: mp.IsrNodes,
		EligibleLeaderReplicas: []int32{}, LastKnownELR: []int32{}, OfflineReplicas: []int32{},
	}
}
