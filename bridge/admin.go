package bridge

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

// maxPartitions is the most partitions one request may create: Iggy's
// CreateTopic/CreatePartitions limit (docs/design/iggy-protocol.md §3.5).
const maxPartitions = 1000

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

// topicConfigFromKafka maps CreateTopics configs onto what the backend can
// hold (retention.ms → message expiry, retention.bytes → size cap) and
// accepts configs whose value is what kiggy does anyway. Anything else is
// INVALID_CONFIG with a message naming the key.
func topicConfigFromKafka(configs []wire.CreateTopicsRequestTopicConfig) (TopicConfig, string) {
	var cfg TopicConfig
	for _, c := range configs {
		v := c.Value.S
		if !c.Value.Valid {
			continue // null = the default
		}
		switch c.Name {
		case "retention.ms":
			ms, err := strconv.ParseInt(v, 10, 64)
			switch {
			case err != nil || ms == 0 || ms < -1:
				return cfg, "retention.ms must be -1 (forever) or a positive number of milliseconds"
			case ms > 0:
				cfg.MessageExpiry = time.Duration(ms) * time.Millisecond
			}
		case "retention.bytes":
			n, err := strconv.ParseInt(v, 10, 64)
			switch {
			case err != nil || n == 0 || n < -1:
				return cfg, "retention.bytes must be -1 (unlimited) or a positive number of bytes"
			case n > 0:
				cfg.MaxBytes = uint64(n)
			}
		case "cleanup.policy":
			if v != "delete" {
				return cfg, "cleanup.policy: kiggy supports only delete (Iggy has no compaction)"
			}
		case "compression.type":
			if v != "producer" && v != "uncompressed" {
				return cfg, "compression.type: kiggy stores records uncompressed and serves them uncompressed; use producer"
			}
		case "message.timestamp.type":
			if v != "CreateTime" {
				return cfg, "message.timestamp.type: kiggy keeps the producer's CreateTime only"
			}
		case "min.insync.replicas":
			if v != "1" {
				return cfg, "min.insync.replicas: kiggy has one replica per partition; use 1"
			}
		case "flush.messages", "flush.ms":
			// Kafka: LONG, flush.messages at least 1, flush.ms at least 0;
			// Long.MAX_VALUE (the default) means "never fsync". Iggy fsyncs
			// every write or none, so any other interval fsyncs every write:
			// never a weaker promise than asked (docs/IGGY.md, "Durability").
			n, err := strconv.ParseInt(v, 10, 64)
			floor := int64(1)
			if c.Name == "flush.ms" {
				floor = 0
			}
			switch {
			case err != nil:
				return cfg, "Invalid value " + v + " for configuration " + c.Name + ": Not a number of type LONG"
			case n < floor:
				return cfg, "Invalid value " + v + " for configuration " + c.Name + ": Value must be at least " + strconv.FormatInt(floor, 10)
			case n < math.MaxInt64:
				cfg.Durability = DurabilityFsync
			}
		default:
			return cfg, c.Name + ": not supported by kiggy (supported: retention.ms, retention.bytes, flush.messages, flush.ms, cleanup.policy=delete, compression.type=producer, message.timestamp.type=CreateTime, min.insync.replicas=1)"
		}
	}
	return cfg, ""
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
		code, msg, parts, cfg := g.checkCreate(t)
		if !g.canCreateTopic(c, t.Topic) { // KafkaApis: CREATE on the cluster or the topic
			code, msg = wire.TopicAuthorizationFailed, "Authorization failed."
		}
		switch {
		case code != wire.NoError:
		case req.ValidateOnly:
			if _, err := g.store.Topic(g.ctx, t.Topic); err == nil {
				code, msg = wire.TopicAlreadyExists, "Topic '"+t.Topic+"' already exists."
			}
		default:
			_, err := g.store.CreateTopic(g.ctx, t.Topic, parts, cfg)
			switch {
			case errors.Is(err, ErrTopicExists):
				code, msg = wire.TopicAlreadyExists, "Topic '"+t.Topic+"' already exists."
			case errors.Is(err, ErrInvalidConfig):
				code, msg = wire.InvalidConfig, err.Error()
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
			for _, e := range topicConfigs(cfg, g.maxMessageBytes()) {
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
func (g *Gateway) checkCreate(t *wire.CreateTopicsRequestTopic) (wire.ErrorCode, string, int32, TopicConfig) {
	if !validTopicName(t.Topic) {
		return wire.InvalidTopicException, "Topic name '" + t.Topic + "' is illegal: use 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'", 0, TopicConfig{}
	}
	// KIP-464: -1 means the broker default.
	if t.ReplicationFactor != -1 && t.ReplicationFactor != 1 {
		return wire.InvalidReplicationFactor, "Replication factor must be 1 or -1: kiggy stores each partition once, in Iggy (which replicates on its own).", 0, TopicConfig{}
	}
	parts := t.NumPartitions
	if len(t.ReplicaAssignment) > 0 {
		if parts != -1 {
			return wire.InvalidRequest, "Both numPartitions and replicasAssignments were set.", 0, TopicConfig{}
		}
		for _, a := range t.ReplicaAssignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != g.cfg.NodeID {
				return wire.InvalidReplicaAssignment, "Every partition must be assigned to broker " + strconv.Itoa(int(g.cfg.NodeID)) + " alone.", 0, TopicConfig{}
			}
		}
		parts = int32(len(t.ReplicaAssignment))
	}
	if parts == -1 {
		parts = g.cfg.DefaultPartitions
	}
	if parts <= 0 || parts > maxPartitions {
		return wire.InvalidPartitions, "Number of partitions must be between 1 and " + strconv.Itoa(maxPartitions) + ".", 0, TopicConfig{}
	}
	cfg, bad := topicConfigFromKafka(t.Configs)
	if bad != "" {
		return wire.InvalidConfig, bad, 0, TopicConfig{}
	}
	return wire.NoError, "", parts, cfg
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
			return wire.NoError, ""
		case errors.Is(err, ErrUnknownTopic):
			return wire.UnknownTopicOrPartition, "This server does not host this topic-partition."
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
	if errors.Is(err, ErrUnknownTopic) {
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
		if errors.Is(err, ErrInvalidPartitions) {
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

// alterConfigs refuses AlterConfigs: topic settings are fixed at creation.
func (g *Gateway) alterConfigs(c *call) bool {
	as := &c.state.admin
	if !decodeOrClose(c, &as.alterReq) {
		return false
	}
	var resp wire.AlterConfigsResponse
	for _, r := range as.alterReq.Resources {
		resp.Resources = append(resp.Resources, g.refuseAlter(c, r.ResourceType, r.ResourceName))
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// incrementalAlterConfigs refuses IncrementalAlterConfigs likewise.
func (g *Gateway) incrementalAlterConfigs(c *call) bool {
	as := &c.state.admin
	if !decodeOrClose(c, &as.incrReq) {
		return false
	}
	var resp wire.IncrementalAlterConfigsResponse
	for _, r := range as.incrReq.Resources {
		resp.Resources = append(resp.Resources, g.refuseAlter(c, r.ResourceType, r.ResourceName))
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// refuseAlter answers one resource of an alter: ALTER_CONFIGS on it first
// (KafkaApis), then the refusal.
func (g *Gateway) refuseAlter(c *call, t wire.ConfigResourceType, name string) wire.AlterConfigsResponseResource {
	if code := g.configResourceCode(c, acl.OpAlterConfigs, t, name); code != wire.NoError {
		return wire.AlterConfigsResponseResource{ErrorCode: code, ResourceType: t, ResourceName: name, ErrorMessage: wire.NullStringOf(code.String())}
	}
	return wire.AlterConfigsResponseResource{ErrorCode: wire.InvalidConfig, ResourceType: t, ResourceName: name,
		ErrorMessage: wire.NullStringOf("kiggy does not alter configs: set retention.ms / retention.bytes when creating the topic")}
}
