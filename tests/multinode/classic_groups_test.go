package multinode

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestClassicGroupsFollowTheirCoordinator: classic groups formed on two
// instances; a third joins and takes some over while their members are
// alive, then is killed, and the groups move back. Each coordinator a group
// moves to restores it as its last coordinator stored it
// (docs/design/consumer-groups.md §6, docs/design/cluster.md §7): the members heartbeat
// on at their generation, SyncGroup hands them their assignment and their
// commits are accepted, at every coordinator the group passes through,
// instead of being told UNKNOWN_MEMBER_ID and rejoining twice.
func TestClassicGroupsFollowTheirCoordinator(t *testing.T) {
	iggyAddr := startIggytest(t)
	rec := &appends{}
	const topic, parts = "movedclassic", int32(2)
	ins := []*instance{
		startInstance(t, iggyAddr, 1, "127.0.0.1:0", rec),
		startInstance(t, iggyAddr, 2, "127.0.0.1:0", rec),
	}
	killed := map[int32]bool{}
	defer func() {
		for _, in := range ins {
			if !killed[in.id] {
				in.stop()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := ins[0].log.CreateTopic(ctx, topic, parts, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, ins, []int32{1, 2}, topic, parts)
	seeds := func() []string {
		var s []string
		for _, in := range ins {
			s = append(s, in.addr)
		}
		return s
	}
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.MetadataMinAge(50*time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.DialTimeout(time.Second),
			kgo.MaxVersions(kversion.V3_6_0())) // OffsetCommit v8: topics by name
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	type member struct {
		group, id string
		gen       int32
		cl        *kgo.Client // its own: a JoinGroup parks its connection
	}
	// One member per group, all at once: each first join waits the
	// initial rebalance delay.
	var members []*member
	before := map[string]int32{}
	done := make(chan error, 9)
	for i := range 9 {
		m := &member{group: "mvc-" + strconv.Itoa(i), cl: newClient()}
		members = append(members, m)
		go func() {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.ProtocolType = m.group, "consumer"
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", []byte("sub")
			req.Protocols = append(req.Protocols, p)
			resp, err := req.RequestWith(ctx, m.cl)
			if err == nil && resp.ErrorCode == 79 { // MEMBER_ID_REQUIRED (KIP-394): again with it
				req.MemberID = resp.MemberID
				resp, err = req.RequestWith(ctx, m.cl)
			}
			if err == nil && resp.ErrorCode != 0 {
				err = kerrCode(resp.ErrorCode)
			}
			if err == nil {
				m.id, m.gen = resp.MemberID, resp.Generation
			}
			done <- err
		}()
	}
	for range members {
		if err := <-done; err != nil {
			t.Fatalf("join: %v", err)
		}
	}
	sync := func(m *member, to kmsg.Requestor, assign bool) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.Generation, req.MemberID = m.group, m.gen, m.id
		if assign {
			as := kmsg.NewSyncGroupRequestGroupAssignment()
			as.MemberID, as.MemberAssignment = m.id, []byte("assigned-"+m.group)
			req.GroupAssignment = append(req.GroupAssignment, as)
		}
		resp, err := req.RequestWith(ctx, to)
		if err != nil {
			t.Fatalf("sync %s: %v", m.group, err)
		}
		return resp.ErrorCode, string(resp.MemberAssignment)
	}
	beat := func(m *member, to kmsg.Requestor) int16 {
		t.Helper()
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID = m.group, m.gen, m.id
		resp, err := req.RequestWith(ctx, to)
		if err != nil {
			t.Fatalf("heartbeat %s: %v", m.group, err)
		}
		return resp.ErrorCode
	}
	for _, m := range members {
		if code, a := sync(m, m.cl, true); code != 0 || a != "assigned-"+m.group {
			t.Fatalf("sync %s: error %d, assignment %q", m.group, code, a)
		}
		before[m.group], _ = ins[0].m.Coordinator(m.group)
	}
	time.Sleep(500 * time.Millisecond) // each coordinator stores its groups

	// Every member carries on at coordinator node: a heartbeat, a SyncGroup
	// and a member commit at its generation.
	goesOn := func(m *member, node int32, what string) {
		t.Helper()
		to := m.cl.Broker(int(node))
		if code := beat(m, to); code != 0 {
			t.Errorf("%s, %s at node %d: heartbeat error %d", what, m.group, node, code)
			return
		}
		if code, a := sync(m, to, false); code != 0 || a != "assigned-"+m.group {
			t.Errorf("%s, %s at node %d: sync error %d, assignment %q", what, m.group, node, code, a)
		}
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Group, commit.Generation, commit.MemberID = m.group, m.gen, m.id
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = topic
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = 0, 0
		ct.Partitions = append(ct.Partitions, cp)
		commit.Topics = append(commit.Topics, ct)
		resp, err := commit.RequestWith(ctx, to)
		if err != nil || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Errorf("%s, %s at node %d: commit %v %+v", what, m.group, node, err, resp)
		}
	}

	ins = append(ins, startInstance(t, iggyAddr, 3, "127.0.0.1:0", rec))
	waitSettled(t, ins, []int32{1, 2, 3}, topic, parts)
	var moved []*member
	for _, m := range members {
		now, _ := ins[0].m.Coordinator(m.group)
		if now == before[m.group] {
			continue
		}
		moved = append(moved, m)
		// At the old coordinator, NOT_COORDINATOR (once it has the view).
		if !testtools.Eventually(10*time.Second, func() bool { return beat(m, m.cl.Broker(int(before[m.group]))) == 16 }) {
			t.Errorf("%s at its old coordinator %d: never NOT_COORDINATOR", m.group, before[m.group])
		}
		goesOn(m, now, "moved to a new instance")
	}
	if len(moved) == 0 {
		t.Fatal("no group moved to node 3: pick other group ids")
	}
	time.Sleep(500 * time.Millisecond)

	// Node 3 dies: its groups go back, and their old coordinators, which
	// unloaded them, restore them again.
	ins[2].kill()
	killed[3] = true
	waitSettled(t, ins[:2], []int32{1, 2}, topic, parts)
	for _, m := range moved {
		now, _ := ins[0].m.Coordinator(m.group)
		if now != before[m.group] {
			t.Fatalf("%s went to node %d after node 3 died, not back to %d", m.group, now, before[m.group])
		}
		goesOn(m, now, "back after its coordinator was killed")
	}
	for _, m := range members {
		now, _ := ins[0].m.Coordinator(m.group)
		goesOn(m, now, "at the end")
	}
	t.Logf("%d of %d groups moved to node 3 and back and kept their members and generations", len(moved), len(members))
}

// kerrCode is a Kafka error code as an error.
type kerrCode int16

func (c kerrCode) Error() string { return "Kafka error " + strconv.Itoa(int(c)) }
