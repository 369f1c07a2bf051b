package bridge

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/wire"
)

// metrics are the gateway's counters: fixed arrays of atomics indexed by API
// key and error code, resolved at compile time, so counting costs one atomic
// add and never a map or label lookup on the hot path.
type metrics struct {
	requests      [maxAPIKey]atomic.Uint64
	produceErrors [maxErrorCode]atomic.Uint64
	recordsIn     atomic.Uint64
	recordsOut    atomic.Uint64
	budgetRejects atomic.Uint64
	parkedFetches atomic.Int64
	latency       [maxAPIKey]histogram
}

// latencyBuckets are the upper bounds of the request latency histogram.
var latencyBuckets = [...]time.Duration{
	100 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 5 * time.Second, 30 * time.Second,
}

// histogram counts durations into latencyBuckets (non-cumulative; the
// exposition sums them) with one atomic add per observation.
type histogram struct {
	buckets [len(latencyBuckets) + 1]atomic.Uint64
	sumNs   atomic.Uint64
}

func (h *histogram) observe(d time.Duration) {
	i := 0
	for i < len(latencyBuckets) && d > latencyBuckets[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sumNs.Add(uint64(d))
}

// observe records a served request's latency, from the gateway's first look
// at it to its completion.
func (g *Gateway) observe(c *call) {
	if k := c.hdr.APIKey; k >= 0 && int(k) < maxAPIKey {
		g.metrics.latency[k].observe(time.Since(c.start))
	}
}

// maxErrorCode bounds the per-code counters (codes beyond it count as -1).
const maxErrorCode = 130

func (m *metrics) produceError(c wire.ErrorCode) {
	if c < 0 || int(c) >= maxErrorCode {
		c = 0
	}
	m.produceErrors[c].Add(1)
}

// WriteMetrics writes the gateway's counters in Prometheus text format.
func (g *Gateway) WriteMetrics(w io.Writer) {
	m := &g.metrics
	fmt.Fprintf(w, "# HELP kiggy_api_requests_total Requests served, by Kafka API.\n# TYPE kiggy_api_requests_total counter\n")
	for k := range m.requests {
		if n := m.requests[k].Load(); n > 0 {
			fmt.Fprintf(w, "kiggy_api_requests_total{api=%q} %d\n", wire.APIKey(k).String(), n)
		}
	}
	fmt.Fprintf(w, "# HELP kiggy_request_duration_seconds Request latency inside the gateway, by Kafka API.\n# TYPE kiggy_request_duration_seconds histogram\n")
	for k := range m.latency {
		h := &m.latency[k]
		var cum uint64
		var counts [len(latencyBuckets) + 1]uint64
		for i := range counts {
			counts[i] = h.buckets[i].Load()
			cum += counts[i]
		}
		if cum == 0 {
			continue
		}
		name := wire.APIKey(k).String()
		run := uint64(0)
		for i, b := range latencyBuckets {
			run += counts[i]
			fmt.Fprintf(w, "kiggy_request_duration_seconds_bucket{api=%q,le=\"%g\"} %d\n", name, b.Seconds(), run)
		}
		fmt.Fprintf(w, "kiggy_request_duration_seconds_bucket{api=%q,le=\"+Inf\"} %d\n", name, cum)
		fmt.Fprintf(w, "kiggy_request_duration_seconds_sum{api=%q} %g\n", name, float64(h.sumNs.Load())/1e9)
		fmt.Fprintf(w, "kiggy_request_duration_seconds_count{api=%q} %d\n", name, cum)
	}
	fmt.Fprintf(w, "# HELP kiggy_produce_partition_errors_total Produce partitions answered with an error, by code.\n# TYPE kiggy_produce_partition_errors_total counter\n")
	for c := range m.produceErrors {
		if n := m.produceErrors[c].Load(); n > 0 {
			fmt.Fprintf(w, "kiggy_produce_partition_errors_total{code=%q} %d\n", wire.ErrorCode(c).String(), n)
		}
	}
	fmt.Fprintf(w, "# HELP kiggy_records_produced_total Records appended.\n# TYPE kiggy_records_produced_total counter\nkiggy_records_produced_total %d\n", m.recordsIn.Load())
	fmt.Fprintf(w, "# HELP kiggy_records_fetched_total Records served by Fetch.\n# TYPE kiggy_records_fetched_total counter\nkiggy_records_fetched_total %d\n", m.recordsOut.Load())
	fmt.Fprintf(w, "# HELP kiggy_decode_budget_rejections_total Produce partitions refused by the decode budget.\n# TYPE kiggy_decode_budget_rejections_total counter\nkiggy_decode_budget_rejections_total %d\n", m.budgetRejects.Load())
	fmt.Fprintf(w, "# HELP kiggy_fetches_parked Fetch requests parked in a long poll now.\n# TYPE kiggy_fetches_parked gauge\nkiggy_fetches_parked %d\n", m.parkedFetches.Load())
}
