package group

import (
	"slices"
	"testing"
	"time"
)

// TestUnloadAnswersParkedMembers: Unload drops the groups this instance no
// longer coordinates, as Kafka's old coordinator unloads them: members
// parked in JoinGroup or SyncGroup are answered NOT_COORDINATOR (16) at
// once, List no longer shows the groups, and the groups it keeps are
// untouched.
func TestUnloadAnswersParkedMembers(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 2)
	kept := h.stableGroup("kept", 1)
	for _, id := range ids { // sessions are 10 s; each formation advances 6 s
		h.c.Heartbeat("g", id, "", false, 1)
	}
	other := h.join(consumerJoin("g2", "", "a"))
	h.join(consumerJoin("g2", "", "b"))
	h.clock.Advance(2 * delay)
	leader := other.result().MemberID
	var follower string
	for _, m := range h.c.Describe("g2").Members {
		if m.MemberID != leader {
			follower = m.MemberID
		}
	}
	s := h.sync(SyncRequest{GroupID: "g2", GenerationID: 1, MemberID: follower}) // parks: waits for the leader
	h.c.Heartbeat("g", ids[1], "", false, 1)
	j := h.join(consumerJoin("g", ids[0], "c0")) // parks: waits for ids[1]
	if j.isDone() || s.isDone() {
		t.Fatalf("join parked %v, sync parked %v", !j.isDone(), !s.isDone())
	}

	var asked []string
	dropped := h.c.Unload(func(id string) bool {
		asked = append(asked, id)
		return id != "kept"
	})
	if !slices.Equal(dropped, []string{"g", "g2"}) {
		t.Fatalf("Unload dropped %v, want [g g2]", dropped)
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"g", "g2", "kept"}) {
		t.Fatalf("Unload asked about %v", asked)
	}
	if r := j.result(); r.Error != errNotCoordinator || r.MemberID != ids[0] || r.GenerationID != noGeneration {
		t.Fatalf("parked join after Unload %+v", r)
	}
	if r := s.result(); r.Error != errNotCoordinator {
		t.Fatalf("parked sync after Unload %+v", r)
	}
	l := h.c.List()
	if len(l) != 1 || l[0].GroupID != "kept" || l[0].State != "Stable" {
		t.Fatalf("List after Unload %+v", l)
	}
	for _, id := range []string{"g", "g2"} {
		if d := h.c.Describe(id); d.State != "Dead" || len(d.Members) != 0 {
			t.Fatalf("Describe(%s) after Unload %+v", id, d)
		}
	}
	if code := h.c.Heartbeat("kept", kept[0], "", false, 1); code != errNone && code != errRebalanceInProgress {
		t.Fatalf("heartbeat of a kept group = %d", code)
	}
	// Nothing of the dropped groups fires later (the harness fails on a
	// second callback), and Unload with nothing to drop drops nothing.
	h.clock.Advance(time.Hour)
	if d := h.c.Unload(func(string) bool { return false }); len(d) != 0 {
		t.Fatalf("second Unload dropped %v", d)
	}
	// The group can form again here (it moved back): a new generation.
	if r := h.join(consumerJoin("g", "", "z")); !r.isDone() {
		h.clock.Advance(2 * delay)
	}
	if d := h.c.Describe("g"); d.State == "Dead" || len(d.Members) != 1 {
		t.Fatalf("group after it came back %+v", d)
	}
	h.c.Close()
	if d := h.c.Unload(func(string) bool { return true }); d != nil {
		t.Fatalf("Unload after Close dropped %v", d)
	}
}
