package bridge

import (
	"fmt"
	"io"
	"sync/atomic"

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
