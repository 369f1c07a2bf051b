// ListGroups (API key 16): versions 0–5 (wire.APIs); v4+ filter by state,
// v5+ by type.
//
// As Kafka, over the groups this instance coordinates, classic and
// consumer (KIP-848); no known difference.

package bridge

import (
	"strings"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyListGroups, (*Gateway).listGroups) }

// listGroups answers ListGroups v0–5 (v4+ state filter, v5+ type filter).
func (g *Gateway) listGroups(c *call) bool {
	gs := &c.state.group
	req := &gs.listReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.ListGroupsResponse
	// KafkaApis.handleListGroupsRequest: DESCRIBE on the cluster lists
	// every group, else the groups the principal may DESCRIBE.
	all := g.allowed(c, acl.OpDescribe, acl.ResourceCluster, acl.ClusterName)
	for _, l := range g.groups.List() {
		if g.lostGroup(l.GroupID) {
			continue // docs/design/cluster.md §7: listed by its coordinator only
		}
		if !all && !g.allowed(c, acl.OpDescribe, acl.ResourceGroup, l.GroupID) {
			continue
		}
		if len(req.StatesFilter) > 0 && !containsFold(req.StatesFilter, l.State) {
			continue
		}
		if len(req.TypesFilter) > 0 && !containsFold(req.TypesFilter, l.Type) {
			continue
		}
		resp.Groups = append(resp.Groups, wire.ListGroupsResponseGroup{Group: l.GroupID, ProtocolType: l.ProtocolType, GroupState: l.State, GroupType: l.Type})
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
