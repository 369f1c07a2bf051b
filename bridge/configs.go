package bridge

import (
	"errors"
	"math"
	"strconv"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

// configEntry is one config as DescribeConfigs (and CreateTopics v5+)
// reports it.
type configEntry struct {
	name, value string
	readOnly    bool
	source      wire.ConfigSource
	typ         wire.ConfigType
	doc         string
}

// durabilityDoc says what an acknowledgement promises at level d
// (docs/IGGY.md, "Durability").
func durabilityDoc(d Durability) string {
	switch d {
	case DurabilityWritten:
		return "Acknowledged records are written to the backend's files: a crash of the backend process loses none; a machine crash can."
	case DurabilityFsync:
		return "Acknowledged records are written and fsynced by the backend: a machine crash loses none."
	case DurabilityBuffered:
		return "WARNING: the backend acknowledges from memory (an Iggy topic with buffered flush options): a crash of iggy-server can lose acknowledged records."
	case DurabilityMemory:
		return "The embedded in-memory log: records live as long as the kiggy process."
	}
	return "The backend does not say when it confirms a write."
}

// maxMessageBytes is the largest record batch kiggy accepts: the frame limit.
func (g *Gateway) maxMessageBytes() int64 { return int64(g.cfg.MaxFrameSize) }

// topicConfigs reports a topic's configs with values that reflect what
// kiggy and the backend do: settable ones (retention) as topic or default
// source; fixed behaviour as read-only defaults.
func topicConfigs(cfg TopicConfig, maxMessage int64) []configEntry {
	retMs, retSrc := "-1", wire.ConfigSourceDefault
	if cfg.MessageExpiry > 0 {
		retMs, retSrc = strconv.FormatInt(cfg.MessageExpiry.Milliseconds(), 10), wire.ConfigSourceDynamicTopic
	}
	retBytes, bytesSrc := "-1", wire.ConfigSourceDefault
	if cfg.MaxBytes > 0 {
		retBytes, bytesSrc = strconv.FormatUint(cfg.MaxBytes, 10), wire.ConfigSourceDynamicTopic
	}
	// Kafka's flush.* defaults (Long.MAX_VALUE) mean "the OS flushes"; a
	// topic whose backend fsyncs every write reports 1 and 0
	// (docs/IGGY.md, "Durability").
	flushMsgs, flushMs, flushSrc := strconv.FormatInt(math.MaxInt64, 10), strconv.FormatInt(math.MaxInt64, 10), wire.ConfigSourceDefault
	if cfg.Durability == DurabilityFsync {
		flushMsgs, flushMs, flushSrc = "1", "0", wire.ConfigSourceDynamicTopic
	}
	return []configEntry{
		{"cleanup.policy", "delete", true, wire.ConfigSourceDefault, wire.ConfigTypeList, "Only delete: Iggy has no compaction."},
		{"compression.type", "producer", true, wire.ConfigSourceDefault, wire.ConfigTypeString, "Records are decompressed on produce and served uncompressed."},
		{"flush.messages", flushMsgs, false, flushSrc, wire.ConfigTypeLong, "1 = the backend fsyncs every write (any interval below the default asks for that); set at creation."},
		{"flush.ms", flushMs, false, flushSrc, wire.ConfigTypeLong, "0 = the backend fsyncs every write (any interval below the default asks for that); set at creation."},
		{"kiggy.durability", cfg.Durability.String(), true, wire.ConfigSourceDefault, wire.ConfigTypeString, durabilityDoc(cfg.Durability)},
		{"max.message.bytes", strconv.FormatInt(maxMessage, 10), true, wire.ConfigSourceDefault, wire.ConfigTypeInt, "The largest request frame kiggy accepts."},
		{"message.timestamp.type", "CreateTime", true, wire.ConfigSourceDefault, wire.ConfigTypeString, "The producer's timestamp is kept."},
		{"min.insync.replicas", "1", true, wire.ConfigSourceDefault, wire.ConfigTypeInt, "One replica per partition (Iggy replicates on its own)."},
		{"retention.bytes", retBytes, false, bytesSrc, wire.ConfigTypeLong, "Size cap (Iggy max_topic_size); set at creation."},
		{"retention.ms", retMs, false, retSrc, wire.ConfigTypeLong, "Message expiry (Iggy message_expiry); set at creation."},
		{"unclean.leader.election.enable", "false", true, wire.ConfigSourceDefault, wire.ConfigTypeBoolean, ""},
	}
}

// brokerConfigs reports the broker-level settings clients and tools read.
func (g *Gateway) brokerConfigs() []configEntry {
	return []configEntry{
		{"auto.create.topics.enable", strconv.FormatBool(!g.cfg.NoAutoCreateTopics), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeBoolean, ""},
		{"broker.id", strconv.Itoa(int(g.cfg.NodeID)), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, ""},
		{"default.replication.factor", "1", true, wire.ConfigSourceDefault, wire.ConfigTypeInt, ""},
		{"message.max.bytes", strconv.FormatInt(g.maxMessageBytes(), 10), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, ""},
		{"min.insync.replicas", "1", true, wire.ConfigSourceDefault, wire.ConfigTypeInt, ""},
		{"node.id", strconv.Itoa(int(g.cfg.NodeID)), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, ""},
		{"num.partitions", strconv.Itoa(int(g.cfg.DefaultPartitions)), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, ""},
		{"offsets.topic.replication.factor", "1", true, wire.ConfigSourceDefault, wire.ConfigTypeShort, ""},
		{"socket.request.max.bytes", strconv.FormatInt(g.maxMessageBytes(), 10), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, ""},
		{"transaction.state.log.replication.factor", "1", true, wire.ConfigSourceDefault, wire.ConfigTypeShort, ""},
	}
}

// describeConfigs answers DescribeConfigs v1–4 for topics and the broker.
func (g *Gateway) describeConfigs(c *call) bool {
	as := &c.state.admin
	req := &as.descReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.DescribeConfigsResponse
	for _, r := range req.Resources {
		out := wire.DescribeConfigsResponseResource{ResourceType: r.ResourceType, ResourceName: r.ResourceName}
		var entries []configEntry
		known := r.ResourceType == wire.ConfigResourceTopic || r.ResourceType == wire.ConfigResourceBroker
		if code := g.configResourceCode(c, acl.OpDescribeConfigs, r.ResourceType, r.ResourceName); known && code != wire.NoError {
			// KafkaApis: DESCRIBE_CONFIGS on the topic, or on the cluster for the broker.
			out.ErrorCode, out.ErrorMessage = code, wire.NullStringOf(code.String())
			resp.Resources = append(resp.Resources, out)
			continue
		}
		switch r.ResourceType {
		case wire.ConfigResourceTopic:
			info, err := g.store.Topic(g.ctx, r.ResourceName)
			switch {
			case errors.Is(err, ErrUnknownTopic):
				out.ErrorCode, out.ErrorMessage = wire.UnknownTopicOrPartition, wire.NullStringOf("Topic "+r.ResourceName+" does not exist.")
			case err != nil:
				out.ErrorCode, out.ErrorMessage = wire.UnknownServerError, wire.NullStringOf(err.Error())
			default:
				entries = topicConfigs(info.Config, g.maxMessageBytes())
			}
		case wire.ConfigResourceBroker:
			if r.ResourceName != "" && r.ResourceName != strconv.Itoa(int(g.cfg.NodeID)) {
				out.ErrorCode, out.ErrorMessage = wire.InvalidRequest, wire.NullStringOf("Unexpected broker id, expected "+strconv.Itoa(int(g.cfg.NodeID))+" or empty string, but received "+r.ResourceName)
			} else {
				entries = g.brokerConfigs()
			}
		default:
			out.ErrorCode, out.ErrorMessage = wire.InvalidRequest, wire.NullStringOf("kiggy describes topic and broker configs only")
		}
		for _, e := range entries {
			if r.ConfigNames != nil && !contains(r.ConfigNames, e.name) {
				continue
			}
			ce := wire.DescribeConfigsResponseResourceConfig{Name: e.name, Value: wire.NullStringOf(e.value), ReadOnly: e.readOnly, Source: e.source, ConfigType: e.typ}
			if req.IncludeSynonyms {
				ce.ConfigSynonyms = []wire.DescribeConfigsResponseResourceConfigConfigSynonym{{Name: e.name, Value: wire.NullStringOf(e.value), Source: e.source}}
			}
			if req.IncludeDocumentation && e.doc != "" {
				ce.Documentation = wire.NullStringOf(e.doc)
			}
			out.Configs = append(out.Configs, ce)
		}
		resp.Resources = append(resp.Resources, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
