// DescribeConfigs (API key 32): versions 1–4 (wire.APIs).
//
// Topics: every Kafka 4.4 topic config, with Kafka's sources and synonyms
// (configs.go). Differs from Kafka: the broker resource lists a fixed set of
// kiggy's settings, and many topic configs are stored without effect
// (docs/LIMITS.md "Topic configs").

package bridge

import (
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/bridge/topicconfig"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeConfigs, (*Gateway).describeConfigs) }

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
			case errors.Is(err, store.ErrUnknownTopic):
				out.ErrorCode, out.ErrorMessage = wire.UnknownTopicOrPartition, wire.NullStringOf("Topic "+r.ResourceName+" does not exist.")
			case err != nil:
				out.ErrorCode, out.ErrorMessage = wire.UnknownServerError, wire.NullStringOf(err.Error())
			default:
				var ov topicconfig.Values
				if ov, err = g.topicOverrides(g.ctx, r.ResourceName); err != nil {
					out.ErrorCode, out.ErrorMessage = wire.UnknownServerError, wire.NullStringOf(err.Error())
				} else {
					entries = topicConfigs(ov, info.Config, g.maxMessageBytes())
				}
			}
		case wire.ConfigResourceBroker:
			if code, msg := g.brokerResourceCode(r.ResourceName); code != wire.NoError {
				out.ErrorCode, out.ErrorMessage = code, wire.NullStringOf(msg)
				break
			}
			// The cluster default ("") is its dynamic configs alone, a
			// broker its settings and its dynamic configs (Kafka 4.4
			// ConfigHelper.describeConfigs).
			perBroker := r.ResourceName != ""
			dynamic, err := g.dynamicBrokerEntries(g.ctx, perBroker)
			if err != nil {
				out.ErrorCode, out.ErrorMessage = wire.UnknownServerError, wire.NullStringOf(err.Error())
				break
			}
			if perBroker {
				entries = append(g.brokerConfigs(), dynamic...)
				sortConfigEntries(entries)
			} else {
				entries = dynamic
			}
		default:
			out.ErrorCode, out.ErrorMessage = wire.InvalidRequest, wire.NullStringOf("kiggy describes topic and broker configs only")
		}
		for _, e := range entries {
			if r.ConfigNames != nil && !slices.Contains(r.ConfigNames, e.name) {
				continue
			}
			ce := wire.DescribeConfigsResponseResourceConfig{Name: e.name, Value: wire.NullStringOf(e.value), ReadOnly: e.readOnly, Source: e.source, ConfigType: e.typ}
			if req.IncludeSynonyms {
				if len(e.synonyms) == 0 {
					e.synonyms = []configSynonym{{e.name, e.value, e.source}}
				}
				for _, syn := range e.synonyms {
					ce.ConfigSynonyms = append(ce.ConfigSynonyms, wire.DescribeConfigsResponseResourceConfigConfigSynonym{Name: syn.name, Value: wire.NullStringOf(syn.value), Source: syn.source})
				}
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

// brokerConfigs reports the broker-level settings clients and tools read.
func (g *Gateway) brokerConfigs() []configEntry {
	return []configEntry{
		{"auto.create.topics.enable", strconv.FormatBool(!g.cfg.NoAutoCreateTopics), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeBoolean, "", nil},
		{"broker.id", strconv.Itoa(int(g.cfg.NodeID)), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, "", nil},
		{"default.replication.factor", "1", true, wire.ConfigSourceDefault, wire.ConfigTypeInt, "", nil},
		{"group.max.size", strconv.Itoa(groupMaxSize(g.cfg.Group.MaxGroupSize)), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, "", nil},
		{"message.max.bytes", strconv.FormatInt(g.maxMessageBytes(), 10), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, "", nil},
		{"min.insync.replicas", "1", true, wire.ConfigSourceDefault, wire.ConfigTypeInt, "", nil},
		{"node.id", strconv.Itoa(int(g.cfg.NodeID)), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, "", nil},
		{"num.partitions", strconv.Itoa(int(g.cfg.DefaultPartitions)), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, "", nil},
		{"offsets.topic.replication.factor", "1", true, wire.ConfigSourceDefault, wire.ConfigTypeShort, "", nil},
		{"socket.request.max.bytes", strconv.FormatInt(g.maxMessageBytes(), 10), true, wire.ConfigSourceStaticBroker, wire.ConfigTypeInt, "", nil},
		{"transaction.state.log.replication.factor", "1", true, wire.ConfigSourceDefault, wire.ConfigTypeShort, "", nil},
	}
}

// groupMaxSize is group.max.size as Kafka writes it: no cap is
// Integer.MAX_VALUE, its default.
func groupMaxSize(n int) int {
	if n <= 0 {
		return math.MaxInt32
	}
	return n
}
