//go:build linux

package hostile

import (
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
)

// TestWideProduceFlood: one client pipelines 300 acks=all Produce requests
// that each name 1,000 partitions (a record of 100 bytes each; two
// connections, two requests in flight on each) beside the steady producer
// and consumer group. Every record is stored, and the steady clients lose
// nothing. On Iggy a connection's Produces have at most 16 append round
// trips running at once (kiggy_produce_connection_round_waits_total counts
// the waits), so the steady producer's appends find a session: without the
// bound its p99 went from 1 ms to over 100 ms (docs/BENCHMARKS.md, "Steady
// clients beside a flood"). The flood is a legitimate producer's shape, so
// no quota runs against it. It stores 30 MB of records, which the embedded
// log keeps in memory: kiggy's RSS is not bounded here.
func TestWideProduceFlood(t *testing.T) {
	const parts, requests = 1000, 300
	k := startFloodKiggy(t)
	createTopic(t, k, "wide-produce", parts)
	s := startSteady(t, k)
	var b batch.Builder
	b.Reset(nil, 0, time.Now().UnixMilli(), batch.NoCompression)
	b.Append(0, 0, nil, make([]byte, 100))
	encoded := b.Finish()
	codes := map[int16]int{}
	s.flood(func() {
		pipelined(t, k.Addr, "", requests, 2, 2, func(int) kmsg.Request {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 9, -1, 30_000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "wide-produce"
			for p := range int32(parts) {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = p, encoded
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) {
			for _, rt := range r.(*kmsg.ProduceResponse).Topics {
				for _, p := range rt.Partitions {
					codes[p.ErrorCode]++
				}
			}
		})
	})
	m := k.metrics(t)
	t.Logf("%d Produce requests of %d partitions: %v; %v connection round waits, %v Iggy session waits",
		requests, parts, codes, m["kiggy_produce_connection_round_waits_total"], m["kiggy_iggy_session_waits_total"])
	if codes[0] != requests*parts {
		t.Errorf("answers %v, want all %d stored", codes, requests*parts)
	}
	if os.Getenv(backendEnv) == "iggy" && m["kiggy_produce_connection_round_waits_total"] == 0 {
		t.Error("kiggy_produce_connection_round_waits_total stayed 0: no connection reached its bound of round trips")
	}
	s.check(t)
}
