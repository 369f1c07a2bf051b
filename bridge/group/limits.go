package group

// Caps on what clients can make the coordinator hold (docs/LIMITS.md,
// "Consumer group state"): members in one group (Kafka's group.max.size, which
// here also counts the member ids handed out with MEMBER_ID_REQUIRED and
// not yet used), members in all groups, and groups. A group is counted from
// the moment a join or a simple commit creates it until it is forgotten,
// deleted, unloaded or evicted; members (with pending member ids) are
// counted when an operation on their group finishes, a new one reserved
// when its join is admitted, so MaxMembers holds exactly.

import "sync/atomic"

// Default caps cmd/kiggy applies; a zero Config field means no cap.
const (
	// DefaultMaxGroupSize is the default group.max.size: every real member
	// holds a connection, and the gateway's default connection cap is
	// 10,000 (Kafka's default is unlimited).
	DefaultMaxGroupSize = 10_000
	// DefaultMaxMembers is the default cap on members and pending member
	// ids in all groups together.
	DefaultMaxMembers = 100_000
	// DefaultMaxGroups is the default cap on groups held.
	DefaultMaxGroups = 100_000
)

// evictScan is how many groups a creation past MaxGroups looks at for one
// to evict.
const evictScan = 64

// RefuseReason says why a join or a commit was refused by a cap.
type RefuseReason int

// Refusal reasons, the label values of kiggy_groups_refused_total.
const (
	// RefusedGroupMaxSize: a join past MaxGroupSize (GROUP_MAX_SIZE_REACHED).
	RefusedGroupMaxSize RefuseReason = iota
	// RefusedMaxMembers: a new member past MaxMembers
	// (COORDINATOR_NOT_AVAILABLE, which clients retry).
	RefusedMaxMembers
	// RefusedMaxGroups: a join or simple commit that would create a group
	// past MaxGroups with no group to evict (COORDINATOR_NOT_AVAILABLE).
	RefusedMaxGroups
	numRefuseReasons
)

var refuseNames = [numRefuseReasons]string{"group_max_size", "max_members", "max_groups"}

// String returns the reason's metric label.
func (r RefuseReason) String() string {
	if r >= 0 && r < numRefuseReasons {
		return refuseNames[r]
	}
	return "unknown"
}

// RefuseReasons lists every reason, in label order.
func RefuseReasons() []RefuseReason {
	return []RefuseReason{RefusedGroupMaxSize, RefusedMaxMembers, RefusedMaxGroups}
}

// Stats is what the coordinator holds and what its caps refused.
type Stats struct {
	// Groups is the number of groups held.
	Groups int
	// Members counts members and pending member ids in all groups.
	Members int64
	// Evicted counts empty groups dropped to make room for a new one.
	Evicted uint64
	// Refused counts refusals by RefuseReason.
	Refused [numRefuseReasons]uint64
}

// limits are the coordinator's counters for the caps.
type limits struct {
	members atomic.Int64
	evicted atomic.Uint64
	refused [numRefuseReasons]atomic.Uint64
}

// Stats returns a snapshot of the coordinator's counts.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	s := Stats{Groups: len(c.groups) + len(c.cgroups)}
	c.mu.Unlock()
	s.Members = c.lim.members.Load()
	s.Evicted = c.lim.evicted.Load()
	for i := range s.Refused {
		s.Refused[i] = c.lim.refused[i].Load()
	}
	return s
}

func (c *Coordinator) refuse(r RefuseReason) { c.lim.refused[r].Add(1) }

// roomForGroup reports whether a new group may be added, evicting an
// evictable group (see evictable) among up to evictScan of them when
// MaxGroups are held. c.mu is held; groups are only tried (TryLock), since
// the lock order is group, then map.
func (c *Coordinator) roomForGroup() bool {
	if c.cfg.MaxGroups <= 0 || len(c.groups)+len(c.cgroups) < c.cfg.MaxGroups {
		return true
	}
	seen := 0
	for id, g := range c.groups {
		if seen == evictScan {
			break
		}
		seen++
		if !g.mu.TryLock() {
			continue
		}
		ok := g.evictable()
		if ok {
			g.kill()
			delete(c.groups, id)
		}
		g.mu.Unlock()
		if ok {
			c.lim.evicted.Add(1)
			return true
		}
	}
	c.refuse(RefusedMaxGroups)
	return false
}

// evictable reports whether the group may be dropped to make room: Empty,
// with no member, no pending member id and no committed offset (Kafka too
// removes an empty group once it has no offsets). Dropping it loses
// nothing but its generation number and its listing.
func (g *group) evictable() bool {
	return g.state == stateEmpty && !g.keep && len(g.members) == 0 && len(g.pending) == 0
}

// roomForNew reports whether a join with an empty member id may add a
// member or a pending member id: a static member replacing its instance's
// old member adds nothing; others count against MaxGroupSize (members and
// pending ids of this group) and MaxMembers (all groups).
func (g *group) roomForNew(req *JoinRequest) (ok bool, code int16) {
	if req.HasInstanceID {
		if _, known := g.static[req.GroupInstanceID]; known {
			return true, errNone
		}
	}
	cfg := &g.c.cfg
	if cfg.MaxGroupSize > 0 && len(g.members)+len(g.pending) >= cfg.MaxGroupSize {
		g.c.refuse(RefusedGroupMaxSize)
		return false, errGroupMaxSizeReached
	}
	if cfg.MaxMembers > 0 {
		// Reserve the member's place now, so that joins to different
		// groups cannot pass the cap together; account corrects the count
		// when the operation finishes (by one less if the join added
		// nothing).
		for {
			n := g.c.lim.members.Load()
			if n >= int64(cfg.MaxMembers) {
				g.c.refuse(RefusedMaxMembers)
				return false, errCoordinatorNotAvailable
			}
			if g.c.lim.members.CompareAndSwap(n, n+1) {
				g.counted++
				break
			}
		}
	}
	return true, errNone
}

// account brings the coordinator's member count up to date with the
// group's members and pending member ids (none once Dead).
func (g *group) account() {
	n := len(g.members) + len(g.pending)
	if g.state == stateDead {
		n = 0
	}
	if d := n - g.counted; d != 0 {
		g.c.lim.members.Add(int64(d))
		g.counted = n
	}
}

// roomForNewOr is roomForNew that answers done with the refusal.
func (g *group) roomForNewOr(req *JoinRequest, done func(JoinResult), o *outbox) bool {
	ok, code := g.roomForNew(req)
	if !ok {
		o.join(done, joinError("", code))
	}
	return ok
}

// reserveMember takes a place for a new consumer-protocol member under
// MaxMembers (cg.account gives it back if the member is not kept).
func (cg *cgroup) reserveMember() bool {
	max := int64(cg.c.cfg.MaxMembers)
	if max <= 0 {
		return true
	}
	for {
		n := cg.c.lim.members.Load()
		if n >= max {
			cg.c.refuse(RefusedMaxMembers)
			return false
		}
		if cg.c.lim.members.CompareAndSwap(n, n+1) {
			cg.counted++
			return true
		}
	}
}

// account brings the coordinator's member count up to date with the
// consumer group's members (none once dead); cg is locked.
func (cg *cgroup) account() {
	n := len(cg.members)
	if cg.dead {
		n = 0
	}
	if d := n - cg.counted; d != 0 {
		cg.c.lim.members.Add(int64(d))
		cg.counted = n
	}
}
