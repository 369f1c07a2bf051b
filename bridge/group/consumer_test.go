package group

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"
)

// fakeTopics is a TopicLookup over a fixed map.
type fakeTopics map[string]int32

func topicID(name string) (id [16]byte) {
	copy(id[:], name)
	id[15] = 1
	return id
}

func (f fakeTopics) ByName(name string) ([16]byte, int32, bool) {
	n, ok := f[name]
	return topicID(name), n, ok
}

func (f fakeTopics) ByID(id [16]byte) (string, bool) {
	for n := range f {
		if topicID(n) == id {
			return n, true
		}
	}
	return "", false
}

func (f fakeTopics) Names() []string {
	var out []string
	for n := range f {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// topicSnap is a TopicLookup as the gateway's: a snapshot of fakeTopics
// whose Names() is one slice for its life.
type topicSnap struct {
	fakeTopics
	names []string
}

func snapshotOf(f fakeTopics) *topicSnap {
	c := maps.Clone(f)
	return &topicSnap{fakeTopics: c, names: c.Names()}
}

func (s *topicSnap) Names() []string { return s.names }

// cmemberClient is a consumer-protocol member as a client drives it: it
// owns exactly what its last answer assigned, and revokes at once.
type cmemberClient struct {
	t        testing.TB
	c        *Coordinator
	topics   TopicLookup
	group    string
	id       string
	instance string
	names    []string
	regex    string
	assignor string
	epoch    int32
	owned    []TopicPartitions
}

func (m *cmemberClient) req(epoch int32, full bool) *ConsumerHeartbeat {
	r := &ConsumerHeartbeat{Version: 1, GroupID: m.group, MemberID: m.id, MemberEpoch: epoch, RebalanceTimeoutMillis: -1, Topics: m.topics}
	if m.instance != "" {
		r.InstanceID, r.HasInstanceID = m.instance, true
	}
	if full {
		r.RebalanceTimeoutMillis = 30000
		r.SubscribedTopicNames, r.HasSubscribedTopicNames = m.names, m.names != nil
		if m.regex != "" {
			r.SubscribedTopicRegex, r.HasSubscribedTopicRegex = m.regex, true
		}
		if m.assignor != "" {
			r.ServerAssignor, r.HasServerAssignor = m.assignor, true
		}
		r.Owned, r.HasOwned = m.owned, true
	}
	return r
}

// beat heartbeats (a full request) and applies the answer.
func (m *cmemberClient) beat() ConsumerHeartbeatResult {
	m.t.Helper()
	res := m.c.ConsumerGroupHeartbeat(m.req(m.epoch, true))
	if res.Error != 0 {
		m.t.Fatalf("%s: heartbeat error %d: %s", m.id, res.Error, res.ErrorMessage)
	}
	m.epoch = res.MemberEpoch
	if res.HasAssignment {
		m.owned = res.Assignment
	}
	return res
}

// leave leaves the group (member epoch -1).
func (m *cmemberClient) leave() {
	m.t.Helper()
	if res := m.c.ConsumerGroupHeartbeat(m.req(-1, false)); res.Error != 0 {
		m.t.Fatalf("%s: leave error %d: %s", m.id, res.Error, res.ErrorMessage)
	}
	m.epoch, m.owned = 0, nil
}

func (m *cmemberClient) count() int {
	n := 0
	for _, t := range m.owned {
		n += len(t.Partitions)
	}
	return n
}

func (m *cmemberClient) set() map[string]bool {
	out := map[string]bool{}
	for _, t := range m.owned {
		for _, p := range t.Partitions {
			out[fmt.Sprintf("%x/%d", t.TopicID[:2], p)] = true
		}
	}
	return out
}

func newCGTest(t *testing.T, topics fakeTopics) (*Coordinator, *fakeClock) {
	clk := newFakeClock()
	c := newCoordinator(Config{}, clk)
	t.Cleanup(c.Close)
	return c, clk
}

// converge heartbeats every member until no answer changes anything.
func converge(t *testing.T, ms ...*cmemberClient) {
	t.Helper()
	for range 20 {
		changed := false
		for _, m := range ms {
			before := fmt.Sprint(m.epoch, m.owned)
			m.beat()
			if fmt.Sprint(m.epoch, m.owned) != before {
				changed = true
			}
		}
		if !changed {
			return
		}
	}
	t.Fatal("members did not converge in 20 rounds")
}

// checkDisjoint fails when two members own one partition at once.
func checkDisjoint(t *testing.T, ms ...*cmemberClient) int {
	t.Helper()
	seen := map[string]string{}
	for _, m := range ms {
		for tp := range m.set() {
			if other, ok := seen[tp]; ok {
				t.Fatalf("partition %s owned by %s and %s at once", tp, other, m.id)
			}
			seen[tp] = m.id
		}
	}
	return len(seen)
}

func TestConsumerGroupRevokesBeforeReassigning(t *testing.T) {
	topics := fakeTopics{"t": 6}
	c, _ := newCGTest(t, topics)
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", names: []string{"t"}}
	a.beat()
	if a.count() != 6 || a.epoch != 1 {
		t.Fatalf("a alone: %d partitions at epoch %d", a.count(), a.epoch)
	}
	b := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "b", names: []string{"t"}}
	b.beat()
	// b's target is 3 partitions a still owns: b gets nothing yet.
	if b.count() != 0 || b.epoch != 2 {
		t.Fatalf("b before a revoked: %d partitions at epoch %d", b.count(), b.epoch)
	}
	// a is asked to revoke: its answer keeps 3 and stays at epoch 1.
	a.beat()
	if a.count() != 3 || a.epoch != 1 {
		t.Fatalf("a revoking: %d partitions at epoch %d", a.count(), a.epoch)
	}
	checkDisjoint(t, a, b)
	// a confirms the revocation (its owned partitions are the 3): epoch 2.
	a.beat()
	if a.epoch != 2 {
		t.Fatalf("a after revoking: epoch %d", a.epoch)
	}
	b.beat()
	if b.count() != 3 {
		t.Fatalf("b after a revoked: %d partitions", b.count())
	}
	if n := checkDisjoint(t, a, b); n != 6 {
		t.Fatalf("%d partitions owned, want 6", n)
	}
	d := c.DescribeConsumerGroup("g")
	if d.State != "Stable" || d.Epoch != 2 || d.AssignmentEpoch != 2 || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
}

func TestConsumerGroupBalancesAndSticks(t *testing.T) {
	topics := fakeTopics{"t": 12, "u": 5}
	c, _ := newCGTest(t, topics)
	var ms []*cmemberClient
	for i := range 4 {
		m := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: fmt.Sprintf("m%d", i), names: []string{"t", "u"}}
		ms = append(ms, m)
		converge(t, ms...)
	}
	if n := checkDisjoint(t, ms...); n != 17 {
		t.Fatalf("%d partitions owned, want 17", n)
	}
	for _, m := range ms {
		if m.count() < 4 || m.count() > 5 {
			t.Fatalf("%s owns %d partitions, want 4 or 5", m.id, m.count())
		}
	}
	before := map[string]map[string]bool{}
	for _, m := range ms {
		before[m.id] = m.set()
	}
	// A fifth member: each old member keeps what it keeps (uniform is
	// sticky): no partition moves between two old members.
	e := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "m9", names: []string{"t", "u"}}
	ms = append(ms, e)
	converge(t, ms...)
	for _, m := range ms[:4] {
		for tp := range m.set() {
			if !before[m.id][tp] {
				t.Fatalf("%s gained %s from another old member", m.id, tp)
			}
		}
	}
	if e.count() < 3 || e.count() > 4 {
		t.Fatalf("new member owns %d partitions, want 3 or 4", e.count())
	}
}

func TestConsumerGroupRangeAssignor(t *testing.T) {
	topics := fakeTopics{"a": 3, "b": 3}
	c, _ := newCGTest(t, topics)
	m0 := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "m0", names: []string{"a", "b"}, assignor: "range"}
	m1 := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "m1", names: []string{"a", "b"}, assignor: "range"}
	converge(t, m0, m1)
	// Kafka's RangeAssignor javadoc: M0 [T1P0, T1P1, T2P0, T2P1], M1 [T1P2, T2P2].
	for _, tc := range []struct {
		m    *cmemberClient
		want []int32
	}{{m0, []int32{0, 1}}, {m1, []int32{2}}} {
		for _, tp := range tc.m.owned {
			if !slices.Equal(tp.Partitions, tc.want) {
				t.Fatalf("%s owns %v of a topic, want %v", tc.m.id, tp.Partitions, tc.want)
			}
		}
		if len(tc.m.owned) != 2 {
			t.Fatalf("%s owns partitions of %d topics, want 2", tc.m.id, len(tc.m.owned))
		}
	}
	if d := c.DescribeConsumerGroup("g"); d.AssignorName != "range" {
		t.Fatalf("assignor %q, want range", d.AssignorName)
	}
}

func TestConsumerGroupSessionAndRebalanceTimeouts(t *testing.T) {
	topics := fakeTopics{"t": 4}
	c, clk := newCGTest(t, topics)
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", names: []string{"t"}}
	b := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "b", names: []string{"t"}}
	converge(t, a, b)
	// b stops heartbeating: fenced after the session timeout, and a gets
	// everything.
	for range 10 {
		clk.Advance(5 * time.Second)
		a.beat()
	}
	if a.count() != 4 {
		t.Fatalf("a owns %d partitions after b's session ended, want 4", a.count())
	}
	res := c.ConsumerGroupHeartbeat(b.req(b.epoch, false))
	if res.Error != errUnknownMemberID {
		t.Fatalf("b after its session ended: error %d, want UNKNOWN_MEMBER_ID", res.Error)
	}
	// A member that never confirms a revocation is fenced after its
	// rebalance timeout (30 s here), freeing the partitions.
	b = &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "b2", names: []string{"t"}}
	b.beat()
	held := a.owned
	r := a.req(a.epoch, true)
	r.Owned = held // keeps reporting everything: never revokes
	c.ConsumerGroupHeartbeat(r)
	for range 7 {
		clk.Advance(5 * time.Second)
		r := a.req(a.epoch, true)
		r.Owned = held
		c.ConsumerGroupHeartbeat(r)
		b.beat()
	}
	if b.count() != 4 {
		t.Fatalf("b2 owns %d partitions after a failed to revoke, want 4", b.count())
	}
}

// TestConsumerGroupDeadlinesOnTime: members are fenced at their deadlines
// to the millisecond, whether the deadline is the earliest when set (a
// revocation's end, before every session's end) or became the earliest
// because other members heartbeated past it (the timer, armed for an
// earlier session end, fires, finds nothing due and is armed again).
func TestConsumerGroupDeadlinesOnTime(t *testing.T) {
	topics := fakeTopics{"t": 4}
	c, clk := newCGTest(t, topics)
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", names: []string{"t"}}
	a.beat()
	// b joins: a must revoke two partitions within its rebalance timeout
	// (5 s), and keeps reporting all four.
	b := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "b", names: []string{"t"}}
	b.beat()
	held := a.owned
	r := a.req(a.epoch, true)
	r.RebalanceTimeoutMillis, r.Owned = 5000, held
	if res := c.ConsumerGroupHeartbeat(r); res.Error != 0 {
		t.Fatalf("a: error %d", res.Error)
	}
	clk.Advance(5*time.Second - time.Millisecond)
	if n := len(c.describeMembers(t, "g")); n != 2 {
		t.Fatalf("%d members 1 ms before a's revocation ends, want 2", n)
	}
	clk.Advance(time.Millisecond)
	if got := c.describeMembers(t, "g"); len(got) != 1 || got[0] != "b" {
		t.Fatalf("members when a's revocation ended: %v, want [b]", got)
	}
	// c2 joins 1 s after b and stops; b heartbeats every 5 s: the timer,
	// armed for b's session end, fires before c2's and must find c2's.
	clk.Advance(time.Second)
	c2 := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "c2", names: []string{"t"}}
	c2.beat()
	joined := clk.now()
	for clk.now().Sub(joined) < DefaultConsumerSessionTimeout-5*time.Second {
		clk.Advance(5 * time.Second)
		b.beat()
	}
	clk.Advance(joined.Add(DefaultConsumerSessionTimeout).Sub(clk.now()) - time.Millisecond)
	if n := len(c.describeMembers(t, "g")); n != 2 {
		t.Fatalf("%d members 1 ms before c2's session ends, want 2", n)
	}
	clk.Advance(time.Millisecond)
	if got := c.describeMembers(t, "g"); len(got) != 1 || got[0] != "b" {
		t.Fatalf("members when c2's session ended: %v, want [b]", got)
	}
}

// TestConsumerGroupWaitingMemberStoresNothing: a member waiting for
// partitions another member has not yet revoked heartbeats without
// changing anything, and so without a write of the group (each write is the
// whole group, and with AwaitStore its answer would wait for it); the
// release is a change again.
func TestConsumerGroupWaitingMemberStoresNothing(t *testing.T) {
	topics := snapshotOf(fakeTopics{"t": 4})
	c, _ := newCGTest(t, nil)
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", names: []string{"t"}}
	a.beat()
	b := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "b", names: []string{"t"}}
	b.beat() // its two partitions are still a's
	for i := range 3 {
		c.DirtyConsumerGroups()
		if res := c.ConsumerGroupHeartbeat(b.req(b.epoch, false)); res.Error != 0 || len(res.Assignment) != 0 {
			t.Fatalf("b's keep-alive %d: error %d, assignment %v", i, res.Error, res.Assignment)
		}
		if d := c.DirtyConsumerGroups(); len(d) != 0 {
			t.Fatalf("b's keep-alive %d while waiting left the group to store", i)
		}
	}
	a.beat() // revokes two
	a.beat() // confirms: they are free
	c.DirtyConsumerGroups()
	if b.beat(); b.count() != 2 {
		t.Fatalf("b owns %d partitions after a released two, want 2", b.count())
	}
	if d := c.DirtyConsumerGroups(); len(d) != 1 {
		t.Fatal("b receiving its partitions left nothing to store")
	}
}

// TestConsumerGroupRegexOnlyDescribableTopics: a regex subscription
// matches only the topics every principal subscribing with it may
// DESCRIBE (KAFKA-18813), and its members are not eligible for a topic
// filtered out of it even when another member subscribes to that topic by
// name; a principal's rights are asked at its members' heartbeats.
func TestConsumerGroupRegexOnlyDescribableTopics(t *testing.T) {
	topics := snapshotOf(fakeTopics{"r1": 2, "r2": 4})
	c, clk := newCGTest(t, nil)
	allowed := map[string]map[string]bool{"User:alice": {"r1": true}, "User:bob": {"r1": true, "r2": true}}
	beat := func(m *cmemberClient, principal string, epoch int32) {
		t.Helper()
		r := m.req(epoch, true)
		r.Identity = principal
		r.CanDescribe = func(topic string) bool { return allowed[principal][topic] }
		res := c.ConsumerGroupHeartbeat(r)
		if res.Error != 0 {
			t.Fatalf("%s: error %d", m.id, res.Error)
		}
		m.epoch = res.MemberEpoch
		if res.HasAssignment {
			m.owned = res.Assignment
		}
	}
	matched := func() map[string]bool {
		c.mu.Lock()
		cg := c.cgroups["g"]
		c.mu.Unlock()
		cg.mu.Lock()
		defer cg.mu.Unlock()
		return cg.subsCache.regexTopics["r.*"]
	}
	onlyR1 := func(ms ...*cmemberClient) {
		t.Helper()
		for _, m := range ms {
			for _, tp := range m.owned {
				if tp.TopicID != topicID("r1") {
					t.Fatalf("%s, whose regex alice shares, owns %v: a topic alice may not describe", m.id, m.owned)
				}
			}
		}
	}
	// b subscribes to r2 (4 partitions) by name and owns them; a joins
	// with its regex: the group subscribes to r2, but a is not eligible
	// for it, so nothing moves from b to balance the loads (2 and 4).
	b := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "b", names: []string{"r2"}}
	for range 2 {
		beat(b, "User:bob", b.epoch)
	}
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", regex: "r.*"}
	for range 4 {
		beat(a, "User:alice", a.epoch)
		beat(b, "User:bob", b.epoch)
		clk.Advance(time.Second)
	}
	if got := matched(); len(got) != 1 || !got["r1"] {
		t.Fatalf("alice's regex matches %v, want r1 only", got)
	}
	if onlyR1(a); a.count() != 2 || b.count() != 4 {
		t.Fatalf("a owns %d, b %d partitions, want r1's 2 and r2's 4", a.count(), b.count())
	}
	// When b leaves, r2 goes to no one.
	beat(b, "User:bob", leaveEpoch)
	for range 3 {
		beat(a, "User:alice", a.epoch)
	}
	if onlyR1(a); a.count() != 2 {
		t.Fatalf("after b left a owns %d partitions, want r1's 2", a.count())
	}
	// A bob member with the same regex: it matches only what both
	// principals may describe.
	d := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "d", regex: "r.*"}
	for range 4 {
		beat(a, "User:alice", a.epoch)
		beat(d, "User:bob", d.epoch)
	}
	if onlyR1(a, d); matched()["r2"] {
		t.Fatalf("the regex alice and bob share matches %v", matched())
	}
	// Alice may describe r2 now: the next resolution (the gateway's next
	// topic snapshot) brings it.
	allowed["User:alice"]["r2"] = true
	c.mu.Lock()
	cg := c.cgroups["g"]
	c.mu.Unlock()
	cg.mu.Lock()
	cg.subscriptionsChanged()
	cg.mu.Unlock()
	for range 4 {
		beat(a, "User:alice", a.epoch)
		beat(d, "User:bob", d.epoch)
	}
	if got := matched(); !got["r1"] || !got["r2"] || a.count()+d.count() != 6 {
		t.Fatalf("with r2 describable to both the regex matches %v and its members own %d partitions, want r1, r2 and 6", got, a.count()+d.count())
	}
}

func TestConsumerGroupStaticMembers(t *testing.T) {
	topics := fakeTopics{"t": 4}
	c, _ := newCGTest(t, topics)
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", instance: "i1", names: []string{"t"}}
	o := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "o", names: []string{"t"}}
	converge(t, a, o)
	mine := a.set()
	// Another member id for i1 while a holds it.
	b := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "b", instance: "i1", names: []string{"t"}}
	if res := c.ConsumerGroupHeartbeat(b.req(0, true)); res.Error != errUnreleasedInstanceID {
		t.Fatalf("second member for i1: %d, want UNRELEASED_INSTANCE_ID", res.Error)
	}
	// a leaves for a while; b takes its place and its partitions, with no
	// rebalance of o.
	if res := c.ConsumerGroupHeartbeat(a.req(staticLeaveEpoch, false)); res.Error != 0 || res.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave: %+v", res)
	}
	epochBefore := c.DescribeConsumerGroup("g").Epoch
	b.beat()
	if fmt.Sprint(b.set()) != fmt.Sprint(mine) {
		t.Fatalf("b took %v, want a's %v", b.set(), mine)
	}
	if e := c.DescribeConsumerGroup("g").Epoch; e != epochBefore {
		t.Fatalf("the replacement bumped the group epoch %d -> %d", epochBefore, e)
	}
	if res := c.ConsumerGroupHeartbeat(a.req(a.epoch, false)); res.Error != errFencedInstanceID {
		t.Fatalf("a after b took i1: %d, want FENCED_INSTANCE_ID", res.Error)
	}
}

func TestConsumerGroupEpochChecks(t *testing.T) {
	topics := fakeTopics{"t": 2}
	c, _ := newCGTest(t, topics)
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", names: []string{"t"}}
	a.beat()
	if res := c.ConsumerGroupHeartbeat(a.req(a.epoch+1, false)); res.Error != errFencedMemberEpoch {
		t.Fatalf("epoch ahead: %d", res.Error)
	}
	b := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "b", names: []string{"t"}}
	converge(t, a, b)
	// The previous epoch with a subset of the assignment is accepted (the
	// answer that moved the member on may have been lost)...
	r := a.req(a.epoch-1, true)
	r.Owned = a.owned
	if res := c.ConsumerGroupHeartbeat(r); res.Error != 0 {
		t.Fatalf("previous epoch, owned subset: %d", res.Error)
	}
	// ...but not an older one, nor with partitions it does not own.
	if res := c.ConsumerGroupHeartbeat(a.req(0+a.epoch-2, false)); res.Error != errFencedMemberEpoch && a.epoch-2 > 0 {
		t.Fatalf("older epoch: %d", res.Error)
	}
	r = a.req(a.epoch-1, true)
	r.Owned = append(slices.Clone(a.owned), b.owned...)
	if res := c.ConsumerGroupHeartbeat(r); res.Error != errFencedMemberEpoch {
		t.Fatalf("previous epoch, partitions not its own: %d", res.Error)
	}
	// A commit from the member at its epoch or the previous one; a stale
	// one is STALE_MEMBER_EPOCH; no member while the group has members is
	// UNKNOWN_MEMBER_ID.
	for _, tc := range []struct {
		member string
		epoch  int32
		want   int16
	}{{"a", a.epoch, 0}, {"a", a.epoch - 1, 0}, {"a", a.epoch + 5, errStaleMemberEpoch}, {"", -1, errUnknownMemberID}, {"zz", 1, errUnknownMemberID}} {
		if got := c.ValidateCommit("g", tc.member, "", false, tc.epoch); got != tc.want {
			t.Fatalf("commit by %q at %d: %d, want %d", tc.member, tc.epoch, got, tc.want)
		}
	}
}

func TestConsumerGroupRegexAndNewTopics(t *testing.T) {
	topics := fakeTopics{"orders-eu": 2, "orders-us": 2, "payments": 3}
	c, _ := newCGTest(t, topics)
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", regex: "orders-.*"}
	a.beat()
	if a.count() != 4 {
		t.Fatalf("regex subscription owns %d partitions, want 4", a.count())
	}
	// A new matching topic and a grown one are assigned at the next
	// heartbeat, without anyone rejoining.
	topics["orders-ap"] = 1
	topics["orders-eu"] = 3
	a.beat()
	if a.count() != 6 {
		t.Fatalf("after a new topic and a new partition: %d partitions, want 6", a.count())
	}
	// A regex RE2 rejects, and one it accepts that must match whole names.
	bad := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "bad", regex: "(oops"}
	if res := c.ConsumerGroupHeartbeat(bad.req(0, true)); res.Error != errInvalidRegularExpression {
		t.Fatalf("bad regex: %d", res.Error)
	}
	p := &cmemberClient{t: t, c: c, topics: topics, group: "g2", id: "p", regex: "pay"}
	p.beat()
	if p.count() != 0 {
		t.Fatalf("regex %q matched part of a name: %d partitions", "pay", p.count())
	}
}

func TestConsumerGroupAndClassicShareIDs(t *testing.T) {
	topics := fakeTopics{"t": 2}
	c, _ := newCGTest(t, topics)
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", names: []string{"t"}}
	a.beat()
	if d := c.Describe("g"); d.Error != errGroupIDNotFound {
		t.Fatalf("DescribeGroups of a consumer group: %+v", d)
	}
	if code := c.Delete("g"); code != errNonEmptyGroup {
		t.Fatalf("delete with members: %d", code)
	}
	ls := c.List()
	if len(ls) != 1 || ls[0].Type != "consumer" || ls[0].State != "Stable" {
		t.Fatalf("list: %+v", ls)
	}
	if res := c.ConsumerGroupHeartbeat(a.req(leaveEpoch, false)); res.Error != 0 {
		t.Fatalf("leave: %d", res.Error)
	}
	if code := c.Delete("g"); code != 0 {
		t.Fatalf("delete empty: %d", code)
	}
	if d := c.DescribeConsumerGroup("g"); d.Error != errGroupIDNotFound {
		t.Fatalf("describe after delete: %+v", d)
	}
}

func TestConsumerGroupStoredFormRestores(t *testing.T) {
	topics := fakeTopics{"t": 6}
	changed := make(chan struct{}, 1)
	clk := newFakeClock()
	c := newCoordinator(Config{ConsumerGroupChanged: changed}, clk)
	defer c.Close()
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", instance: "i-a", names: []string{"t"}}
	b := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "b", regex: "t|u", assignor: "uniform"}
	converge(t, a, b)
	select {
	case <-changed:
	default:
		t.Fatal("no change signalled")
	}
	stored := fakeStore{}
	stored.apply(c.DirtyConsumerGroups())
	if sg := stored.group("g"); sg.Head == nil || len(sg.Members) != 2 {
		t.Fatalf("g not stored as a head and two members: %q", stored)
	}
	if again := c.DirtyConsumerGroups(); len(again) != 0 {
		t.Fatalf("stored twice: %v", again)
	}
	before := c.DescribeConsumerGroup("g")

	// Another coordinator (a restart, or the group's new coordinator)
	// restores it: the members heartbeat on at their epochs.
	c2 := newCoordinator(Config{}, clk)
	defer c2.Close()
	if err := c2.RestoreConsumerGroup("g", stored.group("g")); err != nil {
		t.Fatal(err)
	}
	if after := c2.DescribeConsumerGroup("g"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("restored group differs:\n got %+v\nwant %+v", after, before)
	}
	for _, m := range []*cmemberClient{a, b} {
		m.c = c2
		epoch, owned := m.epoch, fmt.Sprint(m.owned)
		m.beat()
		if m.epoch != epoch || fmt.Sprint(m.owned) != owned {
			t.Fatalf("%s after the restore: epoch %d→%d, owned %s→%v", m.id, epoch, m.epoch, owned, m.owned)
		}
	}
	// A member that never comes back is fenced a session timeout after the
	// restore.
	clk.Advance(50 * time.Second)
	if d := c2.DescribeConsumerGroup("g"); len(d.Members) != 0 {
		t.Fatalf("members not fenced after their sessions: %+v", d.Members)
	}
	// The fencing is stored: the head and the removal of both members.
	stored.apply(c2.DirtyConsumerGroups())
	if sg := stored.group("g"); sg.Head == nil || len(sg.Members) != 0 {
		t.Fatalf("the fenced members are still stored: %q", stored)
	}
	// Deleting the group stores its removal: nothing is left.
	c2.Delete("g")
	stored.apply(c2.DirtyConsumerGroups())
	if len(stored) != 0 {
		t.Fatalf("delete not stored as a removal: %q", stored)
	}
	member := func(id string) string {
		return `{"id":"` + id + `","epoch":1,"previous_epoch":0,"state":0,"rebalance_ms":0,"assigned":{},"incarnation":5}`
	}
	for _, bad := range []StoredConsumerGroup{
		{Head: []byte("{")},
		{Head: []byte(`{"v":1}`)},
		{Head: []byte(`{"v":2,"incarnation":5,"members":1}`)},
		{Head: []byte(`{"v":2,"incarnation":5,"members":0}`), Members: map[string][]byte{"x": []byte(member("x"))}},
		{Head: []byte(`{"v":2,"incarnation":5,"members":1}`), Members: map[string][]byte{"x": []byte(member("y"))}},
		{Head: []byte(`{"v":2,"incarnation":5,"members":1}`), Members: map[string][]byte{"x": []byte(`{"id":"x","incarnation":5,"assigned":{"zz":[1]}}`)}},
	} {
		if err := c2.RestoreConsumerGroup("h", bad); err == nil {
			t.Fatalf("restore of %q %q succeeded", bad.Head, bad.Members)
		}
	}
	for _, bad := range []string{"{", `{"v":2}`, `{"v":1,"members":[{"id":""}]}`, `{"v":1,"members":[{"id":"x","assigned":{"zz":[1]}}]}`} {
		if err := c2.RestoreConsumerGroupV1("h", []byte(bad)); err == nil {
			t.Fatalf("restore of the old form %q succeeded", bad)
		}
	}
}

// TestConsumerGroupStoredAsRecords: a change of a large group writes the
// records that changed, not the group; records of an earlier incarnation
// of the group (a removal that failed) are not restored and are removed;
// after a failed write the next change writes every record; and a group
// stored in the old whole form is restored from it and written as
// records.
func TestConsumerGroupStoredAsRecords(t *testing.T) {
	topics := snapshotOf(fakeTopics{"t": 40})
	c, _ := newCGTest(t, nil)
	var ms []*cmemberClient
	for i := range 20 {
		ms = append(ms, &cmemberClient{t: t, c: c, topics: topics, group: "g", id: fmt.Sprintf("m%02d", i), names: []string{"t"}})
	}
	converge(t, ms...)
	stored := fakeStore{}
	stored.apply(c.DirtyConsumerGroups())
	if len(stored) != 21 {
		t.Fatalf("%d records stored for a group of 20, want 21", len(stored))
	}
	// A member that leaves changes the head, its own record and the
	// targets of the members that take its two partitions: not all 20.
	ms[7].leave()
	chs := c.DirtyConsumerGroups()
	if len(chs) != 1 || len(chs[0].Entries) > 6 {
		t.Fatalf("a leave wrote %d records", len(chs[0].Entries))
	}
	stored.apply(chs)
	converge(t, slices.Delete(slices.Clone(ms), 7, 8)...)
	stored.apply(c.DirtyConsumerGroups())
	c.mu.Lock()
	cg := c.cgroups["g"]
	c.mu.Unlock()
	cg.mu.Lock()
	want := cg.records()
	cg.mu.Unlock()
	if !maps.EqualFunc(map[string][]byte(stored), want, bytes.Equal) {
		t.Fatalf("the store does not hold the group as it is:\nstored %q\nwant   %q", stored, want)
	}

	// A failed write: the next change writes every record.
	ms[0].leave()
	chs = c.DirtyConsumerGroups()
	chs[0].Failed()
	ms[1].leave()
	chs = c.DirtyConsumerGroups()
	if n := len(chs[0].Entries); n < 18 {
		t.Fatalf("the change after a failed one wrote %d records, want every one", n)
	}
	stored.apply(chs)

	// Records of an earlier incarnation are left out and then removed.
	stale := ConsumerGroupMemberKey("g", "old-member")
	stored[stale] = []byte(`{"id":"old-member","epoch":1,"previous_epoch":0,"state":0,"rebalance_ms":0,"assigned":{},"incarnation":1}`)
	c2, _ := newCGTest(t, nil)
	if err := c2.RestoreConsumerGroup("g", stored.group("g")); err != nil {
		t.Fatal(err)
	}
	if got := c2.describeMembers(t, "g"); len(got) != 17 || slices.Contains(got, "old-member") {
		t.Fatalf("restored members %v", got)
	}
	stored.apply(c2.DirtyConsumerGroups())
	if _, ok := stored[stale]; ok {
		t.Fatal("the earlier incarnation's record was not removed")
	}

	// The old whole form: restored, then written as records.
	c3, _ := newCGTest(t, nil)
	v1 := `{"v":1,"epoch":3,"assignment_epoch":3,"subs_hash":0,"members":[{"id":"a","epoch":3,"previous_epoch":2,"state":0,"rebalance_ms":1000,` +
		`"names":["t"],"assigned":{"74000000000000000000000000000000":[0,1]}}],"target":{"a":{"74000000000000000000000000000000":[0,1]}}}`
	if err := c3.RestoreConsumerGroupV1("v", []byte(v1)); err != nil {
		t.Fatal(err)
	}
	moved := fakeStore{}
	moved.apply(c3.DirtyConsumerGroups())
	c4, _ := newCGTest(t, nil)
	if err := c4.RestoreConsumerGroup("v", moved.group("v")); err != nil {
		t.Fatal(err)
	}
	if d3, d4 := c3.DescribeConsumerGroup("v"), c4.DescribeConsumerGroup("v"); fmt.Sprint(d3) != fmt.Sprint(d4) || len(d4.Members) != 1 {
		t.Fatalf("the old form moved to records differs:\n got %+v\nwant %+v", d4, d3)
	}
}

// FuzzRestoreConsumerGroup feeds the stored-form decoder arbitrary bytes: it
// fails or restores a group that then serves heartbeats, never panics.
func FuzzRestoreConsumerGroup(f *testing.F) {
	f.Add([]byte(`{"v":2,"incarnation":1,"epoch":3,"assignment_epoch":3,"members":1}`),
		[]byte(`{"id":"a","epoch":3,"state":0,"assigned":{"74000000000000000000000000000001":[0,1]},"incarnation":1,"target":{"74000000000000000000000000000001":[0,1]}}`),
		[]byte(`{"id":"b","incarnation":2}`), false)
	f.Add([]byte(`{"v":2,"members":2}`), []byte(`{"id":"a","state":1,"regex":"t.*","instance_id":"i","revoking":{"74000000000000000000000000000001":[2]}}`),
		[]byte(`{"id":"b","classic":{"protocols":[{"name":"range","metadata":"AAE="}],"session_ms":10}}`), false)
	f.Add([]byte(`{"v":1,"epoch":3,"assignment_epoch":3,"members":[{"id":"a","epoch":3,"state":0,"assigned":{"74000000000000000000000000000001":[0,1]}}],"target":{"a":{"74000000000000000000000000000001":[0,1]}}}`),
		[]byte(nil), []byte(nil), true)
	f.Add([]byte(`{}`), []byte(`{}`), []byte(`{}`), false)
	f.Fuzz(func(t *testing.T, head, a, b []byte, v1 bool) {
		c := newCoordinator(Config{}, newFakeClock())
		defer c.Close()
		sg := StoredConsumerGroup{Head: head, Members: map[string][]byte{}}
		if a != nil {
			sg.Members["a"] = a
		}
		if b != nil {
			sg.Members["b"] = b
		}
		restore := func() error { return c.RestoreConsumerGroup("g", sg) }
		if v1 {
			restore = func() error { return c.RestoreConsumerGroupV1("g", head) }
		}
		if err := restore(); err != nil {
			return
		}
		c.mu.Lock()
		cg := c.cgroups["g"]
		c.mu.Unlock()
		cg.mu.Lock()
		got, want := cg.records(), cg.recordsReference()
		cg.mu.Unlock()
		if !maps.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("records of a restored group:\n got %q\nwant %q", got, want)
		}
		// What the store holds after the group's changes restores as the
		// group.
		stored := fakeStore{}
		if !v1 {
			for k, v := range sg.Members {
				stored[ConsumerGroupMemberKey("g", k)] = v
			}
			stored[ConsumerGroupHeadKey("g")] = head
		}
		stored.apply(c.DirtyConsumerGroups())
		again := newCoordinator(Config{}, newFakeClock())
		defer again.Close()
		if err := again.RestoreConsumerGroup("g", stored.group("g")); err != nil {
			t.Fatalf("the store after a restored group's change does not restore: %v", err)
		}
		again.mu.Lock()
		cg2 := again.cgroups["g"]
		again.mu.Unlock()
		cg.mu.Lock()
		want = cg.records()
		cg.mu.Unlock()
		if got := cg2.records(); !maps.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("the store after a restored group's change restores another group:\n got %q\nwant %q", got, want)
		}
		topics := fakeTopics{"t": 3}
		c.DescribeConsumerGroup("g")
		if c.ConsumerRestoredBehind("g", "a", 1<<20) {
			c.ReplaceRestoredConsumer("g", sg) // its own form: never newer
		}
		for _, id := range []string{"a", "b"} {
			c.ConsumerGroupHeartbeat(&ConsumerHeartbeat{Version: 1, GroupID: "g", MemberID: id, MemberEpoch: 0, RebalanceTimeoutMillis: 1000,
				SubscribedTopicNames: []string{"t"}, HasSubscribedTopicNames: true, HasOwned: true, Topics: topics})
		}
		c.ValidateCommit("g", "a", "", false, 1)
		c.DirtyConsumerGroups()
	})
}

// FuzzConsumerGroup drives one consumer-protocol group with an arbitrary
// sequence of heartbeats, leaves, stalls and topic changes from four
// clients, and checks after every step that no partition is owned by two
// members the coordinator still has: it never hands out a partition before
// its owner gave it up (or was fenced).
func FuzzConsumerGroup(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 0, 1, 8, 9})
	f.Add([]byte{0, 0x11, 0x22, 0x33, 0x44, 0x06, 0x17, 0x28, 0x0a, 0x1b, 0x00, 0x11})
	f.Fuzz(consumerGroupOps)
}

// consumerGroupOps is FuzzConsumerGroup's body: ops drive four clients.
func consumerGroupOps(t *testing.T, ops []byte) {
	if len(ops) > 300 {
		ops = ops[:300]
	}
	clk := newFakeClock()
	c := newCoordinator(Config{}, clk)
	defer c.Close()
	topics := fakeTopics{"t": 4, "u": 2}
	snap := snapshotOf(topics)
	stored := fakeStore{} // the group's records as written
	type client struct {
		id, instance string
		epoch        int32
		owned        []TopicPartitions
		regex        bool
	}
	cls := []*client{{id: "a"}, {id: "b", instance: "i-b"}, {id: "c", regex: true}, {id: "d"}}
	for i, op := range ops {
		cl := cls[op&3]
		req := &ConsumerHeartbeat{Version: 1, GroupID: "g", MemberID: cl.id, MemberEpoch: cl.epoch, RebalanceTimeoutMillis: -1, Topics: snap}
		if cl.instance != "" {
			req.InstanceID, req.HasInstanceID = cl.instance, true
		}
		full := func() {
			req.RebalanceTimeoutMillis = 20000
			if op&0x20 != 0 { // a client that changes what it says of itself
				req.RebalanceTimeoutMillis, req.ClientID, req.RackID, req.HasRackID = 30000, "other-client", "rack-b", true
			}
			if cl.regex {
				req.SubscribedTopicRegex, req.HasSubscribedTopicRegex = "t|u", true
			} else {
				req.SubscribedTopicNames, req.HasSubscribedTopicNames = []string{"t", "u"}, true
				if cl.id == "d" && op&0x80 != 0 {
					req.SubscribedTopicNames = []string{"t"} // a change of subscription
				}
			}
			req.Owned, req.HasOwned = cl.owned, true
		}
		switch op >> 2 & 7 {
		case 0, 1, 2: // a heartbeat as the client is
			full()
		case 3: // a keep-alive heartbeat
		case 4: // a stalled client: time passes
			clk.Advance(time.Duration(op>>5+1) * 4 * time.Second)
			continue
		case 5: // leave
			req.MemberEpoch = leaveEpoch
			if cl.instance != "" && op&0x80 != 0 {
				req.MemberEpoch = staticLeaveEpoch
			}
		case 6: // a topic grows, up to 16 partitions
			if topics["u"] < 16 {
				topics["u"]++
				snap = snapshotOf(topics)
			}
			continue
		case 7: // a client that does not revoke: reports its old partitions
			full()
			req.Owned = append(slices.Clone(cl.owned), TopicPartitions{TopicID: topicID("t"), Partitions: []int32{0, 1, 2, 3}})
		}
		res := c.ConsumerGroupHeartbeat(req)
		switch {
		case req.MemberEpoch < 0 || res.Error != 0:
			cl.epoch, cl.owned = 0, nil // left, or fenced: abandon all and rejoin
		default:
			cl.epoch = res.MemberEpoch
			if res.HasAssignment {
				cl.owned = res.Assignment
			}
		}
		// The subscribed topics as kept equal those computed afresh, and
		// the group as stored (its last change taken for the store) is the
		// group as it is: every change to the stored form was marked.
		stored.apply(c.DirtyConsumerGroups())
		c.mu.Lock()
		cg := c.cgroups["g"]
		c.mu.Unlock()
		if cg != nil {
			cg.mu.Lock()
			kept := cg.subscriptions(snap).topics
			fresh, _ := cg.resolveSubscriptions(snap, snap.Names())
			now := cg.records()
			cg.mu.Unlock()
			if !reflect.DeepEqual(kept, fresh) {
				t.Fatalf("op %d: subscribed topics kept %v, computed afresh %v", i, kept, fresh)
			}
			if !maps.EqualFunc(map[string][]byte(stored), now, bytes.Equal) {
				t.Fatalf("op %d: a change not marked for the store:\nstored %q\nnow    %q", i, stored, now)
			}
		}
		// The invariant, over the members the coordinator still has.
		d := c.DescribeConsumerGroup("g")
		live := map[string]bool{}
		for _, m := range d.Members {
			live[m.MemberID] = m.MemberEpoch >= 0
		}
		owner := map[string]string{}
		for _, x := range cls {
			if !live[x.id] {
				continue
			}
			for _, tp := range x.owned {
				for _, p := range tp.Partitions {
					k := fmt.Sprintf("%x/%d", tp.TopicID[:1], p)
					if o, ok := owner[k]; ok {
						t.Fatalf("op %d: partition %s owned by %s and %s", i, k, o, x.id)
					}
					owner[k] = x.id
				}
			}
		}
	}
}

func TestConsumerGroupCaps(t *testing.T) {
	topics := fakeTopics{"t": 2}
	c := newCoordinator(Config{MaxGroups: 2, MaxMembers: 3}, newFakeClock())
	defer c.Close()
	join := func(group, id string) int16 {
		m := &cmemberClient{t: t, c: c, topics: topics, group: group, id: id, names: []string{"t"}}
		return c.ConsumerGroupHeartbeat(m.req(0, true)).Error
	}
	for _, tc := range []struct {
		group, id string
		want      int16
	}{
		{"g1", "a", 0}, {"g1", "b", 0}, {"g2", "c", 0},
		{"g2", "d", errCoordinatorNotAvailable}, // a fourth member
		{"g3", "e", errCoordinatorNotAvailable}, // a third group
		{"g1", "a", 0},                          // a rejoin adds nothing
	} {
		if got := join(tc.group, tc.id); got != tc.want {
			t.Fatalf("%s/%s: %d, want %d", tc.group, tc.id, got, tc.want)
		}
	}
	st := c.Stats()
	if st.Groups != 2 || st.Members != 3 || st.Refused[RefusedMaxMembers] != 1 || st.Refused[RefusedMaxGroups] != 1 {
		t.Fatalf("stats: %+v", st)
	}
	m := &cmemberClient{t: t, c: c, topics: topics, group: "g2", id: "c"}
	c.ConsumerGroupHeartbeat(m.req(leaveEpoch, false))
	if got := join("g2", "d"); got != 0 {
		t.Fatalf("a member after one left: %d", got)
	}
	c.ConsumerGroupHeartbeat((&cmemberClient{t: t, c: c, topics: topics, group: "g2", id: "d"}).req(leaveEpoch, false))
	c.Delete("g2")
	if got := join("g3", "e"); got != 0 {
		t.Fatalf("a group after one was deleted: %d", got)
	}
	if st := c.Stats(); st.Members != 3 || st.Groups != 2 {
		t.Fatalf("stats at the end: %+v", st)
	}
}

func TestConsumerGroupDefaultAssignor(t *testing.T) {
	topics := fakeTopics{"a": 3, "b": 3}
	c := newCoordinator(Config{DefaultAssignor: AssignorRange}, newFakeClock())
	defer c.Close()
	m0 := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "m0", names: []string{"a", "b"}}
	m1 := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "m1", names: []string{"a", "b"}}
	converge(t, m0, m1)
	if d := c.DescribeConsumerGroup("g"); d.AssignorName != AssignorRange {
		t.Fatalf("assignor %q, want the configured default range", d.AssignorName)
	}
	// A member that names one outvotes the default.
	m1.assignor = AssignorUniform
	converge(t, m0, m1)
	if d := c.DescribeConsumerGroup("g"); d.AssignorName != AssignorUniform {
		t.Fatalf("assignor %q, want uniform, which a member asked for", d.AssignorName)
	}
}

// TestConsumerAnswersWaitForTheStore: with Config.AwaitStore a heartbeat
// whose group holds an unstored change carries its StoreSeq, and an answer
// held for it (AfterConsumerStored) goes once the writer reports the
// changes it took stored, not before, and not for a change made after the
// take; a heartbeat that changes nothing in a stored group waits for
// nothing; Close sends what is still held.
func TestConsumerAnswersWaitForTheStore(t *testing.T) {
	topics := fakeTopics{"t": 4}
	c := newCoordinator(Config{AwaitStore: true}, newFakeClock())
	a := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "a", names: []string{"t"}}
	r := a.beat()
	if r.StoreSeq == 0 {
		t.Fatal("a join's answer does not wait for the store")
	}
	sent := 0
	if !c.AfterConsumerStored(r.StoreSeq, func() { sent++ }) || !c.AnswersHeld() {
		t.Fatal("nothing held")
	}
	c.DirtyConsumerGroups()
	if c.AnswersHeld() {
		t.Fatal("held after the writer took the change: it would not write at once")
	}
	// A change after the take is not released by the take's report.
	b := &cmemberClient{t: t, c: c, topics: topics, group: "g", id: "b", names: []string{"t"}}
	rb := b.beat()
	later := 0
	if rb.StoreSeq <= r.StoreSeq || !c.AfterConsumerStored(rb.StoreSeq, func() { later++ }) {
		t.Fatalf("b's join: seq %d after %d", rb.StoreSeq, r.StoreSeq)
	}
	if sent != 0 {
		t.Fatal("answered before stored")
	}
	c.ConsumerGroupsStored()
	if sent != 1 || later != 0 {
		t.Fatalf("after the first report: sent %d, later %d", sent, later)
	}
	c.DirtyConsumerGroups()
	c.ConsumerGroupsStored()
	if later != 1 {
		t.Fatal("the second change's answer not sent once stored")
	}
	converge(t, a, b)
	c.DirtyConsumerGroups()
	c.ConsumerGroupsStored()
	if r := a.beat(); r.StoreSeq != 0 || c.AfterConsumerStored(1, func() {}) {
		t.Fatalf("a steady heartbeat of a stored group waits: seq %d", r.StoreSeq)
	}
	// Close sends what is held.
	c2 := newCoordinator(Config{AwaitStore: true}, newFakeClock())
	m := &cmemberClient{t: t, c: c2, topics: topics, group: "h", id: "m", names: []string{"t"}}
	held := 0
	if !c2.AfterConsumerStored(m.beat().StoreSeq, func() { held++ }) {
		t.Fatal("nothing held")
	}
	c2.Close()
	if held != 1 {
		t.Fatal("a held answer was left behind by Close")
	}
	c.Close()
}

// TestConsumerReplaceRestored: a consumer group restored from an older
// stored form than its members know (a move in a cluster that read the
// store before the old coordinator's last write) is replaced, once, by the
// newer form, only while unchanged since its restore; its members then
// heartbeat on at their epochs instead of being fenced.
func TestConsumerReplaceRestored(t *testing.T) {
	topics := fakeTopics{"t": 4}
	old, _ := newCGTest(t, topics)
	a := &cmemberClient{t: t, c: old, topics: topics, group: "g", id: "a", names: []string{"t"}}
	converge(t, a)
	st := fakeStore{}
	st.apply(old.DirtyConsumerGroups())
	s1 := st.group("g")
	b := &cmemberClient{t: t, c: old, topics: topics, group: "g", id: "b", names: []string{"t"}}
	converge(t, a, b)
	st.apply(old.DirtyConsumerGroups())
	s2 := st.group("g")

	moved, _ := newCGTest(t, topics)
	if err := moved.RestoreConsumerGroup("g", s1); err != nil {
		t.Fatal(err)
	}
	if r := moved.ConsumerGroupHeartbeat(a.req(a.epoch, false)); r.Error != 110 {
		t.Fatalf("a member further on than the restored group: error %d, want FENCED_MEMBER_EPOCH", r.Error)
	}
	if !moved.ConsumerRestoredBehind("g", "a", a.epoch) || moved.ConsumerRestoredBehind("g", "a", a.epoch) {
		t.Fatal("ConsumerRestoredBehind not true exactly once")
	}
	if ok, err := moved.ReplaceRestoredConsumer("g", s1); ok || err != nil {
		t.Fatalf("replaced by a form no newer: %v %v", ok, err)
	}
	if ok, err := moved.ReplaceRestoredConsumer("g", s2); !ok || err != nil {
		t.Fatalf("not replaced by the newer form: %v %v", ok, err)
	}
	for _, m := range []*cmemberClient{a, b} {
		if r := moved.ConsumerGroupHeartbeat(m.req(m.epoch, false)); r.Error != 0 || r.MemberEpoch != m.epoch {
			t.Fatalf("%s after the replacement: error %d, epoch %d (has %d)", m.id, r.Error, r.MemberEpoch, m.epoch)
		}
	}

	// Changed since its restore: not replaced.
	again, _ := newCGTest(t, topics)
	if err := again.RestoreConsumerGroup("g", s1); err != nil {
		t.Fatal(err)
	}
	c := &cmemberClient{t: t, c: again, topics: topics, group: "g", id: "c", names: []string{"t"}}
	c.beat()
	if again.ConsumerRestoredBehind("g", "a", a.epoch) {
		t.Fatal("a group changed since its restore asks to be read again")
	}
	if ok, _ := again.ReplaceRestoredConsumer("g", s2); ok {
		t.Fatal("a group changed since its restore was replaced")
	}
}

// describeMembers returns the sorted member ids of consumer group id.
func (c *Coordinator) describeMembers(t *testing.T, id string) []string {
	t.Helper()
	var ids []string
	for _, m := range c.DescribeConsumerGroup(id).Members {
		ids = append(ids, m.MemberID)
	}
	slices.Sort(ids)
	return ids
}
