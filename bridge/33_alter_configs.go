// AlterConfigs (API key 33): versions 0–2 (wire.APIs).
//
// Differs from Kafka: topics, and of a broker's configs only the
// replication throttles (brokerconfig.go); its other configs are kiggy's
// command-line settings.

package bridge

import (
	"strings"

	"github.com/kiggy-io/kiggy/bridge/topicconfig"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyAlterConfigs, (*Gateway).alterConfigs) }

// alterConfigs answers AlterConfigs v0–2: each topic's override set, or
// broker's dynamic config set, is replaced by the request's (configs left
// out revert to their defaults).
func (g *Gateway) alterConfigs(c *call) bool {
	as := &c.state.admin
	req := &as.alterReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.AlterConfigsResponse
	for _, r := range req.Resources {
		resp.Resources = append(resp.Resources, g.alterResource(c, r.ResourceType, r.ResourceName, req.ValidateOnly, func(topicconfig.Values) (topicconfig.Values, wire.ErrorCode, string) {
			next := topicconfig.Values{}
			for _, e := range r.Configs {
				if _, dup := next[e.Name]; dup {
					return nil, wire.InvalidRequest, "Error due to duplicate config keys"
				}
				if !e.Value.Valid {
					return nil, wire.InvalidConfig, "Null value not supported for topic configs: " + e.Name
				}
				d, err := configDef(r.ResourceType, e.Name)
				if err != nil {
					return nil, wire.InvalidConfig, err.Error()
				}
				v, err := d.Normalize(e.Value.S)
				if err != nil {
					return nil, wire.InvalidConfig, err.Error()
				}
				next[strings.Clone(e.Name)] = v
			}
			return next, wire.NoError, ""
		}))
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
