// JoinGroup (API key 11): versions 0–9 (wire.APIs).
//
// Kafka's classic group protocol (bridge/group follows its GroupCoordinator);
// the request parks until the generation forms. A group is stored once a
// rebalance completes, in kiggy's system store rather than
// __consumer_offsets (docs/design/consumer-groups.md §6).

package bridge

import (
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyJoinGroup, (*Gateway).joinGroup) }

// joinGroup answers JoinGroup v0–9; it parks until the generation forms.
func (g *Gateway) joinGroup(c *call) bool {
	gs := &c.state.group
	req := &gs.joinReq
	v := c.hdr.APIVersion
	if !decodeOrClose(c, req) {
		return false
	}
	if code := g.groupCode(c, acl.OpRead, req.Group); code != wire.NoError { // KafkaApis: READ on the group
		c.req.Respond(g.joinResponse(c, group.JoinResult{Error: int16(code), GenerationID: -1}))
		return false
	}
	if g.notCoordinator(req.Group) {
		// docs/design/cluster.md §7: the client finds the coordinator again.
		c.req.Respond(g.joinResponse(c, group.JoinResult{Error: int16(wire.NotCoordinator), GenerationID: -1, MemberID: req.MemberID}))
		return false
	}
	if !g.classicGroupReady(req.Group, req.MemberID != "", noGeneration) {
		c.req.Respond(g.joinResponse(c, group.JoinResult{Error: int16(wire.CoordinatorLoadInProgress), GenerationID: -1, MemberID: req.MemberID}))
		return false
	}
	gs.protocols = gs.protocols[:0]
	for _, p := range req.Protocols {
		gs.protocols = append(gs.protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	rebalance := req.RebalanceTimeoutMillis
	if v == 0 {
		// JoinGroup v0 has no rebalance timeout: it is the session timeout.
		rebalance = req.SessionTimeoutMillis
	}
	jr := group.JoinRequest{
		GroupID: req.Group, MemberID: req.MemberID,
		GroupInstanceID: req.InstanceID.S, HasInstanceID: req.InstanceID.Valid,
		ClientID: c.hdr.ClientID.S, ClientHost: clientHost(c),
		ProtocolType: req.ProtocolType, Protocols: gs.protocols,
		SessionTimeout:   time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout: time.Duration(rebalance) * time.Millisecond,
		// KIP-394: JoinGroup v4+ members must rejoin with the id they are given.
		RequireKnownMemberID: v >= 4,
		// KIP-814: a static leader rejoining a Stable group may skip assignment (v9+).
		SupportsSkipAssignment: v >= 9,
		Reason:                 req.Reason.S,
	}
	g.groups.Join(jr, func(r group.JoinResult) { g.answerParked(c, func() []byte { return g.joinResponse(c, r) }) })
	return true
}

// joinResponse is a parked JoinGroup's answer: its generation.
func (g *Gateway) joinResponse(c *call, r group.JoinResult) []byte {
	v := c.hdr.APIVersion
	testPanic("join")
	resp := wire.JoinGroupResponse{
		ErrorCode: wire.ErrorCode(r.Error), Generation: r.GenerationID,
		ProtocolType: nullIfEmpty(r.ProtocolType), Protocol: nullIfEmpty(r.ProtocolName),
		LeaderID: r.LeaderID, MemberID: r.MemberID, SkipAssignment: r.SkipAssignment,
	}
	if v < 7 && !resp.Protocol.Valid {
		resp.Protocol = wire.NullStringOf("") // non-nullable before v7
	}
	for _, m := range r.Members {
		resp.Members = append(resp.Members, wire.JoinGroupResponseMember{
			MemberID: m.MemberID, InstanceID: wire.NullString{S: m.GroupInstanceID, Valid: m.HasInstanceID},
			ProtocolMetadata: m.Metadata,
		})
	}
	resp.CountErrors(g.errorCounter(c))
	return resp.AppendTo(c.responseBuffer(), v)
}

func clientHost(c *call) string {
	if a := c.req.Conn().RemoteAddr; a != "" {
		if i := strings.LastIndexByte(a, ':'); i > 0 {
			return "/" + a[:i]
		}
	}
	return ""
}
