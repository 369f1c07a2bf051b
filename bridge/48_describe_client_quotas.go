// DescribeClientQuotas (API key 48): versions 0–1 (wire.APIs).
//
// Differs from Kafka: kiggy has no client quotas, so no entity ever matches
// (docs/design/security.md §8).

package bridge

import (
	"fmt"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeClientQuotas, (*Gateway).describeClientQuotas) }

// describeClientQuotas answers DescribeClientQuotas (key 48): kiggy has no
// client quotas, so no entity matches; a match type outside 0–2 is
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
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}
