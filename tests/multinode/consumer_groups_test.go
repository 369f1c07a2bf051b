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
	"github.com/kiggy-io/kiggy/internal/testing/consumergroup"
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

	beat := func(m *consumergroup.Member, full bool, to kmsg.Requestor) int16 {
		t.Helper()
		resp, err := m.Beat(ctx, to, full)
		if err != nil {
			t.Fatalf("heartbeat %s/%s: %v", m.Group, m.ID, err)
		}
		return resp.ErrorCode
	}
	var members []*consumergroup.Member
	before := map[string]int32{}
	for i := range 9 {
		g := "mv848-" + strconv.Itoa(i)
		m := &consumergroup.Member{Group: g, ID: "member-" + g, Topics: []string{topic}}
		for range 3 {
			if code := beat(m, true, cl); code != 0 {
				t.Fatalf("join %s: error %d", g, code)
			}
		}
		if n := len(m.Owned); n != 1 || len(m.Owned[0].Partitions) != int(parts) {
			t.Fatalf("%s: owns %v, want all %d partitions", g, m.Owned, parts)
		}
		members = append(members, m)
		before[g], _ = ins[0].m.Coordinator(g)
	}
	time.Sleep(500 * time.Millisecond) // each coordinator stores its groups

	ins = append(ins, startInstance(t, iggyAddr, 3, "127.0.0.1:0", rec))
	waitSettled(t, ins, []int32{1, 2, 3}, topic, parts)
	moved := 0
	for _, m := range members {
		now, _ := ins[0].m.Coordinator(m.Group)
		if now == before[m.Group] {
			continue
		}
		moved++
		epoch, owned := m.Epoch, fmt.Sprint(m.Owned)
		// At the old coordinator, NOT_COORDINATOR; at the new one, the
		// member goes on.
		if code := beat(m, false, cl.Broker(int(before[m.Group]))); code != 16 {
			t.Errorf("%s at its old coordinator %d: error %d, want NOT_COORDINATOR", m.Group, before[m.Group], code)
		}
		code := beat(m, false, cl.Broker(int(now)))
		if code != 0 || m.Epoch != epoch || fmt.Sprint(m.Owned) != owned {
			t.Errorf("%s moved from node %d to %d: heartbeat error %d, epoch %d→%d, owned %s→%v", m.Group, before[m.Group], now, code, epoch, m.Epoch, owned, m.Owned)
		}
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{m.Group}
		resp, err := req.RequestWith(ctx, cl.Broker(int(now)))
		if err != nil {
			t.Fatal(err)
		}
		if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 1 || g.Members[0].MemberID != m.ID || g.State != "Stable" {
			t.Errorf("ConsumerGroupDescribe %s at its new coordinator %d: %+v", m.Group, now, g)
		}
	}
	if moved == 0 {
		t.Fatal("no group moved to node 3: pick other group ids")
	}
	t.Logf("%d of %d groups moved and kept their members", moved, len(members))
}
