// DescribeClientQuotas (API key 48): versions 0–1 (wire.APIs).
//
// kiggy's quotas are set by flags, not AlterClientQuotas
// (docs/design/quotas.md): --quota-request-percentage for the default user
// and default client id, and --connection-creation-rate-per-ip for the
// default IP; those two entities are the ones described.

package bridge

import (
	"fmt"
	"slices"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeClientQuotas, (*Gateway).describeClientQuotas) }

// describeClientQuotas answers DescribeClientQuotas (key 48) with the
// client quotas' entity (default user, default client id: the request,
// byte-rate and controller mutation quotas) when it matches the filter,
// and nothing without a quota; a match type outside 0–2 is
// INVALID_REQUEST as in Kafka's ClientQuotaManager. kafka-configs
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
	ip, client := false, false
	for _, comp := range req.Components {
		if resp.ErrorCode != wire.NoError {
			break
		}
		if comp.MatchType < 0 || comp.MatchType > 2 {
			resp = &wire.DescribeClientQuotasResponse{ErrorCode: wire.InvalidRequest,
				ErrorMessage: wire.NullStringOf(fmt.Sprintf("Unknown match type %d", comp.MatchType))}
			break
		}
		ip = ip || comp.EntityType == "ip"
		client = client || comp.EntityType == "user" || comp.EntityType == "client-id"
	}
	if resp.ErrorCode == wire.NoError && ip && client {
		// Kafka's ClientQuotasImage.describe.
		resp = &wire.DescribeClientQuotasResponse{ErrorCode: wire.InvalidRequest,
			ErrorMessage: wire.NullStringOf("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")}
	}
	var values []wire.QuotaValue
	if g.cfg.Quota.RequestPercentage > 0 {
		values = append(values, wire.QuotaValue{Key: "request_percentage", Value: g.cfg.Quota.RequestPercentage})
	}
	if g.cfg.ProducerByteRate > 0 {
		values = append(values, wire.QuotaValue{Key: "producer_byte_rate", Value: float64(g.cfg.ProducerByteRate)})
	}
	if g.cfg.ConsumerByteRate > 0 {
		values = append(values, wire.QuotaValue{Key: "consumer_byte_rate", Value: float64(g.cfg.ConsumerByteRate)})
	}
	if g.cfg.ControllerMutationRate > 0 {
		values = append(values, wire.QuotaValue{Key: "controller_mutation_rate", Value: g.cfg.ControllerMutationRate})
	}
	if resp.ErrorCode == wire.NoError && len(values) > 0 && defaultQuotaEntityMatches(&req, "user", "client-id") {
		resp.Entries = append(resp.Entries, wire.QuotaEntry{
			Entity: []wire.QuotaEntity{{Type: "user"}, {Type: "client-id"}},
			Values: values,
		})
	}
	if resp.ErrorCode == wire.NoError && g.cfg.ConnectionCreationRatePerIP > 0 && defaultQuotaEntityMatches(&req, "ip") {
		resp.Entries = append(resp.Entries, wire.QuotaEntry{
			Entity: []wire.QuotaEntity{{Type: "ip"}},
			Values: []wire.QuotaValue{{Key: "connection_creation_rate", Value: float64(g.cfg.ConnectionCreationRatePerIP)}},
		})
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// defaultQuotaEntityMatches reports whether the entity whose parts are the
// defaults of types (user=<default>, client-id=<default>; or
// ip=<default>) passes req's filter, as Kafka's ClientQuotasImage.describe
// filters: every component must match one of the entity's parts (a
// default-name or any-name match of one of its types; an exact name never
// names a default), and a strict filter must name all of its types.
func defaultQuotaEntityMatches(req *wire.DescribeClientQuotasRequest, types ...string) bool {
	named := map[string]bool{}
	for _, comp := range req.Components {
		if !slices.Contains(types, comp.EntityType) {
			return false
		}
		if comp.MatchType == 0 {
			return false
		}
		named[comp.EntityType] = true
	}
	return !req.Strict || len(named) == len(types)
}
