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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// describeTopic returns a topic's configs by name.
func describeTopic(t *testing.T, adm *kadm.Client, topic string) map[string]*kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	out := map[string]*kadm.Config{}
	for i := range rc.Configs {
		out[rc.Configs[i].Key] = &rc.Configs[i]
	}
	return out
}

// TestTopicConfigsWithKadm sets every kind of topic config at creation,
// describes them, alters them incrementally and in full, and checks the
// refusals Kafka gives, on the backend KIGGY_TEST_BACKEND selects.
func TestTopicConfigsWithKadm(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	set := map[string]*string{
		"cleanup.policy": ptr("compact"), "max.message.bytes": ptr("2000"), "segment.bytes": ptr("2000000"),
		"retention.ms": ptr("60000"), "min.cleanable.dirty.ratio": ptr("0.25"), "preallocate": ptr("TRUE"),
		"compression.type": ptr("zstd"), "leader.replication.throttled.replicas": ptr("0:1"),
	}
	if res, err := adm.CreateTopic(ctx, 1, -1, set, "tc"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	got := describeTopic(t, adm, "tc")
	if len(got) < 37 {
		t.Errorf("%d configs described, want Kafka 4.4's 37 at least", len(got))
	}
	for name, want := range map[string]string{
		"cleanup.policy": "compact", "max.message.bytes": "2000", "segment.bytes": "2000000", "retention.ms": "60000",
		"min.cleanable.dirty.ratio": "0.25", "preallocate": "true", "compression.type": "zstd",
		"leader.replication.throttled.replicas": "0:1",
	} {
		if c := got[name]; c.MaybeValue() != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("%s = %q (%v), want %q DYNAMIC_TOPIC_CONFIG", name, c.MaybeValue(), c.Source, want)
		}
	}
	if c := got["segment.ms"]; c.MaybeValue() != "604800000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("segment.ms = %q (%v), want the default", c.MaybeValue(), c.Source)
	}
	// Compact alone: nothing expires, whatever retention.ms says.
	if info, err := gw.Log.Topic(ctx, "tc"); err != nil || info.Config.MessageExpiry != 0 {
		t.Errorf("compacted topic's backend expiry %v (%v), want none", info.Config.MessageExpiry, err)
	}

	for cfg, msg := range map[string]string{
		"foo.bar":                              "Unknown topic config name: foo.bar",
		"retention.ms=-2":                      "Invalid value -2 for configuration retention.ms: Value must be at least -1",
		"cleanup.policy=kompact":               "Invalid value kompact for configuration cleanup.policy: String must be one of: compact, delete",
		"message.timestamp.type=logappendtime": "Invalid value logappendtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime",
	} {
		k, v, _ := strings.Cut(cfg, "=")
		res, _ := adm.CreateTopic(ctx, 1, -1, map[string]*string{k: ptr(v)}, "refused")
		if !errors.Is(res.Err, kerr.InvalidConfig) || res.ErrMessage != msg {
			t.Errorf("create with %s: %v %q, want INVALID_CONFIG %q", cfg, res.Err, res.ErrMessage, msg)
		}
	}

	// IncrementalAlterConfigs: SET, APPEND, SUBTRACT, DELETE.
	alter := func(ops ...kadm.AlterConfig) error {
		t.Helper()
		rs, err := adm.AlterTopicConfigs(ctx, ops, "tc")
		if err != nil {
			t.Fatal(err)
		}
		return rs[0].Err
	}
	if err := alter(kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: ptr("delete")},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: ptr("120000")},
		kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "segment.bytes"}); err != nil {
		t.Fatalf("incremental alter: %v", err)
	}
	got = describeTopic(t, adm, "tc")
	if got["cleanup.policy"].MaybeValue() != "compact,delete" || got["retention.ms"].MaybeValue() != "120000" ||
		got["segment.bytes"].Source != kmsg.ConfigSourceDefaultConfig || got["segment.bytes"].MaybeValue() != "1073741824" {
		t.Errorf("after alter: cleanup.policy %q, retention.ms %q, segment.bytes %q (%v)", got["cleanup.policy"].MaybeValue(),
			got["retention.ms"].MaybeValue(), got["segment.bytes"].MaybeValue(), got["segment.bytes"].Source)
	}
	// With delete in the policy retention applies, in place where the
	// backend can change it.
	if _, ok := gw.Log.(store.TopicUpdater); ok {
		if info, _ := gw.Log.Topic(ctx, "tc"); info.Config.MessageExpiry != 2*time.Minute {
			t.Errorf("backend expiry %v after retention.ms=120000, want 2m", info.Config.MessageExpiry)
		}
	}
	if err := alter(kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: ptr("compact")}); err != nil {
		t.Fatal(err)
	}
	if v := describeTopic(t, adm, "tc")["cleanup.policy"].MaybeValue(); v != "delete" {
		t.Errorf("after subtract: cleanup.policy %q", v)
	}
	if err := alter(kadm.AlterConfig{Op: kadm.AppendConfig, Name: "retention.ms", Value: ptr("1")}); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("append to a LONG: %v, want INVALID_CONFIG", err)
	}
	if err := alter(kadm.AlterConfig{Op: kadm.SetConfig, Name: "nope", Value: ptr("1")}); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("set unknown: %v, want INVALID_CONFIG", err)
	}
	if rs, err := adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: ptr("5")}}, "tc"); err != nil || rs[0].Err != nil {
		t.Fatalf("validate only: %v %v", err, rs)
	}
	if v := describeTopic(t, adm, "tc")["retention.ms"].MaybeValue(); v != "120000" {
		t.Errorf("validate_only changed retention.ms to %q", v)
	}
	if rs, _ := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: ptr("5")}}, "missing"); !errors.Is(rs[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("alter missing topic: %v", rs[0].Err)
	}

	// AlterConfigs replaces the whole set: what it leaves out reverts.
	// (kmsg directly: kadm's State calls merge the current set in first.)
	req := kmsg.NewPtrAlterConfigsRequest()
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "tc"
	rc := kmsg.NewAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "preallocate", ptr("false")
	res.Configs = append(res.Configs, rc)
	req.Resources = append(req.Resources, res)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %v %+v", err, resp)
	}
	got = describeTopic(t, adm, "tc")
	if got["retention.ms"].Source != kmsg.ConfigSourceDefaultConfig || got["max.message.bytes"].Source == kmsg.ConfigSourceDynamicTopicConfig ||
		got["preallocate"].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("after full replace: retention.ms %v, max.message.bytes %v, preallocate %v", got["retention.ms"].Source,
			got["max.message.bytes"].Source, got["preallocate"].Source)
	}

	// A topic recreated under the name starts from the defaults.
	if _, err := adm.DeleteTopics(ctx, "tc"); err != nil {
		t.Fatal(err)
	}
	if res, err := adm.CreateTopic(ctx, 1, -1, nil, "tc"); err != nil || res.Err != nil {
		t.Fatalf("recreate: %v %v", err, res.Err)
	}
	if c := describeTopic(t, adm, "tc")["preallocate"]; c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("recreated topic kept preallocate (%v)", c.Source)
	}
}

// TestTopicConfigEffects: max.message.bytes refuses a bigger batch with
// MESSAGE_TOO_LARGE; message.timestamp.type=LogAppendTime stamps records
// with the append time and Fetch says so in the batch attributes.
func TestTopicConfigEffects(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordRetries(0), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"max.message.bytes": ptr("1000")}, "small"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "small", Value: make([]byte, 500)}).FirstErr(); err != nil {
		t.Fatalf("500 bytes under max.message.bytes 1000: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "small", Value: make([]byte, 1000)}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("a 1000-byte value over max.message.bytes 1000: %v, want MESSAGE_TOO_LARGE", err)
	}
	// Raised in place, the same record fits.
	if rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: ptr("5000")}}, "small"); err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %v", err, rs)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "small", Value: make([]byte, 1000)}).FirstErr(); err != nil {
		t.Fatalf("after raising max.message.bytes: %v", err)
	}

	// A compacted topic needs keys (Kafka LogValidator) and keeps every
	// record.
	if res, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": ptr("compact")}, "cmp"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cmp", Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("null key on a compacted topic: %v, want INVALID_RECORD", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cmp", Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Errorf("keyed record on a compacted topic: %v", err)
	}

	if res, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"message.timestamp.type": ptr("LogAppendTime")}, "lat"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	before := time.Now().Truncate(time.Millisecond)
	for i := range 2 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lat", Value: []byte{byte(i)}, Timestamp: old}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		// Two append times: the next append comes in a later millisecond.
		sent := time.Now().UnixMilli()
		testtools.WaitFor(t, time.Second, "the millisecond clock to move on", func() bool { return time.Now().UnixMilli() > sent })
	}
	after := time.Now()
	cons, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"lat": {0: kgo.NewOffset().AtStart()}}))
	defer cons.Close()
	var recs []*kgo.Record
	for len(recs) < 2 && ctx.Err() == nil {
		recs = append(recs, cons.PollFetches(ctx).Records()...)
	}
	if len(recs) != 2 {
		t.Fatalf("read %d records", len(recs))
	}
	for i, r := range recs {
		if r.Attrs.TimestampType() != 1 || r.Timestamp.Before(before) || r.Timestamp.After(after) {
			t.Errorf("record %d: timestamp %v type %d, want log append time in [%v, %v], type 1", i, r.Timestamp, r.Attrs.TimestampType(), before, after)
		}
	}
	if !recs[0].Timestamp.Before(recs[1].Timestamp) {
		t.Errorf("records appended apart read back with append times %v, %v", recs[0].Timestamp, recs[1].Timestamp)
	}
}

// TestTopicConfigsSurviveRestart: on the Iggy backend a topic's configs
// come back after a gateway restart, once the system store is durable there.
func TestTopicConfigsSurviveRestart(t *testing.T) {
	opts := kiggytest.Options{}
	gw := kiggytest.Start(t, opts)
	if !gw.OnIggy() {
		t.Skip("the embedded log keeps nothing across a restart; run with KIGGY_TEST_BACKEND=iggy")
	}
	if _, durable := gw.Log.(store.SystemStore); !durable {
		t.Skip("the Iggy backend's system store is in memory (store.SystemStore not implemented by the Iggy client yet); configs cannot survive a restart")
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": ptr("compact"), "segment.ms": ptr("1000")}, "kept"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	cl.Close()
	gw.Stop()
	opts = gw.SameIggy(opts)
	gw2 := kiggytest.Start(t, opts)
	cl2, _ := kgo.NewClient(kgo.SeedBrokers(gw2.Addr))
	defer cl2.Close()
	got := describeTopic(t, kadm.NewClient(cl2), "kept")
	if got["cleanup.policy"].MaybeValue() != "compact" || got["segment.ms"].MaybeValue() != "1000" {
		t.Errorf("after restart: cleanup.policy %q, segment.ms %q", got["cleanup.policy"].MaybeValue(), got["segment.ms"].MaybeValue())
	}
}
