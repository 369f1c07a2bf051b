package realiggy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/consumergroup"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestConsumerGroupAfterKiggyKill9: a consumer-protocol group (KIP-848) of
// three members formed through kiggy on a real iggy-server and settled,
// its members' offsets committed at their epochs, an acks=all produce load
// running; a fourth member joins, and kiggy is killed with SIGKILL as soon
// as that join is answered, mid-rebalance (the three owe partitions to the
// fourth). A new kiggy is started on the same address.
//
// kiggy answers a group change once it is stored (docs/design/consumer-groups.md
// §6), so the new kiggy restores the group as the killed one answered it:
// ConsumerGroupDescribe shows the same epochs, members, assignments and
// targets as just before the kill; every member heartbeats on at its epoch
// (not UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH) and the rebalance completes
// with the six partitions spread over the four members; the committed
// offsets are there and a commit at a member's new epoch is accepted; and
// the load loses no acknowledged record.
func TestConsumerGroupAfterKiggyKill9(t *testing.T) {
	iggyserver.Require(t)
	kiggyproc.Binary(t)
	const topic, partitions, groupID = "cgkill9", 6, "cgkill9"
	node := iggyserver.StartT(t)
	k := startKiggy(t, "kiggy-killed", iggyFlags(node.Addr, "written")...)
	createTopic(t, k.Addr, topic, partitions)
	l := startLoad(t, k.Addr, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testtools.WaitFor(t, 60*time.Second, "acknowledgements before the kill", func() bool { return l.acked() >= 1_000 })

	g := &cgMembers{t: t, ctx: ctx, cl: cl, group: groupID, topic: topic}
	for i := range 3 {
		g.join(fmt.Sprintf("member-%d", i))
	}
	g.settle(partitions)
	committed := map[int32]int64{}
	for _, m := range g.members {
		for _, p := range m.Partitions() {
			committed[p] = int64(100 + p)
			if code := g.commit(m, p, committed[p]); code != 0 {
				t.Fatalf("%s commits partition %d at epoch %d: %v", m.ID, p, m.Epoch, kerr.ErrorForCode(code))
			}
		}
	}
	g.join("member-3")
	before := g.describe()
	if !strings.Contains(before, "member-3") {
		t.Fatalf("the group before the kill has no member-3:\n%s", before)
	}
	k.Kill()
	killedAt := time.Now()
	k2 := startKiggy(t, "kiggy-restarted", append(iggyFlags(node.Addr, "written"), "--listen", k.Addr)...)
	keepLogs(t, []*kiggyProc{k, k2}, []*iggyserver.Node{node})
	t.Logf("a new kiggy listening %v after the SIGKILL; the group before it, mid-rebalance:\n%s", time.Since(killedAt).Round(time.Millisecond), before)

	var after string
	if !testtools.Eventually(30*time.Second, func() bool {
		after = g.describe()
		return after == before
	}) {
		t.Fatalf("the group after kiggy's SIGKILL and restart:\n%s\nwant it as answered before:\n%s", after, before)
	}
	g.settle(partitions)
	got := committedOffsets(t, cl, groupID)
	if fmt.Sprint(got) != fmt.Sprint(committed) {
		t.Errorf("committed offsets after the restart %v, want %v", got, committed)
	}
	for _, m := range g.members {
		for _, p := range m.Partitions() {
			if code := g.commit(m, p, 200); code != 0 {
				t.Errorf("%s commits partition %d at its epoch %d after the restart: %v", m.ID, p, m.Epoch, kerr.ErrorForCode(code))
			}
		}
	}
	atRestart := l.acked()
	testtools.WaitFor(t, 60*time.Second, "acknowledgements after the restart", func() bool { return l.acked() >= atRestart+1_000 })
	acks := l.finish(t)
	if v := check(acks, readBack(t, k2.Addr, topic, partitions)); v.lost != 0 || v.reused != 0 {
		t.Fatalf("acknowledged records lost or offsets reused across kiggy's SIGKILL: %v", v)
	}
}

// cgMembers drives the members of one consumer-protocol group over cl with
// raw ConsumerGroupHeartbeats, so that a test sees what the coordinator
// answers each (a client library would hide an error behind a rejoin).
type cgMembers struct {
	t            *testing.T
	ctx          context.Context
	cl           *kgo.Client
	group, topic string
	members      []*consumergroup.Member
}

// beat sends m's heartbeat, with its subscription and the partitions it
// owns, and takes the answer's epoch and assignment; it fails the test on
// an error code, and retries what the restart makes retriable.
func (g *cgMembers) beat(m *consumergroup.Member) {
	g.t.Helper()
	var code int16
	if !testtools.Eventually(30*time.Second, func() bool {
		epoch := m.Epoch
		resp, err := m.Beat(g.ctx, g.cl, true)
		if err != nil {
			g.t.Logf("%s heartbeat: %v; retrying", m.ID, err)
			return false
		}
		code = resp.ErrorCode
		if e := kerr.ErrorForCode(code); e != nil && kerr.IsRetriable(e) {
			return false
		}
		if code == 0 && m.Epoch < epoch {
			g.t.Fatalf("%s: epoch %d after %d", m.ID, m.Epoch, epoch)
		}
		return true
	}) || code != 0 {
		g.t.Fatalf("%s heartbeat at epoch %d: %v", m.ID, m.Epoch, kerr.ErrorForCode(code))
	}
}

// join adds a member of id to the group with one heartbeat (epoch 0).
func (g *cgMembers) join(id string) {
	m := &consumergroup.Member{Group: g.group, ID: id, Topics: []string{g.topic}}
	g.beat(m)
	g.members = append(g.members, m)
}

// settle heartbeats every member until the group is stable: each member at
// the group epoch with its target, and the members' partitions spread
// over all of the topic's n, none twice.
func (g *cgMembers) settle(n int32) {
	g.t.Helper()
	if !testtools.Eventually(30*time.Second, func() bool {
		for _, m := range g.members {
			g.beat(m)
		}
		seen := map[int32]bool{}
		for _, m := range g.members {
			for _, p := range m.Partitions() {
				if seen[p] {
					return false
				}
				seen[p] = true
			}
		}
		return len(seen) == int(n) && strings.HasPrefix(g.describe(), "Stable ")
	}) {
		g.t.Fatalf("the group did not settle:\n%s", g.describe())
	}
}

// commit commits offset for partition p as m, at its epoch (KIP-848; the
// client's newest OffsetCommit, which names the topic by its id), and
// returns the error code.
func (g *cgMembers) commit(m *consumergroup.Member, p int32, offset int64) int16 {
	g.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = g.group, m.ID, m.Epoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = g.topic
	for _, o := range m.Owned {
		rt.TopicID = o.TopicID
	}
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = p, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(g.ctx, g.cl)
	if err != nil {
		g.t.Fatalf("%s commit: %v", m.ID, err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// describe returns the group as ConsumerGroupDescribe shows it: its state,
// epochs and assignor, then a line per member with its epoch, subscription,
// assignment and target, in member id order; or the error.
func (g *cgMembers) describe() string {
	g.t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{g.group}
	resp, err := req.RequestWith(g.ctx, g.cl)
	if err != nil {
		return err.Error()
	}
	d := resp.Groups[0]
	if d.ErrorCode != 0 {
		return kerr.ErrorForCode(d.ErrorCode).Error()
	}
	parts := func(a kmsg.Assignment) string {
		var s []string
		for _, tp := range a.TopicPartitions {
			ps := slices.Clone(tp.Partitions)
			slices.Sort(ps)
			s = append(s, fmt.Sprintf("%s%v", tp.Topic, ps))
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	out := fmt.Sprintf("%s epoch %d assignment epoch %d assignor %s\n", d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName)
	ms := slices.Clone(d.Members)
	slices.SortFunc(ms, func(a, b kmsg.ConsumerGroupDescribeResponseGroupMember) int {
		return strings.Compare(a.MemberID, b.MemberID)
	})
	for _, m := range ms {
		out += fmt.Sprintf("  %s epoch %d subscribed %v assigned [%s] target [%s]\n",
			m.MemberID, m.MemberEpoch, m.SubscribedTopics, parts(m.Assignment), parts(m.TargetAssignment))
	}
	return out
}
