//go:build linux

package hostile

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Caps the group floods run with: small enough that each flood passes them
// in a few seconds.
const (
	floodGroupMaxSize = 1000
	floodMaxMembers   = 20_000
	floodMaxGroups    = 20_000
)

// groupStateBound is the RSS growth the offset flood must stay under: the
// capped state (20,000 groups with an offset each; about 13 MiB) with the
// steady clients' data and the flood's buffers; without the cap it grows
// without end. memberFloodBound is the member flood's: its 1,200 static
// members hold a connection each, which costs the net engine about 40 KiB
// (goroutines and buffers; the whole flood grew RSS by 29 MiB on epoll,
// 53 MiB on net).
const (
	groupStateBound  = 64 << 20
	memberFloodBound = 96 << 20
	// cghFloodBound is the consumer-protocol member flood's: 20,000
	// members in 19,000 groups grew RSS by 87–105 MiB (2026-12-06: epoll,
	// net engine, a real iggy-server); without the caps the flood's 50,000
	// members would hold over twice that.
	cghFloodBound = 160 << 20
)

// joinReq is a JoinGroup v5 (KIP-394: a first join gets MEMBER_ID_REQUIRED
// and a member id to come back with) of a consumer with one protocol.
func joinReq(group, instance string, rebalanceMs int32) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group = group
	req.SessionTimeoutMillis = 60_000 // pending member ids stay for the whole test
	req.RebalanceTimeoutMillis = rebalanceMs
	req.ProtocolType = "consumer"
	if instance != "" {
		req.InstanceID = &instance
	}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = []byte{0, 0, 0, 0, 0, 0} // ConsumerProtocolSubscription v0, no topics
	req.Protocols = append(req.Protocols, p)
	return req
}

// joinCodes tallies JoinGroup answers by error code.
func joinCodes(codes map[int16]int) func(kmsg.Response) {
	return func(r kmsg.Response) { codes[r.(*kmsg.JoinGroupResponse).ErrorCode]++ }
}

// TestGroupMemberFlood: JoinGroup floods beside the steady
// producer and consumer group, against --group-max-size 1000 and
// --max-group-members 20000: 20,000 first joins with fresh member ids to one
// group get 1,000 member ids (MEMBER_ID_REQUIRED) and GROUP_MAX_SIZE_REACHED
// after; 1,200 static members with fresh instance ids to another group park
// in its rebalance up to the cap and are refused beyond it; 30,000 first
// joins to distinct groups get member ids until all groups together hold
// 20,000 members and COORDINATOR_NOT_AVAILABLE after. The refusal metric
// counts each refusal, RSS stays bounded and the steady clients lose
// nothing.
func TestGroupMemberFlood(t *testing.T) {
	const staticFlood = 1200
	raiseNoFile(t, 4*staticFlood)
	k := startFloodKiggy(t, append(floodQuota(t), "--group-max-size", strconv.Itoa(floodGroupMaxSize), "--max-group-members", strconv.Itoa(floodMaxMembers))...)
	s := startSteady(t, k)
	before := k.rss(t)
	peak := k.peak(t)
	one, static, many := map[int16]int{}, map[int16]int{}, map[int16]int{}
	var membersBefore float64
	type lapped struct {
		what     string
		from, to time.Time
	}
	var laps []lapped
	s.flood(func() {
		phase := time.Now()
		lap := func(what string) {
			t.Logf("%s took %v", what, time.Since(phase).Round(time.Millisecond))
			laps = append(laps, lapped{what, phase, time.Now()})
			phase = time.Now()
		}
		defer lap("the distinct groups")
		pipelined(t, k.Addr, "", 20_000, 2, 50, func(int) kmsg.Request { return joinReq("flood-one", "", 30_000) }, joinCodes(one))
		lap("one group")
		// A static join parks until the group's rebalance completes (its
		// 2 s rebalance timeout), and a connection's JoinGroups are served
		// one at a time, so each static member has its own connection, as
		// a real one has.
		pipelined(t, k.Addr, "", staticFlood, staticFlood, 1, func(i int) kmsg.Request {
			return joinReq("flood-static", "instance-"+strconv.Itoa(i), 2000)
		}, joinCodes(static))
		lap("the static members")
		// The static members never sync: wait until they are dropped, so
		// the count below is what the distinct groups can still take.
		waitFor(t, 30*time.Second, "the static members dropped", func() bool {
			membersBefore = k.metrics(t)["kiggy_group_members"]
			return membersBefore < floodGroupMaxSize+10
		})
		lap("dropping the static members")
		pipelined(t, k.Addr, "", 30_000, 2, 50, func(i int) kmsg.Request {
			return joinReq("flood-"+strconv.Itoa(i), "", 30_000)
		}, joinCodes(many))
	})
	high := peak()
	m := k.metrics(t)
	t.Logf("member floods: one group %v, static %v, distinct groups %v; RSS %.1f MiB before, peak %.1f MiB; %v members, %v groups",
		one, static, many, mib(before), mib(high), m["kiggy_group_members"], m["kiggy_groups"])
	if one[79] != floodGroupMaxSize || one[81] != 20_000-floodGroupMaxSize {
		t.Errorf("one group: %v, want %d MEMBER_ID_REQUIRED (79) and the rest GROUP_MAX_SIZE_REACHED (81)", one, floodGroupMaxSize)
	}
	if static[0]+static[81] != staticFlood || static[81] != staticFlood-floodGroupMaxSize {
		t.Errorf("static members: %v, want %d joined (0) and the rest GROUP_MAX_SIZE_REACHED (81)", static, floodGroupMaxSize)
	}
	room := floodMaxMembers - int(membersBefore)
	if many[79] != room || many[15] != 30_000-room {
		t.Errorf("distinct groups: %v, want %d MEMBER_ID_REQUIRED (79; %v members before) and the rest COORDINATOR_NOT_AVAILABLE (15)", many, room, membersBefore)
	}
	if got, want := m.groupsRefused("group_max_size"), float64(one[81]+static[81]); got != want {
		t.Errorf("kiggy_groups_refused_total{reason=\"group_max_size\"} = %v, want %v", got, want)
	}
	if got := m.groupsRefused("max_members"); got != float64(many[15]) {
		t.Errorf("kiggy_groups_refused_total{reason=\"max_members\"} = %v, want %d", got, many[15])
	}
	if got := m["kiggy_group_members"]; got > floodMaxMembers {
		t.Errorf("kiggy_group_members = %v, over the cap %d", got, floodMaxMembers)
	}
	if grew := high - before; grew >= memberFloodBound {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < %d", mib(grew), memberFloodBound>>20)
	}
	checkThrottled(t, k, true)
	s.check(t)
	for _, l := range laps { // the producer's samples are in once check stopped it
		t.Logf("steady producer p99 during %s: %v", l.what, s.p99(l.from, l.to).Round(10*time.Microsecond))
	}
}

// TestOffsetCommitGroupFlood: OffsetCommit with generation -1
// (a "simple" commit, as from assign() consumers) naming 50,000 random
// groups that never join, beside the steady clients, against --max-groups
// 20000: groups (and their offsets) are stored up to the cap; beyond it
// nothing is stored and the answer is COORDINATOR_NOT_AVAILABLE, since none
// of the groups held is an empty group without offsets that could be
// evicted. Groups already held still commit.
func TestOffsetCommitGroupFlood(t *testing.T) {
	const n = 50_000
	k := startFloodKiggy(t, append(floodQuota(t), "--max-groups", strconv.Itoa(floodMaxGroups))...)
	s := startSteady(t, k)
	groupsBefore := k.metrics(t)["kiggy_groups"]
	before := k.rss(t)
	peak := k.peak(t)
	codes := map[int16]int{}
	commit := func(group string) *kmsg.OffsetCommitRequest {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 8
		req.Group = group
		req.Generation = -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = steadyTopic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	tally := func(r kmsg.Response) {
		for _, rt := range r.(*kmsg.OffsetCommitResponse).Topics {
			for _, p := range rt.Partitions {
				codes[p.ErrorCode]++
			}
		}
	}
	s.flood(func() {
		pipelined(t, k.Addr, "", n, 2, 50, func(i int) kmsg.Request { return commit(fmt.Sprintf("never-joins-%d", i)) }, tally)
	})
	high := peak()
	m := k.metrics(t)
	t.Logf("%d simple commits to distinct groups: %v; RSS %.1f MiB before, peak %.1f MiB; %v groups", n, codes, mib(before), mib(high), m["kiggy_groups"])
	room := floodMaxGroups - int(groupsBefore)
	if codes[0] != room || codes[15] != n-room {
		t.Errorf("answers %v, want %d stored (0; %v groups before) and the rest COORDINATOR_NOT_AVAILABLE (15)", codes, room, groupsBefore)
	}
	if got := m.groupsRefused("max_groups"); got != float64(codes[15]) {
		t.Errorf("kiggy_groups_refused_total{reason=\"max_groups\"} = %v, want %d", got, codes[15])
	}
	if got := m["kiggy_groups"]; got != floodMaxGroups {
		t.Errorf("kiggy_groups = %v, want the cap %d", got, floodMaxGroups)
	}
	if got := m["kiggy_groups_evicted_total"]; got != 0 {
		t.Errorf("kiggy_groups_evicted_total = %v: a group holding offsets was evicted", got)
	}
	// A group already held still commits; one more new group does not.
	again := map[int16]int{}
	pipelined(t, k.Addr, "", 2, 1, 1, func(i int) kmsg.Request {
		return commit([]string{"never-joins-0", "never-joins-new"}[i])
	}, func(r kmsg.Response) {
		again[r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode]++
	})
	if again[0] != 1 || again[15] != 1 {
		t.Errorf("a held group's commit and a new group's: %v, want one 0 and one 15", again)
	}
	if grew := high - before; grew >= groupStateBound {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < %d", mib(grew), groupStateBound>>20)
	}
	checkThrottled(t, k, true)
	s.check(t)
}

// cghJoin is a ConsumerGroupHeartbeat v1 join (epoch 0) of a new member
// whose id the client names (KIP-848), subscribed to the steady topic.
func cghJoin(group string, i int) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group = group
	req.MemberID = fmt.Sprintf("flood-member-%022d", i)
	req.MemberEpoch = 0
	req.RebalanceTimeoutMillis = 30_000
	req.SubscribedTopicNames = []string{steadyTopic}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// cghCodes tallies ConsumerGroupHeartbeat answers by error code.
func cghCodes(codes map[int16]int) func(kmsg.Response) {
	return func(r kmsg.Response) { codes[r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode]++ }
}

// TestConsumerGroupHeartbeatFlood: the member flood in the consumer group
// protocol of KIP-848, whose members the client names and which the
// coordinator assigns partitions to at each join: 20,000 ConsumerGroupHeartbeat
// joins with fresh member ids to one group, against --group-max-size 1000,
// get 1,000 members and GROUP_MAX_SIZE_REACHED after; 30,000 joins to
// distinct groups get members until all groups hold --max-group-members
// (20,000), then COORDINATOR_NOT_AVAILABLE, which clients retry. The members
// never heartbeat again (their session outlasts the test). Each refusal is
// counted by its metric, RSS stays bounded and the steady clients lose
// nothing.
func TestConsumerGroupHeartbeatFlood(t *testing.T) {
	k := startFloodKiggy(t, append(floodQuota(t), "--group-max-size", strconv.Itoa(floodGroupMaxSize),
		"--max-group-members", strconv.Itoa(floodMaxMembers), "--max-groups", "100000")...)
	s := startSteady(t, k)
	before := k.rss(t)
	peak := k.peak(t)
	one, many := map[int16]int{}, map[int16]int{}
	var membersBefore float64
	s.flood(func() {
		start := time.Now()
		pipelined(t, k.Addr, "", 20_000, 2, 50, func(i int) kmsg.Request { return cghJoin("cflood-one", i) }, cghCodes(one))
		t.Logf("one group took %v", time.Since(start).Round(time.Millisecond))
		membersBefore = k.metrics(t)["kiggy_group_members"]
		start = time.Now()
		pipelined(t, k.Addr, "", 30_000, 2, 50, func(i int) kmsg.Request {
			return cghJoin("cflood-"+strconv.Itoa(i), 20_000+i)
		}, cghCodes(many))
		t.Logf("the distinct groups took %v", time.Since(start).Round(time.Millisecond))
	})
	high := peak()
	m := k.metrics(t)
	t.Logf("consumer-protocol member floods: one group %v, distinct groups %v; RSS %.1f MiB before, peak %.1f MiB; %v members, %v groups; "+
		"the groups stored in %v writes of %.1f MiB",
		one, many, mib(before), mib(high), m["kiggy_group_members"], m["kiggy_groups"],
		m[`kiggy_group_store_writes_total{type="consumer"}`], m[`kiggy_group_store_bytes_total{type="consumer"}`]/(1<<20))
	if one[0] != floodGroupMaxSize || one[81] != 20_000-floodGroupMaxSize {
		t.Errorf("one group: %v, want %d joined (0) and the rest GROUP_MAX_SIZE_REACHED (81)", one, floodGroupMaxSize)
	}
	room := floodMaxMembers - int(membersBefore)
	if many[0] != room || many[15] != 30_000-room {
		t.Errorf("distinct groups: %v, want %d joined (0; %v members before) and the rest COORDINATOR_NOT_AVAILABLE (15)", many, room, membersBefore)
	}
	if got, want := m.groupsRefused("group_max_size"), float64(one[81]); got != want {
		t.Errorf("kiggy_groups_refused_total{reason=\"group_max_size\"} = %v, want %v", got, want)
	}
	if got := m.groupsRefused("max_members"); got != float64(many[15]) {
		t.Errorf("kiggy_groups_refused_total{reason=\"max_members\"} = %v, want %d", got, many[15])
	}
	if got := m["kiggy_group_members"]; got > floodMaxMembers {
		t.Errorf("kiggy_group_members = %v, over the cap %d", got, floodMaxMembers)
	}
	if grew := high - before; grew >= cghFloodBound {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < %d", mib(grew), cghFloodBound>>20)
	}
	checkThrottled(t, k, false)
	s.check(t)
}
