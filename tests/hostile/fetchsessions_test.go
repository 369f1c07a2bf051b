//go:build linux

package hostile

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionFlood: 2,000 full Fetches asking for a fetch
// session (epoch 0) of 1,000 partitions each, beside the steady producer
// and consumer group, against --fetch-session-cache-slots 100 and
// --fetch-session-max-partitions 40,000: 40 sessions are created (the
// partition cap; 39 beside the steady consumer's own session), the rest
// answered whole with SessionId 0 and counted as refused; none is evicted (none is stale, none smaller than a newcomer);
// RSS stays under 64 MiB of growth and the steady clients lose nothing.
func TestFetchSessionFlood(t *testing.T) {
	const (
		parts    = 1000
		maxParts = 40_000
		n        = 2000
	)
	k := startFloodKiggy(t, append(floodQuota(t), "--fetch-session-cache-slots", "100", "--fetch-session-max-partitions", strconv.Itoa(maxParts))...)
	createTopic(t, k, "flood-sessions", parts)
	s := startSteady(t, k)
	before := k.rss(t)
	peak := k.peak(t)
	ids := map[bool]int{} // session granted → count
	bad := 0
	s.flood(func() {
		pipelined(t, k.Addr, "", n, 2, 4, func(int) kmsg.Request {
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, 0, 1, 1<<20
			req.SessionEpoch = 0
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = "flood-sessions"
			for p := range int32(parts) {
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.Partition, fp.PartitionMaxBytes = p, 1<<10
				ft.Partitions = append(ft.Partitions, fp)
			}
			req.Topics = append(req.Topics, ft)
			return req
		}, func(r kmsg.Response) {
			fr := r.(*kmsg.FetchResponse)
			if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != parts {
				bad++
			}
			ids[fr.SessionID != 0]++
		})
	})
	high := peak()
	m := k.metrics(t)
	t.Logf("%d full Fetches of %d partitions asking for a session: %d granted, %d not; RSS %.1f MiB before, peak %.1f MiB; %v sessions, %v partitions held",
		n, parts, ids[true], ids[false], mib(before), mib(high), m["kiggy_fetch_sessions"], m["kiggy_fetch_session_partitions"])
	// The steady consumer holds a session of its own (one partition).
	own := m["kiggy_fetch_session_partitions"] - float64(ids[true]*parts)
	if bad != 0 || ids[true] < maxParts/parts-1 || ids[true]*parts > maxParts || ids[true]+ids[false] != n {
		t.Errorf("%d malformed answers, %d sessions granted, %d not; want %d (or one fewer) granted", bad, ids[true], ids[false], maxParts/parts)
	}
	if m["kiggy_fetch_session_partitions"] > maxParts || own < 0 || own >= parts || m["kiggy_fetch_sessions"]-float64(ids[true]) > 2 {
		t.Errorf("kiggy_fetch_sessions %v, kiggy_fetch_session_partitions %v for %d flood sessions", m["kiggy_fetch_sessions"], m["kiggy_fetch_session_partitions"], ids[true])
	}
	if got := m["kiggy_fetch_sessions_refused_total"]; got != float64(ids[false]) {
		t.Errorf("kiggy_fetch_sessions_refused_total = %v, want %d", got, ids[false])
	}
	if got := m["kiggy_fetch_session_evictions_total"]; got != 0 {
		t.Errorf("kiggy_fetch_session_evictions_total = %v", got)
	}
	if grew := high - before; grew >= groupStateBound {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < %d", mib(grew), groupStateBound>>20)
	}
	checkThrottled(t, k, false)
	s.check(t)
}
