package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// The replica placement tools (Java Admin client 4.x).
const (
	leaderElectionCommand     = "org.apache.kafka.tools.LeaderElectionCommand"
	reassignPartitionsCommand = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
)

// TestLeaderElectionCommand drives kafka-leader-election (ElectLeaders):
// with every partition led by its one replica, a preferred election of all
// partitions, and of one named partition, elects nothing and exits 0; an
// unknown partition fails with Kafka's UnknownTopicOrPartitionException.
// The same holds against Kafka 4.4 (KIGGY_INTEROP_TARGET=kafka).
func TestLeaderElectionCommand(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	topic := topicName(t)
	topicCommandCreate(t, tg, topic, 2)

	r := adminTool(t, tg, leaderElectionCommand, "--election-type", "preferred", "--all-topic-partitions")
	if r.code != 0 || !strings.Contains(r.stdout, "Valid replica already elected for partitions") && strings.TrimSpace(r.stdout) != "" {
		t.Errorf("kafka-leader-election --all-topic-partitions: want exit 0 and no election:\n%s", r)
	}
	r = adminTool(t, tg, leaderElectionCommand, "--election-type", "preferred", "--topic", topic, "--partition", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "Valid replica already elected for partitions "+topic+"-1") {
		t.Errorf("kafka-leader-election of %s-1: want exit 0 and \"Valid replica already elected\":\n%s", topic, r)
	}
	r = adminTool(t, tg, leaderElectionCommand, "--election-type", "unclean", "--topic", topic, "--partition", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "Valid replica already elected for partitions "+topic+"-1") {
		t.Errorf("kafka-leader-election --election-type unclean of %s-1: want exit 0 and \"Valid replica already elected\":\n%s", topic, r)
	}
	r = adminTool(t, tg, leaderElectionCommand, "--election-type", "preferred", "--topic", topic, "--partition", "7")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "UnknownTopicOrPartitionException") {
		t.Errorf("kafka-leader-election of %s-7, which does not exist: want a non-zero exit and UnknownTopicOrPartitionException:\n%s", topic, r)
	}
}

// TestReassignPartitionsCommand drives kafka-reassign-partitions
// (AlterPartitionReassignments, ListPartitionReassignments): a
// reassignment of a partition to the broker it is on completes at once,
// `--verify` reports it complete (and clears the brokers' replication
// throttles: IncrementalAlterConfigs deleting them) and `--list` shows none
// in progress; one to a broker that does not exist fails. The same holds
// against Kafka 4.4.
func TestReassignPartitionsCommand(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	topic := topicName(t)
	topicCommandCreate(t, tg, topic, 2)
	plan := func(broker int) string {
		f := filepath.Join(t.TempDir(), "plan.json")
		body := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%d]}]}`, topic, broker)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	same := plan(nodeID)
	r := adminTool(t, tg, reassignPartitionsCommand, "--execute", "--reassignment-json-file", same)
	if r.code != 0 || !strings.Contains(r.stdout, "Successfully started partition reassignment for "+topic+"-0") {
		t.Errorf("kafka-reassign-partitions --execute to broker %d: want exit 0 and \"Successfully started\":\n%s", nodeID, r)
	}
	r = adminTool(t, tg, reassignPartitionsCommand, "--verify", "--reassignment-json-file", same)
	if r.code != 0 || !strings.Contains(r.stdout, "Reassignment of partition "+topic+"-0 is completed.") {
		t.Errorf("kafka-reassign-partitions --verify: want exit 0 and \"is completed\":\n%s", r)
	}
	r = adminTool(t, tg, reassignPartitionsCommand, "--list")
	if r.code != 0 || !strings.Contains(r.stdout, "No partition reassignments found.") {
		t.Errorf("kafka-reassign-partitions --list: want exit 0 and \"No partition reassignments found.\":\n%s", r)
	}
	// The tool checks broker ids itself (DescribeCluster) before it asks.
	r = adminTool(t, tg, reassignPartitionsCommand, "--execute", "--reassignment-json-file", plan(nodeID+41))
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, fmt.Sprintf("Unknown broker id %d", nodeID+41)) {
		t.Errorf("kafka-reassign-partitions --execute to broker %d, which does not exist: want a non-zero exit and \"Unknown broker id\":\n%s", nodeID+41, r)
	}
}

// TestReassignWithThrottle drives kafka-reassign-partitions --execute
// --throttle, which sets the topic's throttled replicas and the replication
// throttles of every broker the move involves, then kafka-configs
// --describe of the broker (the throttles as DYNAMIC_BROKER_CONFIG, the
// cluster default's among the synonyms) and of the cluster default, then
// --verify, which clears them all. kiggy keeps the throttles and throttles
// nothing (it moves no replicas); the tools print line for line what they
// print against Kafka 4.4 (KIGGY_INTEROP_TARGET=kafka).
func TestReassignWithThrottle(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	topic := topicName(t)
	topicCommandCreate(t, tg, topic, 2)
	f := filepath.Join(t.TempDir(), "plan.json")
	body := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%d]}]}`, topic, nodeID)
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	broker := fmt.Sprint(nodeID)
	// A cluster default too, which the broker's own value overrides.
	defaults := []string{"--entity-type", "brokers", "--entity-default"}
	if r := adminTool(t, tg, configCommand, append([]string{"--alter", "--add-config", "leader.replication.throttled.rate=700"}, defaults...)...); r.code != 0 {
		t.Fatalf("kafka-configs --alter --entity-default:\n%s", r)
	}
	t.Cleanup(func() {
		adminTool(t, tg, configCommand, append([]string{"--alter", "--delete-config", "leader.replication.throttled.rate"}, defaults...)...)
	})
	r := adminTool(t, tg, reassignPartitionsCommand, "--execute", "--reassignment-json-file", f, "--throttle", "50000000")
	if r.code != 0 || !strings.Contains(r.stdout, "The inter-broker throttle limit was set to 50000000 B/s") ||
		!strings.Contains(r.stdout, "Successfully started partition reassignment for "+topic+"-0") {
		t.Fatalf("kafka-reassign-partitions --execute --throttle: want exit 0, the throttle set and the reassignment started:\n%s", r)
	}
	describe := func(args ...string) string {
		t.Helper()
		r := adminTool(t, tg, configCommand, append([]string{"--describe"}, args...)...)
		if r.code != 0 {
			t.Fatalf("kafka-configs --describe %v:\n%s", args, r)
		}
		return r.stdout
	}
	// The configs' order is the broker's (Kafka's is a hash map's): the
	// lines are compared as a set, the header first.
	wantOut := func(what, got, want string) {
		t.Helper()
		norm := func(s string) string {
			lines := strings.Split(s, "\n")
			slices.Sort(lines[1:])
			return strings.Join(lines, "\n")
		}
		if norm(got) != norm(want) {
			t.Errorf("%s:\n got %q\nwant %q", what, got, want)
		}
	}
	wantOut("the broker during the reassignment", describe("--entity-type", "brokers", "--entity-name", broker),
		"Dynamic configs for broker "+broker+" are:\n"+
			"  leader.replication.throttled.rate=50000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=50000000, DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=700}\n"+
			"  follower.replication.throttled.rate=50000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:follower.replication.throttled.rate=50000000}\n")
	// Kafka 4.4's cluster default also holds min.insync.replicas=1, which
	// formatting its storage set: the throttles are compared.
	throttles := func(out string) string {
		lines := strings.SplitAfter(out, "\n")
		kept := lines[:1]
		for _, l := range lines[1:] {
			if strings.Contains(l, "throttled") {
				kept = append(kept, l)
			}
		}
		return strings.Join(kept, "")
	}
	wantOut("the cluster default", throttles(describe(defaults...)),
		"Default configs for brokers in the cluster are:\n"+
			"  leader.replication.throttled.rate=700 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=700}\n")
	if out := describe("--entity-type", "topics", "--entity-name", topic); !strings.Contains(out, "leader.replication.throttled.replicas=0:"+broker+" ") {
		t.Errorf("the topic during the reassignment: want leader.replication.throttled.replicas=0:%s:\n%s", broker, out)
	}

	r = adminTool(t, tg, reassignPartitionsCommand, "--verify", "--reassignment-json-file", f)
	if r.code != 0 || !strings.Contains(r.stdout, "Clearing broker-level throttles on broker "+broker) ||
		!strings.Contains(r.stdout, "Clearing topic-level throttles on topic "+topic) {
		t.Fatalf("kafka-reassign-partitions --verify: want exit 0 and the throttles cleared:\n%s", r)
	}
	wantOut("the broker after --verify", describe("--entity-type", "brokers", "--entity-name", broker),
		"Dynamic configs for broker "+broker+" are:\n")
	if out := describe("--entity-type", "topics", "--entity-name", topic); strings.Contains(out, "throttled") {
		t.Errorf("the topic after --verify still has throttled replicas:\n%s", out)
	}
	// --verify leaves the cluster default (it clears the brokers' own).
	wantOut("the cluster default after --verify", throttles(describe(defaults...)),
		"Default configs for brokers in the cluster are:\n"+
			"  leader.replication.throttled.rate=700 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=700}\n")
}

// TestReassignmentErrors sends AlterPartitionReassignments,
// ListPartitionReassignments and ElectLeaders straight to the broker (the
// tools check some of this themselves) and checks each error code Kafka's
// controller answers: against Kafka 4.4 (KIGGY_INTEROP_TARGET=kafka) the
// same codes.
func TestReassignmentErrors(t *testing.T) {
	tg := newTarget(t)
	topic := topicName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	waitTopicReady(t, tg, topic, 2)
	broker := cl.Broker(nodeID)

	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	alter.Version = 1
	alter.AllowReplicationFactorChange = false
	part := func(p int32, replicas []int32) kmsg.AlterPartitionAssignmentsRequestTopicPartition {
		kp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		kp.Partition, kp.Replicas = p, replicas
		return kp
	}
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = topic
	at.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{
		part(0, []int32{nodeID}),              // the replica it has: done
		part(1, nil),                          // cancel: none in progress
		part(0, []int32{}),                    // empty
		part(0, []int32{nodeID, nodeID}),      // a broker twice
		part(0, []int32{nodeID + 41}),         // no such broker
		part(0, []int32{nodeID, nodeID + 41}), // two replicas, one unknown
		part(5, []int32{nodeID}),              // no such partition
	}
	missing := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	missing.Topic = "missing-" + topic
	missing.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{part(0, []int32{nodeID})}
	alter.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{at, missing}
	resp, err := broker.Request(ctx, alter)
	if err != nil {
		t.Fatal(err)
	}
	ar := resp.(*kmsg.AlterPartitionAssignmentsResponse)
	var codes []int16
	for _, tr := range ar.Topics {
		for _, p := range tr.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	const (
		none, unknown, invalidAssignment, noReassignment = 0, 3, 39, 85
	)
	want := []int16{none, noReassignment, invalidAssignment, invalidAssignment, invalidAssignment, invalidAssignment, unknown, unknown}
	if ar.ErrorCode != 0 || !slices.Equal(codes, want) {
		t.Errorf("AlterPartitionReassignments: error %d, partition codes %v, want 0 and %v (%+v)", ar.ErrorCode, codes, want, ar.Topics)
	}

	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	resp, err = broker.Request(ctx, list)
	if err != nil {
		t.Fatal(err)
	}
	if lr := resp.(*kmsg.ListPartitionReassignmentsResponse); lr.ErrorCode != 0 || len(lr.Topics) != 0 {
		t.Errorf("ListPartitionReassignments: %+v, want no error and no reassignment", lr)
	}

	elect := kmsg.NewPtrElectLeadersRequest()
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = topic, []int32{0, 1, 9}
	elect.Topics = []kmsg.ElectLeadersRequestTopic{et}
	resp, err = broker.Request(ctx, elect)
	if err != nil {
		t.Fatal(err)
	}
	er := resp.(*kmsg.ElectLeadersResponse)
	codes = nil
	for _, tr := range er.Topics {
		for _, p := range tr.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	if want := []int16{84, 84, unknown}; er.ErrorCode != 0 || !slices.Equal(codes, want) {
		t.Errorf("ElectLeaders of partitions 0, 1 and 9: error %d, codes %v, want 0 and %v", er.ErrorCode, codes, want)
	}
	elect.Topics = nil // every partition: those needing no election are left out
	resp, err = broker.Request(ctx, elect)
	if err != nil {
		t.Fatal(err)
	}
	er = resp.(*kmsg.ElectLeadersResponse)
	for _, tr := range er.Topics {
		if len(tr.Partitions) != 0 {
			t.Errorf("ElectLeaders of every partition: %s lists %+v, want none", tr.Topic, tr.Partitions)
		}
	}
}
