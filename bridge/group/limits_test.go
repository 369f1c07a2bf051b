package group

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestMaxGroupSizeCountsPendingIDs: KIP-394 joins (MEMBER_ID_REQUIRED) hand
// out member ids that count against group.max.size until used or expired,
// so a flood of first joins with fresh ids cannot grow a group's pending
// set without bound; the ids expire after a session and make room again.
func TestMaxGroupSizeCountsPendingIDs(t *testing.T) {
	h := newHarness(t, Config{MaxGroupSize: 3})
	req := consumerJoin("g", "", "flood")
	req.RequireKnownMemberID = true
	var codes []int16
	for range 5 {
		codes = append(codes, h.join(req).result().Error)
	}
	want := []int16{errMemberIDRequired, errMemberIDRequired, errMemberIDRequired, errGroupMaxSizeReached, errGroupMaxSizeReached}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("joins answered %v, want %v", codes, want)
	}
	s := h.c.Stats()
	if s.Members != 3 || s.Refused[RefusedGroupMaxSize] != 2 {
		t.Fatalf("stats %+v, want 3 pending members and 2 refusals", s)
	}
	h.clock.Advance(req.SessionTimeout + time.Second)
	if s := h.c.Stats(); s.Members != 0 || s.Groups != 0 {
		t.Fatalf("after the pending ids expired: %+v, want no member and no group", s)
	}
	if r := h.join(req).result(); r.Error != errMemberIDRequired {
		t.Fatalf("join after expiry: %+v", r)
	}
}

// TestMaxMembersAcrossGroups: past MaxMembers a new member of any group gets
// COORDINATOR_NOT_AVAILABLE, while members already in still rejoin; a group
// leaving frees its members' room.
func TestMaxMembersAcrossGroups(t *testing.T) {
	h := newHarness(t, Config{MaxMembers: 4})
	a := h.stableGroup("a", 2)
	h.stableGroup("b", 2)
	if r := h.join(consumerJoin("c", "", "x")).result(); r.Error != errCoordinatorNotAvailable {
		t.Fatalf("fifth member: %+v, want COORDINATOR_NOT_AVAILABLE", r)
	}
	if s := h.c.Stats(); s.Members != 4 || s.Refused[RefusedMaxMembers] != 1 || s.Groups != 2 {
		t.Fatalf("stats %+v", s)
	}
	// A current member still rejoins (no new member).
	j0 := h.join(consumerJoin("a", a[0], "c0"))
	j1 := h.join(consumerJoin("a", a[1], "c1"))
	if j0.result().Error != 0 || j1.result().Error != 0 {
		t.Fatalf("rejoins %+v %+v", j0.result(), j1.result())
	}
	if _, errs := h.c.Leave("a", []LeaveMember{{MemberID: a[0]}, {MemberID: a[1]}}); errs[0] != 0 || errs[1] != 0 {
		t.Fatalf("leave: %v", errs)
	}
	if r := h.join(consumerJoin("c", "", "x")); r.isDone() && r.result().Error != 0 {
		t.Fatalf("join after two left: %+v", r.result())
	}
	if s := h.c.Stats(); s.Members != 3 {
		t.Fatalf("members %d, want 3", s.Members)
	}
}

// TestMaxGroupsEvictsEmpty: past MaxGroups a new group evicts an empty group
// that holds no offsets; groups that hold offsets (simple commits) or
// members are never evicted, and when only those are left new groups are
// refused with COORDINATOR_NOT_AVAILABLE, by join and by commit alike.
func TestMaxGroupsEvictsEmpty(t *testing.T) {
	h := newHarness(t, Config{MaxGroups: 3})
	// "left": a group whose only member joined and left (Empty, generation 1).
	ids := h.stableGroup("left", 1)
	h.c.Leave("left", []LeaveMember{{MemberID: ids[0]}})
	if h.state("left") != "Empty" {
		t.Fatalf("left is %s", h.state("left"))
	}
	if code := h.c.ValidateCommit("offsets", "", "", false, -1); code != 0 {
		t.Fatalf("simple commit: %d", code)
	}
	h.stableGroup("live", 1)
	// The fourth group evicts "left", the only evictable one.
	if code := h.c.ValidateCommit("offsets2", "", "", false, -1); code != 0 {
		t.Fatalf("commit creating a fourth group: %d, want 0 (eviction)", code)
	}
	if h.state("left") != "Dead" || h.state("offsets") != "Empty" || h.state("live") != "Stable" {
		t.Fatalf("after eviction: left %s, offsets %s, live %s", h.state("left"), h.state("offsets"), h.state("live"))
	}
	s := h.c.Stats()
	if s.Groups != 3 || s.Evicted != 1 {
		t.Fatalf("stats %+v, want 3 groups, 1 evicted", s)
	}
	if code := h.c.ValidateCommit("offsets3", "", "", false, -1); code != errCoordinatorNotAvailable {
		t.Fatalf("commit creating a group past the cap: %d, want COORDINATOR_NOT_AVAILABLE", code)
	}
	if r := h.join(consumerJoin("new", "", "x")).result(); r.Error != errCoordinatorNotAvailable {
		t.Fatalf("join creating a group past the cap: %+v", r)
	}
	// Known groups are served as before.
	if code := h.c.ValidateCommit("offsets", "", "", false, -1); code != 0 {
		t.Fatalf("commit to a known group: %d", code)
	}
	if s := h.c.Stats(); s.Refused[RefusedMaxGroups] != 2 || s.Groups != 3 {
		t.Fatalf("stats %+v, want 2 refusals", s)
	}
	// Deleting a group makes room.
	if code := h.c.Delete("offsets"); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if code := h.c.ValidateCommit("offsets3", "", "", false, -1); code != 0 {
		t.Fatalf("commit after a delete: %d", code)
	}
}

// TestMemberCountFollowsGroups: the coordinator's member count returns to
// zero whatever way members go (sessions expire, groups are deleted,
// unloaded or closed).
func TestMemberCountFollowsGroups(t *testing.T) {
	h := newHarness(t, Config{})
	h.stableGroup("a", 3)
	h.stableGroup("b", 2)
	if m := h.c.Stats().Members; m != 5 {
		t.Fatalf("members %d, want 5", m)
	}
	h.clock.Advance(time.Minute) // no heartbeats: sessions expire
	if s := h.c.Stats(); s.Members != 0 {
		t.Fatalf("after expiry: %+v", s)
	}
	h.stableGroup("c", 2)
	h.c.Unload(func(string) bool { return true })
	if s := h.c.Stats(); s.Members != 0 || s.Groups != 0 {
		t.Fatalf("after unload: %+v", s)
	}
	h.stableGroup("d", 2)
	h.c.Close()
	if m := h.c.Stats().Members; m != 0 {
		t.Fatalf("after close: %d", m)
	}
}

// TestMaxMembersConcurrent: first joins racing on different groups never
// pass MaxMembers together.
func TestMaxMembersConcurrent(t *testing.T) {
	h := newHarness(t, Config{MaxMembers: 10})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int16]int{}
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := consumerJoin(fmt.Sprintf("g%d", i), "", "c")
			req.RequireKnownMemberID = true
			h.c.Join(req, func(r JoinResult) {
				mu.Lock()
				codes[r.Error]++
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	if codes[errMemberIDRequired] != 10 || codes[errCoordinatorNotAvailable] != 54 {
		t.Fatalf("answers %v, want 10 member ids and 54 COORDINATOR_NOT_AVAILABLE", codes)
	}
	if s := h.c.Stats(); s.Members != 10 {
		t.Fatalf("members %d, want 10", s.Members)
	}
}

// TestMaxGroupsConcurrentCreations: simple commits creating groups from
// many goroutines at once, past --max-groups: exactly the cap's worth are
// stored and the rest refused, and no group is evicted, since every group
// holds offsets once its commit is validated. A group is locked before it
// is seen, so a creation racing its creator at the cap cannot find it
// Empty and evict it first (which the hostile commit flood once did; under
// -race this test caught it in one of five runs before the fix).
func TestMaxGroupsConcurrentCreations(t *testing.T) {
	const maxGroups, workers, each = 200, 16, 100
	for round := range 20 {
		h := newHarness(t, Config{MaxGroups: maxGroups})
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int16]int{}
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					code := h.c.ValidateCommit(fmt.Sprintf("r%d-w%d-%d", round, w, i), "", "", false, -1)
					mu.Lock()
					codes[code]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		s := h.c.Stats()
		if codes[0] != maxGroups || codes[errCoordinatorNotAvailable] != workers*each-maxGroups || s.Evicted != 0 {
			t.Fatalf("round %d: answers %v, %d evicted; want %d stored, the rest COORDINATOR_NOT_AVAILABLE, none evicted",
				round, codes, s.Evicted, maxGroups)
		}
	}
}
