//go:build linux

package hostile

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAutoCreateTopicFlood: Metadata requests naming 100,000
// random topics (10 a request) while auto-creation is on, beside the
// steady producer and consumer group, against --auto-create-topics-limit
// 1000: topics are created until the log holds 1,000, the rest get
// UNKNOWN_TOPIC_OR_PARTITION and are counted, RSS stays under 64 MiB of
// growth, and the steady clients lose nothing.
func TestAutoCreateTopicFlood(t *testing.T) {
	const (
		limit    = 1000
		perReq   = 10
		requests = 10_000
	)
	k := startFloodKiggy(t, append(floodQuota(t), "--auto-create-topics-limit", strconv.Itoa(limit))...)
	s := startSteady(t, k)
	before := k.rss(t)
	peak := k.peak(t)
	codes := map[int16]int{}
	s.flood(func() {
		pipelined(t, k.Addr, "", requests, 2, 20, func(i int) kmsg.Request {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 9
			req.AllowAutoTopicCreation = true
			for j := range perReq {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(fmt.Sprintf("random-%d-%d", i, j))
				req.Topics = append(req.Topics, rt)
			}
			return req
		}, func(r kmsg.Response) {
			for _, rt := range r.(*kmsg.MetadataResponse).Topics {
				codes[rt.ErrorCode]++
			}
		})
	})
	high := peak()
	m := k.metrics(t)
	t.Logf("%d random topics named in Metadata: %v; RSS %.1f MiB before, peak %.1f MiB; flood took %v",
		requests*perReq, codes, mib(before), mib(high), s.to.Sub(s.from).Round(time.Millisecond))
	// The steady topic is one of the limit; concurrent requests may pass
	// it by a few (bridge/creationlimits.go).
	if created := codes[0]; created < limit-1 || created > limit+4 || codes[0]+codes[3] != requests*perReq {
		t.Errorf("answers %v, want about %d created (0) and the rest UNKNOWN_TOPIC_OR_PARTITION (3)", codes, limit-1)
	}
	if got := m[`kiggy_topics_auto_create_refused_total{reason="limit"}`]; got != float64(codes[3]) {
		t.Errorf("kiggy_topics_auto_create_refused_total{reason=\"limit\"} = %v, want %d", got, codes[3])
	}
	if grew := high - before; grew >= groupStateBound {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < %d", mib(grew), groupStateBound>>20)
	}
	checkThrottled(t, k, false)
	s.check(t)
}

// TestCreateTopicsFlood: an authorized admin floods
// CreateTopics v7 with 10,000 new one-partition topics (5 a request,
// pipelined) against --quota-controller-mutation-rate 100 (KIP-599, a
// burst of 110 over 11 windows of 100 ms) and --max-partitions 1000,
// beside the steady producer and consumer group: at most the burst plus
// the rate over the flood's duration are created, and never more than the
// cap leaves beside the steady topic; every other topic gets
// THROTTLING_QUOTA_EXCEEDED or POLICY_VIOLATION and is counted, RSS stays
// under 64 MiB of growth, and the steady clients lose nothing.
func TestCreateTopicsFlood(t *testing.T) {
	const (
		rate      = 100
		burst     = 110
		perReq    = 5
		requests  = 2000
		maxParts  = 1000
		steadyOne = 1 // the steady topic's partition
	)
	args := append(floodQuota(t), "--max-partitions", strconv.Itoa(maxParts))
	limited := os.Getenv(noQuotaEnv) != "1" // else every topic is created: the figure the quota is judged against
	if limited {
		args = append(args, "--quota-controller-mutation-rate", strconv.Itoa(rate), "--quota-window-size", "100ms")
	}
	k := startFloodKiggy(t, args...)
	s := startSteady(t, k)
	before := k.rss(t)
	peak := k.peak(t)
	codes := map[int16]int{}
	s.flood(func() {
		pipelined(t, k.Addr, "", requests, 2, 20, func(i int) kmsg.Request {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version, req.TimeoutMillis = 7, 30_000
			for j := range perReq {
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("made-%d-%d", i, j), 1, 1
				req.Topics = append(req.Topics, rt)
			}
			return req
		}, func(r kmsg.Response) {
			for _, rt := range r.(*kmsg.CreateTopicsResponse).Topics {
				codes[rt.ErrorCode]++
			}
		})
	})
	high := peak()
	m := k.metrics(t)
	took := s.to.Sub(s.from)
	t.Logf("%d topics asked for in CreateTopics: %v; RSS %.1f MiB before, peak %.1f MiB; flood took %v",
		requests*perReq, codes, mib(before), mib(high), took.Round(time.Millisecond))
	// One request more than the rate allows: a client is admitted while
	// its bucket is not below zero.
	most := min(burst+int(rate*took.Seconds())+perReq, maxParts-steadyOne)
	if !limited {
		most = maxParts - steadyOne
	}
	if codes[0] > most || codes[0] == 0 || (!limited && codes[0] != most) || codes[0]+codes[89]+codes[44] != requests*perReq {
		t.Errorf("answers %v, want at most %d created (0: the burst and the rate over %v, within the cap) and the rest THROTTLING_QUOTA_EXCEEDED (89) or POLICY_VIOLATION (44)", codes, most, took)
	}
	if got := m["kiggy_quota_controller_mutation_rejections_total"]; got != float64(codes[89]) {
		t.Errorf("kiggy_quota_controller_mutation_rejections_total = %v, want %d", got, codes[89])
	}
	if got := m[`kiggy_admin_refused_total{reason="max_partitions"}`]; got != float64(codes[44]) {
		t.Errorf(`kiggy_admin_refused_total{reason="max_partitions"} = %v, want %d`, got, codes[44])
	}
	if grew := high - before; grew >= groupStateBound {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < %d", mib(grew), groupStateBound>>20)
	}
	checkThrottled(t, k, false)
	s.check(t)
}
