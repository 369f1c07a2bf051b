package group

// The consumer group protocol of KIP-848 (ConsumerGroupHeartbeat,
// ConsumerGroupDescribe): the coordinator computes a target assignment with
// a server-side assignor whenever the group epoch moves, and reconciles
// each member towards it heartbeat by heartbeat, revoking before it
// reassigns (docs/design/consumer-groups.md). It follows Kafka's
// GroupMetadataManager.consumerGroupHeartbeat and CurrentAssignmentBuilder.

import (
	"crypto/rand"
	"encoding/base64"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Error codes of the consumer group protocol (Kafka's Errors.java).
const (
	errInvalidRequest           int16 = 42
	errFencedMemberEpoch        int16 = 110
	errUnreleasedInstanceID     int16 = 111
	errUnsupportedAssignor      int16 = 112
	errStaleMemberEpoch         int16 = 113
	errInvalidRegularExpression int16 = 128
	errUnsupportedVersion       int16 = 35
)

// Member epochs with a meaning of their own (ConsumerGroupHeartbeatRequest.json).
const (
	joinEpoch        int32 = 0
	leaveEpoch       int32 = -1
	staticLeaveEpoch int32 = -2
)

// Server-side assignor names (group.consumer.assignors); the first is the
// default, as in Kafka.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// Assignors are the server-side assignors served, default first.
var Assignors = []string{AssignorUniform, AssignorRange}

// Kafka's defaults for consumer groups (GroupCoordinatorConfig).
const (
	DefaultConsumerSessionTimeout    = 45 * time.Second
	DefaultConsumerHeartbeatInterval = 5 * time.Second
)

// TopicLookup is the topic metadata a consumer group assigns from: the
// gateway's view of every topic.
type TopicLookup interface {
	// ByName returns a topic's id and partition count.
	ByName(name string) (id [16]byte, partitions int32, ok bool)
	// ByID returns a topic's name.
	ByID(id [16]byte) (name string, ok bool)
	// Names returns every topic name, for regex subscriptions.
	Names() []string
}

// TopicPartitions is a set of partitions of one topic, by topic id.
type TopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// ConsumerHeartbeat is a decoded ConsumerGroupHeartbeat request. Strings
// and slices may alias a request buffer; the coordinator copies what it
// keeps. A Has* flag false means the field was null: unchanged.
type ConsumerHeartbeat struct {
	// Version is the request version: from v1 the client chooses its
	// member id (KIP-1082).
	Version     int16
	GroupID     string
	MemberID    string
	MemberEpoch int32

	InstanceID    string
	HasInstanceID bool
	RackID        string
	HasRackID     bool
	// RebalanceTimeoutMillis is -1 when unchanged.
	RebalanceTimeoutMillis int32

	SubscribedTopicNames    []string
	HasSubscribedTopicNames bool
	SubscribedTopicRegex    string
	HasSubscribedTopicRegex bool
	ServerAssignor          string
	HasServerAssignor       bool
	// Owned are the partitions the member owns; HasOwned false: unchanged.
	Owned    []TopicPartitions
	HasOwned bool

	ClientID, ClientHost string
	// Topics is the topic metadata to assign from.
	Topics TopicLookup
	// CanDescribe, when set, reports whether the member may DESCRIBE a
	// topic, and Identity names whom it asks for (its principal): a regex
	// subscription matches only the topics every principal subscribing
	// with it may describe, each asked once, from one of its members'
	// hosts (Kafka 4.x, KAFKA-18813, resolves a regex with the ACLs of
	// the member whose heartbeat resolves it). Nil: every topic.
	CanDescribe func(topic string) bool
	Identity    string
}

// ConsumerHeartbeatResult is the answer to a ConsumerHeartbeat.
type ConsumerHeartbeatResult struct {
	Error        int16
	ErrorMessage string
	MemberID     string
	MemberEpoch  int32
	// HeartbeatInterval is when the member should heartbeat next.
	HeartbeatInterval time.Duration
	// Assignment is the member's assignment, to send when HasAssignment.
	Assignment    []TopicPartitions
	HasAssignment bool
	// StoreSeq, with Config.AwaitStore, is non-zero while the group holds a
	// change not yet stored: the answer waits for it (AfterConsumerStored).
	StoreSeq uint64
}

// memberState is a consumer member's reconciliation state
// (Kafka's MemberState).
type memberState uint8

const (
	msStable memberState = iota
	msUnrevokedPartitions
	msUnreleasedPartitions
)

// partitionSet is a member's partitions, by topic id.
type partitionSet map[[16]byte][]int32

// tp is one partition of a topic, by topic id.
type tp struct {
	topic     [16]byte
	partition int32
}

// cmember is one consumer-protocol member.
type cmember struct {
	id            string
	epoch         int32
	previousEpoch int32
	state         memberState
	instanceID    string
	hasInstance   bool
	rackID        string
	hasRack       bool
	clientID      string
	clientHost    string
	rebalance     time.Duration
	names         []string // subscribed topic names, sorted
	regex         string
	hasRegex      bool
	re            *regexp.Regexp
	assignor      string
	assigned      partitionSet
	revoking      partitionSet // pending revocation
	// assignedChanges counts the changes of assigned (setAssigned), for a
	// heartbeat to tell whether to send it.
	assignedChanges uint64
	// canDescribe and identity are the member's DESCRIBE filter for its
	// regex and who it is for (ConsumerHeartbeat.CanDescribe); not stored.
	canDescribe func(topic string) bool
	identity    string
	// classic is set for a member that uses the classic protocol inside
	// this consumer group (migration.go).
	classic    *classicInfo
	sessionEnd time.Time
	revokeEnd  time.Time // zero unless state is msUnrevokedPartitions
}

// cgroup is one consumer-protocol group.
type cgroup struct {
	c  *Coordinator
	id string

	mu              sync.Mutex
	dead            bool
	epoch           int32 // group epoch
	assignmentEpoch int32 // target assignment epoch
	assignorName    string
	members         map[string]*cmember
	static          map[string]string // instance id → member id
	target          map[string]partitionSet
	owners          map[tp]string // partition → member that owns or revokes it
	subsHash        uint64        // of the subscribed topics' metadata
	timer           stopper
	timerAt         time.Time
	// subsVer counts the changes of the members' subscriptions
	// (subscriptionsChanged); subsCache is subscriptions' last answer.
	subsVer   uint64
	subsCache subsCache
	// changed is set by every change to store (consumer_state.go);
	// deleted marks a group removed by DeleteGroups, not just unloaded.
	changed bool
	deleted bool
	// dirtySeq is the Coordinator's cseq at the group's last change
	// (consumer_state.go): 0 while unchanged since created or restored.
	dirtySeq uint64
	// incarnation marks the group's member records (consumer_state.go);
	// storedHead and storedMembers are the hashes of its head record and
	// of each member's as this coordinator last wrote or read them, 0 for
	// a record whose stored value is not known: what its next change
	// writes and removes.
	incarnation   uint64
	storedHead    uint64
	storedMembers map[string]uint64
	// touched are the members whose records may have changed since the
	// last change was taken for the store (a member gone included);
	// touchedAll, set on a group new here, stands for every member.
	touched    map[string]struct{}
	touchedAll bool
	touchCheck touchCheck // checkTouched only
	// restored is set on a group restored from its stored form, reread
	// once ConsumerRestoredBehind has asked for it to be read again.
	restored, reread bool
	// counted is how many members the coordinator's member count holds
	// for this group (limits.go).
	counted int
}

// newMemberID returns a member id as Kafka's Uuid.randomUuid().toString().
func newConsumerMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// lockConsumerGroup returns group id's consumer group, locked. create makes
// one when there is none and no classic group with members holds the id;
// it returns nil and an error code otherwise (GROUP_ID_NOT_FOUND for a
// classic group, NOT_COORDINATOR once closed).
func (c *Coordinator) lockConsumerGroup(id string, create bool) (*cgroup, int16, string) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, errNotCoordinator, ""
		}
		cg := c.cgroups[id]
		if cg == nil {
			if cl := c.groups[id]; cl != nil {
				// Kafka: "Group %s is not a consumer group" unless the
				// classic group is empty, when it is converted, or its
				// members are consumers, when it is upgraded online.
				if !create {
					c.mu.Unlock()
					return nil, errGroupIDNotFound, "Group " + id + " is not a consumer group."
				}
				if !c.classicEmpty(cl) {
					cg, ok := c.tryUpgrade(cl)
					if !ok {
						c.mu.Unlock()
						return nil, errGroupIDNotFound, "Group " + id + " is not a consumer group."
					}
					delete(c.groups, id)
					c.cgroups[cg.id] = cg // cg.id is a copy: id may alias a request
					c.mu.Unlock()
					cg.mu.Lock()
					return cg, errNone, ""
				}
				delete(c.groups, id)
			}
			if !create {
				c.mu.Unlock()
				return nil, errGroupIDNotFound, "Consumer group " + id + " not found."
			}
			if !c.roomForGroup() {
				c.mu.Unlock()
				return nil, errCoordinatorNotAvailable, "The coordinator holds its maximum of groups."
			}
			cg = &cgroup{c: c, id: strings.Clone(id), members: map[string]*cmember{}, static: map[string]string{},
				target: map[string]partitionSet{}, owners: map[tp]string{}, incarnation: newIncarnation(), touchedAll: true}
			c.cgroups[cg.id] = cg
		}
		c.mu.Unlock()
		cg.mu.Lock()
		if !cg.dead {
			return cg, errNone, ""
		}
		cg.mu.Unlock()
	}
}

// classicEmpty reports whether a classic group has no members; it locks
// the group with c.mu held, against the usual order, so it only tries.
func (c *Coordinator) classicEmpty(g *group) bool {
	if !g.mu.TryLock() {
		return false
	}
	defer g.mu.Unlock()
	if g.state == stateEmpty || g.state == stateDead {
		g.state = stateDead
		return true
	}
	return false
}

// isConsumerGroup reports whether id is a consumer-protocol group.
func (c *Coordinator) isConsumerGroup(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cgroups[id] != nil
}

// ConsumerGroupHeartbeat serves one ConsumerGroupHeartbeat request.
func (c *Coordinator) ConsumerGroupHeartbeat(req *ConsumerHeartbeat) ConsumerHeartbeatResult {
	if code, msg := validateHeartbeat(req); code != errNone {
		return ConsumerHeartbeatResult{Error: code, ErrorMessage: msg, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	}
	cg, code, msg := c.lockConsumerGroup(req.GroupID, req.MemberEpoch == joinEpoch)
	if code != errNone {
		return ConsumerHeartbeatResult{Error: code, ErrorMessage: msg, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	}
	now := c.clock.now()
	res := cg.heartbeat(req, now)
	// A heartbeat moves only its own member's deadlines (or removes
	// members, which never makes the timer late).
	if m := cg.members[res.MemberID]; m != nil && !cg.dead {
		cg.scheduleMember(m, now)
	}
	cg.flushChange()
	if c.cfg.AwaitStore {
		res.StoreSeq = cg.unstored()
	}
	cg.mu.Unlock()
	return res
}

// validateHeartbeat checks a request as Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid does.
func validateHeartbeat(r *ConsumerHeartbeat) (int16, string) {
	switch {
	case r.GroupID == "":
		return errInvalidRequest, "GroupId can't be empty."
	case r.HasInstanceID && r.InstanceID == "":
		return errInvalidRequest, "InstanceId can't be empty."
	case r.HasRackID && r.RackID == "":
		return errInvalidRequest, "RackId can't be empty."
	case r.Version >= 1 && r.MemberID == "":
		return errInvalidRequest, "MemberId can't be empty."
	}
	switch e := r.MemberEpoch; {
	case e > 0 || e == leaveEpoch:
		if r.MemberID == "" {
			return errInvalidRequest, "MemberId can't be empty."
		}
	case e == joinEpoch:
		if r.RebalanceTimeoutMillis == -1 {
			return errInvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		}
		if !r.HasOwned || len(r.Owned) != 0 {
			return errInvalidRequest, "TopicPartitions must be empty when (re-)joining."
		}
		if !r.HasSubscribedTopicNames && !r.HasSubscribedTopicRegex {
			return errInvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	case e == staticLeaveEpoch:
		if r.MemberID == "" {
			return errInvalidRequest, "MemberId can't be empty."
		}
		if !r.HasInstanceID {
			return errInvalidRequest, "InstanceId can't be null."
		}
	default:
		return errInvalidRequest, "MemberEpoch is invalid."
	}
	if r.HasServerAssignor && !slices.Contains(Assignors, r.ServerAssignor) {
		return errUnsupportedAssignor, "ServerAssignor " + r.ServerAssignor + " is not supported. Supported assignors: " + strings.Join(Assignors, ", ") + "."
	}
	if r.HasSubscribedTopicRegex && r.SubscribedTopicRegex != "" {
		if _, err := compileTopicRegex(r.SubscribedTopicRegex); err != nil {
			return errInvalidRegularExpression, "SubscribedTopicRegex `" + r.SubscribedTopicRegex + "` is not a valid regular expression: " + err.Error() + "."
		}
	}
	return errNone, ""
}

// compileTopicRegex compiles a subscription regex to match whole topic
// names, as RE2/J's Matcher.matches does in Kafka. Go's regexp is RE2.
func compileTopicRegex(s string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + s + ")$")
}

// heartbeat is ConsumerGroupHeartbeat with cg locked.
func (cg *cgroup) heartbeat(req *ConsumerHeartbeat, now time.Time) ConsumerHeartbeatResult {
	fail := func(code int16, msg string) ConsumerHeartbeatResult {
		return ConsumerHeartbeatResult{Error: code, ErrorMessage: msg, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return cg.leave(req, now)
	}
	memberID := req.MemberID
	if memberID == "" {
		memberID = newConsumerMemberID() // v0: the coordinator names the member
	}
	if max := cg.c.cfg.MaxGroupSize; max > 0 && len(cg.members) >= max && cg.members[memberID] == nil &&
		!(req.HasInstanceID && cg.static[req.InstanceID] != "") {
		cg.c.refuse(RefusedGroupMaxSize)
		return fail(errGroupMaxSizeReached, "The consumer group has reached its maximum capacity.")
	}
	if req.MemberEpoch == joinEpoch && cg.members[memberID] == nil && !(req.HasInstanceID && cg.static[req.InstanceID] != "") && !cg.reserveMember() {
		return fail(errCoordinatorNotAvailable, "The coordinator holds its maximum of group members.")
	}
	m, code, msg := cg.memberFor(req, memberID)
	if code != errNone {
		return fail(code, msg)
	}
	before := m.assignedChanges
	if req.CanDescribe != nil {
		if m.identity != req.Identity && m.re != nil {
			cg.subscriptionsChanged() // its regex resolves for someone else now
		}
		m.canDescribe, m.identity = req.CanDescribe, strings.Clone(req.Identity)
	}

	// 1. The member's subscription; a change bumps the group epoch.
	bump := cg.updateMember(m, req)
	if moved := cg.metadataChanged(req.Topics); bump || moved {
		cg.bumpEpoch()
	}
	// 2. A new target assignment when the group epoch passed it.
	if cg.epoch > cg.assignmentEpoch {
		cg.computeTarget(req.Topics)
	}
	// 3. Reconcile the member towards its target.
	cg.reconcile(m, req, now)
	m.sessionEnd = now.Add(cg.c.consumerSessionTimeout())

	res := ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: cg.c.consumerHeartbeatInterval()}
	full := req.MemberEpoch == joinEpoch || (req.RebalanceTimeoutMillis != -1 && req.HasSubscribedTopicNames && req.HasOwned)
	if full || m.assignedChanges != before {
		res.HasAssignment = true
		res.Assignment = m.assigned.list()
	}
	return res
}

// memberFor finds or creates the member a heartbeat is for, with Kafka's
// checks of its epoch and instance id.
func (cg *cgroup) memberFor(req *ConsumerHeartbeat, memberID string) (*cmember, int16, string) {
	join := req.MemberEpoch == joinEpoch
	if req.HasInstanceID {
		if oldID := cg.static[req.InstanceID]; oldID != "" {
			old := cg.members[oldID]
			if !join {
				if oldID != memberID {
					return nil, errFencedInstanceID, "Static member " + memberID + " with instance id " + req.InstanceID + " was fenced by member " + oldID + "."
				}
				return old, checkEpoch(old, req), epochMessage(old, req)
			}
			if oldID != memberID && old.epoch != staticLeaveEpoch {
				return nil, errUnreleasedInstanceID, "Static member " + memberID + " with instance id " + req.InstanceID + " cannot join the group because the instance id is owned by " + oldID + " member."
			}
			// The static member rejoins: a copy of the old one, with its
			// assignment, under the new member id (Kafka's replaceMember).
			cg.replace(old, memberID)
			return old, errNone, ""
		}
		if !join {
			return nil, errUnknownMemberID, "Instance id " + req.InstanceID + " is unknown."
		}
	}
	m := cg.members[memberID]
	if m == nil {
		if !join {
			return nil, errUnknownMemberID, "Member " + memberID + " is not a member of group " + cg.id + "."
		}
		m = &cmember{id: strings.Clone(memberID), assigned: partitionSet{}, revoking: partitionSet{}}
		cg.members[m.id] = m
		cg.changed = true
		cg.touch(m.id)
		if req.HasInstanceID {
			m.instanceID, m.hasInstance = strings.Clone(req.InstanceID), true
			cg.static[m.instanceID] = m.id
		}
		return m, errNone, ""
	}
	if join {
		// The member rejoins under its id (a lost response, or after a
		// fence it recovered from): it starts again from epoch 0 and is
		// given its assignment anew.
		m.epoch, m.previousEpoch, m.state = 0, 0, msStable
		cg.releaseRevoking(m)
		return m, errNone, ""
	}
	return m, checkEpoch(m, req), epochMessage(m, req)
}

// checkEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a member
// ahead of the coordinator is fenced; one behind is accepted only from its
// previous epoch with a subset of its assignment (the answer that moved it
// on may have been lost).
func checkEpoch(m *cmember, req *ConsumerHeartbeat) int16 {
	switch {
	case req.MemberEpoch > m.epoch:
		return errFencedMemberEpoch
	case req.MemberEpoch < m.epoch:
		if req.MemberEpoch != m.previousEpoch || !req.HasOwned || !ownedSubset(req.Owned, m.assigned) {
			return errFencedMemberEpoch
		}
	}
	return errNone
}

func epochMessage(m *cmember, req *ConsumerHeartbeat) string {
	if checkEpoch(m, req) == errNone {
		return ""
	}
	return "The consumer group member has a member epoch (" + itoa(req.MemberEpoch) + ") other than the one known by the group coordinator (" +
		itoa(m.epoch) + "). The member must abandon all its partitions and rejoin."
}

func ownedSubset(owned []TopicPartitions, set partitionSet) bool {
	for _, t := range owned {
		have := set[t.TopicID]
		for _, p := range t.Partitions {
			if !slices.Contains(have, p) {
				return false
			}
		}
	}
	return true
}

// replace renames static member m to newID, keeping its assignment.
func (cg *cgroup) replace(m *cmember, newID string) {
	oldID := m.id
	cg.touch(oldID)
	delete(cg.members, oldID)
	m.id = strings.Clone(newID)
	cg.touch(m.id)
	m.epoch, m.previousEpoch, m.state = 0, 0, msStable
	cg.members[m.id] = m
	cg.static[m.instanceID] = m.id
	if t, ok := cg.target[oldID]; ok {
		delete(cg.target, oldID)
		cg.target[m.id] = t
	}
	cg.releaseRevoking(m)
	for k, owner := range cg.owners {
		if owner == oldID {
			cg.owners[k] = m.id
		}
	}
}

// releaseRevoking frees the partitions m was revoking.
func (cg *cgroup) releaseRevoking(m *cmember) {
	for t, ps := range m.revoking {
		for _, p := range ps {
			if cg.owners[tp{t, p}] == m.id {
				delete(cg.owners, tp{t, p})
			}
		}
	}
	m.revoking = partitionSet{}
	m.revokeEnd = time.Time{}
	cg.changed = true
	cg.touch(m.id)
}

// update applies a heartbeat's changed fields to m and reports whether its
// subscription changed.
func (m *cmember) update(req *ConsumerHeartbeat) bool {
	changed := false
	if req.HasInstanceID && !m.hasInstance {
		m.instanceID, m.hasInstance = strings.Clone(req.InstanceID), true
	}
	if req.HasRackID && (!m.hasRack || m.rackID != req.RackID) {
		m.rackID, m.hasRack = strings.Clone(req.RackID), true
	}
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.HasServerAssignor && m.assignor != req.ServerAssignor {
		m.assignor = strings.Clone(req.ServerAssignor)
		changed = true
	}
	if req.HasSubscribedTopicNames {
		names := slices.Clone(req.SubscribedTopicNames)
		for i := range names {
			names[i] = strings.Clone(names[i])
		}
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.names) {
			m.names = names
			changed = true
		}
	}
	if req.HasSubscribedTopicRegex && (m.regex != req.SubscribedTopicRegex || !m.hasRegex) {
		m.regex, m.hasRegex = strings.Clone(req.SubscribedTopicRegex), req.SubscribedTopicRegex != ""
		m.re = nil
		if m.hasRegex {
			m.re, _ = compileTopicRegex(m.regex) // validated
		}
		changed = true
	}
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	if m.clientID != "" {
		m.clientID = strings.Clone(m.clientID)
	}
	if m.clientHost != "" {
		m.clientHost = strings.Clone(m.clientHost)
	}
	return changed
}

// memberMeta is what the stored form holds of a member besides its
// subscription, epochs and partitions.
type memberMeta struct {
	clientID, clientHost, rackID, instanceID string
	hasRack, hasInstance                     bool
	rebalance                                time.Duration
}

func (m *cmember) storedMeta() memberMeta {
	return memberMeta{m.clientID, m.clientHost, m.rackID, m.instanceID, m.hasRack, m.hasInstance, m.rebalance}
}

// snapshot copies m's assignment.
func (m *cmember) snapshot() partitionSet {
	out := make(partitionSet, len(m.assigned))
	for t, ps := range m.assigned {
		out[t] = slices.Clone(ps)
	}
	return out
}

func samePartitions(a, b partitionSet) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

// list returns the set sorted by topic id, partitions sorted.
func (s partitionSet) list() []TopicPartitions {
	out := make([]TopicPartitions, 0, len(s))
	for t, ps := range s {
		if len(ps) > 0 {
			out = append(out, TopicPartitions{TopicID: t, Partitions: slices.Clone(ps)})
		}
	}
	slices.SortFunc(out, func(a, b TopicPartitions) int { return compareIDs(a.TopicID, b.TopicID) })
	return out
}

func compareIDs(a, b [16]byte) int { return strings.Compare(string(a[:]), string(b[:])) }

// subscriptions returns the group's subscriptions resolved against
// topics: the metadata of every topic some member subscribes to, sorted by
// name, its hash, and what each regex matched.
//
// The answer is kept and given again while the group's subscriptions are
// unchanged (subsVer) and topics is the same snapshot: the gateway's
// TopicLookup is a snapshot whose Names() slice is new with each one, so
// the same slice means the same answers to ByName. So a keep-alive
// heartbeat neither walks every member nor matches each regex subscription
// against every topic name (docs/design/consumer-groups.md §4).
func (cg *cgroup) subscriptions(topics TopicLookup) *subsCache {
	names := topics.Names()
	c := &cg.subsCache
	if !c.valid || c.ver != cg.subsVer || !sameSlice(c.names, names) {
		out, regexTopics := cg.resolveSubscriptions(topics, names)
		*c = subsCache{valid: true, ver: cg.subsVer, names: names, topics: out, hash: hashTopics(out), regexTopics: regexTopics}
	}
	return c
}

// subsCache is subscriptions' answer for one version of a group's
// subscriptions and one topic snapshot.
type subsCache struct {
	valid  bool
	ver    uint64
	names  []string // the snapshot's Names()
	topics []topicMeta
	hash   uint64 // hashTopics(topics)
	// regexTopics is each regex's matches among topics (assignInput).
	regexTopics map[string]map[string]bool
}

// sameSlice reports whether a and b are one slice (the same backing array
// and length). The cache holds a, so its array cannot be freed and reused
// for another snapshot's b.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// describeFilters returns the DESCRIBE filters of the members subscribing
// with regex, one per identity.
func (cg *cgroup) describeFilters(regex string) []func(string) bool {
	var ids []string
	var out []func(string) bool
	for _, m := range cg.members {
		if m.re != nil && m.regex == regex && m.canDescribe != nil && !slices.Contains(ids, m.identity) {
			ids = append(ids, m.identity)
			out = append(out, m.canDescribe)
		}
	}
	return out
}

// allowAll reports whether every filter allows topic.
func allowAll(filters []func(string) bool, topic string) bool {
	for _, f := range filters {
		if !f(topic) {
			return false
		}
	}
	return true
}

// subscriptionsChanged records that a member left or changed what it
// subscribes to (a member joining changes it from nothing:
// updateMember), for subscriptions.
func (cg *cgroup) subscriptionsChanged() { cg.subsVer++ }

// updateMember applies a heartbeat's fields to m (cmember.update) and
// reports whether its subscription or assignor changed, which bumps the
// group epoch; a change of what the stored form holds besides marks the
// group changed without a rebalance.
func (cg *cgroup) updateMember(m *cmember, req *ConsumerHeartbeat) bool {
	meta := m.storedMeta()
	bump := m.update(req)
	if bump {
		cg.subscriptionsChanged()
		cg.touch(m.id) // its subscription is in its record; the bump marks the group changed
	}
	if m.storedMeta() != meta {
		cg.changed = true
		cg.touch(m.id)
	}
	return bump
}

// resolveSubscriptions computes subscriptions' topics over all (topics.Names()),
// and what each regex matched: the topics every member subscribing with it
// may describe, as far as their heartbeats said (a member restored and not
// yet heard from counts for none).
func (cg *cgroup) resolveSubscriptions(topics TopicLookup, all []string) ([]topicMeta, map[string]map[string]bool) {
	var out []topicMeta
	seen := map[string]bool{}
	var regexTopics map[string]map[string]bool
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		if id, n, ok := topics.ByName(name); ok && n > 0 {
			out = append(out, topicMeta{name: name, id: id, partitions: n})
		}
	}
	for _, m := range cg.members {
		for _, n := range m.names {
			add(n)
		}
		if _, done := regexTopics[m.regex]; m.re != nil && !done { // members mostly share one
			filters := cg.describeFilters(m.regex)
			matched := map[string]bool{}
			for _, n := range all {
				if m.re.MatchString(n) && allowAll(filters, n) {
					matched[n] = true
					add(n)
				}
			}
			if regexTopics == nil {
				regexTopics = map[string]map[string]bool{}
			}
			regexTopics[m.regex] = matched
		}
	}
	slices.SortFunc(out, func(a, b topicMeta) int { return strings.Compare(a.name, b.name) })
	return out, regexTopics
}

// topicMeta is one subscribed topic.
type topicMeta struct {
	name       string
	id         [16]byte
	partitions int32
}

// metadataChanged reports whether the subscribed topics' metadata changed
// (a topic created, deleted or grown), remembering the new state.
func (cg *cgroup) metadataChanged(topics TopicLookup) bool {
	h := cg.subscriptions(topics).hash
	if h == cg.subsHash {
		return false
	}
	cg.subsHash = h
	return true
}

// hashTopics is FNV-1a over the topics' names, ids and partition counts.
func hashTopics(ts []topicMeta) uint64 {
	h := uint64(14695981039346656037)
	mix := func(b byte) { h ^= uint64(b); h *= 1099511628211 }
	for _, t := range ts {
		for i := 0; i < len(t.name); i++ {
			mix(t.name[i])
		}
		mix(0)
		for _, b := range t.id {
			mix(b)
		}
		for s := 0; s < 32; s += 8 {
			mix(byte(t.partitions >> s))
		}
	}
	return h | 1 // never 0, the hash of a new group
}

// preferredAssignor is the server assignor most members ask for, else the
// default, as Kafka's ConsumerGroup.computePreferredServerAssignor.
func (cg *cgroup) preferredAssignor() string {
	counts := map[string]int{}
	best, bestN := cg.c.defaultAssignor(), 0
	for _, m := range cg.members {
		if m.assignor == "" {
			continue
		}
		counts[m.assignor]++
		if n := counts[m.assignor]; n > bestN || (n == bestN && m.assignor < best) {
			best, bestN = m.assignor, n
		}
	}
	return best
}

// computeTarget computes the target assignment at the group epoch.
func (cg *cgroup) computeTarget(topics TopicLookup) {
	cg.assignorName = cg.preferredAssignor()
	subs := cg.subscriptions(topics)
	in := assignInput{topics: subs.topics, previous: cg.target, regexTopics: subs.regexTopics}
	ids := slices.Sorted(maps.Keys(cg.members))
	for _, id := range ids {
		in.members = append(in.members, cg.members[id])
	}
	old := cg.target
	if cg.assignorName == AssignorRange {
		cg.target = assignRange(in)
	} else {
		cg.target = assignUniform(in)
	}
	cg.touchTargets(old)
	cg.assignmentEpoch = cg.epoch
	cg.changed = true
}

// touchTargets touches the members whose target differs from old's.
func (cg *cgroup) touchTargets(old map[string]partitionSet) {
	if cg.touchedAll && !checkTouched {
		return
	}
	for id, t := range cg.target {
		if o, ok := old[id]; !ok || !samePartitions(o, t) {
			cg.touch(id)
		}
	}
	for id := range old {
		if _, ok := cg.target[id]; !ok {
			cg.touch(id)
		}
	}
}

// touch records that member id's record may have changed (it may be gone).
func (cg *cgroup) touch(id string) {
	if checkTouched {
		if cg.touchCheck.touched == nil {
			cg.touchCheck.touched = map[string]struct{}{}
		}
		cg.touchCheck.touched[id] = struct{}{}
	}
	if cg.touchedAll {
		return
	}
	if cg.touched == nil {
		cg.touched = map[string]struct{}{}
	}
	cg.touched[id] = struct{}{}
}

// touchAll records that every member's record may have changed.
func (cg *cgroup) touchAll() {
	cg.touchedAll = true
	clear(cg.touched)
	cg.touchCheck.records = nil
}

// reconcile moves m towards its target assignment: Kafka's
// CurrentAssignmentBuilder.
func (cg *cgroup) reconcile(m *cmember, req *ConsumerHeartbeat, now time.Time) {
	if m.epoch == staticLeaveEpoch {
		return
	}
	target := cg.target[m.id]
	// What the stored form holds of m besides its partitions (setAssigned
	// marks those): a member waiting for partitions others still hold is
	// reconciled at each heartbeat, and changes nothing to store until one
	// is released.
	state, epoch, previous := m.state, m.epoch, m.previousEpoch
	switch m.state {
	case msStable:
		if m.epoch == cg.assignmentEpoch {
			return
		}
		cg.nextAssignment(m, m.epoch, target, req, now)
	case msUnrevokedPartitions:
		if ownsAny(req, m.revoking) {
			return
		}
		cg.releaseRevoking(m)
		cg.nextAssignment(m, m.epoch+1, target, req, now)
	case msUnreleasedPartitions:
		cg.nextAssignment(m, m.epoch, target, req, now)
	}
	if m.state != state || m.epoch != epoch || m.previousEpoch != previous {
		cg.changed = true
		cg.touch(m.id)
	}
}

// ownsAny reports whether the member still reports owning any of set; a
// heartbeat without owned partitions (unchanged) counts as owning.
func ownsAny(req *ConsumerHeartbeat, set partitionSet) bool {
	if !req.HasOwned {
		return true
	}
	for _, t := range req.Owned {
		for _, p := range t.Partitions {
			if slices.Contains(set[t.TopicID], p) {
				return true
			}
		}
	}
	return false
}

// nextAssignment is CurrentAssignmentBuilder.computeNextAssignment.
func (cg *cgroup) nextAssignment(m *cmember, epoch int32, target partitionSet, req *ConsumerHeartbeat, now time.Time) {
	assigned, revoking, pending := partitionSet{}, partitionSet{}, partitionSet{}
	unreleased := false
	topicsSeen := map[[16]byte]bool{}
	for t := range target {
		topicsSeen[t] = true
	}
	for t := range m.assigned {
		topicsSeen[t] = true
	}
	for t := range topicsSeen {
		want, have := target[t], m.assigned[t]
		for _, p := range have {
			if slices.Contains(want, p) {
				assigned[t] = append(assigned[t], p)
			} else {
				revoking[t] = append(revoking[t], p)
			}
		}
		for _, p := range want {
			if slices.Contains(have, p) {
				continue
			}
			if owner, ok := cg.owners[tp{t, p}]; ok && owner != m.id {
				unreleased = true
				continue
			}
			pending[t] = append(pending[t], p)
		}
	}
	if len(revoking) > 0 && ownsAny(req, revoking) {
		// Revoke first: the member keeps its epoch until it confirms.
		cg.setAssigned(m, assigned, revoking)
		m.state = msUnrevokedPartitions
		m.setEpoch(epoch)
		if m.revokeEnd.IsZero() {
			m.revokeEnd = now.Add(m.rebalanceTimeout())
		}
		return
	}
	for t, ps := range pending {
		assigned[t] = append(assigned[t], ps...)
	}
	cg.setAssigned(m, assigned, partitionSet{})
	m.revokeEnd = time.Time{}
	if unreleased {
		m.state = msUnreleasedPartitions
	} else {
		m.state = msStable
	}
	m.setEpoch(cg.assignmentEpoch)
}

func (m *cmember) setEpoch(e int32) {
	if e != m.epoch {
		m.previousEpoch, m.epoch = m.epoch, e
	}
}

// bumpEpoch moves the group epoch on: a rebalance of the group.
func (cg *cgroup) bumpEpoch() {
	cg.epoch++
	cg.c.consumerRebalances.Add(1)
}

// ConsumerRebalances counts the group epoch bumps of consumer-protocol
// groups: Kafka's consumer-group-rebalance-count.
func (c *Coordinator) ConsumerRebalances() uint64 { return c.consumerRebalances.Load() }

// flushChange hands a change to the store's writer, and brings the member
// count up to date; cg is locked.
func (cg *cgroup) flushChange() {
	cg.account()
	if cg.changed {
		cg.changed = false
		cg.markDirty()
	}
}

func (m *cmember) rebalanceTimeout() time.Duration {
	if m.rebalance > 0 {
		return m.rebalance
	}
	return 5 * time.Minute // the Java client's max.poll.interval.ms default
}

// setAssigned replaces m's partitions and the group's owner index.
func (cg *cgroup) setAssigned(m *cmember, assigned, revoking partitionSet) {
	cg.dropOwner(m)
	for _, set := range []partitionSet{assigned, revoking} {
		for t, ps := range set {
			slices.Sort(ps)
			for _, p := range ps {
				cg.owners[tp{t, p}] = m.id
			}
		}
	}
	if !samePartitions(assigned, m.assigned) {
		m.assignedChanges++
		cg.changed = true
		cg.touch(m.id)
	}
	if !samePartitions(revoking, m.revoking) {
		cg.changed = true
		cg.touch(m.id)
	}
	m.assigned, m.revoking = assigned, revoking
}

// dropOwner removes m from the owner index.
func (cg *cgroup) dropOwner(m *cmember) {
	for _, set := range []partitionSet{m.assigned, m.revoking} {
		for t, ps := range set {
			for _, p := range ps {
				if cg.owners[tp{t, p}] == m.id {
					delete(cg.owners, tp{t, p})
				}
			}
		}
	}
}

// leave handles epochs -1 (leave) and -2 (a static member's temporary
// leave), as Kafka's consumerGroupLeave.
func (cg *cgroup) leave(req *ConsumerHeartbeat, now time.Time) ConsumerHeartbeatResult {
	res := ConsumerHeartbeatResult{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	var m *cmember
	if req.HasInstanceID {
		id := cg.static[req.InstanceID]
		if id == "" {
			res.Error, res.ErrorMessage = errUnknownMemberID, "Instance id "+req.InstanceID+" is unknown."
			return res
		}
		if id != req.MemberID {
			res.Error, res.ErrorMessage = errFencedInstanceID, "Static member "+req.MemberID+" with instance id "+req.InstanceID+" was fenced by member "+id+"."
			return res
		}
		m = cg.members[id]
		if req.MemberEpoch == staticLeaveEpoch {
			// Kept, with its partitions, for its session timeout.
			cg.releaseRevoking(m)
			m.epoch, m.state = staticLeaveEpoch, msStable
			cg.changed = true
			cg.touch(m.id)
			return res
		}
	} else {
		m = cg.members[req.MemberID]
		if m == nil {
			res.Error, res.ErrorMessage = errUnknownMemberID, "Member "+req.MemberID+" is not a member of group "+cg.id+"."
			return res
		}
	}
	cg.remove(m, req.Topics)
	return res
}

// remove fences m out of the group and bumps the group epoch.
func (cg *cgroup) remove(m *cmember, topics TopicLookup) {
	cg.dropOwner(m)
	delete(cg.members, m.id)
	cg.touch(m.id)
	cg.subscriptionsChanged()
	delete(cg.target, m.id)
	if m.hasInstance && cg.static[m.instanceID] == m.id {
		delete(cg.static, m.instanceID)
	}
	if topics == nil {
		topics = cg.c.topics()
	}
	// Before the epoch moves: the classic group's generation is the epoch
	// the members are at (Kafka's consumerGroupFenceMember).
	if m.classic == nil && cg.c.maybeDowngrade(cg, topics) {
		return // now a classic group, whose members rejoin
	}
	cg.bumpEpoch()
	cg.changed = true
	if topics != nil {
		cg.metadataChanged(topics)
		cg.computeTarget(topics)
	}
	// Without topic metadata, the next heartbeat recomputes.
}

// defaultAssignor is the server assignor of a group whose members name
// none: Config.DefaultAssignor, else uniform (Kafka's first of
// group.consumer.assignors).
func (c *Coordinator) defaultAssignor() string {
	if slices.Contains(Assignors, c.cfg.DefaultAssignor) {
		return c.cfg.DefaultAssignor
	}
	return Assignors[0]
}

// consumerSessionTimeout and consumerHeartbeatInterval are the configured
// group.consumer.session.timeout.ms and heartbeat.interval.ms.
func (c *Coordinator) consumerSessionTimeout() time.Duration {
	if c.cfg.ConsumerSessionTimeout > 0 {
		return c.cfg.ConsumerSessionTimeout
	}
	return DefaultConsumerSessionTimeout
}

func (c *Coordinator) consumerHeartbeatInterval() time.Duration {
	if c.cfg.ConsumerHeartbeatInterval > 0 {
		return c.cfg.ConsumerHeartbeatInterval
	}
	return DefaultConsumerHeartbeatInterval
}

// The group's timer fires no later than the earliest deadline of any
// member (a session end, a revocation's end), and may fire earlier: a
// deadline that moved later since the timer was armed (the member
// heartbeated) costs one scan of the members at the old time (onTimer),
// which arms the timer again for the earliest deadline then. So a
// heartbeat, which only moves its own member's deadlines, arms the timer
// in constant time (scheduleMember), and the scan runs once per timer
// firing — about once per session timeout less a heartbeat interval in a
// group whose members all heartbeat — instead of once per heartbeat.

// schedule arms the group's timer for its earliest member deadline.
func (cg *cgroup) schedule(now time.Time) {
	var next time.Time
	for _, m := range cg.members {
		for _, d := range [...]time.Time{m.sessionEnd, m.revokeEnd} {
			if !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next = d
			}
		}
	}
	if next.IsZero() || (cg.timer != nil && cg.timerAt.Equal(next)) {
		return
	}
	cg.armTimer(next, now)
}

// scheduleMember keeps the timer's promise after m's deadlines changed (and
// no other member's moved earlier): it arms the timer for m's earliest
// deadline when that comes before the timer's.
func (cg *cgroup) scheduleMember(m *cmember, now time.Time) {
	for _, d := range [...]time.Time{m.sessionEnd, m.revokeEnd} {
		if !d.IsZero() && (cg.timer == nil || d.Before(cg.timerAt)) {
			cg.armTimer(d, now)
		}
	}
}

// armTimer (re)arms the group's timer to fire at.
func (cg *cgroup) armTimer(at, now time.Time) {
	if cg.timer != nil {
		cg.timer.Stop()
	}
	cg.timerAt = at
	cg.timer = cg.c.clock.afterFunc(at.Sub(now), cg.onTimer)
}

// onTimer fences every member whose session ended or that did not revoke
// within its rebalance timeout.
func (cg *cgroup) onTimer() {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	cg.timer = nil
	if cg.dead {
		return
	}
	now := cg.c.clock.now()
	for _, m := range cg.members {
		if cg.dead {
			cg.flushChange()
			return // downgraded to a classic group
		}
		if (!m.sessionEnd.IsZero() && !now.Before(m.sessionEnd)) || (!m.revokeEnd.IsZero() && !now.Before(m.revokeEnd)) {
			cg.remove(m, nil)
		}
	}
	cg.schedule(now)
	cg.flushChange()
}

// state is the group's state as ConsumerGroupDescribe and ListGroups
// report it (Kafka's ConsumerGroup.ConsumerGroupState).
func (cg *cgroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != msStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// ConsumerGroupDescription describes a consumer-protocol group.
type ConsumerGroupDescription struct {
	Error           int16
	ErrorMessage    string
	GroupID         string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerMemberDescription
}

// ConsumerMemberDescription describes one consumer-protocol member.
type ConsumerMemberDescription struct {
	MemberID             string
	InstanceID           string
	HasInstanceID        bool
	RackID               string
	HasRackID            bool
	MemberEpoch          int32
	ClientID, ClientHost string
	SubscribedTopicNames []string
	SubscribedTopicRegex string
	HasRegex             bool
	Assignment           []TopicPartitions
	TargetAssignment     []TopicPartitions
	// Classic is set for a member that uses the classic protocol.
	Classic bool
}

// DescribeConsumerGroup describes group id for ConsumerGroupDescribe:
// GROUP_ID_NOT_FOUND (69) for an unknown or classic group.
func (c *Coordinator) DescribeConsumerGroup(id string) ConsumerGroupDescription {
	cg, code, msg := c.lockConsumerGroup(id, false)
	if code != errNone {
		return ConsumerGroupDescription{Error: code, ErrorMessage: msg, GroupID: id, State: "Dead", Epoch: -1, AssignmentEpoch: -1}
	}
	defer cg.mu.Unlock()
	d := ConsumerGroupDescription{GroupID: cg.id, State: cg.state(), Epoch: cg.epoch, AssignmentEpoch: cg.assignmentEpoch, AssignorName: cg.assignorName}
	if d.AssignorName == "" {
		d.AssignorName = cg.preferredAssignor()
	}
	ids := slices.Sorted(maps.Keys(cg.members))
	for _, id := range ids {
		m := cg.members[id]
		d.Members = append(d.Members, ConsumerMemberDescription{
			MemberID: m.id, InstanceID: m.instanceID, HasInstanceID: m.hasInstance, RackID: m.rackID, HasRackID: m.hasRack,
			MemberEpoch: m.epoch, ClientID: m.clientID, ClientHost: m.clientHost,
			SubscribedTopicNames: slices.Clone(m.names), SubscribedTopicRegex: m.regex, HasRegex: m.hasRegex,
			Assignment: m.assigned.list(), TargetAssignment: cg.target[m.id].list(), Classic: m.classic != nil,
		})
	}
	return d
}

// validateConsumerCommit checks an OffsetCommit (or TxnOffsetCommit) to a
// consumer-protocol group, as Kafka's ConsumerGroup.validateOffsetCommit:
// a commit without a member is allowed only while the group is empty; a
// member's commit must carry its current epoch, or its previous one (the
// heartbeat that moved it on may be in flight: Kafka 4.3+ accepts it).
func (cg *cgroup) validateCommit(memberID string, epoch int32, now time.Time) int16 {
	if epoch < 0 && memberID == "" {
		if len(cg.members) == 0 {
			return errNone
		}
		return errUnknownMemberID
	}
	m := cg.members[memberID]
	if m == nil {
		return errUnknownMemberID
	}
	if epoch != m.epoch && epoch != m.previousEpoch {
		return errStaleMemberEpoch
	}
	return errNone
}

// listConsumerGroups appends the consumer-protocol groups to list.
func (c *Coordinator) listConsumerGroups(list []GroupListing) []GroupListing {
	c.mu.Lock()
	groups := make([]*cgroup, 0, len(c.cgroups))
	for _, g := range c.cgroups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		if !g.dead {
			list = append(list, GroupListing{GroupID: g.id, ProtocolType: "consumer", State: g.state(), Type: "consumer"})
		}
		g.mu.Unlock()
	}
	return list
}

// dropConsumerGroup marks cg dead and removes it from the map; cg is locked.
func (c *Coordinator) dropConsumerGroup(cg *cgroup) {
	cg.dead = true
	cg.account()
	if cg.timer != nil {
		cg.timer.Stop()
		cg.timer = nil
	}
	c.mu.Lock()
	if c.cgroups[cg.id] == cg {
		delete(c.cgroups, cg.id)
	}
	c.mu.Unlock()
}

func itoa(n int32) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	u := int64(n)
	if neg {
		u = -u
	}
	var b [12]byte
	i := len(b)
	for u > 0 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// consumerGroupEmpty reports, with c.mu held, whether consumer group cg
// has no members, and if so drops it so a classic group can take its id.
// It only tries cg's lock (the usual order is group, then map).
func (c *Coordinator) consumerGroupEmpty(cg *cgroup) bool {
	if !cg.mu.TryLock() {
		return false
	}
	defer cg.mu.Unlock()
	if len(cg.members) > 0 {
		return false
	}
	cg.dead = true
	cg.account()
	if cg.timer != nil {
		cg.timer.Stop()
		cg.timer = nil
	}
	delete(c.cgroups, cg.id)
	return true
}

// unloadConsumerGroups drops the consumer groups lost reports true for
// (Unload); their members find the new coordinator on their next
// heartbeat, which answers NOT_COORDINATOR.
func (c *Coordinator) unloadConsumerGroups(lost func(string) bool) []string {
	c.mu.Lock()
	groups := make([]*cgroup, 0, len(c.cgroups))
	for _, g := range c.cgroups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	var dropped []string
	for _, cg := range groups {
		if !lost(cg.id) {
			continue
		}
		cg.mu.Lock()
		if !cg.dead {
			c.dropConsumerGroup(cg)
			dropped = append(dropped, cg.id)
		}
		cg.mu.Unlock()
	}
	return dropped
}

// consumerOffsetDeleteScope is OffsetDeleteScope for a consumer-protocol
// group: a member's subscribed topics (names and regex) keep their offsets.
func (c *Coordinator) consumerOffsetDeleteScope(id string) OffsetDeleteScope {
	cg, code, _ := c.lockConsumerGroup(id, false)
	if code != errNone {
		return OffsetDeleteScope{Error: code}
	}
	defer cg.mu.Unlock()
	if len(cg.members) == 0 {
		return OffsetDeleteScope{}
	}
	var names []string
	var res []*regexp.Regexp
	for _, m := range cg.members {
		names = append(names, m.names...)
		if m.re != nil {
			res = append(res, m.re)
		}
	}
	return OffsetDeleteScope{Subscribed: func(t string) bool {
		if slices.Contains(names, t) {
			return true
		}
		for _, re := range res {
			if re.MatchString(t) {
				return true
			}
		}
		return false
	}}
}
