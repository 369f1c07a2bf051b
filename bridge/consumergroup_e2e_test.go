package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/consumergroup"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// fastConsumerGroups heartbeats consumer-protocol members often, so that
// reassignments in these tests take a fraction of a second.
var fastConsumerGroups = kiggytest.Options{Bridge: bridge.Config{Group: group.Config{
	ConsumerHeartbeatInterval: 200 * time.Millisecond, ConsumerSessionTimeout: 3 * time.Second,
}}}

// kip848Member is a franz-go consumer on the consumer group protocol
// (kgo.ServerSideBalancer): the coordinator assigns its partitions.
type kip848Member struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startKIP848Member(t *testing.T, addr, groupID, topic string, seen *sync.Map) *kip848Member {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(100*time.Millisecond),
		kgo.HeartbeatInterval(200*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &kip848Member{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen.Store(fmt.Sprintf("%d/%d", r.Partition, r.Offset), true) })
		}
	}()
	return m
}

func (m *kip848Member) stop() {
	m.cancel()
	<-m.done
	m.cl.Close() // commits and leaves (epoch -1)
}

// describeConsumerGroup returns the group's members' assignments as
// "topic/partition" sets, by member id.
func describeConsumerGroup(t *testing.T, addr, groupID string) (state string, members map[string][]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{groupID}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		t.Fatalf("ConsumerGroupDescribe: error %d", g.ErrorCode)
	}
	members = map[string][]string{}
	for _, m := range g.Members {
		var tps []string
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				tps = append(tps, fmt.Sprintf("%s/%d", tp.Topic, p))
			}
		}
		members[m.MemberID] = tps
	}
	return g.State, members
}

// settled reports whether the group is Stable with n members whose
// assignments are disjoint, cover want partitions and differ in size by at
// most one.
func settled(state string, members map[string][]string, n, want int) bool {
	if state != "Stable" || len(members) != n {
		return false
	}
	all := map[string]bool{}
	lo, hi := want, 0
	for _, tps := range members {
		lo, hi = min(lo, len(tps)), max(hi, len(tps))
		for _, tp := range tps {
			if all[tp] {
				return false
			}
			all[tp] = true
		}
	}
	return len(all) == want && hi-lo <= 1
}

// TestConsumerProtocolGroup runs franz-go members on the KIP-848 protocol:
// three members over six partitions read every record, a fourth joins and
// one leaves with the partitions rebalanced each time, partitions added to
// the topic are assigned, and the committed offsets reach the end.
func TestConsumerProtocolGroup(t *testing.T) {
	gw := kiggytest.Start(t, fastConsumerGroups)
	const topic, groupID = "kip848", "kip848-group"
	gw.CreateTopic(t, topic, 6)
	sent := produceN(t, gw.Addr, topic, 6, 3000)
	var seen sync.Map
	count := func() int {
		n := 0
		seen.Range(func(any, any) bool { n++; return true })
		return n
	}
	var members []*kip848Member
	for range 3 {
		members = append(members, startKIP848Member(t, gw.Addr, groupID, topic, &seen))
	}
	defer func() {
		for _, m := range members {
			if m != nil {
				m.stop()
			}
		}
	}()
	if !testtools.Eventually(60*time.Second, func() bool { return count() == len(sent) }) {
		t.Fatalf("three members read %d distinct records of %d", count(), len(sent))
	}
	waitSettled := func(what string, n, parts int) {
		t.Helper()
		var state string
		var ms map[string][]string
		if !testtools.Eventually(30*time.Second, func() bool {
			state, ms = describeConsumerGroup(t, gw.Addr, groupID)
			return settled(state, ms, n, parts)
		}) {
			t.Fatalf("%s: group %s, members %v; want %d members sharing %d partitions", what, state, ms, n, parts)
		}
	}
	waitSettled("three members", 3, 6)

	members = append(members, startKIP848Member(t, gw.Addr, groupID, topic, &seen))
	waitSettled("a fourth member joined", 4, 6)
	members[0].stop()
	members[0] = nil
	waitSettled("a member left", 3, 6)

	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreatePartitions(context.Background(), 2, topic); err != nil {
		t.Fatal(err)
	}
	waitSettled("two partitions added", 3, 8)
	more := produceN(t, gw.Addr, topic, 8, 800)
	if !testtools.Eventually(60*time.Second, func() bool { return count() == len(sent)+len(more) }) {
		t.Fatalf("read %d distinct records of %d after partitions were added", count(), len(sent)+len(more))
	}
	// ListGroups by type.
	lg, err := adm.ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := lg[groupID]; !ok || g.ProtocolType != "consumer" {
		t.Fatalf("ListGroups: %+v", lg)
	}
	// The members commit what they read.
	if !testtools.Eventually(30*time.Second, func() bool {
		offs, err := adm.FetchOffsets(context.Background(), groupID)
		if err != nil {
			return false
		}
		total := int64(0)
		offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		return total == int64(len(sent)+len(more))
	}) {
		t.Fatal("the committed offsets never reached the end of the topic")
	}
	ids := []string{}
	_, ms := describeConsumerGroup(t, gw.Addr, groupID)
	for id := range ms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	t.Logf("members %v", ids)
}

// TestConsumerGroupSurvivesRestart: on Iggy the consumer groups are stored
// (docs/design/consumer-groups.md §6), so after a gateway restart two
// members heartbeat on at their epochs, with their partitions, instead of
// being told UNKNOWN_MEMBER_ID and rejoining.
func TestConsumerGroupSurvivesRestart(t *testing.T) { consumerGroupSurvivesRestart(t, false) }

// TestConsumerGroupOldFormSurvivesRestart: a group stored in the whole
// form of earlier versions is restored from it, its members heartbeat on
// at their epochs, and it is moved to records.
func TestConsumerGroupOldFormSurvivesRestart(t *testing.T) { consumerGroupSurvivesRestart(t, true) }

func consumerGroupSurvivesRestart(t *testing.T, oldForm bool) {
	srv := iggytest.New(iggytest.Config{})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	first := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	first.CreateTopic(t, "cg-restart", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	beat := func(cl *kgo.Client, m *consumergroup.Member, full bool) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		resp, err := m.Beat(ctx, cl, full)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	cl1, err := kgo.NewClient(kgo.SeedBrokers(first.Addr))
	if err != nil {
		t.Fatal(err)
	}
	a := &consumergroup.Member{Group: "cg-restart", ID: "member-a", Topics: []string{"cg-restart"}}
	b := &consumergroup.Member{Group: "cg-restart", ID: "member-b", Topics: []string{"cg-restart"}}
	for range 10 {
		beat(cl1, a, true)
		beat(cl1, b, true)
	}
	if len(a.Partitions()) != 2 || len(b.Partitions()) != 2 {
		t.Fatalf("before the restart: a owns %d, b %d partitions; want 2 each", len(a.Partitions()), len(b.Partitions()))
	}
	// Stored as answered: each member's epoch is in the store once its
	// heartbeat is answered (group.Config.AwaitStore), with no wait.
	sys := first.Log.(store.SystemStore)
	records, err := sys.LoadSystem(ctx, "consumer-group-records")
	if err != nil {
		t.Fatal(err)
	}
	groups, orphans := group.SplitConsumerGroups(records)
	sg, ok := groups["cg-restart"]
	if !ok || len(orphans) != 0 {
		t.Fatalf("stored records %q: no group cg-restart, or records of no group", records)
	}
	type storedMember struct {
		ID    string `json:"id"`
		Epoch int32  `json:"epoch"`
	}
	var ms []storedMember
	for _, id := range []string{a.ID, b.ID} {
		var m storedMember
		if err := json.Unmarshal(sg.Members[id], &m); err != nil {
			t.Fatalf("stored member %s %q: %v", id, sg.Members[id], err)
		}
		ms = append(ms, m)
	}
	if fmt.Sprint(ms) != fmt.Sprint([]storedMember{{a.ID, a.Epoch}, {b.ID, b.Epoch}}) {
		t.Fatalf("stored members %v once answered; a at %d, b at %d", ms, a.Epoch, b.Epoch)
	}
	if oldForm {
		// The group as an earlier version stored it: one whole form,
		// its members' records in a list (the fields records add are
		// ones the old form's reader ignores), their targets by id.
		var whole map[string]json.RawMessage
		if err := json.Unmarshal(sg.Head, &whole); err != nil {
			t.Fatal(err)
		}
		whole["v"] = json.RawMessage("1")
		delete(whole, "incarnation")
		var members []json.RawMessage
		target := map[string]json.RawMessage{}
		for _, id := range []string{a.ID, b.ID} {
			members = append(members, sg.Members[id])
			var r struct {
				Target json.RawMessage `json:"target"`
			}
			if err := json.Unmarshal(sg.Members[id], &r); err != nil {
				t.Fatal(err)
			}
			target[id] = r.Target
		}
		ml, err := json.Marshal(members)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := json.Marshal(target)
		if err != nil {
			t.Fatal(err)
		}
		whole["members"], whole["target"] = ml, tm
		v1, err := json.Marshal(whole)
		if err != nil {
			t.Fatal(err)
		}
		var drop []store.SystemEntry
		for k := range records {
			drop = append(drop, store.SystemEntry{Key: k})
		}
		if err := sys.PutSystemAll(ctx, "consumer-group-records", drop); err != nil {
			t.Fatal(err)
		}
		if err := sys.PutSystemAll(ctx, "consumer-groups", []store.SystemEntry{{Key: "cg-restart", Value: v1}}); err != nil {
			t.Fatal(err)
		}
	}
	cl1.Close()
	first.Stop()

	second := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	cl2, err := kgo.NewClient(kgo.SeedBrokers(second.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	for _, m := range []*consumergroup.Member{a, b} {
		epoch, owned := m.Epoch, fmt.Sprint(m.Owned)
		var resp *kmsg.ConsumerGroupHeartbeatResponse
		testtools.Eventually(20*time.Second, func() bool {
			resp = beat(cl2, m, false)
			return resp.ErrorCode != 14 // the stored groups are loading
		})
		if resp.ErrorCode != 0 || m.Epoch != epoch || fmt.Sprint(m.Owned) != owned {
			t.Fatalf("%s after the restart: error %d, epoch %d→%d, owned %s→%v", m.ID, resp.ErrorCode, epoch, m.Epoch, owned, m.Owned)
		}
	}
	state, described := describeConsumerGroup(t, second.Addr, "cg-restart")
	if !settled(state, described, 2, 4) {
		t.Fatalf("after the restart: %s %v", state, described)
	}
	if !oldForm {
		return
	}
	// Moved: the records hold the group, the old form is gone.
	sys = second.Log.(store.SystemStore)
	testtools.Eventually(10*time.Second, func() bool {
		v1, err := sys.LoadSystem(ctx, "consumer-groups")
		return err == nil && len(v1) == 0
	})
	records, err = sys.LoadSystem(ctx, "consumer-group-records")
	if err != nil {
		t.Fatal(err)
	}
	if groups, _ := group.SplitConsumerGroups(records); len(groups["cg-restart"].Members) != 2 {
		t.Fatalf("the old form was not moved to records: %q", records)
	}
	if v1, _ := sys.LoadSystem(ctx, "consumer-groups"); len(v1) != 0 {
		t.Fatalf("the old form is still stored: %q", v1)
	}
}
