package bridge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestAutoCreateTopicsLimit: Metadata naming new topics auto-creates them
// until the log holds AutoCreateTopicsLimit topics; past it the topics get
// UNKNOWN_TOPIC_OR_PARTITION (nothing created, counted by
// kiggy_topics_auto_create_refused_total), the connection keeps working,
// existing topics are still described, and CreateTopics is not capped.
func TestAutoCreateTopicsLimit(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{AutoCreateTopicsLimit: 5}})
	gw.CreateTopic(t, "explicit", 1)
	rc := dialRaw(t, gw.Addr)
	metadata := func(names ...string) map[string]int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 9
		req.AllowAutoTopicCreation = true
		for _, n := range names {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = req.Version
		rc.recv(rc.send(req), resp)
		codes := map[string]int16{}
		for _, rt := range resp.Topics {
			codes[*rt.Topic] = rt.ErrorCode
		}
		return codes
	}
	var names []string
	for i := range 8 {
		names = append(names, fmt.Sprintf("auto-%d", i))
	}
	codes := metadata(names...)
	created, refused := 0, 0
	for _, n := range names {
		switch codes[n] {
		case 0:
			created++
		case 3:
			refused++
		default:
			t.Errorf("%s: code %d", n, codes[n])
		}
	}
	// "explicit" is one of the five.
	if created != 4 || refused != 4 {
		t.Fatalf("Metadata of 8 new topics beside 1: %v, want 4 created and 4 UNKNOWN_TOPIC_OR_PARTITION", codes)
	}
	if c := metadata("explicit", "auto-0", "auto-7"); c["explicit"] != 0 || c["auto-0"] != 0 || c["auto-7"] != 3 {
		t.Fatalf("existing topics and a refused one: %v", c)
	}
	if got := metricValue(t, gw.Metrics(), `kiggy_topics_auto_create_refused_total{reason="limit"}`); got != 5 {
		t.Errorf("refused metric %v, want 5", got)
	}
	gw.CreateTopic(t, "explicit-2", 1) // CreateTopics is not capped
	rc.stillUsable()
}

// TestIggyTopicsPerStream: Iggy holds at most so many topics in a stream
// (4,096; the iggytest model here set to 4): CreateTopics past it answers
// POLICY_VIOLATION naming the limit (not INVALID_CONFIG: the request is
// fine, the cluster is full), Metadata auto-creation past it answers
// UNKNOWN_TOPIC_OR_PARTITION as past --auto-create-topics-limit and counts
// it as backend_limit, and a deletion makes room again.
func TestIggyTopicsPerStream(t *testing.T) {
	srv := iggytest.New(iggytest.Config{MaxTopicsPerStream: 4})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	gw := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	rc := dialRaw(t, gw.Addr)
	create := func(names ...string) map[string]kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 30_000
		for _, n := range names {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, 1, 1
			req.Topics = append(req.Topics, rt)
		}
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.Version = req.Version
		rc.recv(rc.send(req), resp)
		out := map[string]kmsg.CreateTopicsResponseTopic{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = rt
		}
		return out
	}
	got := create("s0", "s1", "s2", "s3", "s4", "s5")
	for i := range 6 {
		n := fmt.Sprintf("s%d", i)
		r := got[n]
		switch want := int16(0); {
		case i >= 4:
			want = 44
			if r.ErrorCode != want || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "at most 4,096 topics") {
				t.Fatalf("%s past the stream's topics: error %d %v, want POLICY_VIOLATION (44) naming Iggy's limit", n, r.ErrorCode, r.ErrorMessage)
			}
		case r.ErrorCode != want:
			t.Fatalf("%s: error %d, want 0", n, r.ErrorCode)
		}
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 9, true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto-full")
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = req.Version
	rc.recv(rc.send(req), resp)
	if code := resp.Topics[0].ErrorCode; code != 3 {
		t.Fatalf("Metadata auto-creating past the stream's topics: error %d, want UNKNOWN_TOPIC_OR_PARTITION (3)", code)
	}
	if got := metricValue(t, gw.Metrics(), `kiggy_topics_auto_create_refused_total{reason="backend_limit"}`); got != 1 {
		t.Errorf("backend_limit refusals %v, want 1", got)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version, del.TopicNames, del.TimeoutMillis = 5, []string{"s0"}, 30_000
	dresp := kmsg.NewPtrDeleteTopicsResponse()
	dresp.Version = 5
	rc.recv(rc.send(del), dresp)
	if dresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics s0: error %d", dresp.Topics[0].ErrorCode)
	}
	if r := create("s6")["s6"]; r.ErrorCode != 0 {
		t.Fatalf("after a deletion: error %d, want the topic created", r.ErrorCode)
	}
	rc.stillUsable()
}
