package interop

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// Java 4.x admin tools (kafka-topics, kafka-configs).
const (
	topicCommand  = "org.apache.kafka.tools.TopicCommand"
	configCommand = "org.apache.kafka.tools.ConfigCommand"
)

// nodeID is the one node of either target: kiggy's default NodeID, and
// kafkatest.NodeID.
const nodeID = 1

// adminTool runs a Java admin tool against the target.
func adminTool(t testing.TB, tg target, class string, args ...string) result {
	t.Helper()
	return runJava(t, 2*time.Minute, nil, "", class, append([]string{"--bootstrap-server", tg.Addr()}, args...)...)
}

// topicCommandCreate creates topic with kafka-topics --create and waits
// until every partition answers Metadata and ListOffsets.
func topicCommandCreate(t testing.TB, tg target, topic string, partitions int32) {
	t.Helper()
	r := adminTool(t, tg, topicCommand, "--create", "--topic", topic, "--partitions", fmt.Sprint(partitions))
	// (A name holding '.' also gets a WARNING about metric names first.)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "Created topic "+topic+".\n") {
		t.Fatalf("kafka-topics --create %s: want exit 0 and \"Created topic %s.\":\n%s", topic, topic, r)
	}
	waitTopicReady(t, tg, topic, partitions)
}

// waitTopicReady waits until Metadata names a leader for each of the
// topic's partitions and ListOffsets answers for each.
func waitTopicReady(t testing.TB, tg target, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		err := topicReady(ctx, adm, topic, partitions)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s is not ready after a minute: %v", topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// describeHeader matches kafka-topics --describe's topic line; its group is
// the TopicId the tool prints (Uuid.toString: base64url without padding),
// which it leaves out when the id is all zero.
func describeHeader(topic string, partitions int) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^Topic: ` + regexp.QuoteMeta(topic) + `\tTopicId: (\S+)\tPartitionCount: ` +
		fmt.Sprint(partitions) + `\tReplicationFactor: 1\tConfigs: .*$`)
}

// metadataTopicID returns the topic id a Metadata request (v10+) gives
// topic, in Uuid.toString's form.
func metadataTopicID(t testing.TB, tg target, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata %s: %v %+v", topic, err, resp)
	}
	return base64.RawURLEncoding.EncodeToString(resp.Topics[0].TopicID[:])
}

// checkDescribe runs kafka-topics --describe and checks the topic line, with
// the topic id Metadata gives (KIP-516), and one line per partition, led by
// the single node. It returns the id.
func checkDescribe(t testing.TB, tg target, topic string, partitions int) string {
	t.Helper()
	r := adminTool(t, tg, topicCommand, "--describe", "--topic", topic)
	m := describeHeader(topic, partitions).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("kafka-topics --describe %s: want exit 0 and a %d-partition topic line with a TopicId:\n%s", topic, partitions, r)
	}
	t.Logf("kafka-topics --describe on %s: %s", tg.Name(), lineWith(r.stdout, "PartitionCount"))
	if id := metadataTopicID(t, tg, topic); m[1] != id || id == "AAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("kafka-topics --describe %s printed TopicId %s, Metadata gives %s", topic, m[1], id)
	}
	// Kafka 4.x's tool describes through DescribeTopicPartitions (KIP-966)
	// when the broker advertises it, as kiggy does.
	if k, ok := tg.(*kiggyTarget); ok && !strings.Contains(k.g.Metrics(), `kiggy_api_requests_total{api="DescribeTopicPartitions",version="0"}`) {
		t.Errorf("kafka-topics --describe %s did not use DescribeTopicPartitions", topic)
	}
	for p := range partitions {
		line := regexp.MustCompile(fmt.Sprintf(`(?m)^\tTopic: %s\tPartition: %d\tLeader: %d\tReplicas: %d\tIsr: %d\b`,
			regexp.QuoteMeta(topic), p, nodeID, nodeID, nodeID))
		if !line.MatchString(r.stdout) {
			t.Errorf("kafka-topics --describe %s: no line for partition %d led by node %d:\n%s", topic, p, nodeID, r)
		}
	}
	if n := strings.Count(r.stdout, "\tPartition: "); n != partitions {
		t.Errorf("kafka-topics --describe %s printed %d partition lines, want %d", topic, n, partitions)
	}
	return m[1]
}

// listed reports whether kafka-topics --list prints topic.
func listed(t testing.TB, tg target, topic string) bool {
	t.Helper()
	r := adminTool(t, tg, topicCommand, "--list")
	if r.code != 0 {
		t.Fatalf("kafka-topics --list failed:\n%s", r)
	}
	for line := range strings.Lines(r.stdout) {
		if strings.TrimSpace(line) == topic {
			return true
		}
	}
	return false
}

// toolFails runs an admin tool that must fail: non-zero exit, and the
// Kafka exception class in its output. It logs what the tool printed (the
// messages docs/COMPATIBILITY.md quotes).
func toolFails(t testing.TB, tg target, what, exception string, class string, args ...string) {
	t.Helper()
	r := adminTool(t, tg, class, args...)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, exception) {
		t.Errorf("%s: want a non-zero exit and %s:\n%s", what, exception, r)
		return
	}
	t.Logf("%s on %s: exit %d: %s", what, tg.Name(), r.code, lineWith(r.stdout+r.stderr, exception))
}

// lineWith is the first line of s that holds sub.
func lineWith(s, sub string) string {
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// TestTopicCommand drives org.apache.kafka.tools.TopicCommand
// (kafka-topics, Java Admin client 4.x): create with 6 partitions, list,
// describe (its TopicId is the id Metadata gives, KIP-516); kcat, franz-go
// and the console consumer produce and consume on that topic; alter to 8
// partitions and describe (the same id); the error cases (create
// an existing topic, replication factor 3 on one node, alter to fewer
// partitions) exit non-zero with Kafka's exceptions; delete, and the topic
// is gone from the list.
func TestTopicCommand(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	kcat := testtools.Kcat(t)
	const partitions = 6
	topic := topicName(t)

	topicCommandCreate(t, tg, topic, partitions)
	if !listed(t, tg, topic) {
		t.Fatalf("kafka-topics --list does not show %s after --create", topic)
	}
	id := checkDescribe(t, tg, topic, partitions)

	t.Run("produce-and-consume", func(t *testing.T) {
		bp, win := produceKcatAndFranz(t, tg, kcat, topic, "lz4", 100, 600)
		if len(bp) < partitions {
			t.Errorf("records landed on only %d of %d partitions", len(bp), partitions)
		}
		kcatReadAll(t, tg, kcat, topic, partitions, bp, &win)
		consoleGroupRounds(t, tg, topic, partitions, bp, &win)
	})

	r := adminTool(t, tg, topicCommand, "--alter", "--topic", topic, "--partitions", "8")
	if r.code != 0 {
		t.Fatalf("kafka-topics --alter --partitions 8 failed:\n%s", r)
	}
	waitTopicReady(t, tg, topic, 8)
	if again := checkDescribe(t, tg, topic, 8); again != id {
		t.Errorf("adding partitions changed the topic id from %s to %s", id, again)
	}

	toolFails(t, tg, "kafka-topics --create of an existing topic", "TopicExistsException",
		topicCommand, "--create", "--topic", topic, "--partitions", "6")
	toolFails(t, tg, "kafka-topics --create --replication-factor 3", "InvalidReplicationFactorException",
		topicCommand, "--create", "--topic", topic+"-rf3", "--partitions", "6", "--replication-factor", "3")
	toolFails(t, tg, "kafka-topics --alter to fewer partitions", "InvalidPartitionsException",
		topicCommand, "--alter", "--topic", topic, "--partitions", "4")
	if listed(t, tg, topic+"-rf3") {
		t.Errorf("the refused --replication-factor 3 create left topic %s-rf3 behind", topic)
	}

	r = adminTool(t, tg, topicCommand, "--delete", "--topic", topic)
	if r.code != 0 {
		t.Fatalf("kafka-topics --delete failed:\n%s", r)
	}
	// Kafka deletes asynchronously: the topic may be listed for a moment.
	if !testtools.EventuallyEvery(30*time.Second, time.Second, func() bool { return !listed(t, tg, topic) }) {
		t.Fatalf("kafka-topics --list still shows %s 30 s after --delete", topic)
	}
	toolFails(t, tg, "kafka-topics --describe of a deleted topic", "does not exist",
		topicCommand, "--describe", "--topic", topic)
}

// TestConfigCommand drives org.apache.kafka.tools.ConfigCommand
// (kafka-configs): --describe of a topic created with retention.ms (its
// dynamic config is listed), of a topic with --all (the defaults), of
// broker 1; --alter is refused by kiggy (AlterConfigs and
// IncrementalAlterConfigs are not served: topic settings are fixed at
// creation) and applied by Kafka.
func TestConfigCommand(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	topic := topicName(t)
	r := adminTool(t, tg, topicCommand, "--create", "--topic", topic, "--partitions", "2", "--config", "retention.ms=3600000")
	if r.code != 0 {
		t.Fatalf("kafka-topics --create --config retention.ms=3600000 failed:\n%s", r)
	}
	waitTopicReady(t, tg, topic, 2)

	r = adminTool(t, tg, configCommand, "--describe", "--entity-type", "topics", "--entity-name", topic)
	want := "Dynamic configs for topic " + topic + " are:\n  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("kafka-configs --describe topic: want exit 0 and\n%s\n%s", want, r)
	}

	r = adminTool(t, tg, configCommand, "--describe", "--entity-type", "topics", "--entity-name", topic, "--all")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "All configs for topic "+topic+" are:\n") {
		t.Errorf("kafka-configs --describe --all topic failed:\n%s", r)
	}
	// The synonyms differ: Kafka names a topic default by its broker
	// config (DEFAULT_CONFIG:log.retention.bytes=-1), kiggy by the topic
	// config (DEFAULT_CONFIG:retention.bytes=-1).
	for _, line := range []string{
		`retention\.ms=3600000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:retention\.ms=3600000\}`,
		`cleanup\.policy=delete sensitive=false synonyms=\{DEFAULT_CONFIG:(log\.)?cleanup\.policy=delete\}`,
		`compression\.type=producer sensitive=false synonyms=\{DEFAULT_CONFIG:compression\.type=producer\}`,
		`retention\.bytes=-1 sensitive=false synonyms=\{DEFAULT_CONFIG:(log\.)?retention\.bytes=-1\}`,
		`min\.insync\.replicas=1 sensitive=false synonyms=\{.*\}`,
	} {
		if !regexp.MustCompile(`(?m)^  ` + line + `$`).MatchString(r.stdout) {
			t.Errorf("kafka-configs --describe --all topic: no line matching %q:\n%s", line, r)
		}
	}

	broker := fmt.Sprint(nodeID)
	r = adminTool(t, tg, configCommand, "--describe", "--entity-type", "brokers", "--entity-name", broker)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Dynamic configs for broker "+broker+" are:\n") {
		t.Errorf("kafka-configs --describe broker %s failed:\n%s", broker, r)
	}
	// Without a name the tool lists the brokers first (Admin
	// describeCluster: DescribeCluster).
	r = adminTool(t, tg, configCommand, "--describe", "--entity-type", "brokers")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Dynamic configs for broker "+broker+" are:\n") ||
		!strings.Contains(r.stdout, "\nDefault configs for brokers in the cluster are:\n") {
		t.Errorf("kafka-configs --describe --entity-type brokers: want broker %s and the cluster defaults:\n%s", broker, r)
	}
	r = adminTool(t, tg, configCommand, "--describe", "--entity-type", "brokers", "--entity-name", broker, "--all")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "All configs for broker "+broker+" are:\n") ||
		!regexp.MustCompile(`(?m)^  num\.partitions=1 sensitive=false synonyms=\{.*\}$`).MatchString(r.stdout) {
		t.Errorf("kafka-configs --describe --all broker %s: want num.partitions=1 among the configs:\n%s", broker, r)
	}

	alter := []string{"--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config", "retention.ms=7200000"}
	if r := adminTool(t, tg, configCommand, alter...); r.code != 0 {
		t.Errorf("kafka-configs --alter failed:\n%s", r)
	}
}
