package group

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

const delay = DefaultInitialRebalanceDelay

func TestTwoMembersFormOneGeneration(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.join(consumerJoin("g", "", "a", "range", "roundrobin"))
	b := h.join(consumerJoin("g", "", "b", "roundrobin", "range"))
	if a.isDone() || b.isDone() {
		t.Fatal("a join completed before the initial rebalance delay")
	}
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state = %s, want PreparingRebalance", s)
	}
	h.clock.Advance(delay - time.Millisecond)
	if a.isDone() || b.isDone() {
		t.Fatal("a join completed before the initial rebalance delay")
	}
	// b arrived during the first delay (KIP-134): the delay is extended once.
	h.clock.Advance(time.Millisecond)
	if a.isDone() || b.isDone() {
		t.Fatal("the initial delay was not extended for the second member")
	}
	h.clock.Advance(delay)
	ra, rb := a.result(), b.result()
	for _, r := range []JoinResult{ra, rb} {
		if r.Error != 0 || r.GenerationID != 1 || r.ProtocolType != "consumer" || r.LeaderID != ra.MemberID {
			t.Fatalf("join result %+v", r)
		}
		// One vote each; the tie goes to the first member's preference.
		if r.ProtocolName != "range" {
			t.Fatalf("protocol = %q, want range", r.ProtocolName)
		}
	}
	if !strings.HasPrefix(ra.MemberID, "a-") || !strings.HasPrefix(rb.MemberID, "b-") || ra.MemberID == rb.MemberID {
		t.Fatalf("member ids %q %q", ra.MemberID, rb.MemberID)
	}
	if rb.Members != nil {
		t.Fatalf("follower got members %+v", rb.Members)
	}
	if len(ra.Members) != 2 ||
		ra.Members[0].MemberID != ra.MemberID || string(ra.Members[0].Metadata) != "meta-a-range" ||
		ra.Members[1].MemberID != rb.MemberID || string(ra.Members[1].Metadata) != "meta-b-range" {
		t.Fatalf("leader's members %+v", ra.Members)
	}
	if s := h.state("g"); s != "CompletingRebalance" {
		t.Fatalf("state = %s, want CompletingRebalance", s)
	}
}

func TestFollowerSyncWaitsForLeader(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.join(consumerJoin("g", "", "a"))
	b := h.join(consumerJoin("g", "", "b"))
	h.clock.Advance(2 * delay)
	ida, idb := a.result().MemberID, b.result().MemberID

	sb := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: idb,
		ProtocolType: "consumer", HasProtocolType: true, ProtocolName: "range", HasProtocolName: true})
	if sb.isDone() {
		t.Fatalf("follower sync completed before the leader's: %+v", sb.result())
	}
	if code := h.c.Heartbeat("g", idb, "", false, 1); code != 0 {
		t.Fatalf("heartbeat while CompletingRebalance = %d, want 0 (as Kafka)", code)
	}
	sa := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: ida, Assignments: []Assignment{
		{MemberID: ida, Assignment: []byte("A")},
		{MemberID: idb, Assignment: []byte("B")},
		{MemberID: "stranger", Assignment: []byte("X")},
	}})
	want := map[*syncCall]string{sa: "A", sb: "B"}
	for sc, w := range want {
		r := sc.result()
		if r.Error != 0 || string(r.Assignment) != w || r.ProtocolType != "consumer" || r.ProtocolName != "range" {
			t.Fatalf("sync result %+v, want assignment %q", r, w)
		}
	}
	d := h.c.Describe("g")
	if d.State != "Stable" || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 2 {
		t.Fatalf("describe %+v", d)
	}
	if m := d.Members[1]; m.MemberID != idb || m.ClientID != "b" || m.ClientHost != "/127.0.0.1" ||
		string(m.Metadata) != "meta-b-range" || string(m.Assignment) != "B" {
		t.Fatalf("described member %+v", m)
	}
	// A repeated Sync in Stable answers the stored assignment.
	if r := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: idb}).result(); r.Error != 0 || string(r.Assignment) != "B" {
		t.Fatalf("sync in Stable %+v", r)
	}
}

func TestLeaderLeavesOutMember(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.join(consumerJoin("g", "", "a"))
	b := h.join(consumerJoin("g", "", "b"))
	h.clock.Advance(2 * delay)
	sb := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: b.result().MemberID})
	h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: a.result().MemberID})
	if r := sb.result(); r.Error != 0 || len(r.Assignment) != 0 {
		t.Fatalf("member missing from the assignment got %+v, want an empty assignment", r)
	}
}

func TestLateJoinerTriggersRebalance(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 2)
	c := h.join(consumerJoin("g", "", "c2"))
	if s := h.state("g"); s != "PreparingRebalance" || c.isDone() {
		t.Fatalf("state %s, joined %v", s, c.isDone())
	}
	for _, id := range ids {
		if code := h.c.Heartbeat("g", id, "", false, 1); code != errRebalanceInProgress {
			t.Fatalf("heartbeat = %d, want REBALANCE_IN_PROGRESS", code)
		}
	}
	// Commits of the old generation are still accepted while preparing.
	if code := h.c.ValidateCommit("g", ids[1], "", false, 1); code != 0 {
		t.Fatalf("commit during PreparingRebalance = %d, want 0", code)
	}
	a := h.join(consumerJoin("g", ids[0], "c0"))
	if a.isDone() {
		t.Fatal("rebalance completed before every member rejoined")
	}
	b := h.join(consumerJoin("g", ids[1], "c1")) // the last one: completes at once, no delay
	for _, jc := range []*joinCall{a, b, c} {
		if r := jc.result(); r.Error != 0 || r.GenerationID != 2 || r.LeaderID != ids[0] {
			t.Fatalf("join result %+v", r)
		}
	}
	if n := len(a.result().Members); n != 3 {
		t.Fatalf("leader got %d members, want 3", n)
	}
}

func TestHeartbeatAnswers(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 2)
	static := consumerJoin("s", "", "st")
	static.GroupInstanceID, static.HasInstanceID = "inst", true
	sj := h.join(static)
	h.clock.Advance(2 * delay)
	sid := sj.result().MemberID

	tests := []struct {
		name      string
		group, id string
		inst      string
		hasInst   bool
		gen       int32
		want      int16
	}{
		{"stable", "g", ids[1], "", false, 1, 0},
		{"stale generation", "g", ids[1], "", false, 0, errIllegalGeneration},
		{"future generation", "g", ids[1], "", false, 2, errIllegalGeneration},
		{"unknown member", "g", "nobody", "", false, 1, errUnknownMemberID},
		{"unknown group", "nogroup", ids[1], "", false, 1, errUnknownMemberID},
		{"empty group id", "", ids[1], "", false, 1, errInvalidGroupID},
		{"completing rebalance", "s", sid, "inst", true, 1, 0},
		{"fenced instance", "s", "old-id", "inst", true, 1, errFencedInstanceID},
		{"unknown instance", "s", sid, "other", true, 1, errUnknownMemberID},
	}
	for _, tt := range tests {
		if got := h.c.Heartbeat(tt.group, tt.id, tt.inst, tt.hasInst, tt.gen); got != tt.want {
			t.Errorf("%s: heartbeat = %d, want %d", tt.name, got, tt.want)
		}
	}
	h.join(consumerJoin("g", ids[0], "c0")) // the leader rejoins: PreparingRebalance
	if got := h.c.Heartbeat("g", ids[1], "", false, 1); got != errRebalanceInProgress {
		t.Errorf("preparing rebalance: heartbeat = %d, want %d", got, errRebalanceInProgress)
	}
	h.c.Leave("g", []LeaveMember{{MemberID: ids[1]}}) // completes generation 2 with the leader
	if got := h.c.Heartbeat("g", ids[1], "", false, 2); got != errUnknownMemberID {
		t.Errorf("after leaving: heartbeat = %d, want %d", got, errUnknownMemberID)
	}
}

func TestSessionExpiryRemovesMemberAndRebalances(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 2) // sessions of 10 s
	for range 2 {
		h.clock.Advance(4 * time.Second)
		if code := h.c.Heartbeat("g", ids[0], "", false, 1); code != 0 {
			t.Fatalf("heartbeat = %d", code)
		}
	}
	if s := h.state("g"); s != "Stable" {
		t.Fatalf("state after 8 s = %s", s)
	}
	h.clock.Advance(4 * time.Second) // ids[1] has been silent for 12 s
	if code := h.c.Heartbeat("g", ids[0], "", false, 1); code != errRebalanceInProgress {
		t.Fatalf("heartbeat after expiry = %d, want REBALANCE_IN_PROGRESS", code)
	}
	if d := h.c.Describe("g"); len(d.Members) != 1 || d.Members[0].MemberID != ids[0] {
		t.Fatalf("members after expiry %+v", d.Members)
	}
	r := h.join(consumerJoin("g", ids[0], "c0")).result()
	if r.Error != 0 || r.GenerationID != 2 || len(r.Members) != 1 {
		t.Fatalf("rejoin %+v", r)
	}
	if code := h.c.Heartbeat("g", ids[1], "", false, 1); code != errUnknownMemberID {
		t.Fatalf("expired member's heartbeat = %d, want UNKNOWN_MEMBER_ID", code)
	}
}

func TestRebalanceTimeoutDropsMemberThatDoesNotRejoin(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 2) // rebalance timeouts of 30 s
	a := h.join(consumerJoin("g", ids[0], "c0"))
	for range 7 { // ids[1] keeps heartbeating but never rejoins
		h.clock.Advance(4 * time.Second)
		if code := h.c.Heartbeat("g", ids[1], "", false, 1); code != errRebalanceInProgress {
			t.Fatalf("heartbeat = %d", code)
		}
	}
	if a.isDone() {
		t.Fatal("rebalance completed before the rebalance timeout")
	}
	h.clock.Advance(2 * time.Second)
	r := a.result()
	if r.Error != 0 || r.GenerationID != 2 || len(r.Members) != 1 || r.Members[0].MemberID != ids[0] {
		t.Fatalf("join after rebalance timeout %+v", r)
	}
	if code := h.c.Heartbeat("g", ids[1], "", false, 1); code != errUnknownMemberID {
		t.Fatalf("dropped member's heartbeat = %d", code)
	}
}

func TestNewLeaderWhenLeaderDoesNotRejoin(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 2)
	c := h.join(consumerJoin("g", "", "c2"))
	b := h.join(consumerJoin("g", ids[1], "c1"))
	h.clock.Advance(30 * time.Second)
	for _, jc := range []*joinCall{b, c} {
		if r := jc.result(); r.Error != 0 || r.GenerationID != 2 || r.LeaderID != ids[1] {
			t.Fatalf("join %+v, want leader %s", r, ids[1])
		}
	}
	if n := len(b.result().Members); n != 2 {
		t.Fatalf("new leader got %d members", n)
	}
}

func TestMemberIDRequired(t *testing.T) {
	h := newHarness(t, Config{})
	req := consumerJoin("g", "", "cli")
	req.RequireKnownMemberID = true
	r := h.join(req).result()
	if r.Error != errMemberIDRequired || r.GenerationID != -1 ||
		!regexp.MustCompile(`^cli-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(r.MemberID) {
		t.Fatalf("first join %+v", r)
	}
	if l := h.c.List(); len(l) != 1 || l[0].GroupID != "g" || l[0].State != "Empty" {
		t.Fatalf("list %+v", l)
	}
	req.MemberID = r.MemberID
	j := h.join(req)
	h.clock.Advance(2 * delay)
	if r2 := j.result(); r2.Error != 0 || r2.MemberID != r.MemberID || r2.GenerationID != 1 || r2.LeaderID != r.MemberID {
		t.Fatalf("second join %+v", r2)
	}

	// A pending member is waited for: the leader's rejoin completes only
	// once the new member comes back with its id.
	h.syncAll("g", 1, []string{r.MemberID})
	req3 := consumerJoin("g", "", "late")
	req3.RequireKnownMemberID = true
	r3 := h.join(req3).result()
	if r3.Error != errMemberIDRequired {
		t.Fatalf("join %+v", r3)
	}
	a := h.join(req) // the leader rejoins: PreparingRebalance
	if a.isDone() {
		t.Fatal("rebalance completed while a MEMBER_ID_REQUIRED member was pending")
	}
	req3.MemberID = r3.MemberID
	c := h.join(req3)
	if ra, rc := a.result(), c.result(); ra.GenerationID != 2 || rc.GenerationID != 2 || len(ra.Members) != 2 {
		t.Fatalf("joins %+v %+v", ra, rc)
	}

	// An id not used within the session timeout is forgotten, and so is a
	// group holding nothing else.
	req4 := consumerJoin("other", "", "cli")
	req4.RequireKnownMemberID = true
	r4 := h.join(req4).result()
	h.clock.Advance(req4.SessionTimeout)
	req4.MemberID = r4.MemberID
	if r := h.join(req4).result(); r.Error != errUnknownMemberID {
		t.Fatalf("join with an expired pending id: %+v", r)
	}
	for _, l := range h.c.List() {
		if l.GroupID == "other" {
			t.Fatalf("group with only an expired pending member is still listed: %+v", l)
		}
	}
}

func staticJoin(groupID, memberID, instance string, protos ...string) JoinRequest {
	req := consumerJoin(groupID, memberID, instance, protos...)
	req.GroupInstanceID, req.HasInstanceID = instance, true
	return req
}

// staticGroup forms a Stable group of static members a and b.
func (h *harness) staticGroup(protos ...string) (ida, idb string) {
	h.t.Helper()
	a := h.join(staticJoin("g", "", "a", protos...))
	b := h.join(staticJoin("g", "", "b", protos...))
	h.clock.Advance(2 * delay)
	ida, idb = a.result().MemberID, b.result().MemberID
	h.syncAll("g", 1, []string{ida, idb})
	return ida, idb
}

func TestStaticMemberReplacement(t *testing.T) {
	h := newHarness(t, Config{})
	oldA, idb := h.staticGroup()
	if !strings.HasPrefix(oldA, "a-") {
		t.Fatalf("static member id %q, want the instance id as prefix", oldA)
	}

	// a restarts: same protocol, new metadata (owned partitions are gone).
	req := staticJoin("g", "", "a")
	req.Protocols[0].Metadata = []byte("restarted")
	r := h.join(req).result()
	newA := r.MemberID
	if r.Error != 0 || newA == oldA || r.GenerationID != 1 || r.LeaderID != oldA || r.Members != nil || r.SkipAssignment {
		t.Fatalf("static rejoin %+v (old id %s)", r, oldA)
	}
	if s := h.state("g"); s != "Stable" {
		t.Fatalf("state = %s, want Stable (no rebalance)", s)
	}
	if code := h.c.Heartbeat("g", oldA, "a", true, 1); code != errFencedInstanceID {
		t.Fatalf("old id heartbeat = %d, want FENCED_INSTANCE_ID", code)
	}
	if code := h.c.Heartbeat("g", newA, "a", true, 1); code != 0 {
		t.Fatalf("new id heartbeat = %d", code)
	}
	if r := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: oldA, GroupInstanceID: "a", HasInstanceID: true}).result(); r.Error != errFencedInstanceID {
		t.Fatalf("old id sync %+v", r)
	}
	if r := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: newA, GroupInstanceID: "a", HasInstanceID: true}).result(); r.Error != 0 || string(r.Assignment) != "assign-"+oldA {
		t.Fatalf("new id sync %+v, want the old id's assignment", r)
	}
	if r := h.join(staticJoin("g", oldA, "a")).result(); r.Error != errFencedInstanceID {
		t.Fatalf("old id join %+v", r)
	}
	if code := h.c.ValidateCommit("g", oldA, "a", true, 1); code != errFencedInstanceID {
		t.Fatalf("old id commit = %d", code)
	}
	if _, errs := h.c.Leave("g", []LeaveMember{{MemberID: oldA, GroupInstanceID: "a", HasInstanceID: true}}); errs[0] != errFencedInstanceID {
		t.Fatalf("old id leave = %v", errs)
	}

	// JoinGroup v9 (KIP-814): a follower is told the current leader; a
	// static leader learns it leads and skips the assignment.
	reqB := staticJoin("g", "", "b")
	reqB.SupportsSkipAssignment = true
	rb := h.join(reqB).result()
	if rb.Error != 0 || rb.LeaderID != newA || rb.SkipAssignment || rb.Members != nil {
		t.Fatalf("v9 follower rejoin %+v", rb)
	}
	reqA := staticJoin("g", "", "a")
	reqA.SupportsSkipAssignment = true
	ra := h.join(reqA).result()
	if ra.Error != 0 || ra.LeaderID != ra.MemberID || !ra.SkipAssignment || len(ra.Members) != 2 || ra.GenerationID != 1 {
		t.Fatalf("v9 leader rejoin %+v", ra)
	}
	if s := h.state("g"); s != "Stable" {
		t.Fatalf("state = %s", s)
	}
	_ = idb
}

func TestStaticReplacementChangingProtocolRebalances(t *testing.T) {
	h := newHarness(t, Config{})
	_, idb := h.staticGroup("range", "roundrobin")
	a := h.join(staticJoin("g", "", "a", "roundrobin"))
	if a.isDone() || h.state("g") != "PreparingRebalance" {
		t.Fatalf("static rejoin changing the selected protocol did not rebalance (state %s)", h.state("g"))
	}
	b := h.join(staticJoin("g", idb, "b", "range", "roundrobin"))
	for _, jc := range []*joinCall{a, b} {
		if r := jc.result(); r.Error != 0 || r.GenerationID != 2 || r.ProtocolName != "roundrobin" {
			t.Fatalf("join %+v", r)
		}
	}
}

func TestStaticReplacementWhileCompletingFencesOldSync(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.join(staticJoin("g", "", "a"))
	b := h.join(staticJoin("g", "", "b"))
	h.clock.Advance(2 * delay)
	ida, oldB := a.result().MemberID, b.result().MemberID
	sb := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: oldB, GroupInstanceID: "b", HasInstanceID: true})
	nb := h.join(staticJoin("g", "", "b"))
	if r := sb.result(); r.Error != errFencedInstanceID {
		t.Fatalf("replaced member's pending sync %+v", r)
	}
	if s := h.state("g"); s != "PreparingRebalance" || nb.isDone() {
		t.Fatalf("state %s", s)
	}
	ja := h.join(staticJoin("g", ida, "a"))
	if ra, rb := ja.result(), nb.result(); ra.GenerationID != 2 || rb.GenerationID != 2 || rb.MemberID == oldB {
		t.Fatalf("joins %+v %+v", ra, rb)
	}
}

func TestStaticMemberKeptAcrossRebalanceTimeout(t *testing.T) {
	h := newHarness(t, Config{})
	ida, idb := h.staticGroup()
	a := h.join(staticJoin("g", ida, "a"))
	for range 7 { // b stays alive but does not rejoin
		h.clock.Advance(4 * time.Second)
		h.c.Heartbeat("g", idb, "b", true, 1)
	}
	h.clock.Advance(2 * time.Second)
	// Kafka keeps static members that did not rejoin until their session expires.
	if r := a.result(); r.Error != 0 || r.GenerationID != 2 || len(r.Members) != 2 {
		t.Fatalf("join %+v", r)
	}
}

func TestRebalanceWithoutRejoinedMemberWaitsForStatics(t *testing.T) {
	h := newHarness(t, Config{})
	ida, idb := h.staticGroup()
	c := h.join(consumerJoin("g", "", "c"))
	var idc string
	for _, m := range h.c.Describe("g").Members {
		if m.ClientID == "c" {
			idc = m.MemberID
		}
	}
	h.c.Leave("g", []LeaveMember{{MemberID: idc}}) // c's join is answered as it leaves
	if r := c.result(); r.Error != errUnknownMemberID {
		t.Fatalf("join of a member that left %+v", r)
	}
	for range 7 { // a and b stay alive, neither rejoins
		h.clock.Advance(4 * time.Second)
		h.c.Heartbeat("g", ida, "a", true, 1)
		h.c.Heartbeat("g", idb, "b", true, 1)
	}
	h.clock.Advance(2 * time.Second) // rebalance timeout: nobody to lead, wait again
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state = %s, want PreparingRebalance", s)
	}
	a := h.join(staticJoin("g", ida, "a"))
	for range 8 {
		h.clock.Advance(4 * time.Second)
		h.c.Heartbeat("g", idb, "b", true, 1)
	}
	if r := a.result(); r.Error != 0 || r.GenerationID != 2 || r.LeaderID != ida || len(r.Members) != 2 {
		t.Fatalf("join %+v", r)
	}
}

func TestLeave(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 3)
	gerr, errs := h.c.Leave("g", []LeaveMember{{MemberID: ids[0]}, {MemberID: "nobody"}, {MemberID: ids[1], Reason: "bye"}, {}})
	if gerr != 0 || len(errs) != 4 || errs[0] != 0 || errs[1] != errUnknownMemberID || errs[2] != 0 || errs[3] != errUnknownMemberID {
		t.Fatalf("leave = %d %v", gerr, errs)
	}
	if d := h.c.Describe("g"); d.State != "PreparingRebalance" || len(d.Members) != 1 {
		t.Fatalf("describe %+v", d)
	}
	r := h.join(consumerJoin("g", ids[2], "c2")).result()
	if r.Error != 0 || r.GenerationID != 2 || r.LeaderID != ids[2] || len(r.Members) != 1 {
		t.Fatalf("rejoin %+v", r)
	}
	// The last member leaving empties the group.
	if _, errs := h.c.Leave("g", []LeaveMember{{MemberID: ids[2]}}); errs[0] != 0 {
		t.Fatalf("leave %v", errs)
	}
	if d := h.c.Describe("g"); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("describe %+v", d)
	}
	if gerr, errs := h.c.Leave("nogroup", []LeaveMember{{MemberID: "x"}, {MemberID: "y"}}); gerr != 0 || len(errs) != 2 || errs[0] != errUnknownMemberID || errs[1] != errUnknownMemberID {
		t.Fatalf("leave unknown group = %d %v", gerr, errs)
	}
	if gerr, errs := h.c.Leave("", []LeaveMember{{MemberID: "x"}}); gerr != errInvalidGroupID || errs != nil {
		t.Fatalf("leave empty group id = %d %v", gerr, errs)
	}
}

func TestLeaveAnswersPendingCallbacks(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.join(consumerJoin("g", "", "a"))
	b := h.join(consumerJoin("g", "", "b"))
	h.clock.Advance(2 * delay)
	ida, idb := a.result().MemberID, b.result().MemberID
	sb := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: idb})
	// The leader leaves before assigning: the follower is told to rejoin.
	h.c.Leave("g", []LeaveMember{{MemberID: ida}})
	if r := sb.result(); r.Error != errRebalanceInProgress {
		t.Fatalf("follower sync %+v", r)
	}
	// A member waiting in JoinGroup or SyncGroup that leaves is answered too.
	ids := h.stableGroup("g3", 2)
	j1 := h.join(consumerJoin("g3", ids[1], "c1", "range", "roundrobin")) // new metadata: rebalance
	h.c.Leave("g3", []LeaveMember{{MemberID: ids[1]}})
	if r := j1.result(); r.Error != errUnknownMemberID {
		t.Fatalf("join of a member that left %+v", r)
	}
	if r := h.join(consumerJoin("g3", ids[1], "c1")).result(); r.Error != errUnknownMemberID {
		t.Fatalf("join after leave %+v", r)
	}
	x := h.join(consumerJoin("g2", "", "x"))
	y := h.join(consumerJoin("g2", "", "y"))
	h.clock.Advance(2 * delay)
	sy := h.sync(SyncRequest{GroupID: "g2", GenerationID: 1, MemberID: y.result().MemberID})
	h.c.Leave("g2", []LeaveMember{{MemberID: y.result().MemberID}})
	if r := sy.result(); r.Error != errUnknownMemberID {
		t.Fatalf("sync of a member that left %+v", r)
	}
	_ = x
}

func TestStaticLeaveByInstanceID(t *testing.T) {
	h := newHarness(t, Config{})
	_, idb := h.staticGroup()
	_, errs := h.c.Leave("g", []LeaveMember{
		{GroupInstanceID: "b", HasInstanceID: true},
		{GroupInstanceID: "zzz", HasInstanceID: true},
	})
	if errs[0] != 0 || errs[1] != errUnknownMemberID {
		t.Fatalf("leave = %v", errs)
	}
	if code := h.c.Heartbeat("g", idb, "b", true, 1); code != errUnknownMemberID {
		t.Fatalf("heartbeat of removed static member = %d", code)
	}
}

func TestValidateCommit(t *testing.T) {
	h := newHarness(t, Config{})
	if code := h.c.ValidateCommit("simple", "", "", false, -1); code != 0 {
		t.Fatalf("simple commit = %d", code)
	}
	if l := h.c.List(); len(l) != 1 || l[0].GroupID != "simple" || l[0].State != "Empty" || l[0].ProtocolType != "" {
		t.Fatalf("list after simple commit %+v", l)
	}
	if d := h.c.Describe("simple"); d.State != "Empty" || d.Error != 0 {
		t.Fatalf("describe after simple commit %+v", d)
	}
	ids := h.stableGroup("g", 2)
	tests := []struct {
		name   string
		group  string
		member string
		gen    int32
		want   int16
	}{
		{"member of stable group", "g", ids[1], 1, 0},
		{"stale generation", "g", ids[1], 0, errIllegalGeneration},
		{"unknown member", "g", "nobody", 1, errUnknownMemberID},
		{"simple commit to active group", "g", "", -1, errUnknownMemberID},
		{"member id with no generation", "g", ids[1], -1, errIllegalGeneration},
		{"unknown group with generation", "nogroup", "m", 3, errIllegalGeneration},
		{"empty group id", "", "", -1, errInvalidGroupID},
		{"simple commit again", "simple", "", -1, 0},
	}
	for _, tt := range tests {
		if got := h.c.ValidateCommit(tt.group, tt.member, "", false, tt.gen); got != tt.want {
			t.Errorf("%s: ValidateCommit = %d, want %d", tt.name, got, tt.want)
		}
	}
	c := h.join(consumerJoin("g", "", "c2"))
	if code := h.c.ValidateCommit("g", ids[1], "", false, 1); code != 0 {
		t.Errorf("commit while PreparingRebalance = %d, want 0", code)
	}
	h.join(consumerJoin("g", ids[0], "c0"))
	h.join(consumerJoin("g", ids[1], "c1"))
	if !c.isDone() || h.state("g") != "CompletingRebalance" {
		t.Fatalf("state %s", h.state("g"))
	}
	if code := h.c.ValidateCommit("g", ids[1], "", false, 2); code != errRebalanceInProgress {
		t.Errorf("commit while CompletingRebalance = %d, want REBALANCE_IN_PROGRESS", code)
	}
	// Once every member has left, a simple commit is fine again.
	h.c.Leave("g", []LeaveMember{{MemberID: ids[0]}, {MemberID: ids[1]}, {MemberID: c.result().MemberID}})
	if code := h.c.ValidateCommit("g", "", "", false, -1); code != 0 {
		t.Errorf("simple commit to emptied group = %d", code)
	}
}

func TestDescribeAndList(t *testing.T) {
	h := newHarness(t, Config{})
	if d := h.c.Describe("nope"); d.Error != 0 || d.State != "Dead" || d.GroupID != "nope" || len(d.Members) != 0 {
		t.Fatalf("describe unknown %+v", d)
	}
	h.stableGroup("b-stable", 1)
	h.join(consumerJoin("a-preparing", "", "x"))
	h.c.ValidateCommit("c-empty", "", "", false, -1)
	want := []GroupListing{
		{"a-preparing", "consumer", "PreparingRebalance", "classic"},
		{"b-stable", "consumer", "Stable", "classic"},
		{"c-empty", "", "Empty", "classic"},
	}
	got := h.c.List()
	if len(got) != len(want) {
		t.Fatalf("list %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("list[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	// Outside Stable, members are described without metadata or assignment.
	d := h.c.Describe("a-preparing")
	if d.Protocol != "" || len(d.Members) != 1 || d.Members[0].Metadata != nil || d.Members[0].ClientID != "x" {
		t.Fatalf("describe preparing %+v", d)
	}
}

func TestInconsistentGroupProtocol(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 1)
	other := consumerJoin("g", "", "x", "range")
	other.ProtocolType = "connect"
	if r := h.join(other).result(); r.Error != errInconsistentGroupProtocol || r.MemberID != "" {
		t.Fatalf("other protocol type %+v", r)
	}
	if r := h.join(consumerJoin("g", "", "x", "roundrobin")).result(); r.Error != errInconsistentGroupProtocol {
		t.Fatalf("no common protocol %+v", r)
	}
	// A lone member may switch assignors.
	if r := h.join(consumerJoin("g", ids[0], "c0", "sticky")).result(); r.Error != 0 || r.ProtocolName != "sticky" {
		t.Fatalf("lone member switching protocol %+v", r)
	}
	empty := consumerJoin("fresh", "", "x")
	empty.Protocols = nil
	if r := h.join(empty).result(); r.Error != errInconsistentGroupProtocol {
		t.Fatalf("no protocols %+v", r)
	}
	if d := h.c.Describe("fresh"); d.State != "Dead" {
		t.Fatalf("a rejected join created group: %+v", d)
	}
}

func TestSyncErrors(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 2)
	tests := []struct {
		name string
		req  SyncRequest
		want int16
	}{
		{"wrong generation", SyncRequest{GroupID: "g", GenerationID: 7, MemberID: ids[1]}, errIllegalGeneration},
		{"unknown member", SyncRequest{GroupID: "g", GenerationID: 1, MemberID: "x"}, errUnknownMemberID},
		{"unknown group", SyncRequest{GroupID: "x", GenerationID: 1, MemberID: ids[1]}, errUnknownMemberID},
		{"empty group id", SyncRequest{GenerationID: 1, MemberID: ids[1]}, errInvalidGroupID},
		{"protocol type", SyncRequest{GroupID: "g", GenerationID: 1, MemberID: ids[1], ProtocolType: "connect", HasProtocolType: true}, errInconsistentGroupProtocol},
		{"protocol name", SyncRequest{GroupID: "g", GenerationID: 1, MemberID: ids[1], ProtocolName: "sticky", HasProtocolName: true}, errInconsistentGroupProtocol},
	}
	for _, tt := range tests {
		if r := h.sync(tt.req).result(); r.Error != tt.want || r.Assignment != nil || r.ProtocolName != "" {
			t.Errorf("%s: sync %+v, want error %d", tt.name, r, tt.want)
		}
	}
	h.join(consumerJoin("g", ids[0], "c0"))
	if r := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: ids[1]}).result(); r.Error != errRebalanceInProgress {
		t.Errorf("sync while preparing %+v", r)
	}
}

func TestInvalidSessionTimeout(t *testing.T) {
	h := newHarness(t, Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute})
	for _, d := range []time.Duration{0, time.Second - 1, time.Minute + 1} {
		req := consumerJoin("g", "", "x")
		req.SessionTimeout = d
		if r := h.join(req).result(); r.Error != errInvalidSessionTimeout || r.GenerationID != -1 {
			t.Errorf("session %v: %+v", d, r)
		}
	}
	for _, d := range []time.Duration{time.Second, time.Minute} {
		req := consumerJoin("g", "", "x")
		req.SessionTimeout = d
		if jc := h.join(req); jc.isDone() && jc.result().Error != 0 {
			t.Errorf("session %v: %+v", d, jc.result())
		}
	}
}

func TestInvalidGroupID(t *testing.T) {
	h := newHarness(t, Config{})
	if r := h.join(consumerJoin("", "", "x")).result(); r.Error != errInvalidGroupID {
		t.Fatalf("join %+v", r)
	}
}

func TestUnknownMemberJoinsUnknownGroup(t *testing.T) {
	h := newHarness(t, Config{})
	if r := h.join(consumerJoin("g", "ghost", "x")).result(); r.Error != errUnknownMemberID || r.MemberID != "ghost" {
		t.Fatalf("join %+v", r)
	}
	if d := h.c.Describe("g"); d.State != "Dead" {
		t.Fatalf("group created: %+v", d)
	}
}

func TestCloseAnswersPendingCallbacks(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 2)
	j := h.join(consumerJoin("g", ids[0], "c0")) // waits for ids[1]
	other := h.join(consumerJoin("g2", "", "a"))
	h.join(consumerJoin("g2", "", "b"))
	h.clock.Advance(2 * delay)
	ida2 := other.result().MemberID
	var idb2 string
	for _, m := range h.c.Describe("g2").Members {
		if m.MemberID != ida2 {
			idb2 = m.MemberID
		}
	}
	s := h.sync(SyncRequest{GroupID: "g2", GenerationID: 1, MemberID: idb2})
	h.c.Close()
	if r := j.result(); r.Error != errNotCoordinator {
		t.Fatalf("pending join after Close %+v", r)
	}
	if r := s.result(); r.Error != errNotCoordinator {
		t.Fatalf("pending sync after Close %+v", r)
	}
	if r := h.join(consumerJoin("g", "", "z")).result(); r.Error != errNotCoordinator {
		t.Fatalf("join after Close %+v", r)
	}
	if r := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: ids[1]}).result(); r.Error != errNotCoordinator {
		t.Fatalf("sync after Close %+v", r)
	}
	if code := h.c.Heartbeat("g", ids[1], "", false, 1); code != errNotCoordinator {
		t.Fatalf("heartbeat after Close = %d", code)
	}
	if code := h.c.ValidateCommit("g", ids[1], "", false, 1); code != errNotCoordinator {
		t.Fatalf("commit after Close = %d", code)
	}
	if gerr, _ := h.c.Leave("g", []LeaveMember{{MemberID: ids[1]}}); gerr != errNotCoordinator {
		t.Fatalf("leave after Close = %d", gerr)
	}
	if d := h.c.Describe("g"); d.Error != errNotCoordinator {
		t.Fatalf("describe after Close %+v", d)
	}
	if l := h.c.List(); len(l) != 0 {
		t.Fatalf("list after Close %+v", l)
	}
	h.clock.Advance(time.Hour) // no timer may fire a callback again
	h.c.Close()
}

func TestInitialRebalanceDelayExtends(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.join(consumerJoin("g", "", "a"))
	h.clock.Advance(2 * time.Second)
	b := h.join(consumerJoin("g", "", "b"))
	h.clock.Advance(3 * time.Second) // t=5 s: the delay was extended at 3 s to 6 s
	c := h.join(consumerJoin("g", "", "c"))
	h.clock.Advance(time.Second) // t=6 s: c arrived, extend to 9 s
	if a.isDone() {
		t.Fatal("completed while members were still arriving")
	}
	h.clock.Advance(3 * time.Second) // t=9 s: nobody new
	for _, jc := range []*joinCall{a, b, c} {
		if r := jc.result(); r.GenerationID != 1 {
			t.Fatalf("join %+v", r)
		}
	}
	if n := len(a.result().Members); n != 3 {
		t.Fatalf("generation 1 has %d members, want 3", n)
	}

	// The extensions stop at the rebalance timeout.
	start := h.clock.now()
	req := consumerJoin("capped", "", "x")
	req.RebalanceTimeout = 5 * time.Second
	first := h.join(req)
	for !first.isDone() {
		h.clock.Advance(time.Second)
		h.join(consumerJoin("capped", "", "y"))
		if h.clock.now().Sub(start) > time.Minute {
			t.Fatal("initial delay never ended")
		}
	}
	if took := h.clock.now().Sub(start); took != 5*time.Second {
		t.Fatalf("initial delay took %v, want the 5 s rebalance timeout", took)
	}
}

func TestNoInitialRebalanceDelay(t *testing.T) {
	h := newHarness(t, Config{InitialRebalanceDelay: -1})
	r := h.join(consumerJoin("g", "", "a")).result() // completes at once
	if r.Error != 0 || r.GenerationID != 1 {
		t.Fatalf("join %+v", r)
	}
}

func TestMaxGroupSize(t *testing.T) {
	h := newHarness(t, Config{MaxGroupSize: 2})
	ids := h.stableGroup("g", 2)
	if r := h.join(consumerJoin("g", "", "c")).result(); r.Error != errGroupMaxSizeReached {
		t.Fatalf("third member %+v", r)
	}
	if s := h.state("g"); s != "Stable" {
		t.Fatalf("state = %s", s)
	}
	// Current members still rejoin.
	a := h.join(consumerJoin("g", ids[0], "c0"))
	b := h.join(consumerJoin("g", ids[1], "c1"))
	if a.result().GenerationID != 2 || b.result().GenerationID != 2 {
		t.Fatalf("rejoins %+v %+v", a.result(), b.result())
	}
}

func TestPendingSyncExpiry(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.join(consumerJoin("g", "", "a"))
	b := h.join(consumerJoin("g", "", "b"))
	h.clock.Advance(2 * delay)
	ida, idb := a.result().MemberID, b.result().MemberID
	h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: ida})
	for range 7 { // b heartbeats but never syncs
		h.clock.Advance(4 * time.Second)
		h.c.Heartbeat("g", ida, "", false, 1)
		h.c.Heartbeat("g", idb, "", false, 1)
	}
	h.clock.Advance(2 * time.Second) // 30 s rebalance timeout since the join
	if code := h.c.Heartbeat("g", idb, "", false, 1); code != errUnknownMemberID {
		t.Fatalf("heartbeat of member that never synced = %d, want UNKNOWN_MEMBER_ID", code)
	}
	if code := h.c.Heartbeat("g", ida, "", false, 1); code != errRebalanceInProgress {
		t.Fatalf("heartbeat of the remaining member = %d", code)
	}
}

func TestLeaderThatNeverSyncsIsDropped(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.join(consumerJoin("g", "", "a"))
	b := h.join(consumerJoin("g", "", "b"))
	h.clock.Advance(2 * delay)
	ida, idb := a.result().MemberID, b.result().MemberID
	sb := h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: idb})
	for range 7 { // the leader heartbeats but never sends its assignment
		h.clock.Advance(4 * time.Second)
		h.c.Heartbeat("g", ida, "", false, 1)
	}
	if sb.isDone() {
		t.Fatalf("follower sync answered early: %+v", sb.result())
	}
	h.clock.Advance(2 * time.Second)
	if r := sb.result(); r.Error != errRebalanceInProgress {
		t.Fatalf("follower sync after the leader timed out %+v", r)
	}
	if code := h.c.Heartbeat("g", ida, "", false, 1); code != errUnknownMemberID {
		t.Fatalf("leader heartbeat = %d, want UNKNOWN_MEMBER_ID", code)
	}
	r := h.join(consumerJoin("g", idb, "b")).result()
	if r.Error != 0 || r.GenerationID != 2 || r.LeaderID != idb {
		t.Fatalf("rejoin %+v", r)
	}
}

func TestRetriedJoinSupersedesPendingOne(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 2)
	first := h.join(consumerJoin("g", ids[0], "c0"))
	second := h.join(consumerJoin("g", ids[0], "c0"))
	if r := first.result(); r.Error != errRebalanceInProgress {
		t.Fatalf("superseded join %+v", r)
	}
	h.join(consumerJoin("g", ids[1], "c1"))
	if r := second.result(); r.Error != 0 || r.GenerationID != 2 {
		t.Fatalf("retried join %+v", r)
	}
}

func TestRejoinWhileCompleting(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.join(consumerJoin("g", "", "a"))
	b := h.join(consumerJoin("g", "", "b"))
	h.clock.Advance(2 * delay)
	ida, idb := a.result().MemberID, b.result().MemberID
	// Same metadata (a lost response): the current generation again.
	if r := h.join(consumerJoin("g", idb, "b")).result(); r.Error != 0 || r.GenerationID != 1 || r.Members != nil {
		t.Fatalf("follower rejoin %+v", r)
	}
	if r := h.join(consumerJoin("g", ida, "a")).result(); r.GenerationID != 1 || len(r.Members) != 2 {
		t.Fatalf("leader rejoin %+v", r)
	}
	// Changed metadata: a new rebalance.
	j := h.join(consumerJoin("g", idb, "b", "range", "roundrobin"))
	if j.isDone() || h.state("g") != "PreparingRebalance" {
		t.Fatalf("state %s", h.state("g"))
	}
}

func TestProtocolSelection(t *testing.T) {
	tests := []struct {
		name    string
		members [][]string
		want    string
	}{
		{"only common protocol", [][]string{{"range", "rr"}, {"rr", "range"}, {"rr"}}, "rr"},
		{"majority preference", [][]string{{"x", "y"}, {"y", "x"}, {"x", "y"}}, "x"},
		{"majority against first member", [][]string{{"x", "y"}, {"y", "x"}, {"y", "x"}}, "y"},
		{"tie goes to first member", [][]string{{"y", "x"}, {"x", "y"}}, "y"},
	}
	for _, tt := range tests {
		h := newHarness(t, Config{InitialRebalanceDelay: time.Second})
		var first *joinCall
		for i, ps := range tt.members {
			jc := h.join(consumerJoin("g", "", clientName(i), ps...))
			if i == 0 {
				first = jc
			}
		}
		h.clock.Advance(2 * time.Second)
		if r := first.result(); r.ProtocolName != tt.want {
			t.Errorf("%s: protocol %q, want %q", tt.name, r.ProtocolName, tt.want)
		}
	}
}

func TestDelete(t *testing.T) {
	h := newHarness(t, Config{})
	h.stableGroup("g", 1)
	h.c.ValidateCommit("e", "", "", false, -1)
	if code := h.c.Delete("g"); code != errNonEmptyGroup {
		t.Fatalf("delete active group = %d", code)
	}
	if code := h.c.Delete("e"); code != 0 {
		t.Fatalf("delete empty group = %d", code)
	}
	if code := h.c.Delete("e"); code != errGroupIDNotFound {
		t.Fatalf("delete deleted group = %d", code)
	}
	if d := h.c.Describe("e"); d.State != "Dead" {
		t.Fatalf("describe deleted group %+v", d)
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.normalized()
	if c.MinSessionTimeout != 6*time.Second || c.MaxSessionTimeout != 30*time.Minute ||
		c.InitialRebalanceDelay != 3*time.Second || c.MaxGroupSize != 0 {
		t.Fatalf("defaults %+v", c)
	}
	c = Config{MinSessionTimeout: time.Hour, InitialRebalanceDelay: -time.Second, MaxGroupSize: -3}.normalized()
	if c.MaxSessionTimeout != time.Hour || c.InitialRebalanceDelay != 0 || c.MaxGroupSize != 0 {
		t.Fatalf("normalized %+v", c)
	}
}

// TestRealTimers runs a session expiry and a rebalance on the wall clock.
func TestRealTimers(t *testing.T) {
	c := New(Config{MinSessionTimeout: 10 * time.Millisecond, InitialRebalanceDelay: 20 * time.Millisecond})
	defer c.Close()
	req := consumerJoin("g", "", "a")
	req.SessionTimeout, req.RebalanceTimeout = 50*time.Millisecond, 200*time.Millisecond
	got := make(chan JoinResult, 2)
	c.Join(req, func(r JoinResult) { got <- r })
	req.ClientID = "b"
	c.Join(req, func(r JoinResult) { got <- r })
	var ids []string
	for range 2 {
		select {
		case r := <-got:
			if r.Error != 0 || r.GenerationID != 1 {
				t.Fatalf("join %+v", r)
			}
			ids = append(ids, r.MemberID)
		case <-time.After(5 * time.Second):
			t.Fatal("the initial rebalance delay never ended")
		}
	}
	// Nobody syncs or heartbeats: the sessions expire and the group empties.
	if !testtools.Eventually(5*time.Second, func() bool { return c.Describe("g").State == "Empty" }) {
		t.Fatalf("group never emptied: %+v", c.Describe("g"))
	}
	if code := c.Heartbeat("g", ids[0], "", false, 1); code != errUnknownMemberID {
		t.Fatalf("heartbeat of expired member = %d", code)
	}
}

// TestJoinV0RebalanceTimeout: JoinGroup v0 has no rebalance timeout (the
// decoder reports -1); the session timeout stands in for it, as in Kafka.
func TestJoinV0RebalanceTimeout(t *testing.T) {
	h := newHarness(t, Config{})
	var calls []*joinCall
	for i := range 2 {
		req := consumerJoin("g", "", clientName(i))
		req.RebalanceTimeout = -1
		calls = append(calls, h.join(req))
	}
	h.clock.Advance(2 * delay)
	ids := []string{calls[0].result().MemberID, calls[1].result().MemberID}
	h.syncAll("g", 1, ids)
	req := consumerJoin("g", ids[0], "c0")
	req.RebalanceTimeout = -1
	a := h.join(req)
	h.clock.Advance(5 * time.Second)
	h.c.Heartbeat("g", ids[1], "", false, 1)
	h.clock.Advance(5*time.Second - time.Millisecond)
	if a.isDone() {
		t.Fatal("completed before the 10 s session timeout")
	}
	h.clock.Advance(time.Millisecond)
	if r := a.result(); r.GenerationID != 2 || len(r.Members) != 1 {
		t.Fatalf("join %+v", r)
	}
}
