//go:build linux

package hostile

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
)

// floodIDsEnv overrides how many never-issued producer ids the flood
// sends (default floodIDs).
const floodIDsEnv = "KIGGY_HOSTILE_FLOOD_IDS"

// floodIDs is the flood's size: a million producer ids (docs/LIMITS.md,
// "State clients can create"); about 10 s on two cores.
const floodIDs = 1_000_000

// floodPerRequest is how many batches (one producer id each, all to
// partition 0) one flood Produce carries; floodConns connections send
// floodInFlight requests each before reading answers.
const (
	floodPerRequest = 1000
	floodConns      = 2
	floodInFlight   = 4
)

// TestProducerIDFlood: a client sends idempotent batches
// (epoch 0, sequence 0) from a million producer ids that InitProducerId
// never handed out, beside a steady acks=all idempotent franz-go producer.
// kiggy refuses every flood batch with UNKNOWN_PRODUCER_ID and creates no
// state for it: its RSS grows by less than 50 MiB (before the refusal,
// 300,000 such ids grew it by 103 MiB), the refusal metric counts the
// whole flood, and the steady producer loses nothing. A second kiggy with
// the refusal off and --max-producer-states 50000 shows the cap holding
// instead: 50,000 states, the rest refused.
func TestProducerIDFlood(t *testing.T) {
	n := floodIDs
	if s := os.Getenv(floodIDsEnv); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < floodPerRequest {
			t.Fatalf("%s=%q: want a count of at least %d", floodIDsEnv, s, floodPerRequest)
		}
	}
	n -= n % floodPerRequest

	t.Run("never issued", func(t *testing.T) {
		k := startKiggy(t)
		good := floodSetup(t, k)
		before := k.rss(t)
		peak := k.peak(t)
		start := time.Now()
		codes := flood(t, k, n, 1)
		took := time.Since(start)
		high := peak()
		after := k.rss(t)
		m := k.metrics(t)
		t.Logf("%d never-issued producer ids in %v: RSS %.1f MiB before, peak %.1f MiB, %.1f MiB after; answers %v",
			n, took.Round(time.Millisecond), mib(before), mib(high), mib(after), codes)
		if codes[59] != n || len(codes) != 1 {
			t.Errorf("flood answers %v, want UNKNOWN_PRODUCER_ID (59) to all %d", codes, n)
		}
		if got := m[`kiggy_producer_ids_refused_total{reason="never_issued"}`]; got != float64(n) {
			t.Errorf("kiggy_producer_ids_refused_total{reason=\"never_issued\"} = %v, want %d", got, n)
		}
		if got := m["kiggy_idempotent_producers"]; got > 1 {
			t.Errorf("kiggy_idempotent_producers = %v, want the steady producer's 1 at most", got)
		}
		if grew := high - before; grew >= 50<<20 {
			t.Errorf("RSS grew by %.1f MiB over the flood, want < 50", mib(grew))
		}
		floodCheckGood(t, k, good)
	})

	t.Run("cap", func(t *testing.T) {
		const limit = 50_000
		capN := min(n, 200_000)
		k := startKiggy(t, "--refuse-unissued-producer-ids=false", "--max-producer-states", strconv.Itoa(limit))
		good := floodSetup(t, k)
		before := k.rss(t)
		peak := k.peak(t)
		codes := flood(t, k, capN, 1)
		high := peak()
		m := k.metrics(t)
		t.Logf("%d producer ids with the refusal off and a cap of %d: RSS %.1f MiB before, peak %.1f MiB; answers %v",
			capN, limit, mib(before), mib(high), codes)
		// The steady producer holds one state; concurrent first batches
		// may pass the cap by one each (none here: one partition).
		if got := m["kiggy_idempotent_producers"]; got != limit {
			t.Errorf("kiggy_idempotent_producers = %v, want the cap, %d", got, limit)
		}
		if refused := m[`kiggy_producer_ids_refused_total{reason="limit"}`]; refused != float64(codes[89]) || codes[89] != capN-limit+1 {
			t.Errorf("refused %v (metric) and %d (answers), want %d", refused, codes[89], capN-limit+1)
		}
		floodCheckGood(t, k, good)
	})
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// floodSetup creates the flood's and the steady producer's topics and
// starts the steady producer.
func floodSetup(t *testing.T, k *kiggyProc) *goodProducer {
	t.Helper()
	for _, name := range []string{"pid-flood", "pid-steady"} {
		createTopic(t, k, name, 1)
	}
	good := startProducer(t, k.Addr, "pid-steady")
	waitFor(t, 10*time.Second, "the steady producer's first records", func() bool { return good.acked() > 0 })
	return good
}

// floodCheckGood stops the steady producer and checks that it saw no error
// and that its topic holds every record it had acknowledged (and those in
// doubt at most).
func floodCheckGood(t *testing.T, k *kiggyProc, good *goodProducer) {
	t.Helper()
	good.stop()
	good.mu.Lock()
	var errs []string
	var slowest time.Duration
	for _, s := range good.sample {
		if s.err != nil {
			errs = append(errs, s.err.Error())
		}
		slowest = max(slowest, s.took)
	}
	good.mu.Unlock()
	acked, unsure := good.acked(), good.unsure()
	stored := endOffset(t, k.Addr, "pid-steady")
	t.Logf("steady producer: %d records acknowledged (slowest %v), %d in doubt at stop, %d stored",
		acked, slowest.Round(time.Millisecond), unsure, stored)
	if len(errs) > 0 {
		t.Errorf("steady producer saw %d errors: %v", len(errs), errs[:min(len(errs), 5)])
	}
	if stored < acked || stored > acked+unsure {
		t.Errorf("steady producer's topic holds %d records, want %d acknowledged (+%d in doubt)", stored, acked, unsure)
	}
}

// flood sends n idempotent batches from producer ids first, first+1, ...
// to pid-flood/0, floodPerRequest per Produce, and returns how many
// batches got each error code.
func flood(t *testing.T, k *kiggyProc, n int, first int64) map[int16]int {
	t.Helper()
	codes := map[int16]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	requests := n / floodPerRequest
	for c := range floodConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := dial(t, k.Addr)
			var b batch.Builder
			local := map[int16]int{}
			var inflight []int32
			recv := func() bool {
				resp := kmsg.NewPtrProduceResponse()
				resp.Version = 9
				if err := conn.Recv(inflight[0], resp); err != nil {
					t.Errorf("flood answer: %v", err)
					return false
				}
				inflight = inflight[1:]
				for _, rt := range resp.Topics {
					for _, p := range rt.Partitions {
						local[p.ErrorCode]++
					}
				}
				return true
			}
			for r := c; r < requests; r += floodConns {
				req := kmsg.NewPtrProduceRequest()
				req.Version, req.Acks, req.TimeoutMillis = 9, -1, 30000
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = "pid-flood"
				for i := range floodPerRequest {
					id := first + int64(r*floodPerRequest+i)
					b.Reset(nil, 0, time.Now().UnixMilli(), batch.NoCompression)
					b.SetProducer(id, 0, 0)
					b.Append(0, 0, nil, []byte("flood"))
					rp := kmsg.NewProduceRequestTopicPartition()
					rp.Records = b.Finish()
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
				corr, err := conn.Send(req)
				if err != nil {
					t.Errorf("flood request: %v", err)
					return
				}
				inflight = append(inflight, corr)
				if len(inflight) == floodInFlight && !recv() {
					return
				}
			}
			for len(inflight) > 0 && recv() {
			}
			mu.Lock()
			for code, m := range local {
				codes[code] += m
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return codes
}
