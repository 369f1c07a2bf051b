package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/classicgroup"
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
	clients := classicgroup.Clients(t, 2, []string{first.Addr})
	members, err := classicgroup.Form(ctx, groupID, clients)
	if err != nil {
		t.Fatal(err)
	}
	before := describeClassic(t, first.Addr, groupID)
	// Stored before the SyncGroup that completed the rebalance was answered.
	if missing, err := classicgroup.Unstored(ctx, first.Log.(store.SystemStore), groupID); err != nil || len(missing) != 0 {
		t.Fatalf("the group is not stored once its members are answered: %v %v", missing, err)
	}

	addr := first.Addr
	first.Stop()
	second := kiggytest.Start(t, kiggytest.Options{IggyServer: srv, ListenAddr: addr})
	for _, m := range members {
		if !testtools.Eventually(20*time.Second, func() bool {
			_, err = m.Heartbeat(ctx, m.Client)
			return err == nil
		}) {
			t.Fatalf("heartbeat after the restart: %v", err)
		}
		if err := m.GoesOn(ctx, m.Client, topic); err != nil {
			t.Fatalf("after the restart: %v", err)
		}
	}
	after := describeClassic(t, second.Addr, groupID)
	described := func(d kmsg.DescribeGroupsResponseGroup) string {
		var out []string
		for _, m := range d.Members {
			out = append(out, m.MemberID+"="+string(m.MemberAssignment))
		}
		slices.Sort(out)
		return fmt.Sprint(out)
	}
	if after.State != "Stable" || after.Protocol != "range" || described(before) != described(after) {
		t.Fatalf("group before the restart %s %s, after %s %s", before.State, described(before), after.State, described(after))
	}
}

// TestClassicGroupTooLargeToStore: a classic group whose stored form is
// past the Iggy system store's 1 MiB value bound (two members with 600 KiB
// of protocol metadata each) is not stored, and does not stop a small group
// formed in the same round from being stored: after a restart the small
// group's member heartbeats on, the large group's members are told
// UNKNOWN_MEMBER_ID and rejoin, as before groups were stored.
func TestClassicGroupTooLargeToStore(t *testing.T) {
	srv := iggytest.New(iggytest.Config{})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	first := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	first.CreateTopic(t, "cl-large", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clients := classicgroup.Clients(t, 3, []string{first.Addr})
	type formed struct {
		ms  []*classicgroup.Member
		err error
	}
	large, small := make(chan formed, 1), make(chan formed, 1)
	go func() {
		ms, err := classicgroup.FormWith(ctx, "cl-large", clients[:2], make([]byte, 600<<10))
		large <- formed{ms, err}
	}()
	go func() {
		ms, err := classicgroup.Form(ctx, "cl-small", clients[2:])
		small <- formed{ms, err}
	}()
	l, s := <-large, <-small
	if l.err != nil || s.err != nil {
		t.Fatal(l.err, s.err)
	}
	if missing, err := classicgroup.Unstored(ctx, first.Log.(store.SystemStore), "cl-small"); err != nil || len(missing) != 0 {
		t.Fatalf("the small group is not stored once its members are answered: %v %v", missing, err)
	}
	addr := first.Addr
	first.Stop()
	kiggytest.Start(t, kiggytest.Options{IggyServer: srv, ListenAddr: addr})
	var code int16
	var err error
	if !testtools.Eventually(20*time.Second, func() bool {
		code, err = s.ms[0].Heartbeat(ctx, s.ms[0].Client)
		return err == nil
	}) || code != 0 {
		t.Fatalf("the small group after the restart: heartbeat error %d %v", code, err)
	}
	for _, m := range l.ms {
		if code, err := m.Heartbeat(ctx, m.Client); err != nil || code != 25 {
			t.Fatalf("the large group after the restart: heartbeat error %d %v, want UNKNOWN_MEMBER_ID", code, err)
		}
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
