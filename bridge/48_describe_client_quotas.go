// DescribeClientQuotas (API key 48): versions 0–1 (wire.APIs).
//
// kiggy's one quota is --quota-request-percentage, set for the default user
// and default client id (docs/design/quotas.md): that entity is the only
// one described; quotas are set by flags, not AlterClientQuotas.

package bridge

import (
	"fmt"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeClientQuotas, (*Gateway).describeClientQuotas) }

// describeClientQuotas answers DescribeClientQuotas (key 48) with the
// request quota's entity (default user, default client id) when it
// matches the filter, and nothing without a quota; a match type outside
// 0–2 is INVALID_REQUEST as in Kafka's ClientQuotaManager. kafka-configs
// --describe --entity-type users asks it beside the SCRAM credentials.
func (g *Gateway) describeClientQuotas(c *call) bool {
	var req wire.DescribeClientQuotasRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := &wire.DescribeClientQuotasResponse{Entries: []wire.QuotaEntry{}}
	if code := g.clusterCode(c, acl.OpDescribeConfigs); code != wire.NoError {
		// KafkaApis: DESCRIBE_CONFIGS on the cluster.
		resp = &wire.DescribeClientQuotasResponse{ErrorCode: code}
	}
	for _, comp := range req.Components {
		if resp.ErrorCode != wire.NoError {
			break
		}
		if comp.MatchType < 0 || comp.MatchType > 2 {
			resp = &wire.DescribeClientQuotasResponse{ErrorCode: wire.InvalidRequest,
				ErrorMessage: wire.NullStringOf(fmt.Sprintf("Unknown match type %d", comp.MatchType))}
			break
		}
	}
	if resp.ErrorCode == wire.NoError && g.cfg.Quota.RequestPercentage > 0 && defaultQuotaEntityMatches(&req) {
		resp.Entries = append(resp.Entries, wire.QuotaEntry{
			Entity: []wire.QuotaEntity{{Type: "user"}, {Type: "client-id"}},
			Values: []wire.QuotaValue{{Key: "request_percentage", Value: g.cfg.Quota.RequestPercentage}},
		})
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// defaultQuotaEntityMatches reports whether the entity (user=<default>,
// client-id=<default>) passes req's filter, as Kafka's
// ClientQuotaManager.describeClientQuotas filters: every component must
// match one of the entity's parts (a default-name or any-name match of
// type user or client-id; an exact name never names a default), and a
// strict filter must name both of its types.
func defaultQuotaEntityMatches(req *wire.DescribeClientQuotasRequest) bool {
	named := map[string]bool{}
	for _, comp := range req.Components {
		if comp.EntityType != "user" && comp.EntityType != "client-id" {
			return false
		}
		if comp.MatchType == 0 {
			return false
		}
		named[comp.EntityType] = true
	}
	return !req.Strict || len(named) == 2
}
