package bridge

import "github.com/kiggy-io/kiggy/wire"

// moreState holds the scratch space of the consume-side and admin handlers.
type moreState struct {
	fetch           fetchState
	listOffsetsReq  wire.ListOffsetsRequest
	listOffsetsResp wire.ListOffsetsResponse
	admin           adminState
	group           groupState
	fanout          produceFanout
}

// registerMore installs the consume-side and admin handlers.
func (g *Gateway) registerMore() {
	g.handlers[wire.KeyFetch] = (*Gateway).fetch
	g.handlers[wire.KeyListOffsets] = (*Gateway).listOffsets
	g.handlers[wire.KeyCreateTopics] = (*Gateway).createTopics
	g.handlers[wire.KeyDeleteTopics] = (*Gateway).deleteTopics
	g.handlers[wire.KeyCreatePartitions] = (*Gateway).createPartitions
	g.handlers[wire.KeyDescribeConfigs] = (*Gateway).describeConfigs
	g.handlers[wire.KeyAlterConfigs] = (*Gateway).alterConfigs
	g.handlers[wire.KeyIncrementalAlterConfigs] = (*Gateway).incrementalAlterConfigs
	g.handlers[wire.KeyDescribeCluster] = (*Gateway).describeCluster
	g.handlers[wire.KeyFindCoordinator] = (*Gateway).findCoordinator
	g.handlers[wire.KeyJoinGroup] = (*Gateway).joinGroup
	g.handlers[wire.KeySyncGroup] = (*Gateway).syncGroup
	g.handlers[wire.KeyHeartbeat] = (*Gateway).heartbeat
	g.handlers[wire.KeyLeaveGroup] = (*Gateway).leaveGroup
	g.handlers[wire.KeyOffsetCommit] = (*Gateway).offsetCommit
	g.handlers[wire.KeyOffsetFetch] = (*Gateway).offsetFetch
	g.handlers[wire.KeyDescribeGroups] = (*Gateway).describeGroups
	g.handlers[wire.KeyListGroups] = (*Gateway).listGroups
}
