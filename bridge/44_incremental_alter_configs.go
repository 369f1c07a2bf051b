// IncrementalAlterConfigs (API key 44): versions 0–1 (wire.APIs).
//
// SET, DELETE, APPEND and SUBTRACT as Kafka. Differs from Kafka: topics,
// and of a broker's configs only the replication throttles, as
// AlterConfigs (brokerconfig.go).

package bridge

import (
	"slices"
	"strconv"
	"strings"

	"github.com/kiggy-io/kiggy/bridge/topicconfig"
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
	type resource struct {
		t    wire.ConfigResourceType
		name string
	}
	dups := duplicates(len(req.Resources), func(i int) resource { return resource{req.Resources[i].ResourceType, req.Resources[i].ResourceName} })
	for _, r := range req.Resources {
		if slices.Contains(dups, resource{r.ResourceType, r.ResourceName}) {
			// Kafka 4.4 (KafkaApis): every entry of a resource named
			// twice, and nothing done with it.
			resp.Resources = append(resp.Resources, wire.AlterConfigsResponseResource{ResourceType: r.ResourceType, ResourceName: r.ResourceName,
				ErrorCode: wire.InvalidRequest, ErrorMessage: wire.NullStringOf("Each resource must appear at most once.")})
			continue
		}
		resp.Resources = append(resp.Resources, g.alterResource(c, r.ResourceType, r.ResourceName, req.ValidateOnly, func(cur topicconfig.Values) (topicconfig.Values, wire.ErrorCode, string) {
			seen := map[string]bool{}
			for _, e := range r.Configs {
				if seen[e.Name] {
					return nil, wire.InvalidRequest, "Error due to duplicate config keys"
				}
				seen[e.Name] = true
				if code, msg := applyIncremental(r.ResourceType, cur, e); code != wire.NoError {
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

// applyIncremental applies one IncrementalAlterConfigs operation to v, the
// configs of a resource of type t.
func applyIncremental(t wire.ConfigResourceType, v topicconfig.Values, e wire.IncrementalAlterConfigsRequestResourceConfig) (wire.ErrorCode, string) {
	d, err := configDef(t, e.Name)
	if err != nil {
		return wire.InvalidConfig, err.Error()
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
	n, err := d.Normalize(value)
	if err != nil {
		return wire.InvalidConfig, err.Error()
	}
	v[name] = n
	return wire.NoError, ""
}
