// Heartbeat (API key 12): versions 0–4 (wire.APIs).
//
// As Kafka's classic group protocol (bridge/group); no known difference.

package bridge

import (
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyHeartbeat, (*Gateway).heartbeat) }

// heartbeat answers Heartbeat v0–4.
func (g *Gateway) heartbeat(c *call) bool {
	gs := &c.state.group
	req := &gs.hbReq
	if !decodeOrClose(c, req) {
		return false
	}
	code := g.groupCode(c, acl.OpRead, req.Group) // KafkaApis: READ on the group
	switch {
	case code != wire.NoError:
	case g.notCoordinator(req.Group):
		code = wire.NotCoordinator // docs/design/cluster.md §7
	case !g.classicGroupReady(req.Group, true, req.Generation):
		// GroupCoordinator.handleHeartbeat: "the group is still loading,
		// so respond just blindly".
	default:
		code = wire.ErrorCode(g.groups.Heartbeat(req.Group, req.MemberID, req.InstanceID.S, req.InstanceID.Valid, req.Generation))
	}
	resp := &gs.hbResp // in scratch: respond's argument escapes
	*resp = wire.HeartbeatResponse{ErrorCode: code}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}
