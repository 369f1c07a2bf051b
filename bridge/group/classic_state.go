package group

// The stored form of a classic group (docs/design/consumer-groups.md §6):
// what a gateway writes to its system store each time a classic group
// settles on a generation, and reads back at start or when it takes the
// group over, so that members keep heartbeating at their generation, with
// their assignments, across a gateway restart or a coordinator move instead
// of rejoining (Kafka writes the same GroupMetadataValue to
// __consumer_offsets when a SyncGroup completes a rebalance, and loads it
// when a broker becomes the group's coordinator).
//
// Only a Stable group with members is stored, as of its last completed
// SyncGroup; a rebalance under way leaves the stored form as it was (the
// members that rejoin after a restore learn of the new generation from
// ILLEGAL_GENERATION, as Kafka's do after a coordinator failover mid-
// rebalance). A group that empties, is deleted, evicted or converted to the
// consumer protocol is removed from the store; one unloaded because another
// instance now coordinates it is left to that instance.

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// storedClassicGroup is a classic group as stored (JSON, version 1).
type storedClassicGroup struct {
	V            int                   `json:"v"`
	Generation   int32                 `json:"generation"`
	ProtocolType string                `json:"protocol_type"`
	Protocol     string                `json:"protocol"`
	Leader       string                `json:"leader"`
	Members      []storedClassicMember `json:"members"`
}

type storedClassicMember struct {
	ID          string           `json:"id"`
	InstanceID  *string          `json:"instance_id,omitempty"`
	ClientID    string           `json:"client_id,omitempty"`
	ClientHost  string           `json:"client_host,omitempty"`
	SessionMs   int64            `json:"session_ms"`
	RebalanceMs int64            `json:"rebalance_ms"`
	Protocols   []storedProtocol `json:"protocols"`
	Assignment  []byte           `json:"assignment"`
}

// changed records that a field of the stored form may have changed; the
// next finish stores the group if it is then Stable. g is locked.
func (g *group) changed() { g.seq++ }

// persist records g's stored form for DirtyClassicGroups when it changed:
// its encoding once Stable with members, a deletion once it empties or dies
// otherwise than by unloading (unloaded is set then). g is locked; c.mu is
// taken (lock order: group, then map).
func (g *group) persist(unloaded bool) {
	switch {
	case g.state == stateStable && len(g.members) > 0:
		if g.stored && g.seq == g.savedSeq {
			return
		}
		g.c.markClassicDirty(g.id, g.encode())
		g.stored, g.savedSeq = true, g.seq
	case g.state == stateEmpty || (g.state == stateDead && !unloaded):
		if !g.stored {
			return
		}
		g.c.markClassicDirty(g.id, nil)
		g.stored = false
	}
}

// markClassicDirty queues id's stored form (nil: delete it) and wakes the
// writer (Config.ConsumerGroupChanged).
func (c *Coordinator) markClassicDirty(id string, b []byte) {
	c.mu.Lock()
	c.queueClassicLocked(id, b)
	c.mu.Unlock()
}

// queueClassicLocked is markClassicDirty with c.mu held.
func (c *Coordinator) queueClassicLocked(id string, b []byte) {
	if c.cldirty == nil {
		c.cldirty = map[string][]byte{}
	}
	c.cldirty[id] = b
	c.wakeWriter()
}

// DirtyClassicGroups returns the classic groups whose stored form changed
// since the last call: each id with its stored form, nil for a group to
// remove from the store. With Config.AwaitStore the owner reports
// each id it returns stored (ClassicGroupsStored), written or not, which
// releases the answers held for it.
func (c *Coordinator) DirtyClassicGroups() map[string][]byte {
	c.mu.Lock()
	dirty := c.cldirty
	c.cldirty = nil
	if c.cfg.AwaitStore {
		if c.clflying == nil {
			c.clflying = map[string][]func(){}
		}
		for id := range dirty {
			c.clflying[id] = append(c.clflying[id], c.clheld[id]...)
			delete(c.clheld, id)
		}
	}
	c.mu.Unlock()
	return dirty
}

// encode returns g's stored form; g is locked and Stable.
func (g *group) encode() []byte {
	sg := storedClassicGroup{V: 1, Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocolName,
		Leader: g.leader, Members: make([]storedClassicMember, 0, len(g.members))}
	for _, m := range g.members {
		sm := storedClassicMember{ID: m.id, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionMs: m.session.Milliseconds(), RebalanceMs: m.rebalance.Milliseconds(), Assignment: m.assignment}
		if m.hasInstance {
			sm.InstanceID = &m.instanceID
		}
		for _, p := range m.protocols {
			sm.Protocols = append(sm.Protocols, storedProtocol(p))
		}
		sg.Members = append(sg.Members, sm)
	}
	b, _ := json.Marshal(sg) // only slices and strings: cannot fail
	return b
}

// RestoreClassicGroup loads a classic group from its stored form, Stable at
// its stored generation, unless a group of that id is already loaded here
// (which then wins). Every member gets a fresh session: it has a session
// timeout to heartbeat to this coordinator. The group counts against
// MaxMembers but is restored even past it: its members were admitted once.
func (c *Coordinator) RestoreClassicGroup(id string, b []byte) error {
	g, err := c.decodeClassicGroup(id, b)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.groups[id] != nil || c.cgroups[id] != nil {
		return nil
	}
	c.groups[g.id] = g
	g.mu.Lock()
	g.schedule()
	g.account()
	g.mu.Unlock()
	return nil
}

// decodeClassicGroup builds group id, Stable, from its stored form b.
func (c *Coordinator) decodeClassicGroup(id string, b []byte) (*group, error) {
	var sg storedClassicGroup
	if err := json.Unmarshal(b, &sg); err != nil {
		return nil, err
	}
	if sg.V != 1 {
		return nil, errors.New("classic group " + id + ": stored form version not understood")
	}
	if sg.Generation <= 0 || len(sg.Members) == 0 || sg.ProtocolType == "" || sg.Protocol == "" {
		return nil, errors.New("classic group " + id + ": not a stable group")
	}
	g := newGroup(c, strings.Clone(id))
	g.state, g.generation, g.protocolType, g.protocolName = stateStable, sg.Generation, sg.ProtocolType, sg.Protocol
	g.keep = true
	now := c.clock.now()
	for _, sm := range sg.Members {
		if sm.ID == "" || g.byID[sm.ID] != nil {
			return nil, errors.New("classic group " + id + ": bad member id")
		}
		if len(sm.Protocols) == 0 || sm.SessionMs <= 0 {
			return nil, errors.New("classic group " + id + ": member " + sm.ID + " without protocols or session")
		}
		m := &member{id: sm.ID, clientID: sm.ClientID, clientHost: sm.ClientHost,
			session: time.Duration(sm.SessionMs) * time.Millisecond, rebalance: time.Duration(sm.RebalanceMs) * time.Millisecond,
			assignment: sm.Assignment}
		for _, p := range sm.Protocols {
			m.protocols = append(m.protocols, Protocol(p))
		}
		if sm.InstanceID != nil {
			if g.static[*sm.InstanceID] != "" {
				return nil, errors.New("classic group " + id + ": instance id " + *sm.InstanceID + " twice")
			}
			m.instanceID, m.hasInstance = *sm.InstanceID, true
			g.static[m.instanceID] = m.id
		}
		g.touch(m, now)
		g.members = append(g.members, m)
		g.byID[m.id] = m
	}
	if g.byID[sg.Leader] == nil {
		return nil, errors.New("classic group " + id + ": the leader is not a member")
	}
	g.leader = sg.Leader
	for _, m := range g.members {
		if !m.supports(g.protocolName) {
			return nil, errors.New("classic group " + id + ": member " + m.id + " does not support protocol " + g.protocolName)
		}
	}
	// The stored form is the store's already.
	g.stored, g.restored = true, true
	return g, nil
}

// RestoredBehind reports, once per restored group, whether a member names
// a newer generation than group id holds while the group is as it was
// restored: in a cluster, a rebalance its last coordinator completed and
// stored after this instance read the store (the view moved the group
// during it), so the store is worth reading again (ReplaceRestored).
func (c *Coordinator) RestoredBehind(id string, generation int32) bool {
	c.mu.Lock()
	g := c.groups[id]
	c.mu.Unlock()
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.restored || g.reread || g.seq != 0 || g.state != stateStable || generation <= g.generation {
		return false
	}
	g.reread = true
	return true
}

// ReplaceRestored replaces group id, restored and unchanged since, with its
// stored form b when b holds a newer generation, and reports whether it
// did: its members then go on at the generation their last coordinator
// told them of.
func (c *Coordinator) ReplaceRestored(id string, b []byte) (bool, error) {
	ng, err := c.decodeClassicGroup(id, b)
	if err != nil {
		return false, err
	}
	ng.reread = true
	c.mu.Lock()
	old := c.groups[id]
	c.mu.Unlock()
	if old == nil {
		return false, nil
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	if !old.restored || old.seq != 0 || old.state != stateStable || ng.generation <= old.generation {
		return false, nil
	}
	old.kill() // a request that finds it dead looks again (lockGroup)
	c.mu.Lock()
	replaced := !c.closed && c.groups[id] == old
	if replaced {
		c.groups[id] = ng
	}
	c.mu.Unlock()
	if replaced {
		ng.mu.Lock()
		ng.schedule()
		ng.account()
		ng.mu.Unlock()
	}
	return replaced, nil
}

// Has reports whether a group of id, classic or consumer, is loaded here.
func (c *Coordinator) Has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups[id] != nil || c.cgroups[id] != nil
}
