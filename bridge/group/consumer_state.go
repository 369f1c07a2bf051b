package group

// The stored form of a consumer-protocol group (docs/design/consumer-groups.md
// §6): what a gateway writes to its system store after each change, and
// reads back at start or when it takes the group over, so that members keep
// their epochs and partitions across a restart or a coordinator move instead
// of rejoining from scratch.

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
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

// encode returns cg's stored form; cg is locked. It writes the JSON that
// encoding/json writes for the storedGroup of cg, byte for byte
// (TestConsumerGroupEncodeSameAsJSON), without reflection: a group's form
// is written again after each change, so for a large group it is a cost
// per join (BenchmarkConsumerGroupEncode).
func (cg *cgroup) encode() []byte {
	ids := slices.Sorted(maps.Keys(cg.members))
	b := make([]byte, 0, 128+256*len(ids))
	b = append(b, `{"v":1,"epoch":`...)
	b = strconv.AppendInt(b, int64(cg.epoch), 10)
	b = append(b, `,"assignment_epoch":`...)
	b = strconv.AppendInt(b, int64(cg.assignmentEpoch), 10)
	if cg.assignorName != "" {
		b = append(b, `,"assignor":`...)
		b = appendJSONString(b, cg.assignorName)
	}
	b = append(b, `,"subs_hash":`...)
	b = strconv.AppendUint(b, cg.subsHash, 10)
	b = append(b, `,"members":`...)
	if len(ids) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStoredMember(b, cg.members[id])
		}
		b = append(b, ']')
	}
	b = append(b, `,"target":{`...)
	tids := make([]string, 0, len(cg.target))
	for id := range cg.target {
		tids = append(tids, id)
	}
	slices.Sort(tids)
	for i, id := range tids {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, id)
		b = append(b, ':')
		b = appendStoredPartitions(b, cg.target[id])
	}
	return append(b, "}}"...)
}

// appendStoredMember appends m as encoding/json writes its storedMember.
func appendStoredMember(b []byte, m *cmember) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, m.id)
	b = append(b, `,"epoch":`...)
	b = strconv.AppendInt(b, int64(m.epoch), 10)
	b = append(b, `,"previous_epoch":`...)
	b = strconv.AppendInt(b, int64(m.previousEpoch), 10)
	b = append(b, `,"state":`...)
	b = strconv.AppendUint(b, uint64(uint8(m.state)), 10)
	optional := func(b []byte, key, v string, has bool) []byte {
		if !has {
			return b
		}
		b = append(b, key...)
		return appendJSONString(b, v)
	}
	b = optional(b, `,"instance_id":`, m.instanceID, m.hasInstance)
	b = optional(b, `,"rack_id":`, m.rackID, m.hasRack)
	b = optional(b, `,"client_id":`, m.clientID, m.clientID != "")
	b = optional(b, `,"client_host":`, m.clientHost, m.clientHost != "")
	b = append(b, `,"rebalance_ms":`...)
	b = strconv.AppendInt(b, m.rebalance.Milliseconds(), 10)
	if len(m.names) > 0 {
		b = append(b, `,"names":[`...)
		for i, n := range m.names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, n)
		}
		b = append(b, ']')
	}
	b = optional(b, `,"regex":`, m.regex, m.hasRegex)
	b = optional(b, `,"assignor":`, m.assignor, m.assignor != "")
	b = append(b, `,"assigned":`...)
	b = appendStoredPartitions(b, m.assigned)
	if nonEmpty(m.revoking) {
		b = append(b, `,"revoking":`...)
		b = appendStoredPartitions(b, m.revoking)
	}
	if c := m.classic; c != nil {
		b = append(b, `,"classic":{"protocols":`...)
		if len(c.protocols) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, p := range c.protocols {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"name":`...)
				b = appendJSONString(b, p.Name)
				b = append(b, `,"metadata":`...)
				if p.Metadata == nil {
					b = append(b, "null"...)
				} else {
					b = append(b, '"')
					b = base64.StdEncoding.AppendEncode(b, p.Metadata)
					b = append(b, '"')
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, `,"session_ms":`...)
		b = strconv.AppendInt(b, c.session.Milliseconds(), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// nonEmpty reports whether s holds a partition (the stored form leaves
// out topics without one).
func nonEmpty(s partitionSet) bool {
	for _, ps := range s {
		if len(ps) > 0 {
			return true
		}
	}
	return false
}

// appendStoredPartitions appends s as encoding/json writes its
// storedPartns: topics by hex id, sorted, those without partitions left
// out.
func appendStoredPartitions(b []byte, s partitionSet) []byte {
	var small [4][16]byte
	ids := small[:0]
	for t, ps := range s {
		if len(ps) > 0 {
			ids = append(ids, t)
		}
	}
	slices.SortFunc(ids, compareIDs) // hex keeps the order of the bytes
	b = append(b, '{')
	for i, t := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = hex.AppendEncode(b, t[:])
		b = append(b, `":[`...)
		for j, p := range s[t] {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(p), 10)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendJSONString appends s quoted as encoding/json quotes it: a string
// of printable ASCII without a quote, backslash or HTML character as it
// is, any other through encoding/json itself (its escapes of HTML
// characters, U+2028, U+2029 and invalid UTF-8 are its own).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string: cannot fail
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
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
