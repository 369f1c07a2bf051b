//go:build linux

package hostile

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionalIDFlood: InitProducerId naming 100,000
// fresh transactional ids, beside the steady producer and consumer group,
// against --max-transactional-ids 2000: 2,000 ids get a producer id, the
// rest COORDINATOR_NOT_AVAILABLE (nothing stored for them), counted by the
// refusal metric; RSS stays under 64 MiB of growth and the steady clients
// lose nothing.
func TestTransactionalIDFlood(t *testing.T) {
	const (
		limit = 2000
		n     = 100_000
	)
	k := startFloodKiggy(t, append(floodQuota(t), "--max-transactional-ids", strconv.Itoa(limit))...)
	s := startSteady(t, k)
	before := k.rss(t)
	peak := k.peak(t)
	codes := map[int16]int{}
	s.flood(func() {
		pipelined(t, k.Addr, "", n, 2, 50, func(i int) kmsg.Request {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version = 4
			req.TransactionalID = kmsg.StringPtr("flood-txn-" + strconv.Itoa(i))
			req.TransactionTimeoutMillis = 60_000
			req.ProducerID, req.ProducerEpoch = -1, -1
			return req
		}, func(r kmsg.Response) { codes[r.(*kmsg.InitProducerIDResponse).ErrorCode]++ })
	})
	high := peak()
	m := k.metrics(t)
	t.Logf("%d fresh transactional ids: %v; RSS %.1f MiB before, peak %.1f MiB; %v ids held", n, codes, mib(before), mib(high), m["kiggy_transactional_ids"])
	if codes[0] != limit || codes[15] != n-limit {
		t.Errorf("answers %v, want %d producer ids (0) and the rest COORDINATOR_NOT_AVAILABLE (15)", codes, limit)
	}
	if got := m[`kiggy_transactional_ids_refused_total{reason="limit"}`]; got != float64(codes[15]) {
		t.Errorf("kiggy_transactional_ids_refused_total{reason=\"limit\"} = %v, want %d", got, codes[15])
	}
	if got := m["kiggy_transactional_ids"]; got != limit {
		t.Errorf("kiggy_transactional_ids = %v, want %d", got, limit)
	}
	if grew := high - before; grew >= groupStateBound {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < %d", mib(grew), groupStateBound>>20)
	}
	checkThrottled(t, k, false)
	s.check(t)
}
