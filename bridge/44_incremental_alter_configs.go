// IncrementalAlterConfigs (API key 44): versions 0–1 (wire.APIs).
//
// SET, DELETE, APPEND and SUBTRACT as Kafka. Differs from Kafka: topics
// only, as AlterConfigs (refuseResource, configs.go), but for the deletion
// of replication throttles from a broker, which succeeds with nothing to
// delete (clearThrottles).

package bridge

import (
	"slices"
	"strconv"
	"strings"

	"github.com/kiggy-io/kiggy/bridge/topicconfig"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyIncrementalAlterConfigs, (*Gateway).incrementalAlterConfigs) }

// incrementalAlterConfigs answers IncrementalAlterConfigs v0–1: SET and
// DELETE on any topic config, APPEND and SUBTRACT on LIST ones, applied to
// the topic's current overrides.
func (g *Gateway) incrementalAlterConfigs(c *call) bool {
	as := &c.state.admin
	req := &as.incrReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.IncrementalAlterConfigsResponse
	for _, r := range req.Resources {
		if r.ResourceType == wire.ConfigResourceBroker && onlyThrottleDeletes(r.Configs) {
			resp.Resources = append(resp.Resources, g.clearThrottles(c, r.ResourceName))
			continue
		}
		resp.Resources = append(resp.Resources, g.alterResource(c, r.ResourceType, r.ResourceName, req.ValidateOnly, func(cur topicconfig.Values) (topicconfig.Values, wire.ErrorCode, string) {
			seen := map[string]bool{}
			for _, e := range r.Configs {
				if seen[e.Name] {
					return nil, wire.InvalidRequest, "Error due to duplicate config keys"
				}
				seen[e.Name] = true
				if code, msg := applyIncremental(cur, e); code != wire.NoError {
					return nil, code, msg
				}
			}
			return cur, wire.NoError, ""
		}))
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// replicationThrottles are the dynamic broker configs that
// kafka-reassign-partitions sets with --throttle and deletes from every
// broker when --verify finds a reassignment complete.
var replicationThrottles = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate",
	"replica.alter.log.dirs.io.max.bytes.per.second"}

// onlyThrottleDeletes reports whether configs only delete replication
// throttles.
func onlyThrottleDeletes(configs []wire.IncrementalAlterConfigsRequestResourceConfig) bool {
	for _, e := range configs {
		if e.Op != wire.IncrementalAlterConfigDelete || !slices.Contains(replicationThrottles, e.Name) {
			return false
		}
	}
	return len(configs) > 0
}

// clearThrottles answers a broker resource whose operations only delete
// replication throttles: kiggy has no replication and never has one set,
// so, with ALTER_CONFIGS on the cluster, there is nothing to delete and the
// operation succeeds, as Kafka's does for a throttle that is not set
// (kafka-reassign-partitions --verify's cleanup). Any other broker config
// alteration is refused (refuseResource).
func (g *Gateway) clearThrottles(c *call, name string) wire.AlterConfigsResponseResource {
	out := wire.AlterConfigsResponseResource{ResourceType: wire.ConfigResourceBroker, ResourceName: name}
	if code := g.configResourceCode(c, acl.OpAlterConfigs, wire.ConfigResourceBroker, name); code != wire.NoError {
		out.ErrorCode, out.ErrorMessage = code, wire.NullStringOf(code.String())
	}
	return out
}

// applyIncremental applies one IncrementalAlterConfigs operation to v.
func applyIncremental(v topicconfig.Values, e wire.IncrementalAlterConfigsRequestResourceConfig) (wire.ErrorCode, string) {
	d, ok := topicconfig.Lookup(e.Name)
	if !ok {
		return wire.InvalidConfig, topicconfig.Unknown(e.Name).Error()
	}
	name := d.Name
	switch e.Op {
	case wire.IncrementalAlterConfigDelete:
		delete(v, name)
		return wire.NoError, ""
	case wire.IncrementalAlterConfigSet, wire.IncrementalAlterConfigAppend, wire.IncrementalAlterConfigSubtract:
	default:
		return wire.InvalidRequest, "Unknown alter configs operation type " + strconv.Itoa(int(e.Op))
	}
	if !e.Value.Valid {
		return wire.InvalidRequest, "Null value not supported for : " + name
	}
	value := e.Value.S
	if e.Op != wire.IncrementalAlterConfigSet {
		// Kafka 4.4 ConfigAdminManager's wording.
		if d.Type != topicconfig.List {
			op := "append"
			if e.Op == wire.IncrementalAlterConfigSubtract {
				op = "subtract"
			}
			return wire.InvalidConfig, "Config value " + op + " is not allowed for config key: " + name
		}
		list := topicconfig.ParseList(v.Get(name))
		for _, x := range topicconfig.ParseList(value) {
			i := slices.Index(list, x)
			switch {
			case e.Op == wire.IncrementalAlterConfigAppend && i < 0:
				list = append(list, x)
			case e.Op == wire.IncrementalAlterConfigSubtract && i >= 0:
				list = slices.Delete(list, i, i+1)
			}
		}
		value = strings.Join(list, ",")
	}
	n, err := topicconfig.Normalize(name, value)
	if err != nil {
		return wire.InvalidConfig, err.Error()
	}
	v[name] = n
	return wire.NoError, ""
}
