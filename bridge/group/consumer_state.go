package group

// The stored form of a consumer-protocol group (docs/design/consumer-groups.md
// §6): what a gateway writes to its system store after each change, and
// reads back at start or when it takes the group over, so that members keep
// their epochs and partitions across a restart or a coordinator move instead
// of rejoining from scratch.

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
)

// storedGroup is a consumer group as stored (JSON, version 1).
type storedGroup struct {
	V               int                     `json:"v"`
	Epoch           int32                   `json:"epoch"`
	AssignmentEpoch int32                   `json:"assignment_epoch"`
	Assignor        string                  `json:"assignor,omitempty"`
	SubsHash        uint64                  `json:"subs_hash"`
	Members         []storedMember          `json:"members"`
	Target          map[string]storedPartns `json:"target"`
}

type storedMember struct {
	ID            string       `json:"id"`
	Epoch         int32        `json:"epoch"`
	PreviousEpoch int32        `json:"previous_epoch"`
	State         uint8        `json:"state"`
	InstanceID    *string      `json:"instance_id,omitempty"`
	RackID        *string      `json:"rack_id,omitempty"`
	ClientID      string       `json:"client_id,omitempty"`
	ClientHost    string       `json:"client_host,omitempty"`
	RebalanceMs   int64        `json:"rebalance_ms"`
	Names         []string     `json:"names,omitempty"`
	Regex         *string      `json:"regex,omitempty"`
	Assignor      string       `json:"assignor,omitempty"`
	Assigned      storedPartns `json:"assigned"`
	Revoking      storedPartns `json:"revoking,omitempty"`
	// Classic is set for a classic member (migration.go).
	Classic *storedClassic `json:"classic,omitempty"`
}

// storedClassic is a classic member's protocols and session timeout.
type storedClassic struct {
	Protocols []storedProtocol `json:"protocols"`
	SessionMs int64            `json:"session_ms"`
}

type storedProtocol struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata"`
}

// storedPartns is a partitionSet with hex topic ids.
type storedPartns map[string][]int32

func storePartitions(s partitionSet) storedPartns {
	out := make(storedPartns, len(s))
	for t, ps := range s {
		if len(ps) > 0 {
			out[hex.EncodeToString(t[:])] = slices.Clone(ps)
		}
	}
	return out
}

func (s storedPartns) load() (partitionSet, error) {
	out := make(partitionSet, len(s))
	for k, ps := range s {
		b, err := hex.DecodeString(k)
		if err != nil || len(b) != 16 {
			return nil, errors.New("bad topic id " + k)
		}
		var id [16]byte
		copy(id[:], b)
		out[id] = slices.Clone(ps)
	}
	return out, nil
}

// DirtyConsumerGroups returns the consumer groups changed since the last
// call: each id with its stored form, nil for a group deleted. A group
// unloaded here (it moved to another coordinator) is left out: its stored
// form is the new coordinator's to change. With Config.AwaitStore the owner
// reports them stored (ConsumerGroupsStored) once written, or once writing
// failed, which releases the answers waiting for them.
func (c *Coordinator) DirtyConsumerGroups() map[string][]byte {
	c.mu.Lock()
	dirty := c.cdirty
	c.cdirty = nil
	c.ctaken = c.cseq
	c.mu.Unlock()
	if len(dirty) == 0 {
		return nil
	}
	out := make(map[string][]byte, len(dirty))
	for id, cg := range dirty {
		cg.mu.Lock()
		switch {
		case cg.deleted:
			out[id] = nil
		case !cg.dead:
			out[id] = cg.encode()
		}
		cg.mu.Unlock()
	}
	return out
}

// markDirty records that cg changed, for DirtyConsumerGroups, and wakes the
// writer (Config.ConsumerGroupChanged). Called with cg locked.
func (cg *cgroup) markDirty() {
	c := cg.c
	c.mu.Lock()
	if c.cdirty == nil {
		c.cdirty = map[string]*cgroup{}
	}
	c.cdirty[cg.id] = cg
	c.cseq++
	cg.dirtySeq = c.cseq
	c.mu.Unlock()
	c.wakeWriter()
}

// encode returns cg's stored form; cg is locked.
func (cg *cgroup) encode() []byte {
	sg := storedGroup{V: 1, Epoch: cg.epoch, AssignmentEpoch: cg.assignmentEpoch, Assignor: cg.assignorName,
		SubsHash: cg.subsHash, Target: make(map[string]storedPartns, len(cg.target))}
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := cg.members[id]
		sm := storedMember{ID: m.id, Epoch: m.epoch, PreviousEpoch: m.previousEpoch, State: uint8(m.state),
			ClientID: m.clientID, ClientHost: m.clientHost, RebalanceMs: m.rebalance.Milliseconds(),
			Names: m.names, Assignor: m.assignor, Assigned: storePartitions(m.assigned), Revoking: storePartitions(m.revoking)}
		if m.hasInstance {
			sm.InstanceID = &m.instanceID
		}
		if m.hasRack {
			sm.RackID = &m.rackID
		}
		if m.hasRegex {
			sm.Regex = &m.regex
		}
		if m.classic != nil {
			sm.Classic = &storedClassic{SessionMs: m.classic.session.Milliseconds()}
			for _, p := range m.classic.protocols {
				sm.Classic.Protocols = append(sm.Classic.Protocols, storedProtocol(p))
			}
		}
		sg.Members = append(sg.Members, sm)
	}
	for id, set := range cg.target {
		sg.Target[id] = storePartitions(set)
	}
	b, _ := json.Marshal(sg) // only maps, slices and strings: cannot fail
	return b
}

// RestoreConsumerGroup loads a consumer group from its stored form, unless
// the group is already loaded here (which then wins). Every member gets a
// fresh session: it has a session timeout to heartbeat to this coordinator.
func (c *Coordinator) RestoreConsumerGroup(id string, b []byte) error {
	cg, err := c.decodeConsumerGroup(id, b)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.cgroups[id] != nil || c.groups[id] != nil {
		return nil
	}
	c.cgroups[cg.id] = cg
	cg.mu.Lock()
	cg.schedule(c.clock.now())
	cg.account()
	cg.mu.Unlock()
	return nil
}

// decodeConsumerGroup builds consumer group id from its stored form b.
func (c *Coordinator) decodeConsumerGroup(id string, b []byte) (*cgroup, error) {
	var sg storedGroup
	if err := json.Unmarshal(b, &sg); err != nil {
		return nil, err
	}
	if sg.V != 1 {
		return nil, errors.New("consumer group " + id + ": stored form version not understood")
	}
	cg := &cgroup{c: c, id: strings.Clone(id), epoch: sg.Epoch, assignmentEpoch: sg.AssignmentEpoch,
		assignorName: sg.Assignor, subsHash: sg.SubsHash, members: map[string]*cmember{}, static: map[string]string{},
		target: map[string]partitionSet{}, owners: map[tp]string{}}
	now := c.clock.now()
	for _, sm := range sg.Members {
		if sm.ID == "" || cg.members[sm.ID] != nil {
			return nil, errors.New("consumer group " + id + ": bad member id")
		}
		assigned, err := sm.Assigned.load()
		if err != nil {
			return nil, err
		}
		revoking, err := sm.Revoking.load()
		if err != nil {
			return nil, err
		}
		m := &cmember{id: sm.ID, epoch: sm.Epoch, previousEpoch: sm.PreviousEpoch, state: memberState(sm.State),
			clientID: sm.ClientID, clientHost: sm.ClientHost, rebalance: time.Duration(sm.RebalanceMs) * time.Millisecond,
			names: sm.Names, assignor: sm.Assignor, sessionEnd: now.Add(c.consumerSessionTimeout())}
		if m.state > msUnreleasedPartitions {
			return nil, errors.New("consumer group " + id + ": bad member state")
		}
		if sm.InstanceID != nil {
			m.instanceID, m.hasInstance = *sm.InstanceID, true
			cg.static[m.instanceID] = m.id
		}
		if sm.RackID != nil {
			m.rackID, m.hasRack = *sm.RackID, true
		}
		if sm.Regex != nil {
			m.regex, m.hasRegex = *sm.Regex, true
			if m.re, err = compileTopicRegex(m.regex); err != nil {
				return nil, err
			}
		}
		if sm.Classic != nil {
			if len(sm.Classic.Protocols) == 0 {
				return nil, errors.New("consumer group " + id + ": a classic member without protocols")
			}
			m.classic = &classicInfo{session: time.Duration(sm.Classic.SessionMs) * time.Millisecond}
			for _, p := range sm.Classic.Protocols {
				m.classic.protocols = append(m.classic.protocols, Protocol(p))
			}
		}
		cg.members[m.id] = m
		cg.setAssigned(m, assigned, revoking)
		if m.state == msUnrevokedPartitions {
			m.revokeEnd = now.Add(m.rebalanceTimeout())
		}
	}
	for mid, sp := range sg.Target {
		set, err := sp.load()
		if err != nil {
			return nil, err
		}
		cg.target[mid] = set
	}
	// The stored form is the store's already.
	cg.restored, cg.changed = true, false
	return cg, nil
}

// ConsumerRestoredBehind reports, once per restored group, whether member
// names a newer member epoch than group id holds for it while the group is
// as it was restored: in a cluster, a change its last coordinator stored
// after this instance read the store (the view moved the group during it),
// so the store is worth reading again (ReplaceRestoredConsumer).
func (c *Coordinator) ConsumerRestoredBehind(id, member string, epoch int32) bool {
	c.mu.Lock()
	cg := c.cgroups[id]
	c.mu.Unlock()
	if cg == nil {
		return false
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	m := cg.members[member]
	if !cg.restored || cg.reread || cg.dirtySeq != 0 || cg.dead || m == nil || epoch <= m.epoch {
		return false
	}
	cg.reread = true
	return true
}

// ReplaceRestoredConsumer replaces consumer group id, restored and
// unchanged since, with its stored form b when b is newer (a higher group
// epoch, or the same with a member further on), and reports whether it
// did.
func (c *Coordinator) ReplaceRestoredConsumer(id string, b []byte) (bool, error) {
	ng, err := c.decodeConsumerGroup(id, b)
	if err != nil {
		return false, err
	}
	ng.reread = true
	c.mu.Lock()
	old := c.cgroups[id]
	c.mu.Unlock()
	if old == nil {
		return false, nil
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	if !old.restored || old.dirtySeq != 0 || old.dead || !ng.newerThan(old) {
		return false, nil
	}
	old.dead = true
	old.account()
	if old.timer != nil {
		old.timer.Stop()
		old.timer = nil
	}
	c.mu.Lock()
	replaced := !c.closed && c.cgroups[id] == old
	if replaced {
		c.cgroups[id] = ng
	}
	c.mu.Unlock()
	if replaced {
		ng.mu.Lock()
		ng.schedule(c.clock.now())
		ng.account()
		ng.mu.Unlock()
	}
	return replaced, nil
}

// newerThan reports whether cg, a stored form, is further on than old.
func (cg *cgroup) newerThan(old *cgroup) bool {
	if cg.epoch != old.epoch {
		return cg.epoch > old.epoch
	}
	for id, m := range cg.members {
		if o := old.members[id]; o != nil && m.epoch > o.epoch {
			return true
		}
	}
	return false
}
