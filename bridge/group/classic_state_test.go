package group

import (
	"bytes"
	"maps"
	"slices"
	"testing"
	"time"
)

// TestClassicGroupRestored: a Stable group's stored form, restored into
// another coordinator (a restarted gateway, or the instance a group moved
// to), lets its members carry on at their generation: heartbeats and member
// commits are accepted, SyncGroup hands back each member's assignment,
// DescribeGroups shows the same group, and a static member keeps its
// instance mapping. Restored sessions run from the restore: a member that
// never comes back expires and the group rebalances without it.
func TestClassicGroupRestored(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 2)
	// A static member, to check the instance mapping survives.
	static := consumerJoin("g", "", "s")
	static.GroupInstanceID, static.HasInstanceID = "inst-1", true
	sj := h.join(static)
	for _, id := range ids {
		h.join(consumerJoin("g", id, clientName(slices.Index(ids, id))))
	}
	h.clock.Advance(time.Second)
	sid := sj.result().MemberID
	all := append(slices.Clone(ids), sid)
	h.syncAll("g", 2, all)
	dirty := h.c.DirtyClassicGroups()
	b := dirty["g"]
	if len(dirty) != 1 || b == nil {
		t.Fatalf("dirty after the rebalance: %v", slices.Collect(maps.Keys(dirty)))
	}
	if d := h.c.DirtyClassicGroups(); len(d) != 0 {
		t.Fatalf("dirty twice: %v", d)
	}
	// Heartbeats change nothing stored.
	for _, id := range all {
		if code := h.c.Heartbeat("g", id, "", false, 2); code != errNone {
			t.Fatalf("heartbeat %d", code)
		}
	}
	if d := h.c.DirtyClassicGroups(); len(d) != 0 {
		t.Fatalf("dirty after heartbeats: %v", d)
	}
	before := h.c.Describe("g")

	h2 := newHarness(t, Config{})
	if err := h2.c.RestoreClassicGroup("g", b); err != nil {
		t.Fatal(err)
	}
	if d := h2.c.DirtyClassicGroups(); len(d) != 0 {
		t.Fatalf("a restore is dirty: %v", d)
	}
	after := h2.c.Describe("g")
	if after.State != "Stable" || after.Protocol != before.Protocol || len(after.Members) != 3 {
		t.Fatalf("restored %+v", after)
	}
	for i, m := range after.Members {
		w := before.Members[i]
		if m.MemberID != w.MemberID || m.ClientID != w.ClientID || m.GroupInstanceID != w.GroupInstanceID ||
			!bytes.Equal(m.Assignment, w.Assignment) || !bytes.Equal(m.Metadata, w.Metadata) {
			t.Fatalf("member %d: %+v, want %+v", i, m, w)
		}
	}
	if code := h2.c.Heartbeat("g", ids[0], "", false, 2); code != errNone {
		t.Fatalf("heartbeat after restore: %d", code)
	}
	if code := h2.c.Heartbeat("g", ids[0], "", false, 1); code != errIllegalGeneration {
		t.Fatalf("old generation after restore: %d", code)
	}
	if code := h2.c.ValidateCommit("g", ids[1], "", false, 2); code != errNone {
		t.Fatalf("commit after restore: %d", code)
	}
	if r := h2.sync(SyncRequest{GroupID: "g", GenerationID: 2, MemberID: ids[1]}).result(); r.Error != 0 || string(r.Assignment) != "assign-"+ids[1] {
		t.Fatalf("sync after restore: %+v", r)
	}
	if code := h2.c.Heartbeat("g", sid, "inst-1", true, 2); code != errNone {
		t.Fatalf("static heartbeat after restore: %d", code)
	}
	if code := h2.c.Heartbeat("g", "other", "inst-1", true, 2); code != errFencedInstanceID {
		t.Fatalf("static heartbeat of another id: %d", code)
	}
	// A restore never replaces a group held here.
	if err := h2.c.RestoreClassicGroup("g", b); err != nil || len(h2.c.Describe("g").Members) != 3 {
		t.Fatalf("second restore: %v", err)
	}

	// ids[1] and the static member keep heartbeating; ids[0] never does: its
	// session (10 s, from the restore) ends, the group rebalances.
	for range 6 {
		h2.clock.Advance(2 * time.Second)
		h2.c.Heartbeat("g", ids[1], "", false, 2)
		h2.c.Heartbeat("g", sid, "inst-1", true, 2)
	}
	if s := h2.state("g"); s != "PreparingRebalance" {
		t.Fatalf("after ids[0]'s session: %s", s)
	}
	if d := h2.c.DirtyClassicGroups(); len(d) != 0 {
		t.Fatalf("a rebalance under way is stored: %v", d)
	}
	j1 := h2.join(consumerJoin("g", ids[1], "c1"))
	rs := consumerJoin("g", sid, "s")
	rs.GroupInstanceID, rs.HasInstanceID = "inst-1", true
	j2 := h2.join(rs)
	h2.clock.Advance(time.Millisecond)
	r1, r2 := j1.result(), j2.result()
	if r1.Error != 0 || r2.Error != 0 || r1.GenerationID != 3 {
		t.Fatalf("rejoins %+v %+v", r1, r2)
	}
	leader := r1.LeaderID
	others := []string{ids[1], sid}
	slices.SortFunc(others, func(a, b string) int {
		if a == leader {
			return -1
		}
		if b == leader {
			return 1
		}
		return 0
	})
	h2.syncAll("g", 3, others)
	d := h2.c.DirtyClassicGroups()
	h3 := newHarness(t, Config{})
	if err := h3.c.RestoreClassicGroup("g", d["g"]); err != nil {
		t.Fatal(err)
	}
	if got := h3.c.Describe("g"); len(got.Members) != 2 || got.State != "Stable" {
		t.Fatalf("generation 3 restored: %+v", got)
	}
	if code := h3.c.Heartbeat("g", ids[1], "", false, 3); code != errNone {
		t.Fatalf("heartbeat at generation 3 after restore: %d", code)
	}
}

// TestClassicGroupStoreRemovals: a group that empties or is deleted is
// removed from the store; one unloaded (moved to another instance) or
// closed with the gateway is left as stored, for its next coordinator.
func TestClassicGroupStoreRemovals(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 1)
	if d := h.c.DirtyClassicGroups(); len(d) != 1 || d["g"] == nil {
		t.Fatalf("dirty %v", d)
	}
	if _, errs := h.c.Leave("g", []LeaveMember{{MemberID: ids[0]}}); errs[0] != errNone {
		t.Fatalf("leave %v", errs)
	}
	d := h.c.DirtyClassicGroups()
	if v, ok := d["g"]; len(d) != 1 || !ok || v != nil {
		t.Fatalf("after the last member left: %v", d)
	}
	if code := h.c.Delete("g"); code != errNone {
		t.Fatalf("delete %d", code)
	}
	if d := h.c.DirtyClassicGroups(); len(d) != 0 {
		t.Fatalf("deleting a group not stored: %v", d)
	}

	h2 := newHarness(t, Config{})
	moved := h2.stableGroup("moved", 1)
	h2.c.Heartbeat("moved", moved[0], "", false, 1)
	h2.stableGroup("kept", 1)
	if d := h2.c.DirtyClassicGroups(); len(d) != 2 || d["moved"] == nil || d["kept"] == nil {
		t.Fatalf("dirty %v", d)
	}
	if got := h2.c.Unload(func(id string) bool { return id == "moved" }); !slices.Equal(got, []string{"moved"}) {
		t.Fatalf("unloaded %v", got)
	}
	if d := h2.c.DirtyClassicGroups(); len(d) != 0 {
		t.Fatalf("after unloading: %v", d)
	}
	h2.c.Close()
	if d := h2.c.DirtyClassicGroups(); len(d) != 0 {
		t.Fatalf("after Close: %v", d)
	}
}

// TestClassicGroupRestoreRefusesBadForms: a stored form that does not
// describe a Stable group is refused, and nothing is loaded.
func TestClassicGroupRestoreRefusesBadForms(t *testing.T) {
	h := newHarness(t, Config{})
	for _, b := range []string{
		`not json`,
		`{"v":2,"generation":1,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","session_ms":1000,"protocols":[{"name":"range"}]}]}`,
		`{"v":1,"generation":0,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","session_ms":1000,"protocols":[{"name":"range"}]}]}`,
		`{"v":1,"generation":1,"protocol_type":"consumer","protocol":"range","leader":"b","members":[{"id":"a","session_ms":1000,"protocols":[{"name":"range"}]}]}`,
		`{"v":1,"generation":1,"protocol_type":"consumer","protocol":"sticky","leader":"a","members":[{"id":"a","session_ms":1000,"protocols":[{"name":"range"}]}]}`,
		`{"v":1,"generation":1,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","session_ms":1000,"protocols":[{"name":"range"}]},{"id":"a","session_ms":1000,"protocols":[{"name":"range"}]}]}`,
		`{"v":1,"generation":1,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","session_ms":0,"protocols":[{"name":"range"}]}]}`,
		`{"v":1,"generation":1,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","instance_id":"i","session_ms":1000,"protocols":[{"name":"range"}]},{"id":"b","instance_id":"i","session_ms":1000,"protocols":[{"name":"range"}]}]}`,
	} {
		if err := h.c.RestoreClassicGroup("g", []byte(b)); err == nil {
			t.Errorf("restored %s", b)
		}
	}
	if h.c.Has("g") {
		t.Fatal("a refused form left a group")
	}
	ok := `{"v":1,"generation":4,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","session_ms":1000,"protocols":[{"name":"range"}]}]}`
	if err := h.c.RestoreClassicGroup("g", []byte(ok)); err != nil || h.state("g") != "Stable" {
		t.Fatalf("a good form: %v", err)
	}
}

// TestClassicAnswersWaitForTheStore: with Config.AwaitStore the
// SyncGroup answers that complete a rebalance, and any answer for the group
// while its new form is queued or being written, wait until the owner
// reports the form stored; a Close sends what is still held.
func TestClassicAnswersWaitForTheStore(t *testing.T) {
	h := newHarness(t, Config{AwaitStore: true})
	j0 := h.join(consumerJoin("g", "", "c0"))
	j1 := h.join(consumerJoin("g", "", "c1"))
	h.clock.Advance(2 * h.c.cfg.InitialRebalanceDelay)
	leader, follower := j0.result().MemberID, j1.result().MemberID
	gen := j0.result().GenerationID
	fs := h.sync(SyncRequest{GroupID: "g", GenerationID: gen, MemberID: follower})
	ls := h.sync(SyncRequest{GroupID: "g", GenerationID: gen, MemberID: leader, Assignments: []Assignment{
		{MemberID: leader, Assignment: []byte("a-l")}, {MemberID: follower, Assignment: []byte("a-f")}}})
	if fs.isDone() || ls.isDone() {
		t.Fatal("SyncGroup answered before the group's form was stored")
	}
	if h.state("g") != "Stable" || !h.c.AnswersHeld() {
		t.Fatalf("state %s, held %v", h.state("g"), h.c.AnswersHeld())
	}
	// Heartbeats are answered meanwhile, as Kafka's are while it appends.
	if code := h.c.Heartbeat("g", leader, "", false, gen); code != errNone {
		t.Fatalf("heartbeat while storing: %d", code)
	}
	dirty := h.c.DirtyClassicGroups()
	if dirty["g"] == nil || h.c.AnswersHeld() {
		t.Fatalf("taken %v, still held %v", slices.Collect(maps.Keys(dirty)), h.c.AnswersHeld())
	}
	// A SyncGroup retried while the form is written waits for it too.
	again := h.sync(SyncRequest{GroupID: "g", GenerationID: gen, MemberID: follower})
	if fs.isDone() || ls.isDone() || again.isDone() {
		t.Fatal("answered while the form was being written")
	}
	h.c.ClassicGroupsStored([]string{"g"})
	for name, sc := range map[string]*syncCall{"leader": ls, "follower": fs, "retry": again} {
		if !sc.isDone() {
			t.Fatalf("%s not answered once stored", name)
		}
	}
	if r := fs.result(); r.Error != 0 || string(r.Assignment) != "a-f" {
		t.Fatalf("follower's answer %+v", r)
	}
	// Nothing being stored: answered at once.
	if sc := h.sync(SyncRequest{GroupID: "g", GenerationID: gen, MemberID: leader}); !sc.isDone() || string(sc.result().Assignment) != "a-l" {
		t.Fatal("a SyncGroup with nothing to store waited")
	}

	// A static member replaced in place changes the stored form: its new
	// member id is answered once stored, or a restart would fence it.
	h.c.ClassicGroupsStored(slices.Collect(maps.Keys(h.c.DirtyClassicGroups())))
	sj := h.join(func() JoinRequest {
		r := consumerJoin("s", "", "s0")
		r.GroupInstanceID, r.HasInstanceID = "inst", true
		return r
	}())
	h.clock.Advance(2 * h.c.cfg.InitialRebalanceDelay)
	sr := sj.result()
	ss := h.sync(SyncRequest{GroupID: "s", GenerationID: sr.GenerationID, MemberID: sr.MemberID,
		Assignments: []Assignment{{MemberID: sr.MemberID, Assignment: []byte("s")}}})
	h.c.ClassicGroupsStored(slices.Collect(maps.Keys(h.c.DirtyClassicGroups())))
	if !ss.isDone() {
		t.Fatal("static group's SyncGroup not answered once stored")
	}
	rejoin := consumerJoin("s", "", "s0")
	rejoin.GroupInstanceID, rejoin.HasInstanceID = "inst", true
	rj := h.join(rejoin)
	if rj.isDone() {
		t.Fatal("a replaced static member answered before its new id was stored")
	}
	if d := h.c.DirtyClassicGroups(); d["s"] == nil {
		t.Fatalf("the replacement queued nothing: %v", d)
	}
	h.c.ClassicGroupsStored([]string{"s"})
	if r := rj.result(); r.Error != 0 || r.MemberID == sr.MemberID {
		t.Fatalf("replaced static member's answer %+v", r)
	}

	// Close sends what is still held, taken or not.
	j2 := h.join(consumerJoin("h", "", "c2"))
	h.clock.Advance(2 * h.c.cfg.InitialRebalanceDelay)
	r2 := j2.result()
	hs := h.sync(SyncRequest{GroupID: "h", GenerationID: r2.GenerationID, MemberID: r2.MemberID,
		Assignments: []Assignment{{MemberID: r2.MemberID, Assignment: []byte("x")}}})
	if hs.isDone() {
		t.Fatal("answered before stored")
	}
	h.c.Close()
	if !hs.isDone() || hs.result().Error != 0 {
		t.Fatal("a held answer was left behind by Close")
	}
}

// TestClassicReplaceRestoredOnlyUnchanged: a restored group is replaced by
// a newer stored form only while it is as restored; once it changed here
// (a member joined: a rebalance), its own state wins.
func TestClassicReplaceRestoredOnlyUnchanged(t *testing.T) {
	h := newHarness(t, Config{})
	ids := h.stableGroup("g", 1)
	h.join(consumerJoin("g", ids[0], "c0"))
	h.clock.Advance(time.Second)
	h.syncAll("g", 2, ids)
	gen2 := h.c.DirtyClassicGroups()["g"]
	// Generation 1's form, taken from a fresh group, restored here.
	h2 := newHarness(t, Config{})
	h3 := newHarness(t, Config{})
	h3.stableGroup("g", 1)
	gen1 := h3.c.DirtyClassicGroups()["g"]
	if err := h2.c.RestoreClassicGroup("g", gen1); err != nil {
		t.Fatal(err)
	}
	if !h2.c.RestoredBehind("g", 2) || h2.c.RestoredBehind("g", 2) {
		t.Fatal("RestoredBehind not true exactly once")
	}
	h2.join(consumerJoin("g", "", "late")) // a rebalance: the group changed here
	if ok, err := h2.c.ReplaceRestored("g", gen2); ok || err != nil || gen2 == nil {
		t.Fatalf("a group changed since its restore was replaced: %v %v", ok, err)
	}
}

// FuzzRestoreClassicGroup feeds the classic stored-form decoder arbitrary
// bytes: it fails, or restores a group that then serves its members'
// heartbeats, SyncGroups, joins and a replacement by its own form, and
// answers every callback once; it never panics.
func FuzzRestoreClassicGroup(f *testing.F) {
	f.Add([]byte(`{"v":1,"generation":3,"protocol_type":"consumer","protocol":"range","leader":"m","members":[{"id":"m","session_ms":10000,"protocols":[{"name":"range"}],"assignment":"YQ=="},{"id":"n","instance_id":"i","session_ms":10000,"protocols":[{"name":"range"}]}]}`))
	f.Add([]byte(`{"v":1,"generation":1,"protocol_type":"consumer","protocol":"range","leader":"m","members":[{"id":"m","session_ms":1,"rebalance_ms":-5,"protocols":[{"name":"range"},{"name":"range"}]}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h := newHarness(t, Config{})
		if err := h.c.RestoreClassicGroup("g", b); err != nil {
			return
		}
		d := h.c.Describe("g")
		if d.State != "Stable" || len(d.Members) == 0 {
			t.Fatalf("restored as %+v", d)
		}
		if h.c.RestoredBehind("g", 1<<30) {
			if ok, _ := h.c.ReplaceRestored("g", b); ok {
				t.Fatal("replaced by its own form")
			}
		}
		var calls []*syncCall
		for _, m := range d.Members {
			h.c.Heartbeat("g", m.MemberID, "", false, 1)
			calls = append(calls, h.sync(SyncRequest{GroupID: "g", GenerationID: 1, MemberID: m.MemberID}))
		}
		jc := h.join(consumerJoin("g", "", "new"))
		h.clock.Advance(time.Minute)
		h.c.Close()
		h.clock.Advance(time.Hour)
		for _, sc := range calls {
			if !sc.isDone() {
				t.Fatal("a SyncGroup left unanswered")
			}
		}
		if !jc.isDone() {
			t.Fatal("a JoinGroup left unanswered")
		}
	})
}
