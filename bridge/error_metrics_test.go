package bridge_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestErrorCodesCountedPerAPI: error codes other APIs answer are counted
// under their API and code, at every level a response carries one (the
// response itself, a topic, a partition), and successes count nothing.
func TestErrorCodesCountedPerAPI(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	gw.CreateTopic(t, "present", 1)
	rc := dialRaw(t, gw.Addr)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version = 4
	hb.Group, hb.MemberID, hb.Generation = "no-group", "nobody", 1
	rc.recv(rc.send(hb), kmsg.NewPtrHeartbeatResponse())

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 5
	del.TopicNames = []string{"missing-1", "missing-2"}
	delResp := kmsg.NewPtrDeleteTopicsResponse()
	delResp.Version = 5
	rc.recv(rc.send(del), delResp)

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 7
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "present"
	for _, p := range []int32{0, 7} { // 7 does not exist
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	loResp := kmsg.NewPtrListOffsetsResponse()
	loResp.Version = 7
	rc.recv(rc.send(lo), loResp)

	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("present")
	md.Topics = append(md.Topics, mt)
	mdResp := kmsg.NewPtrMetadataResponse()
	mdResp.Version = 9
	rc.recv(rc.send(md), mdResp)

	// Fetch partitions are counted as the streamed response is built: an
	// offset past the end of an empty partition is OFFSET_OUT_OF_RANGE.
	fr := kmsg.NewPtrFetchRequest()
	fr.Version, fr.MaxWaitMillis, fr.MaxBytes = 12, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "present"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, 42, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	frResp := kmsg.NewPtrFetchResponse()
	frResp.Version = 12
	rc.recv(rc.send(fr), frResp)

	metrics := gw.Metrics()
	for _, want := range []string{
		`kiggy_api_errors_total{api="Heartbeat",code="UNKNOWN_MEMBER_ID"} 1` + "\n",
		`kiggy_api_errors_total{api="DeleteTopics",code="UNKNOWN_TOPIC_OR_PARTITION"} 2` + "\n",
		`kiggy_api_errors_total{api="ListOffsets",code="UNKNOWN_TOPIC_OR_PARTITION"} 1` + "\n",
		`kiggy_api_errors_total{api="Fetch",code="OFFSET_OUT_OF_RANGE"} 1` + "\n",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(metrics, `api_errors_total{api="Metadata"`) {
		t.Errorf("a successful Metadata counted an error:\n%s", metrics)
	}
}
