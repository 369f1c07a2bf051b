// SyncGroup (API key 14): versions 0–5 (wire.APIs).
//
// As Kafka's classic group protocol (bridge/group): followers park until the
// leader's assignment arrives; no known difference.

package bridge

import (
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeySyncGroup, (*Gateway).syncGroup) }

// syncGroup answers SyncGroup v0–5; followers park until the leader's
// assignment arrives.
func (g *Gateway) syncGroup(c *call) bool {
	gs := &c.state.group
	req := &gs.syncReq
	if !decodeOrClose(c, req) {
		return false
	}
	if code := g.groupCode(c, acl.OpRead, req.Group); code != wire.NoError { // KafkaApis: READ on the group
		c.req.Respond(g.syncResponse(c, group.SyncResult{Error: int16(code)}))
		return false
	}
	if g.notCoordinator(req.Group) {
		c.req.Respond(g.syncResponse(c, group.SyncResult{Error: int16(wire.NotCoordinator)}))
		return false
	}
	if !g.classicGroupReady(req.Group, true, req.Generation) {
		// GroupCoordinator.handleSyncGroup while loading: "we've lost the
		// state of the active rebalance ... By returning rebalance in
		// progress, the consumer will attempt to rejoin".
		c.req.Respond(g.syncResponse(c, group.SyncResult{Error: int16(wire.RebalanceInProgress)}))
		return false
	}
	gs.assigns = gs.assigns[:0]
	for _, a := range req.GroupAssignment {
		gs.assigns = append(gs.assigns, group.Assignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
	}
	sr := group.SyncRequest{
		GroupID: req.Group, GenerationID: req.Generation, MemberID: req.MemberID,
		GroupInstanceID: req.InstanceID.S, HasInstanceID: req.InstanceID.Valid,
		ProtocolType: req.ProtocolType.S, HasProtocolType: req.ProtocolType.Valid,
		ProtocolName: req.Protocol.S, HasProtocolName: req.Protocol.Valid,
		Assignments: gs.assigns,
	}
	g.groups.Sync(sr, func(r group.SyncResult) { g.answerParked(c, func() []byte { return g.syncResponse(c, r) }) })
	return true
}

// syncResponse is a parked SyncGroup's answer: its assignment.
func (g *Gateway) syncResponse(c *call, r group.SyncResult) []byte {
	testPanic("sync")
	resp := wire.SyncGroupResponse{ErrorCode: wire.ErrorCode(r.Error),
		ProtocolType: nullIfEmpty(r.ProtocolType), Protocol: nullIfEmpty(r.ProtocolName),
		MemberAssignment: r.Assignment}
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	resp.CountErrors(g.errorCounter(c))
	return resp.AppendTo(c.responseBuffer(), c.hdr.APIVersion)
}
