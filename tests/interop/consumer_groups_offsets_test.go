package interop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// offsetsPerPartition is how many records groupToolSetup writes to each
// partition; record i of a partition has CreateTime base + i×10 min.
const offsetsPerPartition = 10

// groupToolSetup creates a 2-partition topic, writes offsetsPerPartition
// records to each partition, record i stamped base + i×10 min with base two
// hours ago, and has a franz-go group member consume everything, commit
// and leave, so that the group is empty with its offsets at the ends. It
// returns the topic, the group and base.
func groupToolSetup(t *testing.T, tg target) (topic, group string, base time.Time) {
	t.Helper()
	topic = topicName(t)
	group = "tool-" + topic
	tg.CreateTopic(t, topic, 2)
	base = time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond)
	var rs []*kgo.Record
	for p := range int32(2) {
		for i := range offsetsPerPartition {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v-%d-%d", p, i),
				Timestamp: base.Add(time.Duration(i) * 10 * time.Minute)})
		}
	}
	// The records are stamped in the past, which kgo would count against
	// its delivery timeout: none here.
	produceFranz(t, tg.Addr(), rs, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(0))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	for got := 0; got < 2*offsetsPerPartition; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			cl.Close()
			t.Fatalf("group member consumed %d of %d records: %v", got, 2*offsetsPerPartition, err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		cl.Close()
		t.Fatalf("commit: %v", err)
	}
	cl.Close() // leaves the group: it is empty
	wantCommitted(t, tg, "after the member committed", group, topic, offsetsPerPartition, offsetsPerPartition)
	return topic, group, base
}

// wantCommitted checks group's committed offsets of topic's partitions 0
// and 1 with kadm (OffsetFetch); -1 is no committed offset.
func wantCommitted(t *testing.T, tg target, step, group, topic string, want0, want1 int64) {
	t.Helper()
	offs, err := fetchOffsets(tg, group)
	if err != nil {
		t.Fatalf("%s: fetching the offsets of group %s: %v", step, group, err)
	}
	for p, want := range []int64{want0, want1} {
		got := int64(-1)
		if o, ok := offs.Lookup(topic, int32(p)); ok {
			if o.Err != nil {
				t.Errorf("%s: %s/%d: %v", step, topic, p, o.Err)
			}
			got = o.At
		}
		if got != want {
			t.Errorf("%s: group %s committed offset of %s/%d = %d, want %d", step, group, topic, p, got, want)
		}
	}
}

// TestConsumerGroupsResetOffsets resets an empty group's committed offsets
// with kafka-consumer-groups --reset-offsets --execute (Admin client:
// DescribeGroups, ListOffsets by timestamp, OffsetFetch, OffsetCommit with
// generation −1 and no member id) in every mode, checking the committed
// offsets after each with kadm.
func TestConsumerGroupsResetOffsets(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	topic, group, base := groupToolSetup(t, tg)
	reset := func(step string, want0, want1 int64, scope string, mode ...string) {
		t.Helper()
		args := append([]string{"--reset-offsets", "--group", group, "--topic", scope, "--execute"}, mode...)
		r := adminTool(t, tg, consumerGroupCommand, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "NEW-OFFSET") || strings.Contains(r.stdout+r.stderr, "Error") {
			t.Errorf("kafka-consumer-groups %s: want exit 0 and the NEW-OFFSET table:\n%s", strings.Join(args, " "), r)
		}
		wantCommitted(t, tg, step, group, topic, want0, want1)
	}
	reset("--to-earliest", 0, 0, topic, "--to-earliest")
	reset("--to-latest", offsetsPerPartition, offsetsPerPartition, topic, "--to-latest")
	reset("--to-offset 4", 4, 4, topic, "--to-offset", "4")
	reset("--shift-by -2 of partition 0", 2, 4, topic+":0", "--shift-by", "-2")
	// The first record at or after base+25 min is record 3.
	reset("--to-datetime", 3, 3, topic, "--to-datetime", base.Add(25*time.Minute).UTC().Format("2006-01-02T15:04:05.000Z"))
	// now−65 min is base+55 min: the first record at or after it is record 6.
	reset("--by-duration PT65M", 6, 6, topic, "--by-duration", "PT65M")
	reset("--to-offset 8 of partition 1", 6, 8, topic+":1", "--to-offset", "8")
	reset("--to-current", 6, 8, topic, "--to-current")
	// The tool's own view agrees.
	r := adminTool(t, tg, consumerGroupCommand, "--describe", "--group", group)
	for p, want := range []string{"6 10 4", "8 10 2"} {
		found := false
		for line := range strings.Lines(r.stdout) {
			f := strings.Fields(line)
			if len(f) == 9 && f[0] == group && f[1] == topic && f[2] == fmt.Sprint(p) {
				found = strings.Join(f[3:6], " ") == want
			}
		}
		if !found {
			t.Errorf("kafka-consumer-groups --describe %s/%d: want CURRENT-OFFSET LOG-END-OFFSET LAG %q:\n%s", topic, p, want, r)
		}
	}
}

// TestConsumerGroupsDeleteOffsets deletes an empty group's committed
// offsets with kafka-consumer-groups --delete-offsets (OffsetDelete): first
// of one partition (--topic T:0), then of the whole topic (--topic T),
// checking with kadm what is left after each. While a member consumes the
// topic, the tool reports GROUP_SUBSCRIBED_TO_TOPIC and nothing is deleted.
func TestConsumerGroupsDeleteOffsets(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	topic, group, _ := groupToolSetup(t, tg)

	r := adminTool(t, tg, consumerGroupCommand, "--delete-offsets", "--group", group, "--topic", topic+":0")
	if r.code != 0 || !strings.Contains(r.stdout, "Request succeeded for deleting offsets from group "+group+".") {
		t.Errorf("kafka-consumer-groups --delete-offsets --topic %s:0: want exit 0 and success:\n%s", topic, r)
	}
	wantCommitted(t, tg, "--delete-offsets of partition 0", group, topic, -1, offsetsPerPartition)

	// A live member subscribed to the topic.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	polled := make(chan struct{})
	go func() { // the member joins and heartbeats while it polls
		defer close(polled)
		for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
		}
	}()
	defer func() { cl.Close(); <-polled }()
	if !testtools.EventuallyEvery(time.Until(deadlineOf(ctx)), 100*time.Millisecond, func() bool { return groupStable(ctx, cl, group) }) {
		t.Fatal("the member never got its assignment")
	}
	r = adminTool(t, tg, consumerGroupCommand, "--delete-offsets", "--group", group, "--topic", topic)
	if !strings.Contains(r.stdout+r.stderr, "GroupSubscribedToTopicException") {
		t.Errorf("kafka-consumer-groups --delete-offsets while a member consumes %s: want GROUP_SUBSCRIBED_TO_TOPIC:\n%s", topic, r)
	}
	wantCommitted(t, tg, "--delete-offsets while subscribed", group, topic, -1, offsetsPerPartition)
	cl.Close()
	<-polled

	r = adminTool(t, tg, consumerGroupCommand, "--delete-offsets", "--group", group, "--topic", topic)
	if r.code != 0 || !strings.Contains(r.stdout, "Request succeeded for deleting offsets from group "+group+".") {
		t.Errorf("kafka-consumer-groups --delete-offsets --topic %s: want exit 0 and success:\n%s", topic, r)
	}
	wantCommitted(t, tg, "--delete-offsets of the topic", group, topic, -1, -1)
}

// groupStable reports whether group's DescribeGroups state is Stable.
func groupStable(ctx context.Context, cl *kgo.Client, group string) bool {
	d, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	return err == nil && d[group].State == "Stable"
}
