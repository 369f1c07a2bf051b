package bridge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestDeleteGroupsWithKadm deletes groups over a socket with kadm, as Kafka
// answers DeleteGroups: a group with a live member is NON_EMPTY_GROUP, an
// unknown group GROUP_ID_NOT_FOUND, an empty group is deleted with its
// committed offsets (OffsetFetch finds none afterwards, ListGroups no longer
// lists it), and offsets committed without the coordinator knowing the group
// (left by an earlier gateway process) are deleted as an empty group.
func TestDeleteGroupsWithKadm(t *testing.T) {
	gw := kiggytest.Start(t, fastGroups)
	gw.CreateTopic(t, "dg", 3)
	produceN(t, gw.Addr, "dg", 3, 30)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	// A live member that has committed.
	member, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumerGroup("live"), kgo.ConsumeTopics("dg"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	for got := 0; got < 30; {
		fs := member.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 30 records: %v", got, err)
		}
		got += fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	res, err := adm.DeleteGroups(ctx, "live", "missing", "")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res["live"].Err, kerr.NonEmptyGroup) || !errors.Is(res["missing"].Err, kerr.GroupIDNotFound) || !errors.Is(res[""].Err, kerr.InvalidGroupID) {
		t.Fatalf("delete while a member is live: %+v", res)
	}
	member.Close() // leaves the group: it is empty now
	before, err := adm.FetchOffsets(ctx, "live")
	if err != nil || len(before.Offsets()["dg"]) != 3 {
		t.Fatalf("committed offsets before the delete: %v %+v", err, before)
	}

	// Offsets in storage that this gateway's coordinator never saw.
	if err := gw.Log.CommitOffset(ctx, "stored", "dg", 1, 5, ""); err != nil {
		t.Fatal(err)
	}

	res, err = adm.DeleteGroups(ctx, "live", "stored", "live")
	if err != nil || len(res) != 2 || res.Error() != nil {
		t.Fatalf("delete empty groups: %v %+v", err, res)
	}
	for _, g := range []string{"live", "stored"} {
		after, err := adm.FetchOffsets(ctx, g)
		if err != nil || len(after.Offsets()) != 0 {
			t.Errorf("%s: committed offsets after the delete: %v %+v", g, err, after)
		}
		if _, ok, _ := fetchOffset(ctx, gw, g, "dg", 1); ok {
			t.Errorf("%s: the log still holds a committed offset", g)
		}
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil || len(listed) != 0 {
		t.Fatalf("groups listed after the delete: %v %v", err, listed.Groups())
	}
	if res, _ := adm.DeleteGroups(ctx, "live"); !errors.Is(res["live"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("second delete: %+v", res)
	}
	m := gw.Metrics()
	for _, want := range []string{
		`kiggy_api_errors_total{api="DeleteGroups",code="NON_EMPTY_GROUP"} 1`,
		`kiggy_api_errors_total{api="DeleteGroups",code="GROUP_ID_NOT_FOUND"} 2`,
		`kiggy_api_errors_total{api="DeleteGroups",code="INVALID_GROUP_ID"} 1`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// fetchOffset reads a committed offset straight from the gateway's log.
func fetchOffset(ctx context.Context, gw *kiggytest.Gateway, group, topic string, p int32) (int64, bool, error) {
	off, _, ok, err := gw.Log.FetchOffset(ctx, group, topic, p)
	return off, ok, err
}
