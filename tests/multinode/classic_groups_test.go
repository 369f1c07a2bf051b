package multinode

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/classicgroup"
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
		return classicgroup.Clients(t, 1, seeds(), kgo.MetadataMinAge(50*time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.DialTimeout(time.Second))[0]
	}

	// One member per group, every group formed at once: each first join
	// waits the initial rebalance delay.
	var members []*classicgroup.Member
	before := map[string]int32{}
	formed := make(chan []*classicgroup.Member, 9)
	for i := range 9 {
		cl := newClient()
		go func() {
			ms, err := classicgroup.Form(ctx, "mvc-"+strconv.Itoa(i), []*kgo.Client{cl})
			if err != nil {
				t.Error(err)
			}
			formed <- ms
		}()
	}
	for range 9 {
		members = append(members, <-formed...)
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, m := range members {
		before[m.Group], _ = ins[0].m.Coordinator(m.Group)
	}
	var ids []string
	for _, m := range members {
		ids = append(ids, m.Group)
	}
	if missing, err := classicgroup.Unstored(ctx, ins[0].log, ids...); err != nil || len(missing) != 0 {
		t.Fatalf("groups not stored once their members are answered: %v %v", missing, err)
	}
	goesOn := func(m *classicgroup.Member, node int32, what string) {
		t.Helper()
		if err := m.GoesOn(ctx, m.Client.Broker(int(node)), topic); err != nil {
			t.Errorf("%s, at node %d: %v", what, node, err)
		}
	}
	beat := func(m *classicgroup.Member, node int32) int16 {
		t.Helper()
		code, err := m.Heartbeat(ctx, m.Client.Broker(int(node)))
		if err != nil {
			t.Fatal(err)
		}
		return code
	}

	ins = append(ins, startInstance(t, iggyAddr, 3, "127.0.0.1:0", rec))
	waitSettled(t, ins, []int32{1, 2, 3}, topic, parts)
	var moved []*classicgroup.Member
	for _, m := range members {
		now, _ := ins[0].m.Coordinator(m.Group)
		if now == before[m.Group] {
			continue
		}
		moved = append(moved, m)
		// At the old coordinator, NOT_COORDINATOR (once it has the view).
		if !testtools.Eventually(10*time.Second, func() bool { return beat(m, before[m.Group]) == 16 }) {
			t.Errorf("%s at its old coordinator %d: never NOT_COORDINATOR", m.Group, before[m.Group])
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
		now, _ := ins[0].m.Coordinator(m.Group)
		if now != before[m.Group] {
			t.Fatalf("%s went to node %d after node 3 died, not back to %d", m.Group, now, before[m.Group])
		}
		goesOn(m, now, "back after its coordinator was killed")
	}
	for _, m := range members {
		now, _ := ins[0].m.Coordinator(m.Group)
		goesOn(m, now, "at the end")
	}
	t.Logf("%d of %d groups moved to node 3 and back and kept their members and generations", len(moved), len(members))
}
