package group

// Online migration between the classic and the consumer group protocols
// (KIP-848, Kafka 4.4's group.consumer.migration.policy=bidirectional;
// docs/design/consumer-groups.md §5): a classic group with members is
// converted to a consumer group when a consumer-protocol member joins it;
// classic members then live in the consumer group, served through
// JoinGroup, SyncGroup, Heartbeat and LeaveGroup from its target
// assignment (Kafka's classicGroupJoinToConsumerGroup and its siblings);
// when the last consumer-protocol member leaves, the group is converted
// back to a classic group, whose members rejoin.

import (
	"encoding/binary"
	"maps"
	"slices"
	"strings"
	"time"
)

// classicInfo is what a classic member of a consumer group joined with.
type classicInfo struct {
	protocols []Protocol
	session   time.Duration
}

// subscription is a decoded ConsumerProtocolSubscription (Kafka's
// ConsumerProtocolSubscription.json, never flexible): Topics v0+,
// UserData v0+, OwnedPartitions v1+, GenerationId v2+, RackId v3+.
type subscription struct {
	version int16
	topics  []string
	owned   map[string][]int32
	rack    string
	hasRack bool
}

// protoReader reads the big-endian, non-flexible embedded protocol.
type protoReader struct {
	b  []byte
	ok bool
}

func (r *protoReader) take(n int) []byte {
	if !r.ok || n < 0 || n > len(r.b) {
		r.ok = false
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *protoReader) i16() int16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *protoReader) i32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *protoReader) str() (string, bool) {
	n := r.i16()
	if n < 0 {
		return "", false
	}
	return string(r.take(int(n))), true
}

func (r *protoReader) count(minElem int) int {
	n := r.i32()
	if n < 0 || int(n) > len(r.b)/minElem {
		if n != -1 {
			r.ok = false
		}
		return 0
	}
	return int(n)
}

// parseSubscription decodes a ConsumerProtocolSubscription; versions above
// 3 are read as 3, as Kafka's ConsumerProtocol does.
func parseSubscription(b []byte) (subscription, bool) {
	r := protoReader{b: b, ok: true}
	s := subscription{version: r.i16()}
	if s.version < 0 {
		return s, false
	}
	for range r.count(2) {
		t, _ := r.str()
		s.topics = append(s.topics, t)
	}
	if n := r.i32(); n > 0 {
		r.take(int(n)) // user data
	}
	if s.version >= 1 && r.ok && len(r.b) > 0 {
		s.owned = map[string][]int32{}
		for range r.count(6) {
			t, _ := r.str()
			for range r.count(4) {
				s.owned[t] = append(s.owned[t], r.i32())
			}
		}
	}
	if s.version >= 2 && r.ok && len(r.b) > 0 {
		r.i32() // generation
	}
	if s.version >= 3 && r.ok && len(r.b) > 0 {
		s.rack, s.hasRack = r.str()
	}
	return s, r.ok
}

// encodeAssignment encodes a ConsumerProtocolAssignment of version v (0–3
// share one layout: AssignedPartitions, then a null UserData).
func encodeAssignment(v int16, parts map[string][]int32) []byte {
	if v < 0 {
		v = 0
	}
	if v > 3 {
		v = 3
	}
	names := make([]string, 0, len(parts))
	for t := range parts {
		names = append(names, t)
	}
	slices.Sort(names)
	b := binary.BigEndian.AppendUint16(nil, uint16(v))
	b = binary.BigEndian.AppendUint32(b, uint32(len(names)))
	for _, t := range names {
		b = binary.BigEndian.AppendUint16(b, uint16(len(t)))
		b = append(b, t...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(parts[t])))
		for _, p := range parts[t] {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
	}
	return binary.BigEndian.AppendUint32(b, 0xffffffff) // null user data
}

// parseAssignment decodes a ConsumerProtocolAssignment's partitions.
func parseAssignment(b []byte) (map[string][]int32, bool) {
	r := protoReader{b: b, ok: true}
	if r.i16() < 0 {
		return nil, false
	}
	out := map[string][]int32{}
	for range r.count(6) {
		t, _ := r.str()
		for range r.count(4) {
			out[t] = append(out[t], r.i32())
		}
	}
	return out, r.ok
}

// byName turns partitions by topic name into a partitionSet, dropping
// topics topics does not know.
func byName(topics TopicLookup, parts map[string][]int32) partitionSet {
	out := partitionSet{}
	if topics == nil {
		return out
	}
	for t, ps := range parts {
		if id, _, ok := topics.ByName(t); ok {
			out[id] = append(out[id], ps...)
		}
	}
	return out
}

// toNames turns a partitionSet into partitions by topic name.
func toNames(topics TopicLookup, set partitionSet) map[string][]int32 {
	out := map[string][]int32{}
	if topics == nil {
		return out
	}
	for id, ps := range set {
		if name, ok := topics.ByID(id); ok && len(ps) > 0 {
			out[name] = slices.Clone(ps)
		}
	}
	return out
}

// topics returns the coordinator's topic metadata (Config.Topics), or nil.
func (c *Coordinator) topics() TopicLookup {
	if c.cfg.Topics == nil {
		return nil
	}
	return c.cfg.Topics()
}

// upgrade converts classic group g, locked, with members, into a consumer
// group: each member keeps its id, generation (as its epoch) and
// assignment, and becomes a classic member of the consumer group. Members
// parked in a join or a sync are answered REBALANCE_IN_PROGRESS and rejoin
// (Kafka's convertToConsumerGroup). It reports false, changing nothing,
// for a group whose members are not consumers.
func (c *Coordinator) upgrade(g *group, topics TopicLookup, o *outbox) (*cgroup, bool) {
	if g.protocolType != "consumer" || (c.cfg.MaxGroupSize > 0 && len(g.members) >= c.cfg.MaxGroupSize) {
		return nil, false
	}
	now := c.clock.now()
	cg := &cgroup{c: c, id: g.id, epoch: g.generation, assignmentEpoch: g.generation, members: map[string]*cmember{},
		static: map[string]string{}, target: map[string]partitionSet{}, owners: map[tp]string{}, incarnation: newIncarnation(), touchedAll: true}
	for _, m := range g.members {
		proto := g.protocolName
		if proto == "" && len(m.protocols) > 0 {
			proto = m.protocols[0].Name
		}
		sub, _ := parseSubscription(m.metadataFor(proto))
		names := slices.Clone(sub.topics)
		slices.Sort(names)
		cm := &cmember{id: m.id, epoch: g.generation, previousEpoch: g.generation, instanceID: m.instanceID, hasInstance: m.hasInstance,
			rackID: sub.rack, hasRack: sub.hasRack && sub.rack != "", clientID: m.clientID, clientHost: m.clientHost,
			rebalance: m.rebalance, names: slices.Compact(names), assigned: partitionSet{}, revoking: partitionSet{},
			classic: &classicInfo{protocols: m.protocols, session: m.session}, sessionEnd: now.Add(m.session)}
		if !g.pendingSyncOrJoin(m) && len(m.assignment) > 0 {
			if parts, ok := parseAssignment(m.assignment); ok {
				cm.assigned = byName(topics, parts)
			}
		}
		cg.members[cm.id] = cm
		if cm.hasInstance {
			cg.static[cm.instanceID] = cm.id
		}
		cg.setAssigned(cm, cm.assigned, partitionSet{})
		cg.target[cm.id] = cm.snapshot()
		if m.joinDone != nil {
			o.join(m.joinDone, JoinResult{Error: errRebalanceInProgress, GenerationID: noGeneration, MemberID: m.id})
			m.joinDone = nil
		}
		if m.syncDone != nil {
			o.sync(m.syncDone, SyncResult{Error: errRebalanceInProgress})
			m.syncDone = nil
		}
	}
	if topics != nil {
		cg.subsHash = cg.subscriptions(topics).hash
	}
	g.state = stateDead
	if g.stored {
		// The consumer group is stored in its own namespace from here
		// (consumer_state.go); c.mu is held (lockConsumerGroup).
		c.queueClassicLocked(g.id, nil)
		g.stored = false
	}
	g.account() // cg counts the members from here (flushChange)
	if g.timer != nil {
		g.timer.Stop()
	}
	cg.changed = true
	return cg, true
}

func (g *group) pendingSyncOrJoin(m *member) bool {
	return g.state != stateStable && (m.pendingSync || m.joinDone != nil)
}

// maybeDowngrade converts cg, locked, back to a classic group once every
// member left uses the classic protocol (Kafka's convertToClassicGroup):
// the members keep their ids and assignments and must rejoin, the classic
// group preparing a rebalance at the next generation. It reports whether it
// did; the caller drops cg.
func (c *Coordinator) maybeDowngrade(cg *cgroup, topics TopicLookup) bool {
	if len(cg.members) == 0 {
		return false
	}
	for _, m := range cg.members {
		if m.classic == nil {
			return false
		}
	}
	now := c.clock.now()
	g := newGroup(c, cg.id)
	g.generation = cg.epoch
	g.protocolType = "consumer"
	ids := slices.Sorted(maps.Keys(cg.members))
	for _, id := range ids {
		cm := cg.members[id]
		m := &member{id: cm.id, instanceID: cm.instanceID, hasInstance: cm.hasInstance, clientID: cm.clientID,
			clientHost: cm.clientHost, protocols: cm.classic.protocols, session: cm.classic.session, rebalance: cm.rebalance,
			deadline: now.Add(cm.classic.session)}
		if len(m.protocols) > 0 {
			sub, _ := parseSubscription(m.protocols[0].Metadata)
			m.assignment = encodeAssignment(sub.version, toNames(topics, cm.assigned))
		}
		g.members = append(g.members, m)
		g.byID[m.id] = m
		if m.hasInstance {
			g.static[m.instanceID] = m.id
		}
	}
	g.leader = g.members[0].id
	g.protocolName = g.selectProtocol()
	g.state = stateStable
	var o outbox
	g.mu.Lock()
	g.prepareRebalance(now, &o)
	g.schedule()
	g.mu.Unlock()
	o.flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.groups[g.id] != nil {
		return false
	}
	c.groups[g.id] = g
	delete(c.cgroups, cg.id)
	cg.dead = true
	if cg.timer != nil {
		cg.timer.Stop()
		cg.timer = nil
	}
	cg.changed = true // flushChange stores the consumer group's removal
	cg.deleted = true
	return true
}

// classicJoin serves a classic JoinGroup to a consumer group (Kafka's
// classicGroupJoinToConsumerGroup): the member is created or updated from
// its subscription, reconciled as a consumer-protocol member would be with
// its owned partitions, and answered at once with its epoch as the
// generation; it is no leader, and learns its partitions in SyncGroup.
func (cg *cgroup) classicJoin(req *JoinRequest, now time.Time) JoinResult {
	fail := func(code int16) JoinResult {
		return joinError(strings.Clone(req.MemberID), code)
	}
	if req.ProtocolType != "consumer" || len(req.Protocols) == 0 {
		return fail(errInconsistentGroupProtocol)
	}
	sub, ok := parseSubscription(req.Protocols[0].Metadata)
	if !ok {
		return fail(errInconsistentGroupProtocol)
	}
	memberID := req.MemberID
	if memberID == "" {
		memberID = newMemberID(req.ClientID)
		if req.RequireKnownMemberID && !req.HasInstanceID {
			return joinError(memberID, errMemberIDRequired)
		}
	}
	var m *cmember
	if req.HasInstanceID {
		if old := cg.static[req.GroupInstanceID]; old != "" && old != memberID {
			cg.replace(cg.members[old], memberID)
		}
	}
	if m = cg.members[memberID]; m == nil {
		if max := cg.c.cfg.MaxGroupSize; max > 0 && len(cg.members) >= max {
			cg.c.refuse(RefusedGroupMaxSize)
			return fail(errGroupMaxSizeReached)
		}
		m = &cmember{id: strings.Clone(memberID), assigned: partitionSet{}, revoking: partitionSet{}}
		cg.members[m.id] = m
		if req.HasInstanceID {
			m.instanceID, m.hasInstance = strings.Clone(req.GroupInstanceID), true
			cg.static[m.instanceID] = m.id
		}
		cg.changed = true
	} else if m.classic == nil {
		return fail(errUnknownMemberID) // a consumer-protocol member's id
	}
	m.classic = &classicInfo{protocols: copyProtocols(req.Protocols), session: req.SessionTimeout}
	cg.touch(m.id)
	topics := cg.c.topics()
	hb := &ConsumerHeartbeat{GroupID: cg.id, MemberID: m.id, MemberEpoch: m.epoch, RebalanceTimeoutMillis: int32(rebalanceTimeoutOf(req).Milliseconds()),
		SubscribedTopicNames: sub.topics, HasSubscribedTopicNames: true, ClientID: req.ClientID, ClientHost: req.ClientHost, Topics: topics}
	if sub.hasRack && sub.rack != "" {
		hb.RackID, hb.HasRackID = sub.rack, true
	}
	hb.HasOwned = true
	for id, ps := range byName(topics, sub.owned) {
		hb.Owned = append(hb.Owned, TopicPartitions{TopicID: id, Partitions: ps})
	}
	bump := cg.updateMember(m, hb)
	if topics != nil {
		if moved := cg.metadataChanged(topics); moved {
			bump = true
		}
	}
	if bump {
		cg.bumpEpoch()
	}
	if cg.epoch > cg.assignmentEpoch && topics != nil {
		cg.computeTarget(topics)
	}
	cg.reconcile(m, hb, now)
	m.sessionEnd = now.Add(m.classic.session)
	return JoinResult{GenerationID: m.epoch, ProtocolType: "consumer", ProtocolName: m.classic.protocols[0].Name, MemberID: m.id}
}

// classicMember finds the classic member a Sync, Heartbeat or commit names.
func (cg *cgroup) classicMember(memberID, instanceID string, hasInstance bool) (*cmember, int16) {
	var m *cmember
	if hasInstance {
		id := cg.static[instanceID]
		if id == "" {
			return nil, errUnknownMemberID
		}
		if id != memberID {
			return nil, errFencedInstanceID
		}
		m = cg.members[id]
	} else {
		m = cg.members[memberID]
	}
	if m == nil || m.classic == nil {
		return nil, errUnknownMemberID
	}
	return m, errNone
}

// classicSync serves SyncGroup for a classic member of a consumer group:
// its assignment, encoded in the version of its subscription.
func (cg *cgroup) classicSync(req *SyncRequest, now time.Time) SyncResult {
	m, code := cg.classicMember(req.MemberID, req.GroupInstanceID, req.HasInstanceID)
	if code != errNone {
		return SyncResult{Error: code}
	}
	if req.GenerationID != m.epoch {
		return SyncResult{Error: errIllegalGeneration}
	}
	proto := m.classic.protocols[0]
	if (req.HasProtocolType && req.ProtocolType != "consumer") || (req.HasProtocolName && req.ProtocolName != proto.Name) {
		return SyncResult{Error: errInconsistentGroupProtocol}
	}
	if cg.epoch > m.epoch && m.state != msUnrevokedPartitions {
		// Kafka's throwIfRebalanceInProgress: a newer rebalance began; a
		// member revoking finishes that first.
		return SyncResult{Error: errRebalanceInProgress}
	}
	m.sessionEnd = now.Add(m.classic.session)
	sub, _ := parseSubscription(proto.Metadata)
	return SyncResult{ProtocolType: "consumer", ProtocolName: proto.Name, Assignment: encodeAssignment(sub.version, toNames(cg.c.topics(), m.assigned))}
}

// classicHeartbeat serves Heartbeat for a classic member of a consumer
// group: REBALANCE_IN_PROGRESS while the member is behind the group epoch
// or has partitions to give up or to get, so that it rejoins.
func (cg *cgroup) classicHeartbeat(memberID, instanceID string, hasInstance bool, generation int32, now time.Time) int16 {
	m, code := cg.classicMember(memberID, instanceID, hasInstance)
	if code != errNone {
		return code
	}
	if generation != m.epoch {
		return errIllegalGeneration
	}
	m.sessionEnd = now.Add(m.classic.session)
	if m.epoch < cg.epoch || m.state != msStable {
		return errRebalanceInProgress
	}
	return errNone
}

// classicConsumerJoin is Join for a group id that names a consumer group.
func (c *Coordinator) classicConsumerJoin(req JoinRequest, done func(JoinResult)) bool {
	cg, code, _ := c.lockConsumerGroup(req.GroupID, false)
	if code != errNone {
		return false
	}
	now := c.clock.now()
	res := cg.classicJoin(&req, now)
	cg.schedule(now)
	cg.flushChange()
	cg.mu.Unlock()
	done(res)
	return true
}

// tryUpgrade upgrades classic group g, with c.mu held: it only tries g's
// lock, against the usual order (the caller answers the member
// GROUP_ID_NOT_FOUND, which it retries, when it cannot).
func (c *Coordinator) tryUpgrade(g *group) (*cgroup, bool) {
	if !g.mu.TryLock() {
		return nil, false
	}
	var o outbox
	cg, ok := c.upgrade(g, c.topics(), &o)
	g.mu.Unlock()
	go o.flush() // callbacks run without c.mu held
	return cg, ok
}

// classicConsumerSync is Sync for a group id that names a consumer group.
func (c *Coordinator) classicConsumerSync(req SyncRequest, done func(SyncResult)) bool {
	cg, code, _ := c.lockConsumerGroup(req.GroupID, false)
	if code != errNone {
		return false
	}
	res := cg.classicSync(&req, c.clock.now())
	cg.mu.Unlock()
	done(res)
	return true
}

// classicConsumerHeartbeat is Heartbeat for a group id that names a
// consumer group.
func (c *Coordinator) classicConsumerHeartbeat(groupID, memberID, instanceID string, hasInstance bool, generation int32) (int16, bool) {
	cg, code, _ := c.lockConsumerGroup(groupID, false)
	if code != errNone {
		return 0, false
	}
	defer cg.mu.Unlock()
	return cg.classicHeartbeat(memberID, instanceID, hasInstance, generation, c.clock.now()), true
}

// classicConsumerLeave is Leave for a group id that names a consumer group.
func (c *Coordinator) classicConsumerLeave(groupID string, members []LeaveMember) ([]int16, bool) {
	cg, code, _ := c.lockConsumerGroup(groupID, false)
	if code != errNone {
		return nil, false
	}
	defer cg.mu.Unlock()
	errs := make([]int16, len(members))
	for i, lm := range members {
		m, code := cg.classicMember(lm.MemberID, lm.GroupInstanceID, lm.HasInstanceID)
		if lm.MemberID == "" && lm.HasInstanceID {
			if id := cg.static[lm.GroupInstanceID]; id != "" {
				m, code = cg.members[id], errNone
			}
		}
		if code != errNone || m == nil || cg.dead {
			errs[i] = errUnknownMemberID
			if code == errFencedInstanceID {
				errs[i] = code
			}
			continue
		}
		cg.remove(m, nil)
	}
	cg.schedule(c.clock.now())
	cg.flushChange()
	return errs, true
}
