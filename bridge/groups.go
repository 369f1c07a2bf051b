package bridge

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

// Coordinator key types (FindCoordinator v1+).
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

// offsetMetadataMax is Kafka's offset.metadata.max.bytes default.
const offsetMetadataMax = 4096

// errNoTransactions is the message a transactional client sees.
const errNoTransactions = "kiggy does not support Kafka transactions (transactional.id); use an idempotent producer"

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
	protocols  []group.Protocol
	assigns    []group.Assignment
	leaves     []group.LeaveMember
}

// findCoordinator answers FindCoordinator v0–6: this gateway coordinates
// every group (single-instance coordination, docs/LIMITS.md). Transaction
// coordinators are refused with a message the Java client prints.
func (g *Gateway) findCoordinator(c *call) bool {
	gs := &c.state.group
	req := &gs.findReq
	v := c.hdr.APIVersion
	if !decodeOrClose(c, req) {
		return false
	}
	host, port := g.advertisedAddr(c)
	answer := func(key string) wire.FindCoordinatorResponseCoordinator {
		if req.CoordinatorType == coordinatorGroup && g.groupCode(c, acl.OpDescribe, key) != wire.NoError {
			// KafkaApis: DESCRIBE on the group.
			return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: -1, Port: -1,
				ErrorCode: wire.GroupAuthorizationFailed, ErrorMessage: wire.NullStringOf(wire.GroupAuthorizationFailed.String())}
		}
		if req.CoordinatorType != coordinatorGroup {
			// TransactionManager reports an unexpected FindCoordinator error
			// as "Could not find a coordinator ... due to unexpected error:
			// <message>"; INVALID_REQUEST is not retriable, so it stops.
			return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: -1, Port: -1,
				ErrorCode: wire.InvalidRequest, ErrorMessage: wire.NullStringOf(errNoTransactions)}
		}
		if g.cfg.Placement != nil {
			// docs/design/cluster.md §7: groups are spread like partitions.
			node, _ := g.cfg.Placement.Coordinator(key)
			h, p, ok := g.brokerAddr(c, node)
			if !ok {
				return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: -1, Port: -1,
					ErrorCode: wire.CoordinatorNotAvailable}
			}
			return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: node, Host: h, Port: p}
		}
		return wire.FindCoordinatorResponseCoordinator{Key: key, NodeID: g.cfg.NodeID, Host: host, Port: port}
	}
	resp := &gs.findResp
	*resp = wire.FindCoordinatorResponse{Coordinators: resp.Coordinators[:0]}
	if v >= 4 {
		// KIP-699: one entry per requested key.
		for _, k := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, answer(k))
		}
	} else {
		a := answer(req.CoordinatorKey)
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = a.ErrorCode, a.ErrorMessage, a.NodeID, a.Host, a.Port
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

func clientHost(c *call) string {
	if a := c.req.Conn().RemoteAddr; a != "" {
		if i := strings.LastIndexByte(a, ':'); i > 0 {
			return "/" + a[:i]
		}
	}
	return ""
}

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

func nullIfEmpty(s string) wire.NullString {
	if s == "" {
		return wire.NullString{}
	}
	return wire.NullStringOf(s)
}

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
	default:
		code = wire.ErrorCode(g.groups.Heartbeat(req.Group, req.MemberID, req.InstanceID.S, req.InstanceID.Valid, req.Generation))
	}
	resp := &gs.hbResp // in scratch: respond's argument escapes
	*resp = wire.HeartbeatResponse{ErrorCode: code}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

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
	if !g.notCoordinator(req.Group) {
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

// offsetCommit answers OffsetCommit v2–9: the generation and member are
// checked by the coordinator, then each offset is stored through Log.
func (g *Gateway) offsetCommit(c *call) bool {
	gs := &c.state.group
	req := &gs.commitReq
	if !decodeOrClose(c, req) {
		return false
	}
	groupCode := g.groupCode(c, acl.OpRead, req.Group) // KafkaApis: READ on the group, then READ on each topic
	switch {
	case groupCode != wire.NoError:
	case req.Group == "":
		groupCode = wire.InvalidGroupID
	case g.notCoordinator(req.Group):
		groupCode = wire.NotCoordinator // docs/design/cluster.md §7
	default:
		groupCode = wire.ErrorCode(g.groups.ValidateCommit(req.Group, req.MemberID, req.InstanceID.S, req.InstanceID.Valid, req.Generation))
	}
	resp := &gs.commitResp
	resp.Topics = resp.Topics[:0]
	for i := range req.Topics {
		t := &req.Topics[i]
		out := wire.OffsetCommitResponseTopic{Topic: t.Topic}
		if len(resp.Topics) < cap(resp.Topics) {
			out.Partitions = resp.Topics[:len(resp.Topics)+1][len(resp.Topics)].Partitions[:0]
		}
		topicCode := groupCode
		if topicCode == wire.NoError {
			topicCode = g.topicCode(c, acl.OpRead, t.Topic)
		}
		var parts int32 = -1
		if topicCode == wire.NoError {
			info, err := g.store.Topic(g.ctx, t.Topic)
			switch {
			case errors.Is(err, store.ErrUnknownTopic):
				topicCode = wire.UnknownTopicOrPartition
			case err != nil:
				topicCode = wire.CoordinatorLoadInProgress
			default:
				parts = info.Partitions
			}
		}
		for _, p := range t.Partitions {
			code := topicCode
			switch {
			case code != wire.NoError:
			case p.Partition < 0 || p.Partition >= parts:
				code = wire.UnknownTopicOrPartition
			case len(p.Metadata.S) > offsetMetadataMax:
				code = wire.OffsetMetadataTooLarge
			default:
				if err := g.store.CommitOffset(g.ctx, req.Group, t.Topic, p.Partition, p.Offset, p.Metadata.S); errors.Is(err, store.ErrInvalidGroup) {
					// docs/design/record-mapping.md §5: a group id over 246 bytes does
					// not fit an Iggy consumer name.
					code = wire.InvalidGroupID
				} else if err != nil {
					// docs/design/record-mapping.md §5: retriable failures go back as
					// COORDINATOR_LOAD_IN_PROGRESS.
					code = wire.CoordinatorLoadInProgress
					g.cfg.Logger.Warn("offset commit", "group", req.Group, "topic", t.Topic, "partition", p.Partition, "err", err)
				}
			}
			out.Partitions = append(out.Partitions, wire.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// offsetFetch answers OffsetFetch v1–9 (v8+ several groups): committed
// offsets through Log, -1 where none; null topics means every partition
// with a committed offset.
func (g *Gateway) offsetFetch(c *call) bool {
	gs := &c.state.group
	req := &gs.fetchReq
	v := c.hdr.APIVersion
	if !decodeOrClose(c, req) {
		return false
	}
	resp := &gs.fetchResp
	*resp = wire.OffsetFetchResponse{}
	if v >= 8 {
		for i := range req.Groups {
			rg := &req.Groups[i]
			topics, code := g.committed(c, rg.Group, rg.Topics)
			resp.Groups = append(resp.Groups, wire.OffsetFetchResponseGroup{Group: rg.Group, Topics: topics, ErrorCode: code})
		}
	} else {
		resp.Topics, resp.ErrorCode = g.committed(c, req.Group, req.Topics)
		if v < 2 && resp.ErrorCode == wire.CoordinatorLoadInProgress {
			// v1 has no top-level error code: say it per partition.
			resp.Topics = loadingPartitions(req.Topics)
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// committed reads a group's committed offsets for topics (nil = all).
//
// A backend that cannot answer makes the whole group's answer
// COORDINATOR_LOAD_IN_PROGRESS, which clients retry: the Java consumer
// retries that code at the group level only and fails on it as a
// partition error ("Unexpected error in fetch offset response", seen by hand
// with an iggy-server restarting; docs/LIMITS.md). A topic or partition the
// backend does not know has no committed offset (-1), as in Kafka.
//
// Authorization (KafkaApis.handleOffsetFetchRequest): DESCRIBE on the group,
// else GROUP_AUTHORIZATION_FAILED for the group; all topics means those the
// principal may DESCRIBE; a named topic it may not is
// TOPIC_AUTHORIZATION_FAILED on each of its partitions.
func (g *Gateway) committed(c *call, groupID string, topics []wire.OffsetFetchRequestTopic) ([]wire.OffsetFetchResponseTopic, wire.ErrorCode) {
	if code := g.groupCode(c, acl.OpDescribe, groupID); code != wire.NoError {
		return nil, code
	}
	if groupID == "" {
		return nil, wire.InvalidGroupID
	}
	if g.notCoordinator(groupID) {
		return nil, wire.NotCoordinator
	}
	var out []wire.OffsetFetchResponseTopic
	failed := false
	one := func(topic string, p int32) wire.OffsetFetchResponseTopicPartition {
		r := wire.OffsetFetchResponseTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, Metadata: wire.NullStringOf("")}
		off, md, ok, err := g.store.FetchOffset(g.ctx, groupID, topic, p)
		switch {
		case errors.Is(err, store.ErrUnknownTopic) || errors.Is(err, store.ErrUnknownPartition):
		case err != nil:
			failed = true
		case ok:
			r.Offset, r.Metadata = off, wire.NullStringOf(md)
		}
		return r
	}
	if topics == nil {
		all, err := g.store.Topics(g.ctx)
		if err != nil {
			return nil, wire.CoordinatorLoadInProgress
		}
		for _, t := range all {
			if !g.allowed(c, acl.OpDescribe, acl.ResourceTopic, t.Name) {
				continue
			}
			var parts []wire.OffsetFetchResponseTopicPartition
			for p := int32(0); p < t.Partitions; p++ {
				if r := one(t.Name, p); r.Offset >= 0 {
					parts = append(parts, r)
				}
			}
			if len(parts) > 0 {
				out = append(out, wire.OffsetFetchResponseTopic{Topic: t.Name, Partitions: parts})
			}
		}
	} else {
		for _, t := range topics {
			ot := wire.OffsetFetchResponseTopic{Topic: t.Topic}
			denied := g.topicCode(c, acl.OpDescribe, t.Topic)
			for _, p := range t.Partitions {
				if denied != wire.NoError {
					ot.Partitions = append(ot.Partitions, wire.OffsetFetchResponseTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1,
						Metadata: wire.NullStringOf(""), ErrorCode: denied})
					continue
				}
				ot.Partitions = append(ot.Partitions, one(t.Topic, p))
			}
			out = append(out, ot)
		}
	}
	if failed {
		return nil, wire.CoordinatorLoadInProgress
	}
	return out, wire.NoError
}

// loadingPartitions answers every requested partition with
// COORDINATOR_LOAD_IN_PROGRESS (OffsetFetch v1, which has no group error).
func loadingPartitions(topics []wire.OffsetFetchRequestTopic) []wire.OffsetFetchResponseTopic {
	var out []wire.OffsetFetchResponseTopic
	for _, t := range topics {
		ot := wire.OffsetFetchResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			ot.Partitions = append(ot.Partitions, wire.OffsetFetchResponseTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1,
				Metadata: wire.NullStringOf(""), ErrorCode: wire.CoordinatorLoadInProgress})
		}
		out = append(out, ot)
	}
	return out
}

// describeGroups answers DescribeGroups v0–5.
func (g *Gateway) describeGroups(c *call) bool {
	gs := &c.state.group
	req := &gs.descReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.DescribeGroupsResponse
	for _, id := range req.Groups {
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
		if len(req.TypesFilter) > 0 && !containsFold(req.TypesFilter, "classic") {
			continue
		}
		resp.Groups = append(resp.Groups, wire.ListGroupsResponseGroup{Group: l.GroupID, ProtocolType: l.ProtocolType, GroupState: l.State, GroupType: "classic"})
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
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

// deleteGroups answers DeleteGroups v0–3 as Kafka's group coordinator
// does: a group with members is NON_EMPTY_GROUP (68), an unknown one
// GROUP_ID_NOT_FOUND (69), and an empty one is deleted together with its
// committed offsets. A group the coordinator does not know but that has
// committed offsets (left in Iggy by an earlier gateway process, or written
// by a simple consumer that never joined) counts as an empty group, as Kafka
// deletes an Empty group it loaded from __consumer_offsets.
func (g *Gateway) deleteGroups(c *call) bool {
	gs := &c.state.group
	req := &gs.deleteReq
	if !decodeOrClose(c, req) {
		return false
	}
	resp := &gs.deleteResp
	resp.Results = resp.Results[:0]
	for i, id := range req.Groups {
		if slices.Contains(req.Groups[:i], id) {
			continue // KafkaApis.handleDeleteGroupsRequest: groupsNames.distinct
		}
		code := g.groupCode(c, acl.OpDelete, id) // KafkaApis: DELETE on each group
		if code == wire.NoError && id != "" && g.notCoordinator(id) {
			code = wire.NotCoordinator // docs/design/cluster.md §7
		}
		if code == wire.NoError {
			code = g.deleteGroup(id)
		}
		resp.Results = append(resp.Results, wire.DeleteGroupsResponseResult{Group: id, ErrorCode: code})
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// deleteGroup deletes one group and its committed offsets.
func (g *Gateway) deleteGroup(id string) wire.ErrorCode {
	if id == "" {
		return wire.InvalidGroupID // GroupCoordinator.isValidGroupId
	}
	code := wire.ErrorCode(g.groups.Delete(id))
	if code != wire.NoError && code != wire.GroupIDNotFound {
		return code // NON_EMPTY_GROUP, or COORDINATOR_NOT_AVAILABLE on shutdown
	}
	n, err := g.deleteCommitted(id)
	switch {
	case err != nil:
		// docs/design/record-mapping.md §5: retriable storage failures are
		// COORDINATOR_LOAD_IN_PROGRESS; a retry finds what is left.
		g.cfg.Logger.Warn("delete group offsets", "group", id, "err", err)
		return wire.CoordinatorLoadInProgress
	case n > 0:
		return wire.NoError
	}
	return code
}

// deleteCommitted deletes every committed offset of group id through
// Log.CommitOffset with a negative offset, and returns how many it deleted.
// The coordinator does not record which partitions a group committed, and
// Log cannot list them, so every partition of every topic is looked up, as
// OffsetFetch does for "all topics": one Log call per partition, which is
// fine for an admin request.
func (g *Gateway) deleteCommitted(id string) (int, error) {
	topics, err := g.store.Topics(g.ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range topics {
		for p := range t.Partitions {
			_, _, ok, err := g.store.FetchOffset(g.ctx, id, t.Name, p)
			switch {
			case errors.Is(err, store.ErrInvalidGroup):
				return n, nil // an id the backend cannot key offsets by has none
			case err != nil:
				return n, err
			case !ok:
				continue
			}
			if err := g.store.CommitOffset(g.ctx, id, t.Name, p, -1, ""); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// offsetDelete answers OffsetDelete v0 (KIP-496) as Kafka's
// KafkaApis.handleOffsetDeleteRequest and GroupCoordinator.handleDeleteOffsets
// do. A group error (INVALID_GROUP_ID 24 for "", GROUP_ID_NOT_FOUND 69,
// NON_EMPTY_GROUP 68 for a non-consumer group with members) is the whole
// answer. Otherwise each partition is UNKNOWN_TOPIC_OR_PARTITION (3) when
// the topic or partition does not exist, GROUP_SUBSCRIBED_TO_TOPIC (86) when
// a live member subscribes to its topic, and else NONE, its committed offset
// (if any) deleted through Log.CommitOffset with a negative offset. A group
// the coordinator does not know but that has committed offsets counts as
// an empty group, as in deleteGroups.
func (g *Gateway) offsetDelete(c *call) bool {
	gs := &c.state.group
	req := &gs.offDelReq
	if !decodeOrClose(c, req) {
		return false
	}
	resp := &gs.offDelResp
	if req.Group != "" && g.notCoordinator(req.Group) && g.allowed(c, acl.OpDelete, acl.ResourceGroup, req.Group) {
		// docs/design/cluster.md §7.
		resp.ErrorCode, resp.Topics = wire.NotCoordinator, resp.Topics[:0]
	} else {
		resp.ErrorCode, resp.Topics = g.deleteOffsets(c, req, resp.Topics[:0])
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// deleteOffsets does offsetDelete's work: the group error, or the
// per-partition results appended to out.
// Authorization (KafkaApis.handleOffsetDeleteRequest): DELETE on the group,
// else GROUP_AUTHORIZATION_FAILED; READ on each topic, else
// TOPIC_AUTHORIZATION_FAILED on its partitions.
func (g *Gateway) deleteOffsets(c *call, req *wire.OffsetDeleteRequest, out []wire.OffsetDeleteResponseTopic) (wire.ErrorCode, []wire.OffsetDeleteResponseTopic) {
	if code := g.groupCode(c, acl.OpDelete, req.Group); code != wire.NoError {
		return code, out
	}
	if req.Group == "" {
		return wire.InvalidGroupID, out // GroupCoordinator.isValidGroupId
	}
	scope := g.groups.OffsetDeleteScope(req.Group)
	if code := wire.ErrorCode(scope.Error); code == wire.GroupIDNotFound {
		found, err := g.anyCommitted(req.Group)
		switch {
		case err != nil:
			g.cfg.Logger.Warn("offset delete", "group", req.Group, "err", err)
			return wire.CoordinatorLoadInProgress, out // docs/design/record-mapping.md §5
		case !found:
			return code, out
		}
	} else if code != wire.NoError {
		return code, out
	}
	for _, rt := range req.Topics {
		t := wire.OffsetDeleteResponseTopic{Topic: rt.Topic, Partitions: make([]wire.OffsetDeleteResponsePartition, 0, len(rt.Partitions))}
		n, known, err := g.partitionCount(rt.Topic)
		if err != nil {
			g.cfg.Logger.Warn("offset delete", "group", req.Group, "topic", rt.Topic, "err", err)
			return wire.CoordinatorLoadInProgress, out
		}
		subscribed := scope.Subscribed != nil && scope.Subscribed(rt.Topic)
		denied := g.topicCode(c, acl.OpRead, rt.Topic)
		for _, p := range rt.Partitions {
			code := wire.NoError
			switch {
			case denied != wire.NoError:
				code = denied
			case !known || p < 0 || p >= n:
				code = wire.UnknownTopicOrPartition // KafkaApis: !metadataCache.contains(tp)
			case subscribed:
				code = wire.GroupSubscribedToTopic
			default:
				if err := g.deleteOffset(req.Group, rt.Topic, p); err != nil {
					g.cfg.Logger.Warn("offset delete", "group", req.Group, "topic", rt.Topic, "partition", p, "err", err)
					return wire.CoordinatorLoadInProgress, out
				}
			}
			t.Partitions = append(t.Partitions, wire.OffsetDeleteResponsePartition{Partition: p, ErrorCode: code})
		}
		out = append(out, t)
	}
	return wire.NoError, out
}

// partitionCount returns topic's partition count, known false when the
// topic does not exist.
func (g *Gateway) partitionCount(topic string) (n int32, known bool, err error) {
	topics, err := g.store.Topics(g.ctx)
	if err != nil {
		return 0, false, err
	}
	for _, t := range topics {
		if t.Name == topic {
			return int32(t.Partitions), true, nil
		}
	}
	return 0, false, nil
}

// deleteOffset deletes group id's committed offset of one partition, if
// it has one.
func (g *Gateway) deleteOffset(id, topic string, p int32) error {
	_, _, ok, err := g.store.FetchOffset(g.ctx, id, topic, p)
	switch {
	case errors.Is(err, store.ErrInvalidGroup):
		return nil // an id the backend cannot key offsets by has none
	case err != nil:
		return err
	case !ok:
		return nil
	}
	return g.store.CommitOffset(g.ctx, id, topic, p, -1, "")
}

// anyCommitted reports whether group id has a committed offset in any
// partition, looked up as deleteCommitted does.
func (g *Gateway) anyCommitted(id string) (bool, error) {
	topics, err := g.store.Topics(g.ctx)
	if err != nil {
		return false, err
	}
	for _, t := range topics {
		for p := range t.Partitions {
			_, _, ok, err := g.store.FetchOffset(g.ctx, id, t.Name, p)
			switch {
			case errors.Is(err, store.ErrInvalidGroup):
				return false, nil
			case err != nil:
				return false, err
			case ok:
				return true, nil
			}
		}
	}
	return false, nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
