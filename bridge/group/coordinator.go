// Package group is kiggy's classic Kafka group coordinator (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, the membership checks of OffsetCommit,
// DescribeGroups, ListGroups), a self-contained state machine that follows
// Kafka's classic GroupCoordinator. It knows nothing of the wire format, the
// network or storage: the gateway's handlers decode requests, call a
// Coordinator and encode its results. One Coordinator coordinates every group
// of a gateway instance.
//
// Every string and byte slice passed in may alias a request buffer that is
// reused once the call returns; the coordinator copies what it keeps. Results
// reference coordinator-owned copies that are never mutated.
//
// Concurrency: each group has its own mutex, and the group map has one. The
// lock order is group, then map; no callback is ever called with a lock held.
// Each group has at most one timer (time.AfterFunc) for all its deadlines.
package group

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Coordinator is the classic group coordinator. Its methods are safe for
// concurrent use.
type Coordinator struct {
	// Immutable.
	cfg   Config
	clock clock

	mu     sync.Mutex
	groups map[string]*group
	// cgroups are the consumer-protocol groups (KIP-848, consumer.go); a
	// group id is in at most one of the two maps.
	cgroups map[string]*cgroup
	// consumerRebalances counts consumer-group epoch bumps.
	consumerRebalances atomic.Uint64
	// cdirty are the consumer groups changed since DirtyConsumerGroups
	// (a deleted group and a new one of its id both).
	cdirty map[*cgroup]struct{}
	// cseq counts consumer-group changes; ctaken is its value when the
	// writer last took them (DirtyConsumerGroups), cstored when it last
	// reported them stored; cwaiting are the answers waiting for a change
	// (Config.AwaitStore).
	cseq, ctaken, cstored uint64
	cwaiting              []storeWaiter
	// cldirty are the stored forms of classic groups changed since
	// DirtyClassicGroups (nil: removed).
	cldirty map[string][]byte
	// clheld are the replies held until the writer stores their group's
	// queued form (Config.AwaitStore), by group id; clflying those
	// of the forms the writer has taken and not yet reported stored (a key
	// without replies marks a write in flight).
	clheld   map[string][]func()
	clflying map[string][]func()
	closed   bool

	lim limits // atomics (limits.go)
}

// New returns a Coordinator configured by cfg (zero fields mean Kafka's
// defaults).
func New(cfg Config) *Coordinator {
	return newCoordinator(cfg, realClock{nowFn: cfg.Now})
}

func newCoordinator(cfg Config, clk clock) *Coordinator {
	return &Coordinator{
		cfg:     cfg.normalized(),
		clock:   clk,
		groups:  make(map[string]*group),
		cgroups: make(map[string]*cgroup),
	}
}

// Close stops every timer and answers every pending Join and Sync callback
// with NOT_COORDINATOR (16), as Kafka's coordinator answers them when it
// unloads a group (GroupMetadataManager.onUnloaded, a broker shutting
// down): the member finds the group's coordinator again. Later calls get
// the same code. Close is idempotent.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	cgroups := make([]*cgroup, 0, len(c.cgroups))
	for _, g := range c.cgroups {
		cgroups = append(cgroups, g)
	}
	c.mu.Unlock()

	for _, cg := range cgroups {
		cg.mu.Lock()
		cg.dead = true
		if cg.timer != nil {
			cg.timer.Stop()
		}
		cg.mu.Unlock()
	}
	for _, g := range groups {
		var o outbox
		g.mu.Lock()
		if g.state != stateDead {
			g.close(&o)
		}
		g.mu.Unlock()
		o.flush()
	}
	c.releaseHeld()
}

// lockGroup returns the group id, locked, creating it when create is set.
// It returns nil and 0 for an unknown group, and nil and NOT_COORDINATOR
// once closed.
func (c *Coordinator) lockGroup(id string, create bool) (*group, int16) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, errNotCoordinator
		}
		g := c.groups[id]
		if g == nil {
			if cg := c.cgroups[id]; cg != nil {
				// A consumer-protocol group (consumer.go): classic
				// requests do not find it, unless it is empty and a
				// classic member joins, which converts it (Kafka 4.x).
				if !create || !c.consumerGroupEmpty(cg) {
					c.mu.Unlock()
					return nil, errNone
				}
			}
			if !create {
				c.mu.Unlock()
				return nil, errNone
			}
			if !c.roomForGroup() {
				c.mu.Unlock()
				return nil, errCoordinatorNotAvailable
			}
			// Locked before it is seen: a creation racing this one at
			// the MaxGroups cap must not find it Empty and evict it
			// before its creator has used it (roomForGroup). No one can
			// wait for the lock of a group not yet in the map, so taking
			// it under c.mu cannot deadlock.
			g = newGroup(c, strings.Clone(id))
			g.mu.Lock()
			c.groups[g.id] = g
			c.mu.Unlock()
			return g, errNone
		}
		c.mu.Unlock()
		g.mu.Lock()
		if g.state != stateDead {
			return g, errNone
		}
		// Deleted or forgotten meanwhile (it is no longer in the map), or
		// closed: look again.
		g.mu.Unlock()
	}
}

// Join registers or refreshes a member and calls done exactly once, when the
// member's join completes (the generation forms, the rebalance timeout
// passes, or an error) — possibly before Join returns, or later from another
// goroutine. It never blocks.
func (c *Coordinator) Join(req JoinRequest, done func(JoinResult)) {
	if req.GroupID == "" {
		// "The remaining APIs are groups using Kafka for group coordination
		// and must have a non-empty groupId" (Kafka's isValidGroupId).
		done(joinError(strings.Clone(req.MemberID), errInvalidGroupID))
		return
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		done(joinError(strings.Clone(req.MemberID), errInvalidSessionTimeout))
		return
	}
	if c.isConsumerGroup(req.GroupID) && c.classicConsumerJoin(req, done) {
		return // a classic member of a consumer group (migration.go)
	}
	newMember := req.MemberID == ""
	// Only a first join creates the group ("if member is specified but group
	// does not exist, request is rejected with UNKNOWN_MEMBER_ID"), and only
	// a join it could accept, so a rejected join leaves nothing behind.
	g, code := c.lockGroup(req.GroupID, newMember && req.ProtocolType != "" && len(req.Protocols) > 0)
	if code != errNone {
		done(joinError(strings.Clone(req.MemberID), code))
		return
	}
	if g == nil {
		if newMember {
			done(joinError("", errInconsistentGroupProtocol))
		} else {
			done(joinError(strings.Clone(req.MemberID), errUnknownMemberID))
		}
		return
	}

	now := c.clock.now()
	var o outbox
	switch {
	case !g.acceptJoining(req.MemberID):
		// KIP-389: over group.max.size. A member that was not awaiting the
		// rebalance is shed.
		if m := g.byID[req.MemberID]; m != nil {
			g.removeMember(m, &o)
		}
		delete(g.pending, req.MemberID)
		c.refuse(RefusedGroupMaxSize)
		o.join(done, joinError("", errGroupMaxSizeReached))
	case newMember && !g.roomForNewOr(&req, done, &o):
	case newMember:
		g.joinNew(&req, done, now, &o)
	default:
		g.joinExisting(&req, done, now, &o)
	}
	g.maybeCompleteJoin(now, &o)
	g.finish(&o)
}

// joinNew handles a join with an empty member id (Kafka's doNewMemberJoinGroup).
func (g *group) joinNew(req *JoinRequest, done func(JoinResult), now time.Time, o *outbox) {
	if !g.supportsProtocols(req.ProtocolType, req.Protocols, nil) {
		o.join(done, joinError("", errInconsistentGroupProtocol))
		return
	}
	if req.HasInstanceID {
		id := newMemberID(req.GroupInstanceID)
		if old, ok := g.static[req.GroupInstanceID]; ok {
			g.replaceStatic(g.byID[old], id, req, done, now, o)
			return
		}
		g.addMember(id, req, done, now, o)
		return
	}
	id := newMemberID(req.ClientID)
	if req.RequireKnownMemberID {
		// KIP-394: "the broker will return MEMBER_ID_REQUIRED with the
		// generated member id; the client shall rejoin with it." The id is
		// remembered for one session timeout, and the rebalance waits for it.
		g.pending[id] = now.Add(req.SessionTimeout)
		o.join(done, joinError(id, errMemberIDRequired))
		return
	}
	g.addMember(id, req, done, now, o)
}

// joinExisting handles a join with a member id (Kafka's doCurrentMemberJoinGroup).
func (g *group) joinExisting(req *JoinRequest, done func(JoinResult), now time.Time, o *outbox) {
	m := g.byID[req.MemberID]
	if !g.supportsProtocols(req.ProtocolType, req.Protocols, m) {
		o.join(done, joinError(strings.Clone(req.MemberID), errInconsistentGroupProtocol))
		return
	}
	if _, ok := g.pending[req.MemberID]; ok && !req.HasInstanceID {
		// The rejoin KIP-394 asked for.
		g.addMember(strings.Clone(req.MemberID), req, done, now, o)
		return
	}
	if code := g.validateMember(req.MemberID, req.GroupInstanceID, req.HasInstanceID); code != errNone {
		o.join(done, joinError(strings.Clone(req.MemberID), code))
		return
	}
	switch g.state {
	case statePreparingRebalance:
		g.updateMember(m, req, done, o)
	case stateCompletingRebalance:
		if m.matches(req.Protocols) {
			// "member is joining with the same metadata (which could be
			// because it failed to receive the initial JoinGroup response),
			// so just return current group information."
			o.join(done, g.joinSuccess(m))
			return
		}
		g.updateMember(m, req, done, o)
		g.prepareRebalance(now, o)
	case stateStable:
		if m.id != g.leader && m.matches(req.Protocols) {
			// A follower with unchanged metadata just gets the current generation.
			o.join(done, g.joinSuccess(m))
			return
		}
		// A leader's join forces a rebalance ("changes affecting assignment
		// which do not affect the member metadata"), as does changed metadata.
		g.updateMember(m, req, done, o)
		g.prepareRebalance(now, o)
	default:
		o.join(done, joinError(strings.Clone(req.MemberID), errUnknownMemberID))
	}
}

// replaceStatic gives a rejoining static member (known instance id, empty
// member id) a new member id (KIP-345). The old id is fenced: its pending
// requests get FENCED_INSTANCE_ID now and its later ones by validateMember.
// A Stable group does not rebalance unless the protocol it would select
// changes (Kafka's updateStaticMemberAndRebalance; the member's metadata may
// differ — a restarted consumer reports no owned partitions — and is taken up
// at the next rebalance).
func (g *group) replaceStatic(m *member, newID string, req *JoinRequest, done func(JoinResult), now time.Time, o *outbox) {
	oldID := m.id
	oldLeader := g.leader
	if m.joinDone != nil {
		o.join(m.joinDone, joinError(oldID, errFencedInstanceID))
		m.joinDone = nil
	}
	if m.syncDone != nil {
		o.sync(m.syncDone, SyncResult{Error: errFencedInstanceID})
		m.syncDone = nil
	}
	g.changed()
	delete(g.byID, oldID)
	m.id = newID
	g.byID[newID] = m
	g.static[m.instanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	g.touch(m, now)
	g.updateMember(m, req, done, o)

	switch g.state {
	case stateStable:
		if g.selectProtocol() != g.protocolName {
			g.prepareRebalance(now, o)
			return
		}
		var res JoinResult
		if req.SupportsSkipAssignment {
			// KIP-814 (JoinGroup v9+): a static leader learns it leads and
			// gets the members, but skips the assignor.
			res = g.joinSuccess(m)
			res.SkipAssignment = m.id == g.leader
		} else {
			// Before v9, answer with the old leader id so a rejoining leader
			// does not run an assignment a stable group would ignore.
			res = JoinResult{
				GenerationID: g.generation,
				ProtocolType: g.protocolType,
				ProtocolName: g.protocolName,
				LeaderID:     oldLeader,
				MemberID:     newID,
			}
		}
		o.join(m.joinDone, res)
		m.joinDone = nil
	case stateCompletingRebalance:
		// The leader may already be assigning to the old id: start over.
		g.prepareRebalance(now, o)
	}
}

// Sync handles SyncGroup and calls done exactly once: at once on error or
// when the group is Stable, else when the leader's assignment arrives or the
// rebalance is abandoned. It never blocks.
func (c *Coordinator) Sync(req SyncRequest, done func(SyncResult)) {
	if req.GroupID == "" {
		done(SyncResult{Error: errInvalidGroupID})
		return
	}
	if c.isConsumerGroup(req.GroupID) && c.classicConsumerSync(req, done) {
		return
	}
	g, code := c.lockGroup(req.GroupID, false)
	if code != errNone {
		done(SyncResult{Error: code})
		return
	}
	if g == nil {
		done(SyncResult{Error: errUnknownMemberID})
		return
	}
	now := c.clock.now()
	var o outbox
	res, parked := g.sync(&req, done, now, &o)
	if !parked && c.cfg.AwaitStore && c.storing(g.id) {
		o.sync(done, res) // after the form being stored (finish)
		parked = true
	}
	g.finish(&o)
	if !parked {
		done(res)
	}
}

// sync answers a SyncGroup at once (parked false) or parks done until the
// leader's assignment arrives.
func (g *group) sync(req *SyncRequest, done func(SyncResult), now time.Time, o *outbox) (res SyncResult, parked bool) {
	if code := g.validateMember(req.MemberID, req.GroupInstanceID, req.HasInstanceID); code != errNone {
		return SyncResult{Error: code}, false
	}
	if req.GenerationID != g.generation {
		return SyncResult{Error: errIllegalGeneration}, false
	}
	// KIP-559 (SyncGroup v5+): protocol type and name, when given, must be
	// the group's.
	if (req.HasProtocolType && req.ProtocolType != g.protocolType) ||
		(req.HasProtocolName && req.ProtocolName != g.protocolName) {
		return SyncResult{Error: errInconsistentGroupProtocol}, false
	}
	m := g.byID[req.MemberID]
	switch g.state {
	case statePreparingRebalance:
		return SyncResult{Error: errRebalanceInProgress}, false
	case stateCompletingRebalance:
		if m.syncDone != nil {
			o.sync(m.syncDone, SyncResult{Error: errRebalanceInProgress}) // superseded by a retry
		}
		m.syncDone = done
		m.pendingSync = false
		if m.id == g.leader {
			g.setAssignments(req.Assignments)
			g.propagateAssignment(now, errNone, o)
			g.state = stateStable
		}
		return SyncResult{}, true
	case stateStable:
		m.pendingSync = false
		g.touch(m, now)
		return SyncResult{ProtocolType: g.protocolType, ProtocolName: g.protocolName, Assignment: m.assignment}, false
	default:
		return SyncResult{Error: errUnknownMemberID}, false
	}
}

// Heartbeat handles a Heartbeat and returns its error code: 0 when the
// member's generation is current and the group Stable (or
// CompletingRebalance, where Kafka also answers 0 to members that heartbeat
// before SyncGroup), REBALANCE_IN_PROGRESS while the group prepares a
// rebalance, else ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID.
// A heartbeat that is not an error restarts the member's session.
func (c *Coordinator) Heartbeat(groupID, memberID, instanceID string, hasInstance bool, generation int32) int16 {
	if groupID == "" {
		return errInvalidGroupID
	}
	if c.isConsumerGroup(groupID) {
		if code, ok := c.classicConsumerHeartbeat(groupID, memberID, instanceID, hasInstance, generation); ok {
			return code
		}
	}
	g, code := c.lockGroup(groupID, false)
	if code != errNone {
		return code
	}
	if g == nil {
		return errUnknownMemberID
	}
	// A heartbeat only moves a deadline later and calls nothing back, so the
	// timer needs no re-arming (see schedule).
	code = g.heartbeat(memberID, instanceID, hasInstance, generation, c.clock.now())
	g.mu.Unlock()
	return code
}

func (g *group) heartbeat(memberID, instanceID string, hasInstance bool, generation int32, now time.Time) int16 {
	if code := g.validateMember(memberID, instanceID, hasInstance); code != errNone {
		return code
	}
	if generation != g.generation {
		return errIllegalGeneration
	}
	m := g.byID[memberID]
	switch g.state {
	case stateCompletingRebalance, stateStable:
		g.touch(m, now)
		return errNone
	case statePreparingRebalance:
		g.touch(m, now)
		return errRebalanceInProgress
	default:
		return errUnknownMemberID
	}
}

// Leave handles LeaveGroup. groupErr is INVALID_GROUP_ID for an empty group
// id or COORDINATOR_NOT_AVAILABLE after Close, with memberErrs nil; otherwise
// it is 0 and memberErrs[i] answers members[i]: 0, UNKNOWN_MEMBER_ID or
// FENCED_INSTANCE_ID. A member with an empty member id is removed by its
// instance id (KIP-345 administrative removal).
func (c *Coordinator) Leave(groupID string, members []LeaveMember) (groupErr int16, memberErrs []int16) {
	if groupID == "" {
		return errInvalidGroupID, nil
	}
	if c.isConsumerGroup(groupID) {
		if errs, ok := c.classicConsumerLeave(groupID, members); ok {
			return errNone, errs
		}
	}
	g, code := c.lockGroup(groupID, false)
	if code != errNone {
		return code, nil
	}
	memberErrs = make([]int16, len(members))
	if g == nil {
		for i := range memberErrs {
			memberErrs[i] = errUnknownMemberID
		}
		return errNone, memberErrs
	}
	now := c.clock.now()
	var o outbox
	for i := range members {
		memberErrs[i] = g.leave(&members[i], now, &o)
	}
	g.finish(&o)
	return errNone, memberErrs
}

func (g *group) leave(lm *LeaveMember, now time.Time, o *outbox) int16 {
	if lm.MemberID == "" {
		if !lm.HasInstanceID {
			return errUnknownMemberID
		}
		id, ok := g.static[lm.GroupInstanceID]
		if !ok {
			return errUnknownMemberID
		}
		g.removeMemberAndUpdate(g.byID[id], now, o)
		return errNone
	}
	if _, ok := g.pending[lm.MemberID]; ok {
		delete(g.pending, lm.MemberID)
		g.maybeCompleteJoin(now, o)
		return errNone
	}
	if code := g.validateMember(lm.MemberID, lm.GroupInstanceID, lm.HasInstanceID); code != errNone {
		return code
	}
	g.removeMemberAndUpdate(g.byID[lm.MemberID], now, o)
	return errNone
}

// ValidateCommit checks an OffsetCommit's generation and member against the
// group, as Kafka's validateOffsetCommit does, and returns 0 if the offsets
// may be stored:
//   - generation < 0 while the group is Empty (or unknown, which creates it
//     Empty so ListGroups and DescribeGroups show it): a "simple" commit from a
//     consumer using assign() or from an admin client — allowed;
//   - generation ≥ 0, a member id or an instance id: the member must be
//     current (UNKNOWN_MEMBER_ID 25, FENCED_INSTANCE_ID 82) and the generation
//     the group's (ILLEGAL_GENERATION 22); an unknown group with
//     generation ≥ 0 gets ILLEGAL_GENERATION;
//   - generation < 0 without a member id while the group has members:
//     UNKNOWN_MEMBER_ID ("offset commits are only accepted when the group is
//     empty");
//   - then CompletingRebalance gets REBALANCE_IN_PROGRESS (27), while
//     PreparingRebalance still accepts the commit: members commit before
//     rejoining, and learn of the rebalance from their heartbeat.
//
// An accepted member commit restarts the member's session. Unlike Kafka, an
// empty group id gets INVALID_GROUP_ID (24).
func (c *Coordinator) ValidateCommit(groupID, memberID, instanceID string, hasInstance bool, generation int32) int16 {
	if groupID == "" {
		return errInvalidGroupID
	}
	if c.isConsumerGroup(groupID) {
		if cg, code, _ := c.lockConsumerGroup(groupID, false); code == errNone {
			code = cg.validateCommit(memberID, generation, c.clock.now())
			cg.mu.Unlock()
			return code
		}
	}
	g, code := c.lockGroup(groupID, generation < 0)
	if code != errNone {
		return code
	}
	if g == nil {
		// "this is a request coming from an older generation. either way,
		// reject the commit"
		return errIllegalGeneration
	}
	// Like a heartbeat, a commit only moves a deadline later; a group it
	// created is kept.
	code = g.validateCommit(memberID, instanceID, hasInstance, generation, c.clock.now())
	g.mu.Unlock()
	return code
}

func (g *group) validateCommit(memberID, instanceID string, hasInstance bool, generation int32, now time.Time) int16 {
	if generation < 0 && g.state == stateEmpty {
		g.keep = true
		return errNone
	}
	if generation >= 0 || memberID != "" || hasInstance {
		if code := g.validateMember(memberID, instanceID, hasInstance); code != errNone {
			return code
		}
		if generation != g.generation {
			return errIllegalGeneration
		}
	} else {
		return errUnknownMemberID
	}
	switch g.state {
	case stateCompletingRebalance:
		return errRebalanceInProgress
	case stateStable, statePreparingRebalance:
		g.touch(g.byID[memberID], now)
	}
	g.keep = true // it holds offsets now: never evicted (limits.go)
	return errNone
}

// Describe describes a group for DescribeGroups. An unknown group is
// reported with State "Dead" and Error 0 (DescribeGroups v6+ handlers map
// that to GROUP_ID_NOT_FOUND); after Close, Error is COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) Describe(groupID string) GroupDescription {
	if c.isConsumerGroup(groupID) {
		// Kafka: "Group %s is not a classic group."
		return GroupDescription{Error: errGroupIDNotFound, GroupID: strings.Clone(groupID), State: stateDead.String()}
	}
	g, code := c.lockGroup(groupID, false)
	if code != errNone {
		return GroupDescription{Error: code, GroupID: strings.Clone(groupID)}
	}
	if g == nil {
		return GroupDescription{GroupID: strings.Clone(groupID), State: stateDead.String()}
	}
	d := GroupDescription{
		GroupID:      g.id,
		State:        g.state.String(),
		ProtocolType: g.protocolType,
		Members:      make([]MemberDescription, len(g.members)),
	}
	stable := g.state == stateStable
	if stable {
		d.Protocol = g.protocolName
	}
	for i, m := range g.members {
		md := MemberDescription{
			MemberID:        m.id,
			GroupInstanceID: m.instanceID,
			HasInstanceID:   m.hasInstance,
			ClientID:        m.clientID,
			ClientHost:      m.clientHost,
		}
		if stable {
			md.Metadata = m.metadataFor(g.protocolName)
			md.Assignment = m.assignment
		}
		d.Members[i] = md
	}
	g.mu.Unlock()
	return d
}

// List lists every group, sorted by group id, for ListGroups. It is empty
// after Close.
func (c *Coordinator) List() []GroupListing {
	c.mu.Lock()
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()

	list := make([]GroupListing, 0, len(groups))
	for _, g := range groups {
		g.mu.Lock()
		if g.state != stateDead {
			list = append(list, GroupListing{GroupID: g.id, ProtocolType: g.protocolType, State: g.state.String(), Type: "classic"})
		}
		g.mu.Unlock()
	}
	list = c.listConsumerGroups(list)
	slices.SortFunc(list, func(a, b GroupListing) int { return strings.Compare(a.GroupID, b.GroupID) })
	return list
}

// Unload drops every group for which lost reports true, as Kafka's
// GroupMetadataManager.removeGroupsForPartition does when this broker stops
// being the coordinator of a group's offsets partition: the group becomes
// Dead and leaves the map, so List no longer shows it, and every member
// parked in JoinGroup or SyncGroup is answered NOT_COORDINATOR (16) at once
// (Kafka's onGroupUnloaded), so it finds the new coordinator. Committed
// offsets live in storage and are not touched. lost is called without any
// lock held; Unload returns the ids it dropped, sorted.
//
// A group that lost reports true for may be created again by a later Join
// (the caller checks coordination before each call; a Join that passed the
// check just before the move can still land here): the next Unload drops it
// again.
func (c *Coordinator) Unload(lost func(groupID string) bool) []string {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()

	var dropped []string
	for _, g := range groups {
		if !lost(g.id) {
			continue
		}
		var o outbox
		g.mu.Lock()
		if g.state != stateDead {
			g.closeWith(errNotCoordinator, &o)
			dropped = append(dropped, g.id)
		}
		c.mu.Lock()
		if c.groups[g.id] == g {
			delete(c.groups, g.id)
		}
		c.mu.Unlock()
		g.mu.Unlock()
		o.flush()
	}
	dropped = append(dropped, c.unloadConsumerGroups(lost)...)
	slices.Sort(dropped)
	return dropped
}

// Delete deletes an Empty group for DeleteGroups: 0, GROUP_ID_NOT_FOUND (69)
// for an unknown group, NON_EMPTY_GROUP (68) while it has members, or
// COORDINATOR_NOT_AVAILABLE (15) after Close. Committed offsets live in
// storage; deleting them is the caller's part.
func (c *Coordinator) Delete(groupID string) int16 {
	if c.isConsumerGroup(groupID) {
		cg, code, _ := c.lockConsumerGroup(groupID, false)
		if code != errNone {
			return code
		}
		defer cg.mu.Unlock()
		if len(cg.members) > 0 {
			return errNonEmptyGroup
		}
		c.dropConsumerGroup(cg)
		cg.deleted = true
		cg.markDirty()
		return errNone
	}
	g, code := c.lockGroup(groupID, false)
	if code != errNone {
		return code
	}
	if g == nil {
		return errGroupIDNotFound
	}
	if g.state != stateEmpty {
		g.mu.Unlock()
		return errNonEmptyGroup
	}
	var o outbox
	g.close(&o) // no member, so nothing to answer
	g.persist(false)
	c.mu.Lock()
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
	}
	c.mu.Unlock()
	g.mu.Unlock()
	o.flush()
	return errNone
}

// OffsetDeleteScope is what OffsetDelete needs to know of a group.
type OffsetDeleteScope struct {
	// Error is 0, GROUP_ID_NOT_FOUND (69) for an unknown group,
	// NON_EMPTY_GROUP (68) for a group with members that is not a consumer
	// group (protocol type other than "consumer"), or
	// COORDINATOR_NOT_AVAILABLE (15) after Close.
	Error int16
	// Subscribed reports whether the group's members consume topic: their
	// offsets must not be deleted (GROUP_SUBSCRIBED_TO_TOPIC). It is nil
	// for an empty group.
	Subscribed func(topic string) bool
}

// OffsetDeleteScope looks group groupID up for OffsetDelete, as Kafka's
// GroupCoordinator.handleDeleteOffsets does: an Empty group may have any
// offset deleted; a consumer group with members only those of topics no
// member subscribes to, per GroupMetadata.isSubscribedToTopic: the topics of
// every member's ConsumerProtocolSubscription for the chosen protocol, and
// every topic when that is not known (no protocol chosen yet, or metadata
// that does not parse).
func (c *Coordinator) OffsetDeleteScope(groupID string) OffsetDeleteScope {
	if c.isConsumerGroup(groupID) {
		return c.consumerOffsetDeleteScope(groupID)
	}
	g, code := c.lockGroup(groupID, false)
	if code != errNone {
		return OffsetDeleteScope{Error: code}
	}
	if g == nil {
		return OffsetDeleteScope{Error: errGroupIDNotFound}
	}
	defer g.mu.Unlock()
	switch {
	case g.state == stateDead:
		return OffsetDeleteScope{Error: errGroupIDNotFound}
	case g.state == stateEmpty:
		return OffsetDeleteScope{}
	case g.protocolType != "consumer":
		return OffsetDeleteScope{Error: errNonEmptyGroup}
	}
	all := g.protocolName == ""
	var topics []string
	for _, m := range g.members {
		if all {
			break
		}
		ts, ok := subscriptionTopics(m.metadataFor(g.protocolName))
		if !ok {
			all = true
		}
		topics = append(topics, ts...)
	}
	if all {
		return OffsetDeleteScope{Subscribed: func(string) bool { return true }}
	}
	return OffsetDeleteScope{Subscribed: func(t string) bool { return slices.Contains(topics, t) }}
}

// subscriptionTopics returns the Topics of a ConsumerProtocolSubscription
// (Kafka's ConsumerProtocolSubscription.json: a version int16, then
// "Topics" []string; never flexible). ok is false when b does not parse.
func subscriptionTopics(b []byte) (topics []string, ok bool) {
	if len(b) < 6 || int16(uint16(b[0])<<8|uint16(b[1])) < 0 {
		return nil, false
	}
	n := int32(uint32(b[2])<<24 | uint32(b[3])<<16 | uint32(b[4])<<8 | uint32(b[5]))
	b = b[6:]
	if n < 0 || int(n) > len(b)/2 {
		return nil, false
	}
	topics = make([]string, 0, n)
	for range n {
		if len(b) < 2 {
			return nil, false
		}
		l := int(int16(uint16(b[0])<<8 | uint16(b[1])))
		b = b[2:]
		if l < 0 || l > len(b) {
			return nil, false
		}
		topics = append(topics, string(b[:l]))
		b = b[l:]
	}
	return topics, true
}
