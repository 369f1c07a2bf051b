package bridge_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
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
