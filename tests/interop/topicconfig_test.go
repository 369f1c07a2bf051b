package interop

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// deleteRecordsCommand is kafka-delete-records (Java 4.x).
const deleteRecordsCommand = "org.apache.kafka.tools.DeleteRecordsCommand"

func strp(s string) *string { return &s }

// topicConfigsOf describes a topic's configs by name.
func topicConfigsOf(t *testing.T, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

func valueOf(c kadm.Config) string {
	if c.Value == nil {
		return "<null>"
	}
	return *c.Value
}

// TestTopicConfigsKadm sets, describes and alters topic configs with
// franz-go's kadm, checks Kafka's refusals word for word, and the effects
// kiggy promises: MESSAGE_TOO_LARGE over max.message.bytes, append-time
// timestamps under LogAppendTime. The same test runs against Kafka 4.4.
func TestTopicConfigsKadm(t *testing.T) {
	tg := newTarget(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.RecordRetries(0), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := topicName(t)
	set := map[string]*string{
		"cleanup.policy": strp("compact"), "max.message.bytes": strp("1000"), "message.timestamp.type": strp("LogAppendTime"),
		"segment.bytes": strp("2000000"), "min.cleanable.dirty.ratio": strp("0.25"),
	}
	if res, err := adm.CreateTopic(ctx, 1, -1, set, topic); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v %s", err, res.Err, res.ErrMessage)
	}
	waitTopicReady(t, tg, topic, 1)
	got := topicConfigsOf(t, adm, topic)
	for name, want := range map[string]string{"cleanup.policy": "compact", "max.message.bytes": "1000",
		"message.timestamp.type": "LogAppendTime", "segment.bytes": "2000000", "min.cleanable.dirty.ratio": "0.25"} {
		if c := got[name]; valueOf(c) != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("%s = %s (%v), want %s DYNAMIC_TOPIC_CONFIG", name, valueOf(c), c.Source, want)
		}
	}
	for _, name := range []string{"segment.ms", "preallocate", "delete.retention.ms", "remote.storage.enable"} {
		if c, ok := got[name]; !ok || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s: %s (%v), want a DEFAULT_CONFIG entry", name, valueOf(c), c.Source)
		}
	}

	for cfg, msg := range map[string]string{
		"foo.bar":                "Unknown topic config name: foo.bar",
		"retention.ms=-2":        "Invalid value -2 for configuration retention.ms: Value must be at least -1",
		"cleanup.policy=kompact": "Invalid value kompact for configuration cleanup.policy: String must be one of: compact, delete",
		"preallocate=yes":        "Invalid value yes for configuration preallocate: Expected value to be either true or false",
	} {
		k, v, _ := strings.Cut(cfg, "=")
		res, _ := adm.CreateTopic(ctx, 1, -1, map[string]*string{k: strp(v)}, topic+".refused")
		if !errors.Is(res.Err, kerr.InvalidConfig) || res.ErrMessage != msg {
			t.Errorf("create with %s: %v %q, want INVALID_CONFIG %q", cfg, res.Err, res.ErrMessage, msg)
		}
	}

	alter := func(ops ...kadm.AlterConfig) error {
		t.Helper()
		rs, err := adm.AlterTopicConfigs(ctx, ops, topic)
		if err != nil {
			t.Fatal(err)
		}
		return rs[0].Err
	}
	if err := alter(kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: strp("delete")},
		kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "segment.bytes"},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: strp("3600000")}); err != nil {
		t.Fatalf("incremental alter: %v", err)
	}
	// Kafka applies an alteration through its metadata log: the broker
	// may answer the old values for a moment.
	altered := func() bool {
		got = topicConfigsOf(t, adm, topic)
		return valueOf(got["cleanup.policy"]) == "compact,delete" && valueOf(got["retention.ms"]) == "3600000" &&
			got["segment.bytes"].Source == kmsg.ConfigSourceDefaultConfig
	}
	if !testtools.EventuallyEvery(30*time.Second, 100*time.Millisecond, altered) {
		t.Errorf("after alter: cleanup.policy %s, retention.ms %s, segment.bytes %s (%v)", valueOf(got["cleanup.policy"]),
			valueOf(got["retention.ms"]), valueOf(got["segment.bytes"]), got["segment.bytes"].Source)
	}
	if err := alter(kadm.AlterConfig{Op: kadm.AppendConfig, Name: "retention.ms", Value: strp("1")}); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("append to a LONG: %v, want INVALID_CONFIG", err)
	}

	// max.message.bytes: a batch over it is MESSAGE_TOO_LARGE.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: make([]byte, 1000)}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("a 1000-byte value over max.message.bytes 1000: %v, want MESSAGE_TOO_LARGE", err)
	}
	// A compacted topic refuses a record without a key (INVALID_RECORD).
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("a null key on a compacted topic: %v, want INVALID_RECORD", err)
	}
	// LogAppendTime: the producer's timestamp is replaced.
	before := time.Now().Add(-time.Second) // the broker's clock is this machine's
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("v"), Timestamp: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(time.Second)
	cons, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var recs []*kgo.Record
	for len(recs) < 1 && ctx.Err() == nil {
		recs = append(recs, cons.PollFetches(ctx).Records()...)
	}
	if len(recs) != 1 || recs[0].Attrs.TimestampType() != 1 || recs[0].Timestamp.Before(before) || recs[0].Timestamp.After(after) {
		for _, r := range recs {
			t.Logf("record %d: %v type %d", r.Offset, r.Timestamp, r.Attrs.TimestampType())
		}
		t.Errorf("LogAppendTime: want one record stamped in [%v, %v] with timestamp type 1", before, after)
	}
}

// TestConfigCommandTopicConfigs drives kafka-configs (Java 4.x) through
// --add-config and --delete-config on list, string and long configs.
func TestConfigCommandTopicConfigs(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	topic := topicName(t)
	topicCommandCreate(t, tg, topic, 1)
	r := adminTool(t, tg, configCommand, "--alter", "--entity-type", "topics", "--entity-name", topic,
		"--add-config", "cleanup.policy=[compact,delete],message.timestamp.type=LogAppendTime,segment.ms=100000")
	if r.code != 0 {
		t.Fatalf("kafka-configs --alter --add-config:\n%s", r)
	}
	r = adminTool(t, tg, configCommand, "--alter", "--entity-type", "topics", "--entity-name", topic, "--delete-config", "segment.ms")
	if r.code != 0 {
		t.Fatalf("kafka-configs --alter --delete-config:\n%s", r)
	}
	r = adminTool(t, tg, configCommand, "--describe", "--entity-type", "topics", "--entity-name", topic)
	for _, line := range []string{
		`cleanup\.policy=compact,delete sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:cleanup\.policy=compact,delete, DEFAULT_CONFIG:log\.cleanup\.policy=delete\}`,
		`message\.timestamp\.type=LogAppendTime sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:message\.timestamp\.type=LogAppendTime, DEFAULT_CONFIG:log\.message\.timestamp\.type=CreateTime\}`,
	} {
		if !regexp.MustCompile(`(?m)^  ` + line + `$`).MatchString(r.stdout) {
			t.Errorf("kafka-configs --describe: no line matching %q:\n%s", line, r)
		}
	}
	if strings.Contains(r.stdout, "segment.ms") {
		t.Errorf("kafka-configs --describe: segment.ms still set:\n%s", r)
	}
	toolFails(t, tg, "kafka-configs --add-config retention.ms=-5", "InvalidConfigurationException", configCommand,
		"--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config", "retention.ms=-5")
}

// fetchFrom fetches one partition at offset with a raw Fetch v12 and
// returns its error code and log start offset.
func fetchFrom(t *testing.T, cl *kgo.Client, topic string, offset int64) (int16, int64) {
	t.Helper()
	// The client sends its newest Fetch, which names topics by id.
	td, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes, req.ReplicaID = 10, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, td[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.LogStartOffset
}

// TestDeleteRecordsCommand runs kafka-delete-records (Java 4.x): the
// partition's low watermark moves, ListOffsets earliest answers it, and a
// Fetch below it is OFFSET_OUT_OF_RANGE, as on Kafka.
func TestDeleteRecordsCommand(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	topic := topicName(t)
	tg.CreateTopic(t, topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte('0' + i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "offsets.json")
	if err := os.WriteFile(file, []byte(`{"partitions":[{"topic":"`+topic+`","partition":0,"offset":4}],"version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := adminTool(t, tg, deleteRecordsCommand, "--offset-json-file", file)
	if r.code != 0 || !regexp.MustCompile(`partition: `+regexp.QuoteMeta(topic)+`-0\tlow_watermark: 4`).MatchString(r.stdout) {
		t.Fatalf("kafka-delete-records: want exit 0 and low_watermark 4:\n%s", r)
	}
	lo, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lo.Lookup(topic, 0); o.Offset != 4 {
		t.Errorf("ListOffsets earliest %d, want 4", o.Offset)
	}
	if code, _ := fetchFrom(t, cl, topic, 2); code != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch at 2: code %d, want OFFSET_OUT_OF_RANGE", code)
	}
	if code, ls := fetchFrom(t, cl, topic, 4); code != 0 || ls != 4 {
		t.Errorf("fetch at 4: code %d, log start %d, want 0 and 4", code, ls)
	}
	if err := os.WriteFile(file, []byte(`{"partitions":[{"topic":"`+topic+`","partition":0,"offset":20}],"version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r = adminTool(t, tg, deleteRecordsCommand, "--offset-json-file", file)
	if !strings.Contains(r.stdout+r.stderr, "OffsetOutOfRangeException") {
		t.Errorf("kafka-delete-records past the high watermark: want OffsetOutOfRangeException:\n%s", r)
	}
}
