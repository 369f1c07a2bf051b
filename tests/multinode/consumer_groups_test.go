package multinode

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestConsumerGroupsAfterMove: consumer-protocol groups (KIP-848) formed on
// two instances; a third joins and takes some of them over while their
// members are alive. The new coordinator loads each moved group as its old
// coordinator stored it (docs/design/consumer-groups.md §6): the members
// heartbeat on at their epochs with their partitions, instead of being
// told to rejoin, and ConsumerGroupDescribe at the new coordinator shows
// them.
func TestConsumerGroupsAfterMove(t *testing.T) {
	iggyAddr := startIggytest(t)
	rec := &appends{}
	const topic, parts = "moved848", int32(4)
	ins := []*instance{
		startInstance(t, iggyAddr, 1, "127.0.0.1:0", rec),
		startInstance(t, iggyAddr, 2, "127.0.0.1:0", rec),
	}
	defer func() {
		for _, in := range ins {
			in.stop()
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds()...), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	type member struct {
		group, id string
		epoch     int32
		owned     []kmsg.ConsumerGroupHeartbeatRequestTopic
	}
	beat := func(m *member, full bool, to kmsg.Requestor) int16 {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = m.group, m.id, m.epoch, -1
		if full {
			req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30000, []string{topic}
			req.Topics = append([]kmsg.ConsumerGroupHeartbeatRequestTopic{}, m.owned...)
		}
		resp, err := req.RequestWith(ctx, to)
		if err != nil {
			t.Fatalf("heartbeat %s/%s: %v", m.group, m.id, err)
		}
		if resp.ErrorCode == 0 {
			m.epoch = resp.MemberEpoch
			if resp.Assignment != nil {
				m.owned = nil
				for _, tp := range resp.Assignment.Topics {
					o := kmsg.NewConsumerGroupHeartbeatRequestTopic()
					o.TopicID, o.Partitions = tp.TopicID, tp.Partitions
					m.owned = append(m.owned, o)
				}
			}
		}
		return resp.ErrorCode
	}
	var members []*member
	before := map[string]int32{}
	for i := range 9 {
		g := "mv848-" + strconv.Itoa(i)
		m := &member{group: g, id: "member-" + g}
		for range 3 {
			if code := beat(m, true, cl); code != 0 {
				t.Fatalf("join %s: error %d", g, code)
			}
		}
		if n := len(m.owned); n != 1 || len(m.owned[0].Partitions) != int(parts) {
			t.Fatalf("%s: owns %v, want all %d partitions", g, m.owned, parts)
		}
		members = append(members, m)
		before[g], _ = ins[0].m.Coordinator(g)
	}
	time.Sleep(500 * time.Millisecond) // each coordinator stores its groups

	ins = append(ins, startInstance(t, iggyAddr, 3, "127.0.0.1:0", rec))
	waitSettled(t, ins, []int32{1, 2, 3}, topic, parts)
	moved := 0
	for _, m := range members {
		now, _ := ins[0].m.Coordinator(m.group)
		if now == before[m.group] {
			continue
		}
		moved++
		epoch, owned := m.epoch, fmt.Sprint(m.owned)
		// At the old coordinator, NOT_COORDINATOR; at the new one, the
		// member goes on.
		if code := beat(m, false, cl.Broker(int(before[m.group]))); code != 16 {
			t.Errorf("%s at its old coordinator %d: error %d, want NOT_COORDINATOR", m.group, before[m.group], code)
		}
		code := beat(m, false, cl.Broker(int(now)))
		if code != 0 || m.epoch != epoch || fmt.Sprint(m.owned) != owned {
			t.Errorf("%s moved from node %d to %d: heartbeat error %d, epoch %d→%d, owned %s→%v", m.group, before[m.group], now, code, epoch, m.epoch, owned, m.owned)
		}
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{m.group}
		resp, err := req.RequestWith(ctx, cl.Broker(int(now)))
		if err != nil {
			t.Fatal(err)
		}
		if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 1 || g.Members[0].MemberID != m.id || g.State != "Stable" {
			t.Errorf("ConsumerGroupDescribe %s at its new coordinator %d: %+v", m.group, now, g)
		}
	}
	if moved == 0 {
		t.Fatal("no group moved to node 3: pick other group ids")
	}
	t.Logf("%d of %d groups moved and kept their members", moved, len(members))
}
