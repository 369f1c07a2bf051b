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

// TestOffsetDeleteWithKadm deletes committed offsets over a socket with kadm
// (OffsetDelete), as Kafka answers it: an unknown group is
// GROUP_ID_NOT_FOUND; while a live member consumes topic od its partitions
// are GROUP_SUBSCRIBED_TO_TOPIC and keep their offsets, while those of
// topic other, which no member consumes, are deleted; an unknown topic or
// partition is UNKNOWN_TOPIC_OR_PARTITION; once the group is empty od's
// offsets can be deleted one partition at a time.
func TestOffsetDeleteWithKadm(t *testing.T) {
	gw := kiggytest.Start(t, fastGroups)
	gw.CreateTopic(t, "od", 3)
	gw.CreateTopic(t, "other", 2)
	produceN(t, gw.Addr, "od", 3, 30)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	if _, err := adm.DeleteOffsets(ctx, "missing", kadm.TopicsSet{"od": {0: {}}}); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("unknown group: want GROUP_ID_NOT_FOUND, got %v", err)
	}

	member, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("od"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
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
	// An offset of topic other, which the member does not consume.
	if err := gw.Log.CommitOffset(ctx, "g", "other", 1, 7, ""); err != nil {
		t.Fatal(err)
	}

	res, err := adm.DeleteOffsets(ctx, "g", kadm.TopicsSet{"od": {0: {}, 1: {}}, "other": {1: {}}, "nope": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		topic string
		p     int32
		want  error
	}{{"od", 0, kerr.GroupSubscribedToTopic}, {"od", 1, kerr.GroupSubscribedToTopic}, {"other", 1, nil}, {"nope", 0, kerr.UnknownTopicOrPartition}} {
		if got, ok := res.Lookup(c.topic, c.p); !ok || !errors.Is(got, c.want) && got != c.want {
			t.Errorf("%s/%d while subscribed: want %v, got %v (present %v)", c.topic, c.p, c.want, got, ok)
		}
	}
	if _, ok, _ := fetchOffset(ctx, gw, "g", "other", 1); ok {
		t.Error("other/1: the log still holds the deleted offset")
	}
	if off, ok, _ := fetchOffset(ctx, gw, "g", "od", 0); !ok || off != 10 {
		t.Errorf("od/0: a subscribed partition's offset must stay 10, got %d %v", off, ok)
	}

	member.Close() // leaves: the group is empty
	res, err = adm.DeleteOffsets(ctx, "g", kadm.TopicsSet{"od": {0: {}, 5: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.Lookup("od", 0); got != nil {
		t.Errorf("od/0 of an empty group: want deleted, got %v", got)
	}
	if got, _ := res.Lookup("od", 5); !errors.Is(got, kerr.UnknownTopicOrPartition) {
		t.Errorf("od/5: want UNKNOWN_TOPIC_OR_PARTITION, got %v", got)
	}
	after, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after.Lookup("od", 0); ok {
		t.Errorf("od/0 still committed: %+v", after)
	}
	if o, ok := after.Lookup("od", 1); !ok || o.At != 10 {
		t.Errorf("od/1 must keep its offset 10: %+v", o)
	}
	m := gw.Metrics()
	for _, want := range []string{
		`kiggy_api_errors_total{api="OffsetDelete",code="GROUP_ID_NOT_FOUND"} 1`,
		`kiggy_api_errors_total{api="OffsetDelete",code="GROUP_SUBSCRIBED_TO_TOPIC"} 2`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
}
