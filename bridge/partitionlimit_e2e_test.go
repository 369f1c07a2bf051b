package bridge_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// rawAdmin sends CreateTopics, CreatePartitions, DeleteTopics and Metadata
// on one connection and returns each topic's error code and message.
type rawAdmin struct {
	t  *testing.T
	rc *rawConn
}

type topicAnswer struct {
	code int16
	msg  string
}

func (a rawAdmin) createTopics(validateOnly bool, parts map[string]int32) map[string]topicAnswer {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis, req.ValidateOnly = 7, 30_000, validateOnly
	for name, n := range parts {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, n, -1
		req.Topics = append(req.Topics, rt)
	}
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.Version = req.Version
	a.rc.recv(a.rc.send(req), resp)
	out := map[string]topicAnswer{}
	for _, rt := range resp.Topics {
		out[rt.Topic] = topicAnswer{rt.ErrorCode, deref(rt.ErrorMessage)}
	}
	return out
}

func (a rawAdmin) createPartitions(validateOnly bool, topic string, count int32) topicAnswer {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version, req.TimeoutMillis, req.ValidateOnly = 3, 30_000, validateOnly
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrCreatePartitionsResponse()
	resp.Version = req.Version
	a.rc.recv(a.rc.send(req), resp)
	if len(resp.Topics) != 1 {
		a.t.Fatalf("CreatePartitions answered %d topics", len(resp.Topics))
	}
	return topicAnswer{resp.Topics[0].ErrorCode, deref(resp.Topics[0].ErrorMessage)}
}

func (a rawAdmin) deleteTopic(topic string) int16 {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.TimeoutMillis = 5, 30_000
	req.TopicNames = []string{topic}
	resp := kmsg.NewPtrDeleteTopicsResponse()
	resp.Version = req.Version
	a.rc.recv(a.rc.send(req), resp)
	return resp.Topics[0].ErrorCode
}

func (a rawAdmin) autoCreate(topic string) int16 {
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 9, true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = req.Version
	a.rc.recv(a.rc.send(req), resp)
	return resp.Topics[0].ErrorCode
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestMaxPartitions: the log holds at most MaxPartitions partitions.
// CreateTopics and CreatePartitions past it get POLICY_VIOLATION naming
// the cap (validate_only too, without counting), Metadata auto-creation
// gets UNKNOWN_TOPIC_OR_PARTITION, a topic that exists is still
// TOPIC_ALREADY_EXISTS, what failed is given back, a deletion makes room at
// once, the refusals and the count are in the metrics, and the connection
// keeps working.
func TestMaxPartitions(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{MaxPartitions: 10}})
	a := rawAdmin{t, dialRaw(t, gw.Addr)}
	want := func(what string, got topicAnswer, code int16) {
		t.Helper()
		if got.code != code {
			t.Fatalf("%s: code %d (%q), want %d", what, got.code, got.msg, code)
		}
		if code == 44 && !strings.Contains(got.msg, "--max-partitions") {
			t.Fatalf("%s: message %q does not name --max-partitions", what, got.msg)
		}
	}
	want("create a/6", a.createTopics(false, map[string]int32{"a": 6})["a"], 0)
	want("validate b/5", a.createTopics(true, map[string]int32{"b": 5})["b"], 44)
	want("validate b/4", a.createTopics(true, map[string]int32{"b": 4})["b"], 0)
	want("create a/5 again", a.createTopics(false, map[string]int32{"a": 5})["a"], 36)
	got := a.createTopics(false, map[string]int32{"b": 5, "c": 4})
	want("create b/5 beside c/4", got["b"], 44)
	want("create c/4 beside b/5", got["c"], 0) // 10: full
	want("grow a to 7", a.createPartitions(false, "a", 7), 44)
	want("validate a to 7", a.createPartitions(true, "a", 7), 44)
	if code := a.autoCreate("auto-1"); code != 3 {
		t.Fatalf("auto-creation at the cap: %d, want UNKNOWN_TOPIC_OR_PARTITION (3)", code)
	}
	m := gw.Metrics()
	for name, v := range map[string]float64{
		`kiggy_admin_refused_total{reason="max_partitions"}`:              4,
		`kiggy_topics_auto_create_refused_total{reason="max_partitions"}`: 1,
		`kiggy_partitions`: 10,
	} {
		if got := metricValue(t, m, name); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	if code := a.deleteTopic("c"); code != 0 {
		t.Fatalf("delete c: %d", code)
	}
	// The deletion makes room at once: 6 held, 4 free.
	want("grow a to 8 after deleting c", a.createPartitions(false, "a", 8), 0)
	if code := a.autoCreate("auto-1"); code != 0 {
		t.Fatalf("auto-creation with room: %d", code)
	}
	want("create b/2 (11)", a.createTopics(false, map[string]int32{"b": 2})["b"], 44)
	want("create b/1 (10)", a.createTopics(false, map[string]int32{"b": 1})["b"], 0)
	a.rc.stillUsable()
}

// TestCreateTopicsPartitionsPerRequest: a CreateTopics request asking for
// more than 10,000 partitions in all, or whose new topics would be more than
// 10,000 metadata records in Kafka (a topic's, its partitions', its
// configs'), fails every topic with POLICY_VIOLATION and Kafka 4.4's
// message, whatever the cap on the log, and creates nothing.
func TestCreateTopicsPartitionsPerRequest(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{MaxPartitions: -1}})
	a := rawAdmin{t, dialRaw(t, gw.Addr)}
	for _, validateOnly := range []bool{true, false} {
		got := a.createTopics(validateOnly, map[string]int32{"x": 6000, "y": 4001})
		for _, name := range []string{"x", "y"} {
			if got[name].code != 44 || got[name].msg != "Excessively large number of partitions per request." {
				t.Fatalf("validate_only %v, %s: %+v, want POLICY_VIOLATION (44) with Kafka's message", validateOnly, name, got[name])
			}
		}
	}
	// 10,000 partitions are 10,002 records with their topics'.
	got := a.createTopics(true, map[string]int32{"x": 6000, "y": 4000})
	for _, name := range []string{"x", "y"} {
		if got[name].code != 44 || got[name].msg != "Unable to perform excessively large batch operation." {
			t.Fatalf("10,000 partitions in two topics, %s: %+v, want POLICY_VIOLATION (44) with Kafka's message", name, got[name])
		}
	}
	// Nothing was created: x and y do not exist, and 9,998 partitions fit.
	got = a.createTopics(true, map[string]int32{"x": 6000, "y": 3998})
	if got["x"].code != 0 || got["y"].code != 0 {
		t.Fatalf("9,998 partitions, validate_only: %+v", got)
	}
	// Topics that exist write no records: 9,999 partitions of a new topic
	// beside one that exists pass.
	if got := a.createTopics(false, map[string]int32{"z": 2}); got["z"].code != 0 {
		t.Fatalf("create z: %+v", got)
	}
	got = a.createTopics(true, map[string]int32{"x": 9998, "z": 2})
	if got["x"].code != 0 || got["z"].code != 36 {
		t.Fatalf("9,998 new partitions beside 2 of a topic that exists: %+v, want x created and z TOPIC_ALREADY_EXISTS", got)
	}
	a.rc.stillUsable()
}
