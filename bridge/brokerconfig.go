package bridge

// Dynamic broker configs: of Kafka's, kiggy keeps the replication
// throttles (topicconfig.Broker), which kafka-reassign-partitions --throttle
// sets on every broker a reassignment involves and --verify deletes once it
// is done. They are stored in the system store, so every gateway on it
// sees them, per broker ("1") and as the cluster default (""), and
// DescribeConfigs reports them as Kafka 4.4 does: only when set, as
// DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG, with both levels
// among the synonyms (docs/LIMITS.md, "Replica placement").

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/kiggy-io/kiggy/bridge/topicconfig"
	"github.com/kiggy-io/kiggy/wire"
)

// nsBrokerConfig is the system-store namespace of the dynamic broker
// configs: key brokerConfigKey(resource name), value topicconfig.Values
// encoded.
const nsBrokerConfig = "broker-config"

// brokerConfigKey is the system-store key of a broker resource: the broker
// id, or "default" for the cluster default (resource name "").
func brokerConfigKey(name string) string {
	if name == "" {
		return "default"
	}
	return name
}

// brokerResourceCode checks a broker resource's name as Kafka 4.4's
// ConfigAdminManager does: this broker's id or "" (the cluster default).
func (g *Gateway) brokerResourceCode(name string) (wire.ErrorCode, string) {
	if id := strconv.Itoa(int(g.cfg.NodeID)); name != "" && name != id {
		return wire.InvalidRequest, "Unexpected broker id, expected " + id + " or empty string, but received " + name
	}
	return wire.NoError, ""
}

// dynamicBrokerConfigs returns the stored dynamic configs of the broker
// resources named names ("" the cluster default), in order, from one read
// of the namespace.
func (g *Gateway) dynamicBrokerConfigs(ctx context.Context, names ...string) ([]topicconfig.Values, error) {
	all, err := g.system.LoadSystem(ctx, nsBrokerConfig)
	if err != nil {
		return nil, err
	}
	out := make([]topicconfig.Values, len(names))
	for i, name := range names {
		out[i] = topicconfig.Values{}
		if b := all[brokerConfigKey(name)]; len(b) > 0 {
			if out[i], err = topicconfig.Decode(b); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// alterBroker computes the broker resource name's next dynamic configs with
// change, and (unless validateOnly) stores them.
func (g *Gateway) alterBroker(name string, validateOnly bool, change func(topicconfig.Values) (topicconfig.Values, wire.ErrorCode, string)) (wire.ErrorCode, wire.NullString) {
	if code, msg := g.brokerResourceCode(name); code != wire.NoError {
		return code, wire.NullStringOf(msg)
	}
	g.brokerConfigMu.Lock()
	defer g.brokerConfigMu.Unlock()
	cur, err := g.dynamicBrokerConfigs(g.ctx, name)
	if err != nil {
		return wire.UnknownServerError, wire.NullStringOf(err.Error())
	}
	next, code, msg := change(cur[0])
	if code != wire.NoError {
		return code, wire.NullStringOf(msg)
	}
	if validateOnly {
		return wire.NoError, wire.NullString{}
	}
	var enc []byte // none: the key is deleted
	if len(next) > 0 {
		enc = next.Encode()
	}
	if err := g.system.PutSystem(g.ctx, nsBrokerConfig, brokerConfigKey(strings.Clone(name)), enc); err != nil {
		return wire.UnknownServerError, wire.NullStringOf(err.Error())
	}
	return wire.NoError, wire.NullString{}
}

// dynamicBrokerEntries returns the DescribeConfigs entries of the dynamic
// broker configs set for this broker (perBroker) or the cluster default:
// a broker's own value, else the default's; with the synonyms of both
// levels, the broker's first (Kafka 4.4 ConfigHelper.createBrokerConfigEntry).
func (g *Gateway) dynamicBrokerEntries(ctx context.Context, perBroker bool) ([]configEntry, error) {
	levels, err := g.dynamicBrokerConfigs(ctx, "", strconv.Itoa(int(g.cfg.NodeID)))
	if err != nil {
		return nil, err
	}
	def, own := levels[0], levels[1]
	if !perBroker {
		own = nil
	}
	var out []configEntry
	for _, d := range topicconfig.Broker() {
		var syn []configSynonym
		if v, ok := own[d.Name]; ok {
			syn = append(syn, configSynonym{d.Name, v, wire.ConfigSourceDynamicBroker})
		}
		if v, ok := def[d.Name]; ok {
			syn = append(syn, configSynonym{d.Name, v, wire.ConfigSourceDynamicDefaultBroker})
		}
		if len(syn) == 0 {
			continue
		}
		out = append(out, configEntry{name: d.Name, value: syn[0].value, source: syn[0].source, typ: wire.ConfigTypeLong, doc: d.Doc, synonyms: syn})
	}
	return out, nil
}

// sortConfigEntries sorts entries by name.
func sortConfigEntries(entries []configEntry) {
	slices.SortFunc(entries, func(a, b configEntry) int { return strings.Compare(a.name, b.name) })
}
