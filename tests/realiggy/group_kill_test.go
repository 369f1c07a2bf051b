package realiggy

import (
	"context"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/classicgroup"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestClassicGroupAfterKiggyKill9: a classic group of two members formed
// through kiggy on a real iggy-server, an acks=all produce load running;
// kiggy is killed with SIGKILL as soon as the members' SyncGroups are
// answered, and a new kiggy started on the same address.
// The new kiggy restores the group from the system stream
// (docs/design/consumer-groups.md §6): both members heartbeat on at their
// generation, SyncGroup hands them their assignment and their commits are
// accepted, instead of UNKNOWN_MEMBER_ID and a rebalance; and the load loses
// no acknowledged record.
func TestClassicGroupAfterKiggyKill9(t *testing.T) {
	iggyserver.Require(t)
	kiggyproc.Binary(t)
	const topic, partitions, groupID = "groupkill9", 3, "groupkill9"
	node := iggyserver.StartT(t)
	k := startKiggy(t, "kiggy-killed", iggyFlags(node.Addr, "written")...)
	createTopic(t, k.Addr, topic, partitions)
	l := startLoad(t, k.Addr, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := classicgroup.Clients(t, 2, []string{k.Addr})
	testtools.WaitFor(t, 60*time.Second, "acknowledgements before the kill", func() bool { return l.acked() >= 1_000 })
	members, err := classicgroup.Form(ctx, groupID, clients)
	if err != nil {
		t.Fatal(err)
	}
	// At once: kiggy answers the SyncGroup that completes a rebalance once
	// the group is stored.
	k.Kill()
	killedAt := time.Now()
	k2 := startKiggy(t, "kiggy-restarted", append(iggyFlags(node.Addr, "written"), "--listen", k.Addr)...)
	keepLogs(t, []*kiggyProc{k, k2}, []*iggyserver.Node{node})
	t.Logf("a new kiggy listening %v after the SIGKILL", time.Since(killedAt).Round(time.Millisecond))
	for _, m := range members {
		if !testtools.Eventually(30*time.Second, func() bool {
			_, err = m.Heartbeat(ctx, m.Client)
			return err == nil
		}) {
			t.Fatalf("heartbeat after the restart: %v", err)
		}
		if err := m.GoesOn(ctx, m.Client, topic); err != nil {
			t.Fatalf("after kiggy's SIGKILL and restart: %v", err)
		}
	}
	atRestart := l.acked()
	testtools.WaitFor(t, 60*time.Second, "acknowledgements after the restart", func() bool { return l.acked() >= atRestart+1_000 })
	acks := l.finish(t)
	if v := check(acks, readBack(t, k2.Addr, topic, partitions)); v.lost != 0 || v.reused != 0 {
		t.Fatalf("acknowledged records lost or offsets reused across kiggy's SIGKILL: %v", v)
	}
}
