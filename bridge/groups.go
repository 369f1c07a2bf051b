package bridge

// What the group APIs share (08_offset_commit.go, 09_offset_fetch.go,
// 10_find_coordinator.go to 16_list_groups.go, 42_delete_groups.go,
// 47_offset_delete.go): their scratch state, and the unloading of groups
// another instance of a cluster now coordinates.

import (
	"time"

	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/wire"
)

// groupState is the group handlers' scratch space.
type groupState struct {
	findReq    wire.FindCoordinatorRequest
	findResp   wire.FindCoordinatorResponse
	joinReq    wire.JoinGroupRequest
	syncReq    wire.SyncGroupRequest
	hbReq      wire.HeartbeatRequest
	hbResp     wire.HeartbeatResponse
	leaveReq   wire.LeaveGroupRequest
	commitReq  wire.OffsetCommitRequest
	commitResp wire.OffsetCommitResponse
	fetchReq   wire.OffsetFetchRequest
	fetchResp  wire.OffsetFetchResponse
	descReq    wire.DescribeGroupsRequest
	listReq    wire.ListGroupsRequest
	deleteReq  wire.DeleteGroupsRequest
	deleteResp wire.DeleteGroupsResponse
	offDelReq  wire.OffsetDeleteRequest
	offDelResp wire.OffsetDeleteResponse
	cghbReq    wire.ConsumerGroupHeartbeatRequest
	cghbResp   wire.ConsumerGroupHeartbeatResponse
	cghbOwned  []group.TopicPartitions
	cgDescReq  wire.ConsumerGroupDescribeRequest
	protocols  []group.Protocol
	assigns    []group.Assignment
	leaves     []group.LeaveMember
}

// nullIfEmpty is s as a nullable string, null when empty.
func nullIfEmpty(s string) wire.NullString {
	if s == "" {
		return wire.NullString{}
	}
	return wire.NullStringOf(s)
}

// unloadInterval is how often an instance of a cluster looks for groups it
// no longer coordinates (unloadLoop).
const unloadInterval = 200 * time.Millisecond

// lostGroup reports whether group id is coordinated by another instance
// (or by none): this instance must neither list it nor keep its members
// (docs/design/cluster.md §7). A lapsed lease alone is not a move: the group
// stays loaded and its requests answer NOT_COORDINATOR until the lease is
// fresh again.
func (g *Gateway) lostGroup(id string) bool {
	if g.cfg.Placement == nil {
		return false
	}
	node, _ := g.cfg.Placement.Coordinator(id)
	return node != g.cfg.NodeID
}

// unloadLoop unloads, every unloadInterval, the groups a view change gave
// to another instance, as Kafka's old coordinator unloads the groups of an
// offsets partition it lost (docs/design/cluster.md §7): members parked in
// JoinGroup or SyncGroup here are answered NOT_COORDINATOR and find the new
// coordinator; their committed offsets stay in the commit log.
func (g *Gateway) unloadLoop() {
	defer g.wg.Done()
	t := time.NewTicker(unloadInterval)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
			if ids := g.groups.Unload(g.lostGroup); len(ids) > 0 {
				g.cfg.Logger.Info("groups moved to another coordinator: unloaded", "groups", ids)
			}
		}
	}
}
