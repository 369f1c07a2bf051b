package bridge

import (
	"errors"
	"strconv"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/bridge/topicconfig"
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
	// synonyms are the config's sources, highest priority first; none
	// means the entry itself is its only synonym.
	synonyms []configSynonym
}

// configSynonym is one source of a config's value.
type configSynonym struct {
	name, value string
	source      wire.ConfigSource
}

// durabilityDoc says what an acknowledgement promises at level d
// (docs/IGGY.md, "Durability").
func durabilityDoc(d store.Durability) string {
	switch d {
	case store.DurabilityWritten:
		return "Acknowledged records are written to the backend's files: a crash of the backend process loses none; a machine crash can."
	case store.DurabilityFsync:
		return "Acknowledged records are written and fsynced by the backend: a machine crash loses none."
	case store.DurabilityBuffered:
		return "WARNING: the backend acknowledges from memory (an Iggy topic with buffered flush options): a crash of iggy-server can lose acknowledged records."
	case store.DurabilityMemory:
		return "The embedded in-memory log: records live as long as the kiggy process."
	}
	return "The backend does not say when it confirms a write."
}

// maxMessageBytes is the largest record batch kiggy accepts: the frame limit.
func (g *Gateway) maxMessageBytes() int64 { return int64(g.cfg.MaxFrameSize) }

// wireType maps a topic config type to DescribeConfigs' config type.
var wireType = [...]wire.ConfigType{
	topicconfig.Boolean: wire.ConfigTypeBoolean, topicconfig.String: wire.ConfigTypeString,
	topicconfig.Int: wire.ConfigTypeInt, topicconfig.Long: wire.ConfigTypeLong,
	topicconfig.Double: wire.ConfigTypeDouble, topicconfig.List: wire.ConfigTypeList,
}

// nullDefaultSynonym are the first broker synonyms without a default of
// their own (Kafka 4.4 KafkaConfig): DescribeConfigs lists none for them.
var nullDefaultSynonym = map[string]bool{"log.retention.ms": true, "log.flush.interval.ms": true, "log.roll.ms": true, "log.roll.jitter.ms": true}

// storedDoc describes a config kiggy keeps and reports without effect.
const storedDoc = "Stored and reported; no effect in kiggy (it concerns Kafka's own segment files, cleaner, replicas or tiered storage)."

// topicConfigs reports every Kafka topic config (docs/LIMITS.md, "Topic
// configs"): a client's override as DYNAMIC_TOPIC_CONFIG, a setting the
// backend topic has without one (an Iggy topic made elsewhere) likewise,
// else kiggy's default (DEFAULT_CONFIG; max.message.bytes follows the
// broker's message.max.bytes, STATIC_BROKER_CONFIG). Then the read-only
// kiggy.durability.
func topicConfigs(overrides topicconfig.Values, cfg store.TopicConfig, maxMessage int64) []configEntry {
	backend := map[string]string{}
	if cfg.MessageExpiry > 0 {
		backend["retention.ms"] = strconv.FormatInt(cfg.MessageExpiry.Milliseconds(), 10)
	}
	if cfg.MaxBytes > 0 {
		backend["retention.bytes"] = strconv.FormatUint(cfg.MaxBytes, 10)
	}
	// A topic whose backend fsyncs every write reports flush.messages 1 and
	// flush.ms 0 (docs/IGGY.md, "Durability").
	if cfg.Durability == store.DurabilityFsync {
		backend["flush.messages"], backend["flush.ms"] = "1", "0"
	}
	defs := topicconfig.All()
	out := make([]configEntry, 0, len(defs)+1)
	for i := range defs {
		d := &defs[i]
		e := configEntry{name: d.Name, typ: wireType[d.Type], doc: d.Doc, source: wire.ConfigSourceDefault, value: d.Default}
		if d.Effect == topicconfig.Stored && e.doc == "" {
			e.doc = storedDoc
		}
		// kiggy's own defaults where it differs from Kafka's: nothing
		// expires unless asked; the frame limit caps a batch.
		switch d.Name {
		case "retention.ms":
			e.value = "-1"
		case "max.message.bytes":
			e.value, e.source = strconv.FormatInt(maxMessage, 10), wire.ConfigSourceStaticBroker
		}
		// The broker default's synonym: the first broker config, when it
		// has a default (log.retention.ms, log.flush.interval.ms,
		// log.roll.ms and log.roll.jitter.ms have none), as Kafka 4.4
		// lists it.
		if len(d.Synonyms) > 0 && !nullDefaultSynonym[d.Synonyms[0]] {
			e.synonyms = append(e.synonyms, configSynonym{d.Synonyms[0], e.value, e.source})
		}
		if v, ok := overrides[d.Name]; ok {
			e.value, e.source = v, wire.ConfigSourceDynamicTopic
		} else if v, ok := backend[d.Name]; ok {
			e.value, e.source = v, wire.ConfigSourceDynamicTopic
		}
		if e.source == wire.ConfigSourceDynamicTopic {
			e.synonyms = append([]configSynonym{{d.Name, e.value, e.source}}, e.synonyms...)
		}
		out = append(out, e)
	}
	return append(out, configEntry{name: "kiggy.durability", value: cfg.Durability.String(), readOnly: true,
		source: wire.ConfigSourceDefault, typ: wire.ConfigTypeString, doc: durabilityDoc(cfg.Durability)})
}

// alterResource answers one resource of an AlterConfigs or
// IncrementalAlterConfigs: ALTER_CONFIGS on it first (KafkaApis, before
// anything else), then a topic's overrides or a broker's dynamic configs
// (brokerconfig.go) changed by change, anything else refused.
func (g *Gateway) alterResource(c *call, t wire.ConfigResourceType, name string, validateOnly bool,
	change func(topicconfig.Values) (topicconfig.Values, wire.ErrorCode, string)) wire.AlterConfigsResponseResource {
	out := wire.AlterConfigsResponseResource{ResourceType: t, ResourceName: name}
	switch code := g.configResourceCode(c, acl.OpAlterConfigs, t, name); {
	case code != wire.NoError:
		out.ErrorCode, out.ErrorMessage = code, wire.NullStringOf(code.String())
	case t == wire.ConfigResourceBroker:
		out.ErrorCode, out.ErrorMessage = g.alterBroker(name, validateOnly, change)
	case t != wire.ConfigResourceTopic:
		out.ErrorCode, out.ErrorMessage = wire.InvalidRequest, wire.NullStringOf("kiggy alters topic and broker configs only")
	default:
		out.ErrorCode, out.ErrorMessage = g.alterTopic(name, validateOnly, change)
	}
	return out
}

// alterTopic computes a topic's next overrides with change, checks them,
// and (unless validateOnly) applies the retention to the backend and
// stores them.
func (g *Gateway) alterTopic(topic string, validateOnly bool, change func(topicconfig.Values) (topicconfig.Values, wire.ErrorCode, string)) (wire.ErrorCode, wire.NullString) {
	fail := func(code wire.ErrorCode, msg string) (wire.ErrorCode, wire.NullString) {
		return code, wire.NullStringOf(msg)
	}
	info, err := g.store.Topic(g.ctx, topic)
	if errors.Is(err, store.ErrUnknownTopic) {
		return fail(wire.UnknownTopicOrPartition, "Topic "+topic+" does not exist.")
	} else if err != nil {
		return fail(wire.UnknownServerError, err.Error())
	}
	cur, err := g.topicOverrides(g.ctx, topic)
	if err != nil {
		return fail(wire.UnknownServerError, err.Error())
	}
	prev := backendConfig(cur)
	next, code, msg := change(cur)
	if code != wire.NoError {
		return fail(code, msg)
	}
	if err := next.Check(); err != nil {
		return fail(wire.InvalidConfig, err.Error())
	}
	if validateOnly {
		return wire.NoError, wire.NullString{}
	}
	want := backendConfig(next)
	if u, ok := g.store.(store.TopicUpdater); ok && (want.MessageExpiry != prev.MessageExpiry || want.MaxBytes != prev.MaxBytes ||
		want.MessageExpiry != info.Config.MessageExpiry || want.MaxBytes != info.Config.MaxBytes) {
		if err := u.UpdateTopic(g.ctx, topic, want); err != nil {
			if errors.Is(err, store.ErrInvalidConfig) {
				return fail(wire.InvalidConfig, err.Error())
			}
			return fail(wire.UnknownServerError, err.Error())
		}
	}
	if err := g.putTopicOverrides(g.ctx, topic, next); err != nil {
		return fail(wire.UnknownServerError, err.Error())
	}
	return wire.NoError, wire.NullString{}
}

// configDef finds config name of a resource of type t: a topic config, or
// one of the dynamic broker configs kiggy keeps (brokerconfig.go). The
// error, for a name it does not know, has Kafka's message for a topic and
// kiggy's for a broker.
func configDef(t wire.ConfigResourceType, name string) (*topicconfig.Def, error) {
	if t == wire.ConfigResourceBroker {
		if d, ok := topicconfig.LookupBroker(name); ok {
			return d, nil
		}
		return nil, topicconfig.UnknownBroker(name)
	}
	if d, ok := topicconfig.Lookup(name); ok {
		return d, nil
	}
	return nil, topicconfig.Unknown(name)
}
