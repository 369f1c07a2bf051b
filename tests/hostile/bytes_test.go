//go:build linux

package hostile

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
)

// TestProduceByteFlood: one client pipelines 200 Produce
// requests of 256 KiB of incompressible records (50 MiB) beside the
// steady producer and consumer group, against --quota-producer-byte-rate
// 8 MiB a second (Kafka's producer_byte_rate; 11 windows of 100 ms): every
// record is stored, the flood's client is throttled and moves at most
// about its rate, the steady clients (other client ids) are not throttled
// and lose nothing. KIGGY_HOSTILE_NO_QUOTA=1 runs it without the quota.
func TestProduceByteFlood(t *testing.T) {
	const (
		rate     = 8 << 20
		requests = 200
		records  = 16
		value    = 16 << 10
	)
	args := floodQuota(t)
	limited := os.Getenv(noQuotaEnv) != "1"
	if limited {
		args = append(args, "--quota-producer-byte-rate", "8MiB", "--quota-window-size", "100ms")
	}
	k := startFloodKiggy(t, args...)
	createTopic(t, k, "byte-flood", 1)
	s := startSteady(t, k)
	rng := rand.New(rand.NewPCG(3, 4))
	payload := make([]byte, value)
	for i := range payload {
		payload[i] = byte(rng.Uint32())
	}
	var b batch.Builder
	b.Reset(nil, 0, time.Now().UnixMilli(), batch.NoCompression)
	for i := range records {
		b.Append(int32(i), 0, nil, payload)
	}
	encoded := b.Finish()
	codes := map[int16]int{}
	throttled := 0
	s.flood(func() {
		pipelined(t, k.Addr, "", requests, 2, 4, func(int) kmsg.Request {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 9, 1, 30_000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "byte-flood"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = encoded
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) {
			pr := r.(*kmsg.ProduceResponse)
			if pr.ThrottleMillis > 0 {
				throttled++
			}
			for _, rt := range pr.Topics {
				for _, p := range rt.Partitions {
					codes[p.ErrorCode]++
				}
			}
		})
	})
	took := s.to.Sub(s.from)
	sent := float64(requests * len(encoded))
	t.Logf("%d Produce requests of %d KiB: %v, %d answered with a throttle; %.1f MiB in %v (%.1f MiB/s)",
		requests, len(encoded)>>10, codes, throttled, sent/(1<<20), took.Round(time.Millisecond), sent/(1<<20)/took.Seconds())
	if codes[0] != requests {
		t.Errorf("answers %v, want all %d stored", codes, requests)
	}
	m := k.metrics(t)
	if limited {
		if throttled == 0 || m["kiggy_quota_produce_throttles_total"] == 0 {
			t.Errorf("%d throttled answers, kiggy_quota_produce_throttles_total %v: the byte rate never throttled the flood", throttled, m["kiggy_quota_produce_throttles_total"])
		}
		// The first span (11 windows) may go at any rate before the
		// average over it passes the quota: at most its worth on top.
		if most := rate * (took.Seconds() + 1.1) * 1.5; sent > most {
			t.Errorf("%.1f MiB moved in %v: more than the quota allows (%.1f MiB)", sent/(1<<20), took, most/(1<<20))
		}
	}
	s.check(t)
}
