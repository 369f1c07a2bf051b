package bridge_test

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

func TestAdminWithKadm(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	res, err := adm.CreateTopic(ctx, 6, -1, map[string]*string{"retention.ms": ptr("60000")}, "a")
	if err != nil || res.Err != nil || res.NumPartitions != 6 {
		t.Fatalf("create: %v %+v", err, res)
	}
	if res, _ := adm.CreateTopic(ctx, 6, -1, nil, "a"); !errors.Is(res.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("duplicate: %v", res.Err)
	}
	if res, _ := adm.CreateTopic(ctx, 1, 3, nil, "b"); !errors.Is(res.Err, kerr.InvalidReplicationFactor) {
		t.Fatalf("replication 3: %v", res.Err)
	}
	if res, _ := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": ptr("kompact")}, "b"); !errors.Is(res.Err, kerr.InvalidConfig) {
		t.Fatalf("kompact: %v", res.Err)
	}
	if res, _ := adm.CreateTopic(ctx, 1, 1, nil, "bad/name"); !errors.Is(res.Err, kerr.InvalidTopicException) {
		t.Fatalf("bad name: %v", res.Err)
	}
	if res, _ := adm.CreateTopic(ctx, 0, 1, nil, "zero"); !errors.Is(res.Err, kerr.InvalidPartitions) {
		t.Fatalf("0 partitions: %v", res.Err)
	}
	if vr, _ := adm.ValidateCreateTopics(ctx, 2, 1, nil, "validated"); vr.Error() != nil {
		t.Fatalf("validate only: %v", vr.Error())
	}
	if _, err := gw.Log.Topic(ctx, "validated"); err == nil {
		t.Fatal("validate_only created the topic")
	}

	list, err := adm.ListTopics(ctx)
	if err != nil || !list.Has("a") || len(list["a"].Partitions) != 6 {
		t.Fatalf("list: %v %v", err, list)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cfgs.On("a", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, c := range rc.Configs {
		found[c.Key] = c.MaybeValue()
	}
	if found["retention.ms"] != "60000" || found["cleanup.policy"] != "delete" {
		t.Fatalf("configs: %v", found)
	}
	bcfgs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil || len(bcfgs) != 1 || bcfgs[0].Err != nil {
		t.Fatalf("broker configs: %v %+v", err, bcfgs)
	}

	cp, err := adm.UpdatePartitions(ctx, 8, "a")
	if err != nil || cp["a"].Err != nil {
		t.Fatalf("grow: %v %+v", err, cp)
	}
	if cp, _ := adm.UpdatePartitions(ctx, 4, "a"); !errors.Is(cp["a"].Err, kerr.InvalidPartitions) {
		t.Fatalf("shrink: %+v", cp["a"].Err)
	}
	if info, _ := gw.Log.Topic(ctx, "a"); info.Partitions != 8 {
		t.Fatalf("partitions after grow: %d", info.Partitions)
	}
	if ac, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: ptr("-2")}}, "a"); err != nil || !errors.Is(ac[0].Err, kerr.InvalidConfig) {
		t.Fatalf("retention.ms=-2 was not refused: %v %+v", err, ac)
	}
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil || meta.Controller != 1 || len(meta.Brokers) != 1 {
		t.Fatalf("describe cluster: %v %+v", err, meta)
	}

	del, err := adm.DeleteTopics(ctx, "a", "missing")
	if err != nil || del["a"].Err != nil || !errors.Is(del["missing"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete: %v %+v", err, del)
	}
}

func ptr(s string) *string { return &s }
