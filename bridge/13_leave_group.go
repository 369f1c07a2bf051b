// LeaveGroup (API key 13): versions 0–5 (wire.APIs); v3+ batch members
// (KIP-345).
//
// As Kafka's classic group protocol (bridge/group); no known difference.

package bridge

import (
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyLeaveGroup, (*Gateway).leaveGroup) }

// leaveGroup answers LeaveGroup v0–5 (v3+ batched members).
func (g *Gateway) leaveGroup(c *call) bool {
	gs := &c.state.group
	req := &gs.leaveReq
	v := c.hdr.APIVersion
	if !decodeOrClose(c, req) {
		return false
	}
	if code := g.groupCode(c, acl.OpRead, req.Group); code != wire.NoError { // KafkaApis: READ on the group
		resp := wire.LeaveGroupResponse{ErrorCode: code}
		resp.CountErrors(g.errorCounter(c))
		respond(c, &resp)
		return false
	}
	gs.leaves = gs.leaves[:0]
	if v < 3 {
		gs.leaves = append(gs.leaves, group.LeaveMember{MemberID: req.MemberID})
	}
	for _, m := range req.Members {
		gs.leaves = append(gs.leaves, group.LeaveMember{MemberID: m.MemberID, GroupInstanceID: m.InstanceID.S,
			HasInstanceID: m.InstanceID.Valid, Reason: m.Reason.S})
	}
	code, codes := int16(wire.NotCoordinator), []int16(nil)
	switch {
	case g.notCoordinator(req.Group):
	case !g.classicGroupReady(req.Group, true, noGeneration):
		code = int16(wire.CoordinatorLoadInProgress)
	default:
		code, codes = g.groups.Leave(req.Group, gs.leaves)
	}
	resp := wire.LeaveGroupResponse{ErrorCode: wire.ErrorCode(code)}
	if v < 3 {
		if len(codes) == 1 && code == 0 {
			resp.ErrorCode = wire.ErrorCode(codes[0])
		}
	} else {
		for i, m := range req.Members {
			e := wire.NoError
			if i < len(codes) {
				e = wire.ErrorCode(codes[i])
			}
			resp.Members = append(resp.Members, wire.LeaveGroupResponseMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ErrorCode: e})
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
