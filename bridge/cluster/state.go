package cluster

import (
	"slices"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// member is what the log says of one live instance.
type member struct {
	incarnation uint64
	last        uint64 // log time of its last record, µs
	applied     uint64
	endpoints   []store.Endpoint
}

// state is the membership log applied in order (§3). It is a pure function
// of the records and their server timestamps, so every instance that has
// read the same prefix of the log holds the same state: no instance's own
// clock enters it.
type state struct {
	timeout uint64 // µs without a record after which a member is dead
	now     uint64 // log time: the largest server timestamp read, µs
	members map[int32]*member
	// views[k] is the live set (sorted node ids) after the (base+k)-th
	// change; view 0 is empty, before anyone joined. A snapshot keeps only
	// the latest views (§2 "Generations"): base is the number of the
	// oldest one kept.
	views [][]int32
	base  uint64
}

func newState(timeoutMicros uint64) *state {
	return &state{timeout: timeoutMicros, members: map[int32]*member{}, views: [][]int32{nil}}
}

// snapshot returns the state as a snapshot record starting generation gen
// after the switch at offset switchAt: the latest maxSnapshotViews views
// and the live members, in a canonical order, so that two instances that
// read the same log write the same bytes.
func (s *state) snapshot(gen uint32, switchAt uint64) *snapState {
	views := s.views
	base := s.base
	if len(views) > maxSnapshotViews {
		base += uint64(len(views) - maxSnapshotViews)
		views = views[len(views)-maxSnapshotViews:]
	}
	ss := &snapState{gen: gen, switchAt: switchAt, now: s.now, base: base, views: slices.Clone(views)}
	for _, id := range s.live() {
		m := s.members[id]
		ss.members = append(ss.members, snapMember{node: id, incarnation: m.incarnation, last: m.last, applied: m.applied, endpoints: m.endpoints})
	}
	return ss
}

// stateFrom is the state a snapshot holds.
func stateFrom(timeoutMicros uint64, ss *snapState) *state {
	s := &state{timeout: timeoutMicros, now: ss.now, members: map[int32]*member{}, views: slices.Clone(ss.views), base: ss.base}
	for _, m := range ss.members {
		s.members[m.node] = &member{incarnation: m.incarnation, last: m.last, applied: m.applied, endpoints: m.endpoints}
	}
	return s
}

// apply applies one record with server timestamp ts (µs) and reports
// whether the live set changed and whether anything Brokers shows changed.
func (s *state) apply(ts uint64, r record) (viewChanged, changed bool) {
	prev := s.now
	s.now = max(s.now, ts)
	s.creditOutage(prev, r)
	// §3: a member not heard from for longer than the timeout, in log time,
	// is dead at the first record that shows it.
	for id, m := range s.members {
		if s.now-m.last > s.timeout {
			delete(s.members, id)
			viewChanged = true
		}
	}
	m := s.members[r.node]
	switch r.kind {
	case kindHeartbeat:
		if m == nil {
			m = &member{}
			s.members[r.node] = m
			viewChanged = true
		}
		if m.incarnation != r.incarnation || !slices.Equal(m.endpoints, r.endpoints) {
			changed = true
		}
		if m.applied != r.applied {
			changed = true
		}
		m.incarnation, m.last, m.applied, m.endpoints = r.incarnation, s.now, r.applied, r.endpoints
	case kindLeave:
		if m != nil && m.incarnation == r.incarnation {
			delete(s.members, r.node)
			viewChanged = true
		}
	}
	if viewChanged {
		s.views = append(s.views, s.live())
	}
	return viewChanged, changed || viewChanged
}

// creditOutage keeps an outage of the log itself from killing every member
// (§3 "Outages"). A gap of more than half the timeout between two records
// in log time means no live instance could write (each heartbeats several
// times per timeout): the backend was unavailable, for instance during an
// Iggy cluster's election, which takes longer than the timeout. When the
// record that ends such a gap comes from a member that was live before it,
// with the same incarnation (a survivor of the outage, not a restart), the
// gap minus half a timeout is credited to every member's last record: each
// keeps half a timeout after the outage to be heard from again. Gaps longer
// than maxOutageTimeouts timeouts are a stopped cluster, not an outage, and
// get no credit. The rule reads only the log, so every instance applies it
// alike.
func (s *state) creditOutage(prev uint64, r record) {
	gap := s.now - prev
	if prev == 0 || gap <= s.timeout/2 || gap > maxOutageTimeouts*s.timeout || r.kind != kindHeartbeat {
		return
	}
	if w := s.members[r.node]; w == nil || w.incarnation != r.incarnation {
		return
	}
	credit := gap - s.timeout/2
	for _, m := range s.members {
		m.last = min(m.last+credit, s.now)
	}
}

// maxOutageTimeouts bounds the log outage creditOutage forgives, in
// timeouts: 10 × the 6 s default is a minute, several Iggy elections.
const maxOutageTimeouts = 10

// live returns the live node ids, sorted.
func (s *state) live() []int32 {
	ids := make([]int32, 0, len(s.members))
	for id := range s.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// view is the number of the current view.
func (s *state) view() uint64 { return s.base + uint64(len(s.views)-1) }

// minApplied is the lowest view every live member has acknowledged (§5).
func (s *state) minApplied() uint64 {
	first, v := true, uint64(0)
	for _, m := range s.members {
		if first || m.applied < v {
			v, first = m.applied, false
		}
	}
	return v
}

// Rendezvous hashing (§4): the leader of a key is the live node with the
// highest score(key, node). Removing a node moves only the keys it led;
// adding one moves only the keys it now scores highest for.

// fnv64a hashes s (FNV-1a); the same on every instance: no seed.
func fnv64a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is the splitmix64 finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// partitionKey is the hash key of a partition.
func partitionKey(topic string, partition int32) uint64 {
	return mix(fnv64a(topic) ^ mix(uint64(uint32(partition))+1))
}

// groupKey is the hash key of a group; a different domain from partitions.
func groupKey(group string) uint64 { return mix(fnv64a(group) ^ 0x67726f7570) }

// pick returns the node of live with the highest score for key, -1 if none.
func pick(live []int32, key uint64) int32 {
	best, bestScore := int32(-1), uint64(0)
	for _, n := range live {
		if sc := mix(key ^ mix(uint64(uint32(n))*0x9e3779b97f4a7c15)); best < 0 || sc > bestScore {
			best, bestScore = n, sc
		}
	}
	return best
}

// epochOf is a partition's leader epoch in view n (§4), views[i] being
// view base+i: the number of the latest view at or before n in which its
// leader differs from the view before; when no kept view changed it, the
// oldest kept view's number, base (0 before any snapshot cut the list):
// its true epoch is at most that, so the epoch never goes back.
func epochOf(views [][]int32, base, n uint64, key uint64) int32 {
	i := n - base
	leader := pick(views[i], key)
	for k := i; k > 0; k-- {
		prev := pick(views[k-1], key)
		if prev != leader {
			return int32(base + k)
		}
	}
	return int32(base)
}
