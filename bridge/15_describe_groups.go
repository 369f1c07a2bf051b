// DescribeGroups (API key 15): versions 0–5 (wire.APIs).
//
// As Kafka; the authorized operations of each group described are computed
// when asked for (v3+, KIP-430).

package bridge

import (
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeGroups, (*Gateway).describeGroups) }

// describeGroups answers DescribeGroups v0–5.
func (g *Gateway) describeGroups(c *call) bool {
	gs := &c.state.group
	req := &gs.descReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.DescribeGroupsResponse
	for _, id := range req.Groups {
		if id != "" && !g.notCoordinator(id) {
			g.classicGroupReady(id, true, noGeneration) // a group moved here is described as stored
		}
		d := g.groups.Describe(id)
		out := wire.DescribeGroupsResponseGroup{ErrorCode: wire.ErrorCode(d.Error), Group: id, State: d.State,
			ProtocolType: d.ProtocolType, Protocol: d.Protocol, AuthorizedOperations: authorizedOperationsUnknown}
		if id == "" {
			out.ErrorCode = wire.InvalidGroupID
		} else if g.notCoordinator(id) {
			// docs/design/cluster.md §7: not this instance's group (its
			// state here, if any, is left from before a move).
			out = wire.DescribeGroupsResponseGroup{ErrorCode: wire.NotCoordinator, Group: id, AuthorizedOperations: authorizedOperationsUnknown}
			d.Members = nil
		}
		if code := g.groupCode(c, acl.OpDescribe, id); code != wire.NoError { // KafkaApis: DESCRIBE on each group
			out = wire.DescribeGroupsResponseGroup{ErrorCode: code, Group: id, AuthorizedOperations: authorizedOperationsUnknown}
			d.Members = nil
		} else if out.ErrorCode == wire.NoError { // as Kafka: a group not described has none
			out.AuthorizedOperations = g.authorizedOperationsIf(req.IncludeAuthorizedOperations, c, acl.ResourceGroup, id)
		}
		for _, m := range d.Members {
			out.Members = append(out.Members, wire.DescribeGroupsResponseGroupMember{
				MemberID: m.MemberID, InstanceID: wire.NullString{S: m.GroupInstanceID, Valid: m.HasInstanceID},
				ClientID: m.ClientID, ClientHost: m.ClientHost, ProtocolMetadata: m.Metadata, MemberAssignment: m.Assignment,
			})
		}
		resp.Groups = append(resp.Groups, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
