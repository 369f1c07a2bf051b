package group

// Design note: the group state machine.
//
// A group follows Kafka's classic coordinator (GroupCoordinator.scala and its
// Java successor's ClassicGroup): Empty → PreparingRebalance →
// CompletingRebalance → Stable, back to PreparingRebalance on any membership or
// metadata change, and Dead once deleted or after Close.
//
// Kafka parks pending JoinGroup and SyncGroup responses and heartbeat
// expectations in purgatories. Here a member holds at most one pending join
// callback (joinDone) and one pending sync callback (syncDone), and every
// deadline of a group lives in plain fields: each member's session deadline,
// each pending (MEMBER_ID_REQUIRED) member's deadline, the rebalance deadline
// and the pending-sync deadline. One timer per group is armed for the
// earliest of them; when it fires, expire handles whatever is due and the
// timer is re-armed. A heartbeat only pushes a deadline later, so it never
// touches the timer: an early fire finds nothing due and re-arms.
//
// Callbacks are never called with a lock held: every operation collects them
// in an outbox and flushes it after unlocking. Whenever a callback is handed
// to the outbox, the field that held it is cleared in the same step, which is
// what makes "called exactly once" hold.

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kafka error codes the coordinator returns (docs/design/kafka-protocol.md §6).
const (
	errNone                      int16 = 0
	errCoordinatorNotAvailable   int16 = 15
	errNotCoordinator            int16 = 16
	errIllegalGeneration         int16 = 22
	errInconsistentGroupProtocol int16 = 23
	errInvalidGroupID            int16 = 24
	errUnknownMemberID           int16 = 25
	errInvalidSessionTimeout     int16 = 26
	errRebalanceInProgress       int16 = 27
	errNonEmptyGroup             int16 = 68
	errGroupIDNotFound           int16 = 69
	errMemberIDRequired          int16 = 79
	errGroupMaxSizeReached       int16 = 81
	errFencedInstanceID          int16 = 82
)

// noGeneration is the generation id of error responses (Kafka's NoGeneration).
const noGeneration int32 = -1

type state uint8

const (
	stateEmpty state = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

// String returns the state name Kafka reports in DescribeGroups/ListGroups.
func (s state) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	default:
		return "Dead"
	}
}

// member is one group member. Every string and byte slice is a
// coordinator-owned copy; protocols and assignment are replaced, never
// mutated, so results may share them.
type member struct {
	id          string
	instanceID  string
	hasInstance bool
	clientID    string
	clientHost  string
	protocols   []Protocol
	session     time.Duration
	rebalance   time.Duration
	assignment  []byte

	joinDone func(JoinResult) // pending JoinGroup, nil if none
	syncDone func(SyncResult) // pending SyncGroup, nil if none

	// isNew is set until the member's first join completes.
	isNew bool
	// pendingSync is set from the join's completion until its SyncGroup.
	pendingSync bool
	// deadline is when the member expires unless it heartbeats.
	deadline time.Time
}

// matches reports whether protos equals the member's protocols, in order
// (Kafka's MemberMetadata.matches).
func (m *member) matches(protos []Protocol) bool {
	if len(protos) != len(m.protocols) {
		return false
	}
	for i, p := range protos {
		if p.Name != m.protocols[i].Name || !bytes.Equal(p.Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

func (m *member) supports(name string) bool {
	for _, p := range m.protocols {
		if p.Name == name {
			return true
		}
	}
	return false
}

// metadataFor returns the member's metadata for protocol name.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

// group is one classic group. Every field but c and id is guarded by mu.
type group struct {
	// Immutable.
	c  *Coordinator
	id string

	mu           sync.Mutex
	state        state
	generation   int32
	protocolType string
	protocolName string             // chosen protocol, "" when none
	leader       string             // leader's member id, "" when no members
	members      []*member          // in join order
	byID         map[string]*member // member id → member
	static       map[string]string  // group.instance.id → member id
	pending      map[string]time.Time
	// keep is set once the group must outlive emptiness: it holds
	// committed offsets (a simple commit, or a member's).
	keep bool
	// counted is what the coordinator's member count holds for this group
	// (limits.go).
	counted int

	// The stored form (classic_state.go): seq counts changes that may
	// alter it, savedSeq is seq when it was last queued, and stored is set
	// while the store holds a form of this group.
	seq, savedSeq uint64
	stored        bool
	// restored is set on a group restored from its stored form
	// (RestoreClassicGroup), reread once RestoredBehind has asked for its
	// form to be read again.
	restored, reread bool

	// Rebalance (PreparingRebalance) timing.
	joinDeadline time.Time
	// initialDelay is set while the rebalance from Empty waits for more
	// members (KIP-134); it then completes only at joinDeadline.
	initialDelay   bool
	initialLimit   time.Time
	newMemberAdded bool

	// syncDeadline is when members still pendingSync are removed.
	syncDeadline time.Time

	// The group's timer, armed for armedAt; timerSeq tells a stale call apart.
	timer    stopper
	armedAt  time.Time
	timerSeq uint64
}

func newGroup(c *Coordinator, id string) *group {
	return &group{
		c:       c,
		id:      id,
		byID:    make(map[string]*member),
		static:  make(map[string]string),
		pending: make(map[string]time.Time),
	}
}

// outbox collects callbacks to call once the group lock is released.
type outbox struct {
	joins []joinReply
	syncs []syncReply
}

type joinReply struct {
	done func(JoinResult)
	res  JoinResult
}

type syncReply struct {
	done func(SyncResult)
	res  SyncResult
}

func (o *outbox) join(done func(JoinResult), res JoinResult) {
	o.joins = append(o.joins, joinReply{done, res})
}

func (o *outbox) sync(done func(SyncResult), res SyncResult) {
	o.syncs = append(o.syncs, syncReply{done, res})
}

func (o *outbox) empty() bool { return len(o.joins) == 0 && len(o.syncs) == 0 }

// flush calls the collected callbacks; no lock may be held.
func (o *outbox) flush() {
	for _, r := range o.joins {
		r.done(r.res)
	}
	for _, r := range o.syncs {
		r.done(r.res)
	}
	o.joins, o.syncs = nil, nil
}

func joinError(memberID string, code int16) JoinResult {
	return JoinResult{Error: code, GenerationID: noGeneration, MemberID: memberID}
}

// finish ends an operation on a locked group: it re-arms the timer, forgets
// a group that holds nothing, unlocks, and calls the collected callbacks.
func (g *group) finish(o *outbox) {
	g.schedule()
	g.account()
	g.persist(false)
	g.maybeForget()
	held := g.c.cfg.AwaitStore && !o.empty() && g.c.holdForStore(g.id, o)
	g.mu.Unlock()
	if !held {
		o.flush()
	}
}

// maybeForget drops a group that never formed a generation and holds no
// members, pending members or commits (a join that went nowhere), so stray
// group ids do not accumulate. Lock order: g.mu, then c.mu.
func (g *group) maybeForget() {
	if g.state != stateEmpty || g.generation != 0 || g.keep || len(g.members) != 0 || len(g.pending) != 0 {
		return
	}
	g.kill()
	g.c.mu.Lock()
	if g.c.groups[g.id] == g {
		delete(g.c.groups, g.id)
	}
	g.c.mu.Unlock()
}

// kill marks the group Dead and stops its timer; callers answer callbacks.
func (g *group) kill() {
	g.state = stateDead
	g.account()
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
	g.timerSeq++
}

// has reports whether id is a current member.
func (g *group) has(id string) bool {
	_, ok := g.byID[id]
	return ok
}

// validateMember checks a request's member and instance ids (Kafka's
// validateCurrentMember): "If groupInstanceId is present, then it exists and
// is mapped to memberId; the memberId exists in the group."
func (g *group) validateMember(memberID, instanceID string, hasInstance bool) int16 {
	if hasInstance {
		cur, ok := g.static[instanceID]
		if !ok {
			return errUnknownMemberID
		}
		if cur != memberID {
			// KIP-345: a request from a replaced instance is fenced.
			return errFencedInstanceID
		}
	}
	if !g.has(memberID) {
		return errUnknownMemberID
	}
	return errNone
}

// touch restarts the member's session (Kafka's
// completeAndScheduleNextHeartbeatExpiration).
func (g *group) touch(m *member, now time.Time) {
	m.deadline = now.Add(m.session)
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

// supportsProtocols reports whether a member (self, or nil for a new one)
// with the given protocol type and protocols may join (Kafka's
// supportsProtocols): an empty group takes any non-empty type and list;
// otherwise the type must be the group's and one protocol must be supported
// by every other member. Unlike Kafka, self's current protocols do not count,
// so a lone member may change its assignors.
func (g *group) supportsProtocols(ptype string, protos []Protocol, self *member) bool {
	if ptype == "" || len(protos) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	if ptype != g.protocolType {
		return false
	}
	for _, p := range protos {
		ok := true
		for _, m := range g.members {
			if m != self && !m.supports(p.Name) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// selectProtocol chooses the group's protocol as Kafka does: among the
// protocols every member supports, each member votes for the first in its own
// preference order, and the most votes win. Ties go to the earlier protocol
// in the first member's order, so the choice is deterministic.
func (g *group) selectProtocol() string {
	if len(g.members) == 0 {
		return ""
	}
	first := g.members[0]
	var candidates []string
	for _, p := range first.protocols {
		if slices.Contains(candidates, p.Name) {
			continue
		}
		all := true
		for _, m := range g.members[1:] {
			if !m.supports(p.Name) {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, p.Name)
		}
	}
	if len(candidates) == 0 { // unreachable: joins keep an intersection
		return first.protocols[0].Name
	}
	votes := make([]int, len(candidates))
	for _, m := range g.members {
		for _, p := range m.protocols {
			if i := slices.Index(candidates, p.Name); i >= 0 {
				votes[i]++
				break
			}
		}
	}
	best := 0
	for i := range votes {
		if votes[i] > votes[best] {
			best = i
		}
	}
	return candidates[best]
}

// memberList is the member list sent to the leader.
func (g *group) memberList() []Member {
	list := make([]Member, len(g.members))
	for i, m := range g.members {
		list[i] = Member{
			MemberID:        m.id,
			GroupInstanceID: m.instanceID,
			HasInstanceID:   m.hasInstance,
			Metadata:        m.metadataFor(g.protocolName),
		}
	}
	return list
}

// joinSuccess is the JoinGroup response for m in the current generation.
func (g *group) joinSuccess(m *member) JoinResult {
	res := JoinResult{
		GenerationID: g.generation,
		ProtocolType: g.protocolType,
		ProtocolName: g.protocolName,
		LeaderID:     g.leader,
		MemberID:     m.id,
	}
	if m.id == g.leader {
		res.Members = g.memberList()
	}
	return res
}

// allJoined reports whether every member has a join pending and no
// MEMBER_ID_REQUIRED member is still expected (Kafka's hasAllMembersJoined).
func (g *group) allJoined() bool {
	if len(g.pending) != 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinDone == nil {
			return false
		}
	}
	return true
}

// acceptJoining applies group.max.size (KIP-389) as Kafka's
// acceptJoiningMember does: during PreparingRebalance an awaiting member is
// kept and others count against the members already awaiting; afterwards
// current members are kept and new ones count against the group size.
func (g *group) acceptJoining(memberID string) bool {
	limit := g.c.cfg.MaxGroupSize
	if limit == 0 {
		return true
	}
	switch g.state {
	case statePreparingRebalance:
		if m := g.byID[memberID]; m != nil && m.joinDone != nil {
			return true
		}
		awaiting := 0
		for _, m := range g.members {
			if m.joinDone != nil {
				awaiting++
			}
		}
		return awaiting < limit
	case stateCompletingRebalance, stateStable:
		return g.has(memberID) || len(g.members) < limit
	default:
		return true
	}
}

// copyProtocols deep-copies protos into one arena allocation.
func copyProtocols(protos []Protocol) []Protocol {
	n := 0
	for _, p := range protos {
		n += len(p.Metadata)
	}
	arena := make([]byte, 0, n)
	out := make([]Protocol, len(protos))
	for i, p := range protos {
		start := len(arena)
		arena = append(arena, p.Metadata...)
		out[i] = Protocol{Name: strings.Clone(p.Name), Metadata: arena[start:len(arena):len(arena)]}
	}
	return out
}

// addMember adds a new member awaiting its first join and starts a rebalance
// if the group can (Kafka's addMemberAndRebalance).
func (g *group) addMember(id string, req *JoinRequest, done func(JoinResult), now time.Time, o *outbox) {
	m := &member{
		id:          id,
		instanceID:  strings.Clone(req.GroupInstanceID),
		hasInstance: req.HasInstanceID,
		clientID:    strings.Clone(req.ClientID),
		clientHost:  strings.Clone(req.ClientHost),
		protocols:   copyProtocols(req.Protocols),
		session:     req.SessionTimeout,
		rebalance:   rebalanceTimeoutOf(req),
		isNew:       true,
		joinDone:    done,
		// A new member cannot heartbeat before its join completes; bound its
		// wait instead (see newMemberJoinTimeout).
		deadline: now.Add(newMemberJoinTimeout),
	}
	if g.state == statePreparingRebalance && g.generation == 0 {
		// KIP-134: a new member extends the initial rebalance delay.
		g.newMemberAdded = true
	}
	if len(g.members) == 0 {
		g.protocolType = strings.Clone(req.ProtocolType)
	}
	g.changed()
	g.members = append(g.members, m)
	g.byID[id] = m
	if m.hasInstance {
		g.static[m.instanceID] = id
	}
	delete(g.pending, id)
	if g.leader == "" {
		g.leader = id
	}
	g.maybePrepareRebalance(now, o)
}

func rebalanceTimeoutOf(req *JoinRequest) time.Duration {
	if req.RebalanceTimeout <= 0 {
		// JoinGroup v0 has no rebalance timeout; Kafka uses the session timeout.
		return req.SessionTimeout
	}
	return req.RebalanceTimeout
}

// updateMember records a rejoin's protocols and timeouts and parks its
// callback. A join still pending from the same member (a client retry) is
// superseded and told to rejoin.
func (g *group) updateMember(m *member, req *JoinRequest, done func(JoinResult), o *outbox) {
	if !m.matches(req.Protocols) {
		m.protocols = copyProtocols(req.Protocols)
	}
	g.changed()
	m.session = req.SessionTimeout
	m.rebalance = rebalanceTimeoutOf(req)
	if m.joinDone != nil {
		o.join(m.joinDone, joinError(m.id, errRebalanceInProgress))
	}
	m.joinDone = done
}

// removeMember drops m, answering its pending callbacks with
// UNKNOWN_MEMBER_ID so the client rejoins, and elects another leader if m led.
func (g *group) removeMember(m *member, o *outbox) {
	if m.joinDone != nil {
		o.join(m.joinDone, joinError("", errUnknownMemberID))
		m.joinDone = nil
	}
	if m.syncDone != nil {
		o.sync(m.syncDone, SyncResult{Error: errUnknownMemberID})
		m.syncDone = nil
	}
	g.changed()
	delete(g.byID, m.id)
	if i := slices.Index(g.members, m); i >= 0 {
		g.members = slices.Delete(g.members, i, i+1)
	}
	if m.hasInstance && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if len(g.members) > 0 {
			g.leader = g.members[0].id
		}
	}
}

// removeMemberAndUpdate removes m and moves the group on (Kafka's
// removeMemberAndUpdateGroup): a formed group rebalances, a rebalancing one
// may now be complete.
func (g *group) removeMemberAndUpdate(m *member, now time.Time, o *outbox) {
	g.removeMember(m, o)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.prepareRebalance(now, o)
	case statePreparingRebalance:
		g.maybeCompleteJoin(now, o)
	}
}

// maybePrepareRebalance starts a rebalance unless one is under way or the
// group is dead.
func (g *group) maybePrepareRebalance(now time.Time, o *outbox) {
	switch g.state {
	case stateEmpty, stateCompletingRebalance, stateStable:
		g.prepareRebalance(now, o)
	}
}

// prepareRebalance moves the group to PreparingRebalance. Members waiting for
// their assignment are told REBALANCE_IN_PROGRESS to rejoin. The rebalance
// from Empty waits the initial delay (KIP-134); any other completes when all
// members have rejoined or the rebalance timeout passes.
func (g *group) prepareRebalance(now time.Time, o *outbox) {
	if g.state == stateCompletingRebalance {
		g.propagateAssignment(now, errRebalanceInProgress, o)
	}
	for _, m := range g.members {
		m.pendingSync = false
	}
	delay := g.c.cfg.InitialRebalanceDelay
	if g.state == stateEmpty && delay > 0 {
		g.initialDelay = true
		g.newMemberAdded = false
		g.joinDeadline = now.Add(delay)
		g.initialLimit = now.Add(max(g.rebalanceTimeout(), delay))
	} else {
		g.initialDelay = false
		g.joinDeadline = now.Add(g.rebalanceTimeout())
	}
	g.state = statePreparingRebalance
	g.maybeCompleteJoin(now, o)
}

// maybeCompleteJoin completes the rebalance if nobody else is awaited.
func (g *group) maybeCompleteJoin(now time.Time, o *outbox) {
	if g.state == statePreparingRebalance && !g.initialDelay && g.allJoined() {
		g.completeJoin(now, o)
	}
}

// joinDeadlinePassed handles the rebalance deadline: the initial delay is
// extended while new members keep arriving, up to initialLimit; otherwise the
// rebalance completes with whoever rejoined.
func (g *group) joinDeadlinePassed(now time.Time, o *outbox) {
	if g.initialDelay && g.newMemberAdded && now.Before(g.initialLimit) {
		g.newMemberAdded = false
		g.joinDeadline = now.Add(g.c.cfg.InitialRebalanceDelay)
		if g.joinDeadline.After(g.initialLimit) {
			g.joinDeadline = g.initialLimit
		}
		return
	}
	g.completeJoin(now, o)
}

// completeJoin forms the next generation (Kafka's onCompleteJoin): dynamic
// members that did not rejoin are dropped (static ones are kept until their
// session expires), a leader that rejoined is chosen, the protocol selected,
// and every waiting member answered.
func (g *group) completeJoin(now time.Time, o *outbox) {
	g.initialDelay = false
	for _, m := range slices.Clone(g.members) {
		if m.joinDone == nil && !m.hasInstance {
			g.removeMember(m, o)
		}
	}
	if !g.electJoinedLeader() && len(g.members) > 0 {
		// Only static members that have not rejoined remain: wait another
		// rebalance timeout, until their sessions expire or they come back.
		g.joinDeadline = now.Add(g.rebalanceTimeout())
		return
	}
	g.generation++
	g.changed()
	if len(g.members) == 0 {
		g.protocolName = ""
		g.state = stateEmpty
		return
	}
	g.protocolName = g.selectProtocol()
	g.state = stateCompletingRebalance
	for _, m := range g.members {
		if m.joinDone != nil {
			o.join(m.joinDone, g.joinSuccess(m))
			m.joinDone = nil
		}
		g.touch(m, now)
		m.isNew = false
		m.pendingSync = true
	}
	// Members that do not send SyncGroup within the rebalance timeout are
	// removed (Kafka's DelayedSync).
	g.syncDeadline = now.Add(g.rebalanceTimeout())
}

// electJoinedLeader keeps the leader if it rejoined, else picks the first
// member that did; false if none did.
func (g *group) electJoinedLeader() bool {
	if l := g.byID[g.leader]; l != nil && l.joinDone != nil {
		return true
	}
	for _, m := range g.members {
		if m.joinDone != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

// propagateAssignment answers every member waiting in SyncGroup with its
// assignment (code 0) or with code and no assignment.
func (g *group) propagateAssignment(now time.Time, code int16, o *outbox) {
	for _, m := range g.members {
		if code != errNone {
			m.assignment = nil
		}
		if m.syncDone == nil {
			continue
		}
		res := SyncResult{Error: code}
		if code == errNone {
			res = SyncResult{ProtocolType: g.protocolType, ProtocolName: g.protocolName, Assignment: m.assignment}
		}
		o.sync(m.syncDone, res)
		m.syncDone = nil
		// The member was not expected to heartbeat while it waited.
		g.touch(m, now)
	}
}

// setAssignments stores the leader's assignments, copied into one arena;
// members the leader left out get an empty assignment, and ids that are not
// members are ignored, as in Kafka.
func (g *group) setAssignments(as []Assignment) {
	// Keys alias the request; the map does not outlive this call. The last
	// entry for a member wins, as in Kafka's map.
	byMember := make(map[string][]byte, len(as))
	n := 0
	for _, a := range as {
		byMember[a.MemberID] = a.Assignment
	}
	g.changed()
	for _, m := range g.members {
		n += len(byMember[m.id])
	}
	arena := make([]byte, 0, n)
	for _, m := range g.members {
		start := len(arena)
		arena = append(arena, byMember[m.id]...)
		m.assignment = arena[start:len(arena):len(arena)]
	}
}

// nextDeadline is the earliest deadline the group waits for.
func (g *group) nextDeadline() (time.Time, bool) {
	var next time.Time
	ok := false
	consider := func(t time.Time) {
		if !ok || t.Before(next) {
			next, ok = t, true
		}
	}
	for _, m := range g.members {
		consider(m.deadline)
	}
	for _, t := range g.pending {
		consider(t)
	}
	switch g.state {
	case statePreparingRebalance:
		consider(g.joinDeadline)
	case stateCompletingRebalance, stateStable:
		for _, m := range g.members {
			if m.pendingSync {
				consider(g.syncDeadline)
				break
			}
		}
	}
	return next, ok
}

// schedule arms the group's timer for its earliest deadline unless it is
// already armed for that time or earlier.
func (g *group) schedule() {
	if g.state == stateDead {
		return
	}
	next, ok := g.nextDeadline()
	if !ok || (g.timer != nil && !g.armedAt.After(next)) {
		return
	}
	if g.timer != nil {
		g.timer.Stop()
	}
	g.timerSeq++
	seq := g.timerSeq
	g.armedAt = next
	g.timer = g.c.clock.afterFunc(next.Sub(g.c.clock.now()), func() { g.onTimer(seq) })
}

// onTimer handles whatever is due and re-arms.
func (g *group) onTimer(seq uint64) {
	g.mu.Lock()
	if g.state == stateDead || seq != g.timerSeq {
		g.mu.Unlock()
		return
	}
	g.timer = nil
	var o outbox
	g.expire(g.c.clock.now(), &o)
	g.finish(&o)
}

// expire handles every deadline that has passed by now.
func (g *group) expire(now time.Time, o *outbox) {
	// MEMBER_ID_REQUIRED members that did not come back within their session.
	expiredPending := false
	for id, t := range g.pending {
		if !t.After(now) {
			delete(g.pending, id)
			expiredPending = true
		}
	}
	if expiredPending {
		g.maybeCompleteJoin(now, o)
	}

	// Sessions. Kafka's hasSatisfiedHeartbeat: a member waiting in JoinGroup
	// or SyncGroup is not expected to heartbeat, except a new member, whose
	// deadline is the new-member join timeout.
	var due []*member
	for _, m := range g.members {
		if !m.deadline.After(now) {
			due = append(due, m)
		}
	}
	for _, m := range due {
		if g.byID[m.id] != m {
			continue
		}
		if !m.isNew && (m.joinDone != nil || m.syncDone != nil) {
			g.touch(m, now)
			continue
		}
		g.removeMemberAndUpdate(m, now, o)
	}

	// Members that received the generation but never sent SyncGroup.
	if (g.state == stateCompletingRebalance || g.state == stateStable) && !g.syncDeadline.After(now) {
		var late []*member
		for _, m := range g.members {
			if m.pendingSync {
				late = append(late, m)
			}
		}
		if len(late) > 0 {
			for _, m := range late {
				g.removeMember(m, o)
			}
			g.prepareRebalance(now, o)
		}
	}

	if g.state == statePreparingRebalance && !g.joinDeadline.After(now) {
		g.joinDeadlinePassed(now, o)
	}
}

// close answers every pending callback with NOT_COORDINATOR (Coordinator.Close)
// and marks the group dead.
func (g *group) close(o *outbox) { g.closeWith(errNotCoordinator, o) }

// closeWith answers every pending Join and Sync callback with code and
// marks the group dead.
func (g *group) closeWith(code int16, o *outbox) {
	for _, m := range g.members {
		if m.joinDone != nil {
			o.join(m.joinDone, joinError(m.id, code))
			m.joinDone = nil
		}
		if m.syncDone != nil {
			o.sync(m.syncDone, SyncResult{Error: code})
			m.syncDone = nil
		}
	}
	g.kill()
}
