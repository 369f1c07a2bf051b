package interop

import (
	"context"
	"testing"
	"time"

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
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
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

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
