package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestClassicGroupSurvivesRestart: on Iggy a classic group is stored once
// its rebalance completes (docs/design/consumer-groups.md §6), so after a
// gateway restart its two members heartbeat on at their generation, SyncGroup
// hands each its assignment again, their commits at that generation are
// accepted and DescribeGroups shows the group as it was, instead of every
// request answering UNKNOWN_MEMBER_ID and the members rejoining (a rebalance).
// The restarted gateway listens where the first did, as a restarted broker.
func TestClassicGroupSurvivesRestart(t *testing.T) {
	srv := iggytest.New(iggytest.Config{})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	first := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	const topic, groupID = "cl-restart", "cl-restart"
	first.CreateTopic(t, topic, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A client per member: a broker serves one request of a connection at
	// a time, and a SyncGroup parks until the leader's.
	var clients []*kgo.Client
	for range 2 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(first.Addr), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		clients = append(clients, cl)
	}
	cl := clients[0]

	// Two members join (JoinGroup v5: the second round trip KIP-394 asks
	// for) and the leader assigns.
	join := func(cl *kgo.Client, memberID string) chan *kmsg.JoinGroupResponse {
		out := make(chan *kmsg.JoinGroupResponse, 1)
		go func() {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version = 5
			req.Group, req.MemberID, req.ProtocolType = groupID, memberID, "consumer"
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", []byte("sub-"+topic)
			req.Protocols = append(req.Protocols, p)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Error(err)
				resp = nil
			}
			out <- resp
		}()
		return out
	}
	var ids []string
	for i := range 2 {
		r := <-join(clients[i], "")
		if r == nil || r.ErrorCode != 79 { // MEMBER_ID_REQUIRED
			t.Fatalf("first join: %+v", r)
		}
		ids = append(ids, r.MemberID)
	}
	a, b := join(clients[0], ids[0]), join(clients[1], ids[1])
	ra, rb := <-a, <-b
	if ra == nil || rb == nil || ra.ErrorCode != 0 || rb.ErrorCode != 0 {
		t.Fatalf("joins: %+v %+v", ra, rb)
	}
	gen, leader := ra.Generation, ra.LeaderID
	sync := func(cl *kgo.Client, memberID string, assign bool) chan *kmsg.SyncGroupResponse {
		out := make(chan *kmsg.SyncGroupResponse, 1)
		go func() {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.Generation, req.MemberID = groupID, gen, memberID
			if assign {
				for _, id := range ids {
					as := kmsg.NewSyncGroupRequestGroupAssignment()
					as.MemberID, as.MemberAssignment = id, []byte("assigned-"+id)
					req.GroupAssignment = append(req.GroupAssignment, as)
				}
			}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Error(err)
				resp = nil
			}
			out <- resp
		}()
		return out
	}
	var syncs []chan *kmsg.SyncGroupResponse
	for i, id := range ids {
		syncs = append(syncs, sync(clients[i], id, id == leader))
	}
	for i, s := range syncs {
		if r := <-s; r == nil || r.ErrorCode != 0 || string(r.MemberAssignment) != "assigned-"+ids[i] {
			t.Fatalf("sync %d: %+v", i, r)
		}
	}
	before := describeClassic(t, first.Addr, groupID)
	time.Sleep(500 * time.Millisecond) // the writer stores the generation (100 ms)

	addr := first.Addr
	first.Stop()
	second := kiggytest.Start(t, kiggytest.Options{IggyServer: srv, ListenAddr: addr})
	for _, id := range ids {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID = groupID, gen, id
		var resp *kmsg.HeartbeatResponse
		var err error
		if !testtools.Eventually(20*time.Second, func() bool {
			resp, err = req.RequestWith(ctx, cl)
			return err == nil
		}) {
			t.Fatalf("heartbeat after the restart: %v", err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s at generation %d after the restart: error %d", id, gen, resp.ErrorCode)
		}
	}
	for i, id := range ids {
		if r := <-sync(clients[i], id, false); r == nil || r.ErrorCode != 0 || string(r.MemberAssignment) != "assigned-"+ids[i] {
			t.Fatalf("sync of %s after the restart: %+v", id, r)
		}
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation, commit.MemberID = groupID, gen, ids[1]
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = topic
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 0
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	// OffsetCommit v8 names its topics (v10 gives ids).
	byName, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer byName.Close()
	if resp, err := commit.RequestWith(ctx, byName); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit at generation %d after the restart: %v %+v", gen, err, resp)
	}
	after := describeClassic(t, second.Addr, groupID)
	members := func(d kmsg.DescribeGroupsResponseGroup) string {
		var out []string
		for _, m := range d.Members {
			out = append(out, m.MemberID+"="+string(m.MemberAssignment))
		}
		slices.Sort(out)
		return fmt.Sprint(out)
	}
	if after.State != "Stable" || after.Protocol != "range" || members(before) != members(after) {
		t.Fatalf("group before the restart %s %s, after %s %s", before.State, members(before), after.State, members(after))
	}
}

// describeClassic describes a classic group through DescribeGroups.
func describeClassic(t *testing.T, addr, groupID string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{groupID}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("DescribeGroups: %v", err)
	}
	return resp.Groups[0]
}
