package interop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroupHeartbeatErrors sends ConsumerGroupHeartbeat (KIP-848)
// as a client does, one request at a time, and checks every answer against
// the same sequence on Kafka 4.4 (KIGGY_INTEROP_TARGET=kafka): the request
// checks, an unsupported assignor, a regex RE2 rejects, an unknown member,
// a member ahead of the coordinator, static members (an instance id held
// by another member, then released by a temporary leave and taken over
// with its partitions), the group then described by both APIs and listed
// by type, and a classic member that joins it (online migration).
func TestConsumerGroupHeartbeatErrors(t *testing.T) {
	tg := newTarget(t)
	topic := topicName(t)
	tg.CreateTopic(t, topic, 4)
	group := "cg-errors-" + topic
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	type hb struct {
		group, member, instance, assignor string
		regex                             *string
		epoch                             int32
		names                             []string
		owned                             []kmsg.ConsumerGroupHeartbeatRequestTopic
		full                              bool
	}
	send := func(h hb) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = h.group, h.member, h.epoch
		if h.instance != "" {
			req.InstanceID = &h.instance
		}
		if h.assignor != "" {
			req.ServerAssignor = &h.assignor
		}
		req.SubscribedTopicRegex = h.regex
		if h.full {
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = h.names
			req.Topics = h.owned
			if req.Topics == nil {
				req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			}
		}
		return sendHeartbeat(ctx, t, cl, req)
	}
	expect := func(what string, resp *kmsg.ConsumerGroupHeartbeatResponse, code int16) {
		t.Helper()
		if resp.ErrorCode != code {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = *resp.ErrorMessage
			}
			t.Fatalf("%s: error %d (%s), want %d", what, resp.ErrorCode, msg, code)
		}
	}
	names := []string{topic}
	// Request checks (GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid).
	expect("empty member id at v1", send(hb{group: group, full: true, names: names}), 42)
	expect("join without subscription", send(hb{group: group, member: "m-x", full: true}), 42)
	expect("epoch -3", send(hb{group: group, member: "m-x", epoch: -3, full: true, names: names}), 42)
	expect("unknown assignor", send(hb{group: group, member: "m-x", full: true, names: names, assignor: "no-such"}), 112)
	bad := "(unclosed"
	expect("invalid regex", send(hb{group: group, member: "m-x", full: true, regex: &bad}), 128)
	expect("unknown group", send(hb{group: group, member: "m-unknown", epoch: 5}), 69)

	// A member joins and is given every partition.
	a := send(hb{group: group, member: "m-a", full: true, names: names, instance: "inst-1"})
	expect("join", a, 0)
	if a.MemberEpoch <= 0 || a.Assignment == nil {
		t.Fatalf("join: epoch %d, assignment %v", a.MemberEpoch, a.Assignment)
	}
	toOwned := func(ts []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic) []kmsg.ConsumerGroupHeartbeatRequestTopic {
		var out []kmsg.ConsumerGroupHeartbeatRequestTopic
		for _, x := range ts {
			o := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			o.TopicID, o.Partitions = x.TopicID, x.Partitions
			out = append(out, o)
		}
		return out
	}
	owned := toOwned(a.Assignment.Topics)
	got := 0
	for _, tp := range owned {
		got += len(tp.Partitions)
	}
	if got != 4 {
		// Kafka may hand out the assignment over two heartbeats.
		a = send(hb{group: group, member: "m-a", epoch: a.MemberEpoch, full: true, names: names, instance: "inst-1", owned: owned})
		expect("second heartbeat", a, 0)
		if a.Assignment != nil {
			owned = toOwned(a.Assignment.Topics)
		}
	}
	expect("unknown member", send(hb{group: group, member: "m-unknown", epoch: 5}), 25)
	expect("member ahead of the coordinator", send(hb{group: group, member: "m-a", epoch: a.MemberEpoch + 1, instance: "inst-1"}), 110)
	// The fence does not remove the member: it heartbeats on.
	expect("heartbeat after a fenced request", send(hb{group: group, member: "m-a", epoch: a.MemberEpoch, instance: "inst-1", full: true, names: names, owned: owned}), 0)

	// Another member cannot take inst-1 while m-a holds it...
	expect("instance id held", send(hb{group: group, member: "m-b", full: true, names: names, instance: "inst-1"}), 111)
	// ...nor heartbeat as inst-1 under another member id.
	expect("instance id fenced", send(hb{group: group, member: "m-b", epoch: 1, instance: "inst-1"}), 82)
	// m-a leaves for a while (epoch -2), and m-b takes its place.
	left := send(hb{group: group, member: "m-a", epoch: -2, instance: "inst-1"})
	expect("static leave", left, 0)
	if left.MemberEpoch != -2 {
		t.Fatalf("static leave: epoch %d, want -2", left.MemberEpoch)
	}
	b := send(hb{group: group, member: "m-b", full: true, names: names, instance: "inst-1"})
	expect("static rejoin", b, 0)
	if b.Assignment == nil || len(b.Assignment.Topics) == 0 {
		t.Fatalf("static rejoin: no assignment (%+v)", b)
	}

	// ConsumerGroupDescribe shows the one member; DescribeGroups does not
	// describe a consumer group.
	dreq := kmsg.NewPtrConsumerGroupDescribeRequest()
	dreq.Groups = []string{group}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(dresp.Groups) != 1 || dresp.Groups[0].ErrorCode != 0 || len(dresp.Groups[0].Members) != 1 ||
		dresp.Groups[0].Members[0].MemberID != "m-b" || dresp.Groups[0].AssignorName != "uniform" {
		t.Fatalf("ConsumerGroupDescribe: %+v", dresp.Groups)
	}
	greq := kmsg.NewPtrDescribeGroupsRequest()
	greq.Groups = []string{group}
	gresp, err := greq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(gresp.Groups) != 1 || gresp.Groups[0].ErrorCode != 69 {
		t.Fatalf("DescribeGroups of a consumer group: %+v", gresp.Groups)
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"consumer"}
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range lresp.Groups {
		if g.Group == group {
			found = g.GroupType == "consumer" && g.ProtocolType == "consumer"
		}
	}
	if !found {
		t.Fatalf("ListGroups(consumer) does not list %s as a consumer group: %+v", group, lresp.Groups)
	}

	// A classic member joins the consumer group (online migration, Kafka's
	// default policy): answered at once, as a follower, at its epoch.
	jreq := kmsg.NewPtrJoinGroupRequest()
	jreq.Group, jreq.ProtocolType, jreq.SessionTimeoutMillis, jreq.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	jreq.MemberID = "m-classic"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0} // ConsumerProtocolSubscription v0, no topics
	jreq.Protocols = append(jreq.Protocols, p)
	jresp, err := jreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if jresp.ErrorCode != 0 || jresp.MemberID != "m-classic" || jresp.Protocol == nil || *jresp.Protocol != "range" || jresp.LeaderID == "m-classic" {
		t.Fatalf("classic JoinGroup into a consumer group: %+v", jresp)
	}
	dresp, err = dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(dresp.Groups[0].Members); n != 2 {
		t.Fatalf("ConsumerGroupDescribe after a classic member joined: %d members, want 2", n)
	}
	for _, m := range dresp.Groups[0].Members {
		if want := map[string]int8{"m-b": 1, "m-classic": 0}[m.MemberID]; m.MemberType != want {
			t.Fatalf("member %s: type %d, want %d", m.MemberID, m.MemberType, want)
		}
	}
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group = group
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = "m-classic"
	lv.Members = append(lv.Members, lm)
	if lresp, err := lv.RequestWith(ctx, cl); err != nil || lresp.ErrorCode != 0 || lresp.Members[0].ErrorCode != 0 {
		t.Fatalf("LeaveGroup of the classic member: %v %+v", err, lresp)
	}

	// The last member leaves; ConsumerGroupDescribe of an unknown group.
	expect("leave", send(hb{group: group, member: "m-b", epoch: -1, instance: "inst-1"}), 0)
	dreq.Groups = []string{"cg-never-" + topic}
	dresp, err = dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if dresp.Groups[0].ErrorCode != 69 {
		t.Fatalf("ConsumerGroupDescribe of an unknown group: %d, want 69", dresp.Groups[0].ErrorCode)
	}
}

// sendHeartbeat sends a ConsumerGroupHeartbeat, again while the coordinator
// loads, is not available or moved (Kafka creates __consumer_offsets on
// first use), and fails t if it cannot be sent.
func sendHeartbeat(ctx context.Context, t *testing.T, cl *kgo.Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil && ctx.Err() == nil && errors.Is(err, kerr.CoordinatorNotAvailable) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("ConsumerGroupHeartbeat: %v", err)
		}
		if resp.ErrorCode == 14 || resp.ErrorCode == 15 || resp.ErrorCode == 16 { // loading, not available, moved
			time.Sleep(200 * time.Millisecond)
			continue
		}
		return resp
	}
}
