package bridge

import (
	"errors"
	"strconv"
	"strings"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/bridge/topicconfig"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

// maxPartitions is the most partitions one CreateTopics or CreatePartitions
// topic may create (docs/LIMITS.md). Iggy creates at most 1,000 per request
// (docs/design/iggy-protocol.md §3.5); its backend creates more in steps.
const maxPartitions = 100_000

// adminState is the admin handlers' scratch space.
type adminState struct {
	createReq  wire.CreateTopicsRequest
	deleteReq  wire.DeleteTopicsRequest
	partsReq   wire.CreatePartitionsRequest
	descReq    wire.DescribeConfigsRequest
	alterReq   wire.AlterConfigsRequest
	incrReq    wire.IncrementalAlterConfigsRequest
	clusterReq wire.DescribeClusterRequest
}

// topicOverridesFromKafka validates CreateTopics configs as Kafka does
// (docs/LIMITS.md, "Topic configs") and returns them normalized: an unknown
// name, a null value or a bad value is INVALID_CONFIG with Kafka's message.
func topicOverridesFromKafka(configs []wire.CreateTopicsRequestTopicConfig) (topicconfig.Values, string) {
	v := topicconfig.Values{}
	for _, c := range configs {
		if !c.Value.Valid {
			// Kafka 4.4 ControllerConfigurationValidator's wording.
			return nil, "Null value not supported for topic configs: " + c.Name
		}
		n, err := topicconfig.Normalize(c.Name, c.Value.S)
		if err != nil {
			return nil, err.Error()
		}
		v[strings.Clone(c.Name)] = n
	}
	if err := v.Check(); err != nil {
		return nil, err.Error()
	}
	return v, ""
}

// createTopics answers CreateTopics v2–7.
func (g *Gateway) createTopics(c *call) bool {
	as := &c.state.admin
	req := &as.createReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.CreateTopicsResponse
	for i := range req.Topics {
		t := &req.Topics[i]
		out := wire.CreateTopicsResponseTopic{Topic: t.Topic, NumPartitions: -1, ReplicationFactor: -1}
		code, msg, parts, overrides := g.checkCreate(t)
		if !g.canCreateTopic(c, t.Topic) { // KafkaApis: CREATE on the cluster or the topic
			code, msg = wire.TopicAuthorizationFailed, "Authorization failed."
		}
		cfg := backendConfig(overrides)
		if code == wire.NoError && req.ValidateOnly {
			if _, err := g.store.Topic(g.ctx, t.Topic); err == nil {
				code, msg = wire.TopicAlreadyExists, "Topic '"+t.Topic+"' already exists."
			}
		} else if code == wire.NoError {
			info, err := g.store.CreateTopic(g.ctx, t.Topic, parts, cfg)
			if err == nil {
				// The backend says what it does (durability); the
				// overrides go with the topic (what an earlier topic
				// of the name left, configs and log starts, is cleared).
				cfg.Durability = info.Config.Durability
				if err = g.dropTopicState(g.ctx, t.Topic); err == nil {
					err = g.putTopicOverrides(g.ctx, t.Topic, overrides)
				}
			}
			switch {
			case errors.Is(err, store.ErrTopicExists):
				code, msg = wire.TopicAlreadyExists, "Topic '"+t.Topic+"' already exists."
			case errors.Is(err, store.ErrInvalidConfig):
				code, msg = wire.InvalidConfig, err.Error()
			case errors.Is(err, store.ErrInvalidPartitions):
				code, msg = wire.InvalidPartitions, err.Error()
			case errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrUnknownOutcome):
				// As a Kafka controller that did not answer in time: the
				// client may try again (docs/LIMITS.md, error codes).
				code, msg = wire.RequestTimedOut, err.Error()
			case err != nil:
				code, msg = wire.UnknownServerError, err.Error()
			}
		}
		out.ErrorCode = code
		if msg != "" {
			out.ErrorMessage = wire.NullStringOf(msg)
		}
		if code == wire.NoError {
			out.NumPartitions, out.ReplicationFactor = parts, 1
			for _, e := range topicConfigs(overrides, cfg, g.maxMessageBytes()) {
				out.Configs = append(out.Configs, wire.CreateTopicsResponseTopicConfig{Name: e.name, Value: wire.NullStringOf(e.value), ReadOnly: e.readOnly, Source: e.source})
			}
		}
		resp.Topics = append(resp.Topics, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// checkCreate validates one CreateTopics entry.
func (g *Gateway) checkCreate(t *wire.CreateTopicsRequestTopic) (wire.ErrorCode, string, int32, topicconfig.Values) {
	if !validTopicName(t.Topic) {
		return wire.InvalidTopicException, "Topic name '" + t.Topic + "' is illegal: use 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'", 0, nil
	}
	// KIP-464: -1 means the broker default.
	if t.ReplicationFactor != -1 && t.ReplicationFactor != 1 {
		return wire.InvalidReplicationFactor, "Replication factor must be 1 or -1: kiggy stores each partition once, in Iggy (which replicates on its own).", 0, nil
	}
	parts := t.NumPartitions
	if len(t.ReplicaAssignment) > 0 {
		if parts != -1 {
			return wire.InvalidRequest, "Both numPartitions and replicasAssignments were set.", 0, nil
		}
		for _, a := range t.ReplicaAssignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != g.cfg.NodeID {
				return wire.InvalidReplicaAssignment, "Every partition must be assigned to broker " + strconv.Itoa(int(g.cfg.NodeID)) + " alone.", 0, nil
			}
		}
		parts = int32(len(t.ReplicaAssignment))
	}
	if parts == -1 {
		parts = g.cfg.DefaultPartitions
	}
	if parts <= 0 || parts > maxPartitions {
		return wire.InvalidPartitions, "Number of partitions must be between 1 and " + strconv.Itoa(maxPartitions) + ".", 0, nil
	}
	overrides, bad := topicOverridesFromKafka(t.Configs)
	if bad != "" {
		return wire.InvalidConfig, bad, 0, nil
	}
	return wire.NoError, "", parts, overrides
}

// deleteTopics answers DeleteTopics v1–6 (by name; kiggy serves zero topic
// ids, so a deletion by id finds nothing).
func (g *Gateway) deleteTopics(c *call) bool {
	as := &c.state.admin
	req := &as.deleteReq
	v := c.hdr.APIVersion
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.DeleteTopicsResponse
	del := func(name string) (wire.ErrorCode, string) {
		if code := g.topicCode(c, acl.OpDelete, name); code != wire.NoError { // KafkaApis: DELETE on the topic
			return code, "Authorization failed."
		}
		err := g.store.DeleteTopic(g.ctx, name)
		switch {
		case err == nil:
			// A topic of the same name created later starts with no
			// producer state.
			g.producers.dropTopic(name)
			// Its configs and log starts go with it.
			if err := g.dropTopicState(g.ctx, name); err != nil {
				return wire.UnknownServerError, "the topic is deleted, but not its configs: " + err.Error()
			}
			return wire.NoError, ""
		case errors.Is(err, store.ErrUnknownTopic):
			return wire.UnknownTopicOrPartition, "This server does not host this topic-partition."
		case errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrUnknownOutcome):
			return wire.RequestTimedOut, err.Error()
		default:
			return wire.UnknownServerError, err.Error()
		}
	}
	if v >= 6 {
		for _, t := range req.Topics {
			out := wire.DeleteTopicsResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
			if !t.Topic.Valid {
				out.ErrorCode = wire.UnknownTopicID
			} else {
				var m string
				out.ErrorCode, m = del(t.Topic.S)
				if m != "" {
					out.ErrorMessage = wire.NullStringOf(m)
				}
			}
			resp.Topics = append(resp.Topics, out)
		}
	} else {
		for _, name := range req.TopicNames {
			code, m := del(name)
			out := wire.DeleteTopicsResponseTopic{Topic: wire.NullStringOf(name), ErrorCode: code}
			if m != "" {
				out.ErrorMessage = wire.NullStringOf(m)
			}
			resp.Topics = append(resp.Topics, out)
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// createPartitions answers CreatePartitions v0–3: grow only.
func (g *Gateway) createPartitions(c *call) bool {
	as := &c.state.admin
	req := &as.partsReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.CreatePartitionsResponse
	for _, t := range req.Topics {
		out := wire.CreatePartitionsResponseTopic{Topic: t.Topic}
		code, msg := g.topicCode(c, acl.OpAlter, t.Topic), "Authorization failed." // KafkaApis: ALTER on the topic
		if code == wire.NoError {
			code, msg = g.growTopic(t, req.ValidateOnly)
		}
		out.ErrorCode = code
		if msg != "" {
			out.ErrorMessage = wire.NullStringOf(msg)
		}
		resp.Topics = append(resp.Topics, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

func (g *Gateway) growTopic(t wire.CreatePartitionsRequestTopic, validateOnly bool) (wire.ErrorCode, string) {
	info, err := g.store.Topic(g.ctx, t.Topic)
	if errors.Is(err, store.ErrUnknownTopic) {
		return wire.UnknownTopicOrPartition, "The topic '" + t.Topic + "' does not exist."
	} else if err != nil {
		return wire.UnknownServerError, err.Error()
	}
	if t.Count <= info.Partitions {
		// Kafka 4.4's wording (ReplicationControlManager).
		return wire.InvalidPartitions, "The topic " + t.Topic + " currently has " + strconv.Itoa(int(info.Partitions)) + " partition(s); " + strconv.Itoa(int(t.Count)) + " would not be an increase."
	}
	if t.Count-info.Partitions > maxPartitions {
		return wire.InvalidPartitions, "At most " + strconv.Itoa(maxPartitions) + " partitions can be added at once."
	}
	if t.Assignment != nil {
		if int32(len(t.Assignment)) != t.Count-info.Partitions {
			return wire.InvalidReplicaAssignment, "The assignment must list every new partition."
		}
		for _, a := range t.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != g.cfg.NodeID {
				return wire.InvalidReplicaAssignment, "Every partition must be assigned to broker " + strconv.Itoa(int(g.cfg.NodeID)) + " alone."
			}
		}
	}
	if validateOnly {
		return wire.NoError, ""
	}
	if err := g.store.CreatePartitions(g.ctx, t.Topic, t.Count); err != nil {
		if errors.Is(err, store.ErrInvalidPartitions) {
			return wire.InvalidPartitions, err.Error()
		}
		return wire.UnknownServerError, err.Error()
	}
	return wire.NoError, ""
}

// describeCluster answers DescribeCluster v0–1 (consistent with Metadata).
func (g *Gateway) describeCluster(c *call) bool {
	as := &c.state.admin
	req := &as.clusterReq
	if !decodeOrClose(c, req) {
		return false
	}
	brokers, controller := g.metadataBrokers(c, nil)
	resp := wire.DescribeClusterResponse{EndpointType: 1, ClusterID: g.cfg.ClusterID, ControllerID: controller,
		ClusterAuthorizedOperations: authorizedOperationsUnknown}
	for _, b := range brokers {
		resp.Brokers = append(resp.Brokers, wire.DescribeClusterResponseBroker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
	}
	if code := g.clusterCode(c, acl.OpDescribe); code != wire.NoError { // KafkaApis: DESCRIBE on the cluster
		resp = wire.DescribeClusterResponse{EndpointType: req.EndpointType, ErrorCode: code, ErrorMessage: wire.NullStringOf(msgClusterAuthFailed),
			ClusterAuthorizedOperations: authorizedOperationsUnknown}
	} else if req.EndpointType == 2 {
		// KIP-919: controllers are asked of controllers; kiggy has none apart.
		resp.ErrorCode, resp.ErrorMessage = wire.UnsupportedEndpointType, wire.NullStringOf("kiggy serves only the brokers endpoint type")
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
