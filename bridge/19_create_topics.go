// CreateTopics (API key 19): versions 2–7 (wire.APIs).
//
// Differs from Kafka: the replication factor must be 1 or -1 and a replica
// assignment must name this broker alone (kiggy stores each partition once,
// in the backend); the partitions count against --max-partitions
// (creationlimits.go).

package bridge

import (
	"errors"
	"slices"
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
	dups := duplicates(len(req.Topics), func(i int) string { return req.Topics[i].Topic })
	checks := make([]createCheck, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		ch := &checks[i]
		if ch.dup = slices.Contains(dups, t.Topic); ch.dup {
			continue
		}
		ch.code, ch.msg, ch.parts, ch.overrides = g.checkCreate(t)
		ch.authorized = g.canCreateTopic(c, t.Topic) // KafkaApis: CREATE on the cluster or the topic
	}
	tooLarge := g.requestTooLarge(req.Topics, checks)
	for i := range req.Topics {
		t := &req.Topics[i]
		if checks[i].dup {
			continue
		}
		out := wire.CreateTopicsResponseTopic{Topic: t.Topic, NumPartitions: -1, ReplicationFactor: -1}
		code, msg, parts, overrides := checks[i].code, checks[i].msg, checks[i].parts, checks[i].overrides
		if tooLarge != "" {
			code, msg = wire.PolicyViolation, tooLarge
		}
		if !checks[i].authorized {
			code, msg = wire.TopicAuthorizationFailed, "Authorization failed."
		}
		cfg := backendConfig(overrides)
		var id [16]byte       // the new topic's id, answered from v7 (KIP-516)
		var held *reservation // counted against the caps (creationlimits.go)
		if code == wire.NoError && req.ValidateOnly {
			if _, err := g.store.Topic(g.ctx, t.Topic); err == nil {
				code, msg = wire.TopicAlreadyExists, "Topic '"+t.Topic+"' already exists."
			} else if !g.creation.fits(g.ctx, g.store, parts) {
				code, msg = wire.PolicyViolation, g.creation.refusal(parts)
			}
		} else if code == wire.NoError {
			held, code, msg = g.admitCreate(&mq, t.Topic, parts)
		}
		if code == wire.NoError && !req.ValidateOnly {
			info, err := g.store.CreateTopic(g.ctx, t.Topic, parts, cfg)
			g.creation.end(held, err)
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
	for _, name := range dups {
		resp.Topics = append(resp.Topics, wire.CreateTopicsResponseTopic{Topic: name, NumPartitions: -1, ReplicationFactor: -1,
			ErrorCode: wire.InvalidRequest, ErrorMessage: wire.NullStringOf(duplicateTopic)})
	}
	mq.finish(c)
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// admitCreate counts the creation of topic's parts partitions against
// --max-partitions (creationlimits.go), then charges them to the controller
// mutation quota, after every other check and, as in Kafka, neither for a
// topic that exists (ReplicationControlManager answers
// TOPIC_ALREADY_EXISTS before its policy and its quota). On NoError the
// parts are reserved: the caller ends the reservation with the creation's
// outcome (creationLimits.end).
func (g *Gateway) admitCreate(mq *mutationQuota, topic string, parts int32) (*reservation, wire.ErrorCode, string) {
	held, ok := g.creation.reserve(g.ctx, g.store, topic, 0, parts)
	if !ok {
		if _, err := g.store.Topic(g.ctx, topic); err == nil {
			return nil, wire.TopicAlreadyExists, "Topic '" + topic + "' already exists."
		}
		return nil, wire.PolicyViolation, g.creation.refusal(parts)
	}
	if !mq.on() {
		return held, wire.NoError, ""
	}
	code, msg := wire.NoError, ""
	if _, err := g.store.Topic(g.ctx, topic); err == nil {
		code, msg = wire.TopicAlreadyExists, "Topic '"+topic+"' already exists."
	} else if !mq.admit(parts) {
		code, msg = wire.ThrottlingQuotaExceeded, mutationRefused
	}
	if code != wire.NoError {
		g.creation.release(held)
		held = nil
	}
	return held, code, msg
}

// createCheck is what createTopics found of one topic before creating any.
type createCheck struct {
	code       wire.ErrorCode
	msg        string
	parts      int32
	overrides  topicconfig.Values
	authorized bool
	dup        bool // named more than once: answered apart, duplicateTopic
}

// requestTooLarge is the POLICY_VIOLATION message of a CreateTopics request
// Kafka 4.4 refuses whole, or "". Its controller
// (ReplicationControlManager.createTopics) fails every topic of the request:
//   - validateTotalNumberOfPartitions: "Validates that a batch of topics will
//     create less than MAX_PARTITIONS_PER_BATCH" (10,000), counting each
//     topic's assignments, else its partition count (-1: the default;
//     others not positive count nothing), valid or not;
//   - the records the creations would write, in a list bounded at
//     MAX_RECORDS_PER_USER_OP (10,000): a topic's record, one per partition
//     and one per config, for the topics that pass every check and do not
//     exist; past the bound, "Unable to perform excessively large batch
//     operation." (validate_only too).
//
// Topics the principal may not create are not sent to the controller
// (ControllerApis) and count for neither.
func (g *Gateway) requestTooLarge(topics []wire.CreateTopicsRequestTopic, checks []createCheck) string {
	var parts, records int64
	for i := range topics {
		t, ch := &topics[i], &checks[i]
		if !ch.authorized || ch.dup {
			continue
		}
		switch {
		case len(t.ReplicaAssignment) > 0:
			parts += int64(len(t.ReplicaAssignment))
		case t.NumPartitions == -1:
			parts += int64(g.cfg.DefaultPartitions)
		case t.NumPartitions > 0:
			parts += int64(t.NumPartitions)
		}
		if ch.code == wire.NoError {
			records += 1 + int64(ch.parts) + int64(len(ch.overrides))
		}
	}
	if parts > maxPartitionsPerRequest {
		return "Excessively large number of partitions per request."
	}
	if records <= maxRecordsPerRequest {
		return ""
	}
	// Only now is it worth asking which exist (a round trip each on Iggy).
	for i := range topics {
		ch := &checks[i]
		if ch.authorized && !ch.dup && ch.code == wire.NoError {
			if _, err := g.store.Topic(g.ctx, topics[i].Topic); err == nil {
				records -= 1 + int64(ch.parts) + int64(len(ch.overrides))
			}
		}
	}
	if records > maxRecordsPerRequest {
		return "Unable to perform excessively large batch operation."
	}
	return ""
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
	if parts <= 0 {
		// Beyond maxPartitionsPerRequest the request is refused whole
		// (requestTooLarge).
		return wire.InvalidPartitions, "Number of partitions must be between 1 and " + strconv.Itoa(maxPartitionsPerRequest) + ".", 0, nil
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
