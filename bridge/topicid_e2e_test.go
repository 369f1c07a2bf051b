package bridge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// topicIDOf returns the id a Metadata request (the highest version both
// sides serve; not kadm's, which answers from the client's cache) gives
// topic, failing the test when it is missing or all zero.
func topicIDOf(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version < 10 || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata %s: v%d %+v", topic, resp.Version, resp.Topics)
	}
	id := resp.Topics[0].TopicID
	if id == ([16]byte{}) {
		t.Fatalf("metadata %s: all-zero topic id", topic)
	}
	return id
}

// metadataByID sends a Metadata v12+ naming topics by id only.
func metadataByID(ctx context.Context, t *testing.T, cl *kgo.Client, ids ...[16]byte) []kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, id := range ids {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version < 12 {
		t.Fatalf("metadata v%d: topics by id need v12+", resp.Version)
	}
	return resp.Topics
}

// deleteByID sends a DeleteTopics v6 naming one topic by id and returns
// its answer.
func deleteByID(ctx context.Context, t *testing.T, cl *kgo.Client, id [16]byte) kmsg.DeleteTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.TopicID = id
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version < 6 || len(resp.Topics) != 1 {
		t.Fatalf("delete by id: v%d %+v", resp.Version, resp.Topics)
	}
	return resp.Topics[0]
}

// TestTopicIDs (KIP-516): every topic has a non-zero id, the same in
// CreateTopics, in every Metadata and in a lookup by id, another one after
// a delete and re-create of the name; an unknown id is UNKNOWN_TOPIC_ID
// (100) in Metadata and DeleteTopics; DeleteTopics v6 deletes by id. On both
// backends (KIGGY_TEST_BACKEND=iggy).
func TestTopicIDs(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{NoAutoCreate: true})
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	created, err := adm.CreateTopic(ctx, 3, -1, nil, "ids")
	if err != nil || created.Err != nil {
		t.Fatalf("create: %v %v", err, created.Err)
	}
	id := topicIDOf(ctx, t, cl, "ids")
	if [16]byte(created.ID) != id {
		t.Fatalf("CreateTopics gave id %v, Metadata %v", created.ID, id)
	}
	if again := topicIDOf(ctx, t, cl, "ids"); again != id {
		t.Fatalf("second Metadata: id %v, first %v", again, id)
	}
	gw.CreateTopic(t, "other", 1) // straight in the backend, as an Iggy-native client would
	other := topicIDOf(ctx, t, cl, "other")
	if other == id {
		t.Fatalf("two topics share id %v", id)
	}
	all, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl) // null topics: all
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range all.Topics {
		if want := map[string][16]byte{"ids": id, "other": other}[*at.Topic]; at.TopicID != want {
			t.Errorf("all-topics Metadata: %s has id %x, want %x", *at.Topic, at.TopicID, want)
		}
	}
	for _, x := range [][16]byte{id, other} {
		if x[0]>>2 == 62 || x[6]>>4 != 4 || x[8]>>6 != 2 {
			t.Errorf("id %x is not a version 4 UUID Kafka would draw", x)
		}
	}

	// Metadata by id, a known and an unknown one.
	unknown := [16]byte{0x12, 15: 0x34}
	got := metadataByID(ctx, t, cl, id, unknown)
	if len(got) != 2 {
		t.Fatalf("metadata by id: %d topics", len(got))
	}
	if g := got[0]; g.ErrorCode != 0 || g.Topic == nil || *g.Topic != "ids" || g.TopicID != id || len(g.Partitions) != 3 {
		t.Fatalf("metadata by id: %+v", g)
	}
	if g := got[1]; g.ErrorCode != 100 || g.Topic != nil || g.TopicID != unknown {
		t.Fatalf("metadata by unknown id: code %d name %v id %x", g.ErrorCode, g.Topic, g.TopicID)
	}

	// Delete and re-create the name: another id; the old one is unknown.
	if r, err := adm.DeleteTopic(ctx, "ids"); err != nil || r.Err != nil {
		t.Fatalf("delete: %v %v", err, r.Err)
	}
	if got := metadataByID(ctx, t, cl, id); got[0].ErrorCode != 100 {
		t.Fatalf("metadata by a deleted topic's id: code %d", got[0].ErrorCode)
	}
	if r, err := adm.CreateTopic(ctx, 3, -1, nil, "ids"); err != nil || r.Err != nil {
		t.Fatalf("re-create: %v %v", err, r.Err)
	}
	recreated := topicIDOf(ctx, t, cl, "ids")
	if recreated == id {
		t.Fatalf("re-created topic kept id %v", id)
	}

	// DeleteTopics v6 by id.
	if r := deleteByID(ctx, t, cl, unknown); r.ErrorCode != 100 {
		t.Fatalf("delete by unknown id: code %d", r.ErrorCode)
	}
	if r := deleteByID(ctx, t, cl, id); r.ErrorCode != 100 {
		t.Fatalf("delete by a deleted topic's id: code %d", r.ErrorCode)
	}
	if r := deleteByID(ctx, t, cl, other); r.ErrorCode != 0 || r.Topic == nil || *r.Topic != "other" || r.TopicID != other {
		t.Fatalf("delete by id: code %d name %v id %x", r.ErrorCode, r.Topic, r.TopicID)
	}
	if _, err := gw.Log.Topic(ctx, "other"); err == nil {
		t.Fatal("the topic deleted by id is still there")
	}
	if _, err := gw.Log.Topic(ctx, "ids"); err != nil {
		t.Fatalf("deleting by id took another topic: %v", err)
	}
}

// TestTopicIDsStableOverIggy: over one Iggy server, two gateways at once
// give a topic the same id, and a gateway started after both stopped gives
// it again; nothing but the Iggy server is shared.
func TestTopicIDsStableOverIggy(t *testing.T) {
	srv := iggytest.New(iggytest.Config{})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	idOn := func(gw *kiggytest.Gateway, topic string) [16]byte {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return topicIDOf(ctx, t, cl, topic)
	}
	first := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	first.CreateTopic(t, "kept", 2)
	second := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	id := idOn(first, "kept")
	if got := idOn(second, "kept"); got != id {
		t.Fatalf("two gateways: %v and %v", id, got)
	}
	first.Stop()
	second.Stop()
	third := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	if got := idOn(third, "kept"); got != id {
		t.Fatalf("after a restart: %v, before %v", got, id)
	}
}

// describeTopicPartitions sends one DescribeTopicPartitions v0.
func describeTopicPartitions(ctx context.Context, t *testing.T, cl *kgo.Client, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, name := range topics {
		req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: name})
	}
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestDescribeTopicPartitions (KIP-966): every topic (none named) in name
// order with its id, paged by ResponsePartitionLimit with the cursor
// Kafka's KRaftMetadataCache.describeTopicResponse gives (mid-topic, then at
// the start of the next topic); named topics with an unknown one; a cursor
// not among the names is INVALID_REQUEST. On both backends.
func TestDescribeTopicPartitions(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{NoAutoCreate: true})
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	parts := map[string]int32{"dtp-a": 3, "dtp-b": 5, "dtp-c": 1}
	ids := map[string][16]byte{}
	for name, n := range parts {
		gw.CreateTopic(t, name, n)
		ids[name] = topicIDOf(ctx, t, cl, name)
	}
	type seen struct {
		topic string
		parts []int32
	}
	check := func(what string, resp *kmsg.DescribeTopicPartitionsResponse, want []seen, next *kmsg.DescribeTopicPartitionsResponseNextCursor) {
		t.Helper()
		var got []seen
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 || rt.Topic == nil || rt.TopicID != ids[*rt.Topic] {
				t.Fatalf("%s: topic %+v (id want %x)", what, rt, ids[*rt.Topic])
			}
			s := seen{topic: *rt.Topic}
			for _, p := range rt.Partitions {
				if p.ErrorCode != 0 || p.LeaderID != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
					t.Fatalf("%s: %s partition %+v", what, *rt.Topic, p)
				}
				s.parts = append(s.parts, p.Partition)
			}
			got = append(got, s)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: described %v, want %v", what, got, want)
		}
		if (next == nil) != (resp.NextCursor == nil) || next != nil && (next.Topic != resp.NextCursor.Topic || next.Partition != resp.NextCursor.Partition) {
			t.Fatalf("%s: next cursor %+v, want %+v", what, resp.NextCursor, next)
		}
	}

	check("all", describeTopicPartitions(ctx, t, cl, 2000, nil),
		[]seen{{"dtp-a", []int32{0, 1, 2}}, {"dtp-b", []int32{0, 1, 2, 3, 4}}, {"dtp-c", []int32{0}}}, nil)
	// Pages of 4 partitions, as the Java Admin client follows them.
	check("page 1", describeTopicPartitions(ctx, t, cl, 4, nil),
		[]seen{{"dtp-a", []int32{0, 1, 2}}, {"dtp-b", []int32{0}}}, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "dtp-b", Partition: 1})
	check("page 2", describeTopicPartitions(ctx, t, cl, 4, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "dtp-b", Partition: 1}),
		[]seen{{"dtp-b", []int32{1, 2, 3, 4}}}, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "dtp-c"})
	check("page 3", describeTopicPartitions(ctx, t, cl, 4, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "dtp-c"}),
		[]seen{{"dtp-c", []int32{0}}}, nil)

	named := describeTopicPartitions(ctx, t, cl, 2000, nil, "dtp-c", "dtp-missing", "dtp-a")
	if len(named.Topics) != 3 || *named.Topics[0].Topic != "dtp-a" || *named.Topics[1].Topic != "dtp-c" ||
		*named.Topics[2].Topic != "dtp-missing" || named.Topics[2].ErrorCode != 3 || named.Topics[0].TopicID != ids["dtp-a"] {
		t.Fatalf("named topics: %+v", named.Topics)
	}
	bad := describeTopicPartitions(ctx, t, cl, 2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "dtp-b"}, "dtp-a")
	if len(bad.Topics) != 1 || bad.Topics[0].ErrorCode != 42 {
		t.Fatalf("cursor not among the names: %+v", bad.Topics)
	}
}
