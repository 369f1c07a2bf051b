package multinode

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestGroupsAfterMove: consumer groups formed on two instances; a third
// joins and takes some of the groups over while their members are alive
// (docs/design/cluster.md §7). The instances that lost a group unload it at
// once: ListGroups through every instance together lists each group exactly
// once, by its new coordinator, well within the members' 30 s session
// timeout (without unloading, the old coordinator lists a moved group until
// the member's session there expires); DescribeGroups at the old coordinator
// answers NOT_COORDINATOR (16); kadm DescribeGroups finds the group Stable
// at the new coordinator with its one member; and the committed offsets are
// read the same after the move.
func TestGroupsAfterMove(t *testing.T) {
	iggyAddr := startIggytest(t)
	rec := &appends{}
	const topic, parts = "moved", int32(3)
	ins := []*instance{
		startInstance(t, iggyAddr, 1, "127.0.0.1:0", rec),
		startInstance(t, iggyAddr, 2, "127.0.0.1:0", rec),
	}
	defer func() {
		for _, in := range ins {
			in.stop()
		}
	}()
	ctx := context.Background()
	if _, err := ins[0].log.CreateTopic(ctx, topic, parts, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, ins, []int32{1, 2}, topic, parts)

	// Nine groups of one member each, bootstrapped from every instance,
	// each committing an offset once it is Stable.
	var groups []string
	for i := range 9 {
		groups = append(groups, "mv-"+strconv.Itoa(i))
	}
	seeds := func() []string {
		var s []string
		for _, in := range ins {
			s = append(s, in.addr)
		}
		return s
	}
	common := []kgo.Opt{kgo.MetadataMinAge(50 * time.Millisecond), kgo.MetadataMaxAge(500 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.DialTimeout(time.Second)}
	var members []*kgo.Client
	defer func() {
		for _, cl := range members {
			cl.Close()
		}
	}()
	for _, id := range groups {
		cl, err := kgo.NewClient(append(slices.Clone(common), kgo.SeedBrokers(seeds()...), kgo.ConsumerGroup(id), kgo.ConsumeTopics(topic),
			kgo.SessionTimeout(30*time.Second), kgo.HeartbeatInterval(200*time.Millisecond), kgo.RebalanceTimeout(5*time.Second),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.DisableAutoCommit())...)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, cl)
		go func() {
			for {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() {
					return
				}
			}
		}()
	}
	admin, err := kgo.NewClient(append(slices.Clone(common), kgo.SeedBrokers(seeds()...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	stable := func(what string) {
		t.Helper()
		var err error
		if !testtools.Eventually(20*time.Second, func() bool {
			err = func() error {
				described, err := adm.DescribeGroups(ctx, groups...)
				if err != nil {
					return err
				}
				for _, id := range groups {
					d := described[id]
					if d.Err != nil || d.State != "Stable" || len(d.Members) != 1 {
						return fmt.Errorf("group %s: %v %s, %d members", id, d.Err, d.State, len(d.Members))
					}
				}
				return nil
			}()
			return err == nil
		}) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	stable("before the move")
	// Each member commits offsets 10, 11, 12 to partitions 0, 1, 2.
	commits := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for i := range parts {
		commits[topic][i] = kgo.EpochOffset{Epoch: -1, Offset: int64(10 + i)}
	}
	for i, cl := range members {
		var cerr error
		cl.CommitOffsetsSync(ctx, commits, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 && cerr == nil {
							cerr = fmt.Errorf("partition %d: error %d", rp.Partition, rp.ErrorCode)
						}
					}
				}
			}
			if cerr == nil {
				cerr = err
			}
		})
		if cerr != nil {
			t.Fatalf("commit of %s: %v", groups[i], cerr)
		}
	}
	before := map[string]int32{}
	for _, id := range groups {
		before[id], _ = ins[0].m.Coordinator(id)
	}

	// A third instance joins: the groups it now scores highest for move.
	ins = append(ins, startInstance(t, iggyAddr, 3, "127.0.0.1:0", rec))
	waitSettled(t, ins, []int32{1, 2, 3}, topic, parts)
	moved := map[string]int32{} // group → its old coordinator
	for _, id := range groups {
		if now, _ := ins[0].m.Coordinator(id); now != before[id] {
			if now != 3 {
				t.Fatalf("group %s moved from %d to %d: only moves to the new node are expected", id, before[id], now)
			}
			moved[id] = before[id]
		}
	}
	if len(moved) == 0 {
		t.Fatal("no group moved to node 3: pick other group ids")
	}
	t.Logf("moved to node 3: %v", moved)
	settled := time.Now()

	// ListGroups through every instance: each group exactly once, by its
	// coordinator, soon (well within the 30 s sessions).
	listAll := func() (map[string][]int32, error) {
		where := map[string][]int32{}
		for _, in := range ins {
			resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, admin.Broker(int(in.id)))
			if err != nil {
				return nil, err
			}
			if resp.ErrorCode != 0 {
				return nil, fmt.Errorf("node %d: ListGroups error %d", in.id, resp.ErrorCode)
			}
			for _, g := range resp.Groups {
				where[g.Group] = append(where[g.Group], in.id)
			}
		}
		return where, nil
	}
	// 15 s: half the sessions, as a loaded machine stalls for seconds.
	if !testtools.Eventually(time.Until(settled.Add(15*time.Second)), func() bool {
		var where map[string][]int32
		where, err = listAll()
		if err == nil {
			var bad []string
			for _, id := range groups {
				coord, _ := ins[0].m.Coordinator(id)
				if l := where[id]; len(l) != 1 || l[0] != coord {
					bad = append(bad, fmt.Sprintf("%s listed by %v, coordinator %d", id, l, coord))
				}
			}
			if len(bad) == 0 {
				return true
			}
			err = fmt.Errorf("%s", strings.Join(bad, "; "))
		}
		return false
	}) {
		t.Fatalf("ListGroups through every instance, %v after the move: %v", time.Since(settled).Round(time.Millisecond), err)
	}
	t.Logf("ListGroups lists each group once %v after the view settled", time.Since(settled).Round(time.Millisecond))

	// DescribeGroups at an old coordinator: NOT_COORDINATOR.
	for id, old := range moved {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{id}
		resp, err := req.RequestWith(ctx, admin.Broker(int(old)))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 16 {
			t.Errorf("DescribeGroups %s at its old coordinator %d: %+v, want NOT_COORDINATOR", id, old, resp.Groups)
		}
	}
	// kadm finds every group, the moved ones at node 3, Stable with their
	// member; committed offsets read back through the new coordinator.
	stable("after the move")
	described, err := adm.DescribeGroups(ctx, groups...)
	if err != nil {
		t.Fatal(err)
	}
	for id := range moved {
		if d := described[id]; d.Coordinator.NodeID != 3 {
			t.Errorf("kadm DescribeGroups %s answered by node %d, want 3", id, d.Coordinator.NodeID)
		}
	}
	for _, id := range groups {
		got, err := adm.FetchOffsets(ctx, id)
		if err != nil {
			t.Fatalf("FetchOffsets %s: %v", id, err)
		}
		for i := range parts {
			if o, ok := got.Lookup(topic, i); !ok || o.Err != nil || o.At != int64(10+i) {
				t.Errorf("group %s partition %d committed %+v after the move, want %d", id, i, o, 10+i)
			}
		}
	}
}

// TestParkedMembersAfterMove: a member parked in SyncGroup at a group's
// coordinator (a follower waiting for a leader that does not sync) is
// answered NOT_COORDINATOR (16) soon after a view change moves the group to
// another instance, as Kafka's old coordinator answers when it unloads the
// group, instead of waiting out the rebalance timeout there; the members
// of groups that did not move stay parked (docs/design/cluster.md §7).
func TestParkedMembersAfterMove(t *testing.T) {
	iggyAddr := startIggytest(t)
	rec := &appends{}
	ins := []*instance{
		startInstance(t, iggyAddr, 1, "127.0.0.1:0", rec),
		startInstance(t, iggyAddr, 2, "127.0.0.1:0", rec),
	}
	// Stopped after the clients close (Cleanup runs last in, first out):
	// a parked request left open would hold an instance's drain.
	t.Cleanup(func() {
		for _, in := range ins {
			in.stop()
		}
	})
	waitSettled(t, ins, []int32{1, 2}, "none", 0)
	ctx := context.Background()
	// client returns a client of its own (a parked request holds its
	// connection) talking to node.
	client := func(node int32) *kgo.Broker {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(ins[0].addr, ins[1].addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl.Broker(int(node))
	}
	join := func(b *kgo.Broker, groupID string) (memberID, leader string, gen int32) {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.ProtocolType = groupID, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 60000, 60000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, p)
		for range 2 { // KIP-394: the first join returns the member id to rejoin with
			resp, err := req.RequestWith(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			switch resp.ErrorCode {
			case 79:
				req.MemberID = resp.MemberID
				continue
			case 0:
				return resp.MemberID, resp.LeaderID, resp.Generation
			}
			t.Fatalf("JoinGroup %s: error %d", groupID, resp.ErrorCode)
		}
		t.Fatalf("JoinGroup %s: no member id", groupID)
		return "", "", 0
	}
	type parked struct {
		group string
		coord int32
		done  chan int16
	}
	var all []*parked
	for i := range 9 {
		id := "park-" + strconv.Itoa(i)
		coord, _ := ins[0].m.Coordinator(id)
		// Two members join together; the follower's SyncGroup then waits for
		// the leader's, which never comes.
		type joined struct {
			id, leader string
			gen        int32
		}
		ch := make(chan joined, 2)
		for range 2 {
			b := client(coord)
			go func() { m, l, g := join(b, id); ch <- joined{m, l, g} }()
		}
		j1, j2 := <-ch, <-ch
		if j1.gen != j2.gen || j1.leader != j2.leader {
			t.Fatalf("group %s: two generations or leaders: %+v, %+v", id, j1, j2)
		}
		follower := j1
		if follower.id == follower.leader {
			follower = j2
		}
		p := &parked{group: id, coord: coord, done: make(chan int16, 1)}
		all = append(all, p)
		go func() {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.Generation, req.MemberID = id, follower.gen, follower.id
			resp, err := req.RequestWith(ctx, client(coord))
			if err != nil {
				p.done <- -1
				return
			}
			p.done <- resp.ErrorCode
		}()
	}
	// None of the syncs is answered in 300 ms (time for them to reach their
	// coordinators and park).
	testtools.Consistently(300*time.Millisecond, func() bool {
		for _, p := range all {
			if len(p.done) > 0 {
				return false
			}
		}
		return true
	})
	for _, p := range all {
		select {
		case code := <-p.done:
			t.Fatalf("group %s: the follower's SyncGroup was answered %d before the move", p.group, code)
		default:
		}
	}

	ins = append(ins, startInstance(t, iggyAddr, 3, "127.0.0.1:0", rec))
	waitSettled(t, ins, []int32{1, 2, 3}, "none", 0)
	settled := time.Now()
	movedOne, keptOne := false, false
	for _, p := range all {
		now, _ := ins[0].m.Coordinator(p.group)
		if now == p.coord {
			select {
			case code := <-p.done:
				t.Errorf("group %s stayed at node %d, but its parked SyncGroup was answered %d", p.group, p.coord, code)
			case <-time.After(50 * time.Millisecond):
				keptOne = true
			}
			continue
		}
		select {
		case code := <-p.done:
			if code != 16 {
				t.Errorf("group %s moved %d → %d: parked SyncGroup answered %d, want NOT_COORDINATOR (16)", p.group, p.coord, now, code)
			}
			movedOne = true
		case <-time.After(15 * time.Second):
			t.Errorf("group %s moved %d → %d: its parked SyncGroup is still parked %v after the view settled", p.group, p.coord, now, time.Since(settled).Round(time.Millisecond))
		}
	}
	if !movedOne || !keptOne {
		t.Fatalf("need a parked group that moved and one that stayed (moved %v, stayed %v): pick other group ids", movedOne, keptOne)
	}
	t.Logf("parked members of moved groups answered within %v of the view settling", time.Since(settled).Round(time.Millisecond))
}
