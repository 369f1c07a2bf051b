// CreateTopics (API key 19): versions 2–7 (wire.APIs).
//
// Differs from Kafka: the replication factor must be 1 or -1 and a replica
// assignment must name this broker alone (kiggy stores each partition once,
// in the backend); at most maxPartitions partitions.

package bridge

import (
	"errors"
	"strconv"
	"strings"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/bridge/topicconfig"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyCreateTopics, (*Gateway).createTopics) }

// createTopics answers CreateTopics v2–7.
func (g *Gateway) createTopics(c *call) bool {
	as := &c.state.admin
	req := &as.createReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.CreateTopicsResponse
	mq := g.mutationQuotaFor(c, 6) // THROTTLING_QUOTA_EXCEEDED from v6 (KIP-599)
	for i := range req.Topics {
		t := &req.Topics[i]
		out := wire.CreateTopicsResponseTopic{Topic: t.Topic, NumPartitions: -1, ReplicationFactor: -1}
		code, msg, parts, overrides := g.checkCreate(t)
		if !g.canCreateTopic(c, t.Topic) { // KafkaApis: CREATE on the cluster or the topic
			code, msg = wire.TopicAuthorizationFailed, "Authorization failed."
		}
		cfg := backendConfig(overrides)
		var id [16]byte // the new topic's id, answered from v7 (KIP-516)
		if code == wire.NoError && req.ValidateOnly {
			if _, err := g.store.Topic(g.ctx, t.Topic); err == nil {
				code, msg = wire.TopicAlreadyExists, "Topic '"+t.Topic+"' already exists."
			}
		} else if code == wire.NoError {
			code, msg = g.chargeCreate(&mq, t.Topic, parts)
		}
		if code == wire.NoError && !req.ValidateOnly {
			info, err := g.store.CreateTopic(g.ctx, t.Topic, parts, cfg)
			if err == nil {
				id = info.ID
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
			case errors.Is(err, store.ErrTooManyTopics):
				// As a CreateTopicPolicy refusal: a limit of the
				// cluster, not of the request (docs/LIMITS.md).
				code, msg = wire.PolicyViolation, err.Error()
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
			g.topicIDs.note(t.Topic, id)
			out.NumPartitions, out.ReplicationFactor, out.TopicID = parts, 1, id
			for _, e := range topicConfigs(overrides, cfg, g.maxMessageBytes()) {
				out.Configs = append(out.Configs, wire.CreateTopicsResponseTopicConfig{Name: e.name, Value: wire.NullStringOf(e.value), ReadOnly: e.readOnly, Source: e.source})
			}
		}
		resp.Topics = append(resp.Topics, out)
	}
	mq.finish(c)
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// chargeCreate charges the creation of topic's parts partitions to the
// controller mutation quota, after every other check and, as in Kafka, not
// for a topic that exists (ReplicationControlManager answers
// TOPIC_ALREADY_EXISTS before it charges).
func (g *Gateway) chargeCreate(mq *mutationQuota, topic string, parts int32) (wire.ErrorCode, string) {
	if !mq.on() {
		return wire.NoError, ""
	}
	if _, err := g.store.Topic(g.ctx, topic); err == nil {
		return wire.TopicAlreadyExists, "Topic '" + topic + "' already exists."
	}
	if !mq.admit(parts) {
		return wire.ThrottlingQuotaExceeded, mutationRefused
	}
	return wire.NoError, ""
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
