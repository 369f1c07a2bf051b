package interop

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopicsPartitionsPerRequest: a CreateTopics request that would
// create more than 10,000 partitions in all fails every one of its topics
// with POLICY_VIOLATION and Kafka 4.4's message, validate_only or not, and
// creates none of them; so does one whose creations would write more than
// 10,000 metadata records (a topic's, one a partition). The same test runs
// against Kafka 4.4.
func TestCreateTopicsPartitionsPerRequest(t *testing.T) {
	tg := newTarget(t)
	cl, ctx := requestClient(t, tg.Addr(), time.Minute)
	create := func(validateOnly bool, parts ...int32) []kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly = 30_000, validateOnly
		for i, n := range parts {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "per-request-"+string(rune('a'+i)), n, -1
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		return resp.Topics
	}
	const kafkas = "Excessively large number of partitions per request."
	for _, validateOnly := range []bool{true, false} {
		for _, rt := range create(validateOnly, 6000, 4001) {
			if rt.ErrorCode != 44 || rt.ErrorMessage == nil || *rt.ErrorMessage != kafkas {
				t.Errorf("%s on %s (validate_only %v): code %d, message %v; want POLICY_VIOLATION (44), %q",
					rt.Topic, tg.Name(), validateOnly, rt.ErrorCode, rt.ErrorMessage, kafkas)
			}
		}
	}
	// Within 10,000 partitions, the records the creations would write are
	// bounded at 10,000 too: 10,000 partitions and their 2 topics are
	// 10,002.
	const records = "Unable to perform excessively large batch operation."
	for _, rt := range create(true, 6000, 4000) {
		if rt.ErrorCode != 44 || deref(rt.ErrorMessage) != records {
			t.Errorf("%s on %s: 10,000 partitions validate_only: code %d, message %q; want POLICY_VIOLATION (44), %q", rt.Topic, tg.Name(), rt.ErrorCode, deref(rt.ErrorMessage), records)
		}
	}
	// Nothing was created: both names are free, and 9,998 fit.
	for _, rt := range create(true, 6000, 3998) {
		if rt.ErrorCode != 0 {
			t.Errorf("%s on %s: 9,998 partitions validate_only: code %d, message %q", rt.Topic, tg.Name(), rt.ErrorCode, deref(rt.ErrorMessage))
		}
	}
	// A topic that exists writes no records: beside it, 9,998 new
	// partitions pass (10,002 records if it counted).
	if rt := create(false, 2)[0]; rt.ErrorCode != 0 {
		t.Fatalf("%s on %s: code %d, message %q", rt.Topic, tg.Name(), rt.ErrorCode, deref(rt.ErrorMessage))
	}
	got := create(true, 2, 9998)
	if got[0].ErrorCode != 36 || got[1].ErrorCode != 0 {
		t.Errorf("on %s: 9,998 new partitions beside a topic of 2 that exists: codes %d (%q), %d (%q); want TOPIC_ALREADY_EXISTS (36), 0",
			tg.Name(), got[0].ErrorCode, deref(got[0].ErrorMessage), got[1].ErrorCode, deref(got[1].ErrorMessage))
	}
}

// requestClient is a franz-go client of addr for raw requests, and a
// context that ends after timeout; both end with the test.
func requestClient(t *testing.T, addr string, timeout time.Duration, opts ...kgo.Opt) (*kgo.Client, context.Context) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return cl, ctx
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// TestCreatePartitionsPerRequest: a CreatePartitions request adding more
// than 10,000 partitions to the topics that exist fails every topic it
// names (one that does not exist too) with POLICY_VIOLATION and Kafka
// 4.4's message; a topic that does not exist adds nothing. The same test
// runs against Kafka 4.4.
func TestCreatePartitionsPerRequest(t *testing.T) {
	tg := newTarget(t)
	tg.CreateTopic(t, "grow-a", 1)
	tg.CreateTopic(t, "grow-b", 1)
	cl, ctx := requestClient(t, tg.Addr(), time.Minute)
	const kafkas = "Excessively large number of additional partitions per request."
	for _, c := range []struct {
		counts map[string]int32
		want   map[string]int16
	}{
		{map[string]int32{"grow-a": 10001}, map[string]int16{"grow-a": 0}},
		{map[string]int32{"grow-a": 10002}, map[string]int16{"grow-a": 44}},
		{map[string]int32{"grow-a": 6000, "grow-b": 6000}, map[string]int16{"grow-a": 44, "grow-b": 44}},
		{map[string]int32{"grow-a": 10003, "grow-nope": 3}, map[string]int16{"grow-a": 44, "grow-nope": 44}},
		{map[string]int32{"grow-a": 5, "grow-nope": 20000}, map[string]int16{"grow-a": 0, "grow-nope": 3}},
	} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly = 30_000, true
		for name, n := range c.counts {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = name, n
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("CreatePartitions: %v", err)
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != c.want[rt.Topic] || (rt.ErrorCode == 44 && deref(rt.ErrorMessage) != kafkas) {
				t.Errorf("on %s, %v: %s answered %d %q; want %d", tg.Name(), c.counts, rt.Topic, rt.ErrorCode, deref(rt.ErrorMessage), c.want[rt.Topic])
			}
		}
	}
}

// TestAdminDuplicateTopics: a topic named twice in one CreateTopics,
// CreatePartitions or DeleteTopics request (by name or by id) is answered
// once, INVALID_REQUEST with Kafka 4.4's message, and nothing is done with
// it; the request's other topics are served. A resource named twice in
// IncrementalAlterConfigs has each of its entries answered so. The same test runs against
// Kafka 4.4.
func TestAdminDuplicateTopics(t *testing.T) {
	tg := newTarget(t)
	tg.CreateTopic(t, "dup-held", 1)
	cl, ctx := requestClient(t, tg.Addr(), time.Minute)
	type answer struct {
		code int16
		msg  string
	}
	check := func(what string, got map[string][]answer, want map[string]answer) {
		t.Helper()
		for name, w := range want {
			if len(got[name]) != 1 || got[name][0] != w {
				t.Errorf("on %s, %s: %s answered %v; want once %v", tg.Name(), what, name, got[name], w)
			}
		}
	}
	dup := answer{42, "Duplicate topic name."}
	create := func(validateOnly bool, names ...string) map[string][]answer {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly = 30_000, validateOnly
		for _, n := range names {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, 1, -1
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		out := map[string][]answer{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = append(out[rt.Topic], answer{rt.ErrorCode, deref(rt.ErrorMessage)})
		}
		return out
	}
	check("CreateTopics validate_only", create(true, "dup-new", "dup-new", "dup-other"),
		map[string]answer{"dup-new": dup, "dup-other": {0, "<null>"}})
	check("CreateTopics", create(false, "dup-new", "dup-new"), map[string]answer{"dup-new": dup})
	check("CreateTopics after", create(true, "dup-new"), map[string]answer{"dup-new": {0, "<null>"}}) // not created

	grow := kmsg.NewPtrCreatePartitionsRequest()
	grow.TimeoutMillis = 30_000
	for range 2 {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "dup-held", 3
		grow.Topics = append(grow.Topics, rt)
	}
	gresp, err := grow.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	got := map[string][]answer{}
	for _, rt := range gresp.Topics {
		got[rt.Topic] = append(got[rt.Topic], answer{rt.ErrorCode, deref(rt.ErrorMessage)})
	}
	check("CreatePartitions", got, map[string]answer{"dup-held": dup})

	// IncrementalAlterConfigs answers every entry of a resource named
	// twice, and alters nothing.
	incr := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, v := range []string{"100000", "200000"} {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "dup-held"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr(v)
		r.Configs = append(r.Configs, c)
		incr.Resources = append(incr.Resources, r)
	}
	iresp, err := incr.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	resourceDup := answer{42, "Each resource must appear at most once."}
	if len(iresp.Resources) != 2 {
		t.Errorf("on %s: IncrementalAlterConfigs of one topic twice answered %d resources, want 2", tg.Name(), len(iresp.Resources))
	}
	for _, r := range iresp.Resources {
		if got := (answer{r.ErrorCode, deref(r.ErrorMessage)}); got != resourceDup {
			t.Errorf("on %s: IncrementalAlterConfigs of one topic twice: %s answered %v, want %v", tg.Name(), r.ResourceName, got, resourceDup)
		}
	}
	adm := kadm.NewClient(cl)
	if rc := topicConfigsOf(t, adm, "dup-held")["retention.ms"]; rc.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("on %s: retention.ms of dup-held is %s from %v after a refused alteration, want the default", tg.Name(), valueOf(rc), rc.Source)
	}
	details, err := adm.ListTopics(ctx, "dup-held")
	if err != nil || details["dup-held"].Err != nil {
		t.Fatalf("describe dup-held: %v %v", err, details["dup-held"].Err)
	}
	if n := len(details["dup-held"].Partitions); n != 1 {
		t.Errorf("on %s: dup-held has %d partitions after a duplicated CreatePartitions, want 1", tg.Name(), n)
	}
	id := details["dup-held"].ID
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis = 30_000
	for _, byName := range []bool{true, true, false, false} {
		d := kmsg.NewDeleteTopicsRequestTopic()
		if byName {
			d.Topic = kmsg.StringPtr("dup-held")
		} else {
			d.TopicID = id
		}
		del.Topics = append(del.Topics, d)
	}
	dresp, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	got = map[string][]answer{}
	for _, rt := range dresp.Topics {
		key := deref(rt.Topic)
		if rt.TopicID != [16]byte{} && rt.Topic == nil {
			key = "id"
		}
		got[key] = append(got[key], answer{rt.ErrorCode, deref(rt.ErrorMessage)})
	}
	check("DeleteTopics", got, map[string]answer{"dup-held": dup, "id": {42, "Duplicate topic id."}})
	if details, err := adm.ListTopics(ctx, "dup-held"); err != nil || details["dup-held"].Err != nil {
		t.Errorf("on %s: dup-held after a duplicated DeleteTopics: %v %v, want it kept", tg.Name(), err, details["dup-held"].Err)
	}
}

// TestCreateTopicsRecordsCountConfigs: each config a new topic sets is one
// more of the 10,000 records a CreateTopics may write: two topics of 4,998
// partitions with one config each are 10,000 and pass (validate_only), with
// two configs each 10,002 and fail every topic. The same test runs against
// Kafka 4.4.
func TestCreateTopicsRecordsCountConfigs(t *testing.T) {
	tg := newTarget(t)
	cl, ctx := requestClient(t, tg.Addr(), time.Minute)
	configs := []struct{ name, value string }{{"retention.ms", "100000"}, {"cleanup.policy", "delete"}}
	for n, want := range map[int]int16{1: 0, 2: 44} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly = 30_000, true
		for _, name := range []string{"records-a", "records-b"} {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 4998, -1
			for _, c := range configs[:n] {
				rc := kmsg.NewCreateTopicsRequestTopicConfig()
				rc.Name, rc.Value = c.name, kmsg.StringPtr(c.value)
				rt.Configs = append(rt.Configs, rc)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != want {
				t.Errorf("on %s, %d config(s) a topic: %s answered %d %q, want %d", tg.Name(), n, rt.Topic, rt.ErrorCode, deref(rt.ErrorMessage), want)
			}
		}
	}
}

// TestDeleteRecordsPartitionTwice: a DeleteRecords naming a partition twice
// (in two entries of its topic) is answered once, in one entry of the topic,
// and the partition's log start moves to the last offset named, as Kafka
// 4.4 does (its KafkaApis keeps one offset per partition); kiggy applied
// each in turn, leaving the first.
func TestDeleteRecordsPartitionTwice(t *testing.T) {
	tg := newTarget(t)
	const topic = "delete-records-twice"
	tg.CreateTopic(t, topic, 2)
	p, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cl, ctx := requestClient(t, tg.Addr(), time.Minute)
	for i := range 10 {
		for part := range int32(2) {
			if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte{byte(i)}}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 30_000
	for _, spec := range []struct {
		partition int32
		offset    int64
	}{{0, 5}, {1, 2}, {0, 3}} {
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = spec.partition, spec.offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32][]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Errorf("on %s, partition %d answered %d", tg.Name(), rp.Partition, rp.ErrorCode)
			}
			got[rp.Partition] = append(got[rp.Partition], rp.LowWatermark)
		}
	}
	if len(resp.Topics) != 1 || !reflect.DeepEqual(got, map[int32][]int64{0: {3}, 1: {2}}) {
		t.Errorf("on %s, %d topic entries, low watermarks by partition %v; want one entry, partition 0 once at 3, partition 1 once at 2",
			tg.Name(), len(resp.Topics), got)
	}
}
