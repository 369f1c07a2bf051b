// Metadata (API key 3): versions 0–13 (wire.APIs).
//
// Differs from Kafka (docs/design/kafka-protocol.md §2.4): without
// Config.Placement this gateway is the only broker, the controller and the
// leader, replica and ISR of every partition. The topics' authorized
// operations are computed when asked for (KIP-430), the cluster's never, as
// Kafka 4.4. Topic ids (v10+) are the backend's (store.TopicInfo.ID,
// docs/design/record-mapping.md §8); a topic named by id is looked up among
// all topics.

package bridge

import (
	"errors"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyMetadata, (*Gateway).metadata) }

// metadata answers Metadata v0–13 (docs/design/kafka-protocol.md §2.4): this gateway is
// the only broker, the controller, and leader, replica and ISR of every
// partition.
func (g *Gateway) metadata(c *call) bool {
	st := c.state
	req := &st.metadataReq
	v := c.hdr.APIVersion
	if !decodeOrClose(c, req) {
		return false
	}
	resp := &st.metadataResp
	brokers, controller := g.metadataBrokers(c, resp.Brokers[:0])
	*resp = wire.MetadataResponse{
		Brokers:                     brokers,
		ClusterID:                   wire.NullStringOf(g.cfg.ClusterID),
		ControllerID:                controller,
		Topics:                      resp.Topics[:0],
		ClusterAuthorizedOperations: authorizedOperationsUnknown,
	}
	st.int32s = append(st.int32s[:0], g.cfg.NodeID)
	node := st.int32s[:1:1]

	// v0: an empty array means all topics; v1+: null means all topics and
	// empty means none (Admin and librdkafka use "none" to learn brokers).
	if req.Topics == nil || (v == 0 && len(req.Topics) == 0) {
		g.metadataAllTopics(c, resp, node)
	} else {
		// AllowAutoTopicCreation exists from v4; earlier versions auto-create.
		allowCreate := !g.cfg.NoAutoCreateTopics && (v < 4 || req.AllowAutoTopicCreation)
		for i := range req.Topics {
			g.metadataTopic(c, resp, &req.Topics[i], allowCreate, node)
		}
	}
	g.metadataAuthorizedOperations(c, req, resp)
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// metadataAuthorizedOperations fills in the topics' authorized operations
// a Metadata v8+ asks for (KIP-430), but for those c may not describe. The
// cluster's (v8–10) are not computed: Kafka 4.4 answers them unknown too
// (DescribeCluster has them; TestAuthorizedOperations).
func (g *Gateway) metadataAuthorizedOperations(c *call, req *wire.MetadataRequest, resp *wire.MetadataResponse) {
	if !req.IncludeTopicAuthorizedOperations {
		return
	}
	for i := range resp.Topics {
		if t := &resp.Topics[i]; t.ErrorCode != wire.TopicAuthorizationFailed && t.Name.Valid {
			t.TopicAuthorizedOperations = g.authorizedOperations(c, acl.ResourceTopic, t.Name.S)
		}
	}
}

// metadataAllTopics answers a Metadata for all topics: every topic of the
// log the principal may DESCRIBE (KafkaApis.handleTopicMetadataRequest).
func (g *Gateway) metadataAllTopics(c *call, resp *wire.MetadataResponse, node []int32) {
	topics, err := g.listTopics(g.ctx)
	if err != nil {
		g.cfg.Logger.Warn("metadata: listing topics", "err", err)
	}
	for _, t := range topics {
		if g.allowed(c, acl.OpDescribe, acl.ResourceTopic, t.Name) {
			resp.Topics = g.appendTopic(resp.Topics, t.Name, t.ID, t.Partitions, wire.NoError, node)
		}
	}
}

// metadataTopic answers one topic a Metadata names: refused (DESCRIBE
// denied, an invalid name), found, or auto-created when allowCreate and the
// principal may create it. A topic named by id goes to metadataTopicByID.
func (g *Gateway) metadataTopic(c *call, resp *wire.MetadataResponse, rt *wire.MetadataRequestTopic, allowCreate bool, node []int32) {
	ctx := g.ctx
	if !rt.Name.Valid || rt.TopicID != ([16]byte{}) {
		g.metadataTopicByID(c, resp, rt.TopicID, node)
		return
	}
	name := rt.Name.S
	if code := g.topicCode(c, acl.OpDescribe, name); code != wire.NoError {
		resp.Topics = g.appendTopic(resp.Topics, name, [16]byte{}, 0, code, node)
		return
	}
	if !validTopicName(name) {
		resp.Topics = g.appendTopic(resp.Topics, name, [16]byte{}, 0, wire.InvalidTopicException, node)
		return
	}
	info, err := g.store.Topic(ctx, name)
	if errors.Is(err, store.ErrUnknownTopic) && allowCreate && !g.canCreateTopic(c, name) {
		// KafkaApis: auto-creation needs CREATE on the cluster or the topic.
		resp.Topics = g.appendTopic(resp.Topics, name, [16]byte{}, 0, wire.TopicAuthorizationFailed, node)
		return
	}
	var held *reservation
	if errors.Is(err, store.ErrUnknownTopic) && allowCreate {
		// Past --max-partitions or --auto-create-topics-limit
		// (creationlimits.go): as with auto-creation off.
		held, allowCreate = g.creation.admitAuto(ctx, g.store, name, g.cfg.DefaultPartitions)
	}
	if errors.Is(err, store.ErrUnknownTopic) && allowCreate {
		// A new topic has the defaults and log start 0, whatever an earlier
		// one of the name left in the system store (topicstate.go): that is
		// cleared first. If it cannot be, nothing is created and the
		// client asks again (LEADER_NOT_AVAILABLE, as while Kafka creates
		// a topic), rather than a new topic inheriting stale state.
		if err = g.dropTopicState(ctx, name); err == nil {
			info, err = g.store.CreateTopic(ctx, name, g.cfg.DefaultPartitions, store.TopicConfig{})
		}
		g.creation.end(held, err)
		if errors.Is(err, store.ErrTopicExists) {
			info, err = g.store.Topic(ctx, name)
		}
	}
	switch {
	case err == nil:
		g.topicIDs.note(name, info.ID) // topicids.go: a client may name it by id next
		resp.Topics = g.appendTopic(resp.Topics, name, info.ID, info.Partitions, wire.NoError, node)
	case errors.Is(err, store.ErrUnknownTopic):
		g.topicIDs.forget(name)
		resp.Topics = g.appendTopic(resp.Topics, name, [16]byte{}, 0, wire.UnknownTopicOrPartition, node)
	case errors.Is(err, store.ErrTooManyTopics):
		// The backend holds all the topics it can: as past
		// --auto-create-topics-limit, not created (creationlimits.go).
		g.creation.backendRefused.Add(1)
		resp.Topics = g.appendTopic(resp.Topics, name, [16]byte{}, 0, wire.UnknownTopicOrPartition, node)
	default:
		g.cfg.Logger.Warn("metadata: topic lookup", "topic", name, "err", err)
		resp.Topics = g.appendTopic(resp.Topics, name, [16]byte{}, 0, wire.LeaderNotAvailable, node)
	}
}

// metadataTopicByID answers a topic named by id (v12+; KafkaApis
// handleTopicMetadataRequest): an unknown id is UNKNOWN_TOPIC_ID (100) with
// the id echoed and a null name, a topic the principal may not DESCRIBE is
// TOPIC_AUTHORIZATION_FAILED with a null name ("Topic IDs are not considered
// sensitive information"), a known one is answered with its name. A lookup
// by id never auto-creates.
func (g *Gateway) metadataTopicByID(c *call, resp *wire.MetadataResponse, id [16]byte, node []int32) {
	info, err := g.topicByID(id)
	code := wire.NoError
	switch {
	case errors.Is(err, store.ErrUnknownTopic):
		code = wire.UnknownTopicID
	case err != nil:
		g.cfg.Logger.Warn("metadata: topic lookup by id", "err", err)
		code = wire.LeaderNotAvailable
	case !g.allowed(c, acl.OpDescribe, acl.ResourceTopic, info.Name):
		code = wire.TopicAuthorizationFailed
	}
	if code != wire.NoError {
		resp.Topics = append(resp.Topics, wire.MetadataResponseTopic{
			ErrorCode: code, TopicID: id, TopicAuthorizedOperations: authorizedOperationsUnknown,
		})
		return
	}
	resp.Topics = g.appendTopic(resp.Topics, info.Name, info.ID, info.Partitions, wire.NoError, node)
}

// appendTopic appends one topic with n partitions led by this node, reusing
// the partition slice already in dst's spare capacity.
func (g *Gateway) appendTopic(dst []wire.MetadataResponseTopic, name string, id [16]byte, n int32, code wire.ErrorCode, node []int32) []wire.MetadataResponseTopic {
	var parts []wire.MetadataResponsePartition
	if len(dst) < cap(dst) {
		parts = dst[:len(dst)+1][len(dst)].Partitions[:0]
	}
	for p := int32(0); p < n; p++ {
		mp := wire.MetadataResponsePartition{
			PartitionIndex:  p,
			LeaderID:        g.cfg.NodeID,
			LeaderEpoch:     -1,
			ReplicaNodes:    node,
			IsrNodes:        node,
			OfflineReplicas: node[:0],
		}
		if g.cfg.Placement != nil {
			g.placePartition(&mp, name)
		}
		parts = append(parts, mp)
	}
	return append(dst, wire.MetadataResponseTopic{
		ErrorCode:                 code,
		Name:                      wire.NullStringOf(name),
		TopicID:                   id,
		Partitions:                parts,
		TopicAuthorizedOperations: authorizedOperationsUnknown,
	})
}

// placePartition sets a partition's leader and epoch from the placement; a
// partition without a live leader is LEADER_NOT_AVAILABLE (5), which
// clients retry.
func (g *Gateway) placePartition(mp *wire.MetadataResponsePartition, topic string) {
	r := g.cfg.Placement.Leader(topic, mp.PartitionIndex)
	mp.LeaderID, mp.LeaderEpoch = r.Leader, r.Epoch
	if r.Leader < 0 {
		mp.ErrorCode = wire.LeaderNotAvailable
		mp.ReplicaNodes, mp.IsrNodes = mp.ReplicaNodes[:0], mp.IsrNodes[:0]
		return
	}
	// One replica, the leader: Iggy keeps the data, any instance can lead.
	one := []int32{r.Leader}
	mp.ReplicaNodes, mp.IsrNodes = one, one
}
