//go:build !race

package bridge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestProduceRoundTripAllocs: a Produce of 16 partitions × 16 × 1 KiB
// records through the engine, gateway and embedded log allocates less than
// once per request on average (the log's 4 MiB chunks, one per ~15
// requests, and its entry index growing now and then); any per-request or
// per-record allocation on the path fails it.
func TestProduceRoundTripAllocs(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Embedded: true, Memlog: memlog.Config{PartitionBytes: 64 << 20}})
	gw.CreateTopic(t, "allocs", benchPartitions)
	bc := dialBench(t, gw.Addr)
	frame := produceFrame("allocs")
	for range 200 { // warm the pools and the per-connection state
		checkProduce(t, bc.roundTrip(t, frame))
	}
	n := testing.AllocsPerRun(300, func() { bc.roundTrip(t, frame) })
	t.Logf("%.3f allocations per Produce round trip", n)
	if n > 0.5 {
		t.Fatalf("%.2f allocations per Produce round trip", n)
	}
}

// TestProduceByIDRoundTripAllocs: the same Produce at v13, the topic named
// by its id (KIP-516), allocates no more: the id is looked up in the
// gateway's id map (topicids.go).
func TestProduceByIDRoundTripAllocs(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Embedded: true, Memlog: memlog.Config{PartitionBytes: 64 << 20}})
	gw.CreateTopic(t, "allocs", benchPartitions)
	info, err := gw.Log.Topic(t.Context(), "allocs")
	if err != nil {
		t.Fatal(err)
	}
	bc := dialBench(t, gw.Addr)
	frame := produceFrameAt(13, "", info.ID)
	for range 200 {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 13
		if err := resp.ReadFrom(bc.roundTrip(t, frame)[5:]); err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].TopicID != info.ID || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("Produce v13 by id: %+v", resp.Topics)
		}
	}
	n := testing.AllocsPerRun(300, func() { bc.roundTrip(t, frame) })
	t.Logf("%.3f allocations per Produce v13 round trip", n)
	if n > 0.5 {
		t.Fatalf("%.2f allocations per Produce v13 round trip", n)
	}
}

// TestFetchRoundTripAllocs: a Fetch of 16 partitions × 256 KiB mapped back
// from the embedded log allocates nothing per request once warm (pooled
// response buffers, per-state scratch, a pooled message in the log).
func TestFetchRoundTripAllocs(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Embedded: true})
	gw.CreateTopic(t, "allocs", benchPartitions)
	bc := dialBench(t, gw.Addr)
	pf := produceFrame("allocs")
	for range 16 {
		checkProduce(t, bc.roundTrip(t, pf))
	}
	frame := fetchFrame("allocs", 256<<10)
	for range 50 {
		bc.roundTrip(t, frame)
	}
	n := testing.AllocsPerRun(100, func() { bc.roundTrip(t, frame) })
	t.Logf("%.3f allocations per Fetch round trip", n)
	if n > 0.1 {
		t.Fatalf("%.2f allocations per Fetch round trip", n)
	}
}

// TestFetchByIDRoundTripAllocs: the same Fetch at v18, the topic named by
// its id (KIP-516), allocates nothing per request either: the id is looked
// up in the gateway's id map (topicids.go), the response carries the id.
func TestFetchByIDRoundTripAllocs(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Embedded: true})
	gw.CreateTopic(t, "allocs", benchPartitions)
	info, err := gw.Log.Topic(t.Context(), "allocs")
	if err != nil {
		t.Fatal(err)
	}
	bc := dialBench(t, gw.Addr)
	pf := produceFrame("allocs")
	for range 16 {
		checkProduce(t, bc.roundTrip(t, pf))
	}
	req := fetchRequest(18, "", make([]int64, benchPartitions), 256<<10, 64<<20)
	req.Topics[0].TopicID = info.ID
	frame := requestFrame(req, 2)
	for range 50 {
		bc.roundTrip(t, frame)
	}
	// The warm-up must have read records by id, not errors.
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 18
	if err := resp.ReadFrom(bc.roundTrip(t, frame)[5:]); err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].TopicID != info.ID || resp.Topics[0].Partitions[0].ErrorCode != 0 ||
		len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("Fetch v18 by id: %+v", resp.Topics)
	}
	n := testing.AllocsPerRun(100, func() { bc.roundTrip(t, frame) })
	t.Logf("%.3f allocations per Fetch v18 round trip", n)
	if n > 0.1 {
		t.Fatalf("%.2f allocations per Fetch v18 round trip", n)
	}
}

// TestFetchRoundTripAllocsIggy: the same Fetch on the Iggy backend, served
// from the Iggy client's read cache, allocates nothing per request either:
// the partitions are read concurrently by pooled readers (no goroutine and
// closure per partition) and a cached read allocates nothing. iggytest runs
// in this process, so the bound leaves room for a re-poll should a chunk
// outlive the cache's TTL on a slow machine.
func TestFetchRoundTripAllocsIggy(t *testing.T) {
	checkFetchAllocsIggy(t, kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyNoKeepAlive: true}))
}

// TestFetchByIDRoundTripAllocsIggy: the same at Fetch v18, the topic named
// by its id, looked up in the id map (topicids.go).
func TestFetchByIDRoundTripAllocsIggy(t *testing.T) {
	checkFetchAllocsIggyAt(t, kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyNoKeepAlive: true}), 18)
}

// checkFetchAllocsIggy fills a topic through gw, warms a Fetch of it up and
// fails when the repeated Fetch allocates.
func checkFetchAllocsIggy(t *testing.T, gw *kiggytest.Gateway) { checkFetchAllocsIggyAt(t, gw, 12) }

// checkFetchAllocsIggyAt is checkFetchAllocsIggy with a Fetch at version v,
// by the topic's id from v13 on.
func checkFetchAllocsIggyAt(t *testing.T, gw *kiggytest.Gateway, v int16) {
	gw.CreateTopic(t, "allocs", benchPartitions)
	bc := dialBench(t, gw.Addr)
	pf := produceFrame("allocs")
	for range 16 {
		checkProduce(t, bc.roundTrip(t, pf))
	}
	req := fetchRequest(v, "allocs", make([]int64, benchPartitions), 256<<10, 64<<20)
	if v >= 13 {
		info, err := gw.Log.Topic(t.Context(), "allocs")
		if err != nil {
			t.Fatal(err)
		}
		req.Topics[0].Topic, req.Topics[0].TopicID = "", info.ID
	}
	frame := requestFrame(req, 2)
	for range 50 {
		bc.roundTrip(t, frame)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	if err := resp.ReadFrom(bc.roundTrip(t, frame)[5:]); err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("Fetch v%d: %+v", v, resp.Topics)
	}
	n := testing.AllocsPerRun(100, func() { bc.roundTrip(t, frame) })
	t.Logf("%.3f allocations per Fetch v%d round trip", n, v)
	if n >= 1 {
		t.Fatalf("%.2f allocations per Fetch round trip", n)
	}
}

// TestIdempotentProduceRoundTripAllocs: the same Produce with idempotent
// batches in sequence (window check, producer stamp, per-partition lock)
// allocates no more than the non-idempotent one: nothing per batch in
// steady state.
func TestIdempotentProduceRoundTripAllocs(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Embedded: true, Memlog: memlog.Config{PartitionBytes: 64 << 20}})
	gw.CreateTopic(t, "allocs", benchPartitions)
	bc := dialBench(t, gw.Addr)
	f := newIdemFrame("allocs")
	for range 200 { // warm the pools, the per-connection state, the windows
		checkProduce(t, bc.roundTrip(t, f.frame))
		f.next()
	}
	n := testing.AllocsPerRun(300, func() { bc.roundTrip(t, f.frame); f.next() })
	t.Logf("%.3f allocations per idempotent Produce round trip (%d batches)", n, benchPartitions)
	if n > 0.5 {
		t.Fatalf("%.2f allocations per idempotent Produce round trip", n)
	}
	// Every batch was new and stored: 200 warm-up, 1 + 300 measured.
	if m := gw.Metrics(); !containsLine(m, "kiggy_idempotent_duplicate_batches_total 0") || strings.Contains(m, `kiggy_api_errors_total{api="Produce"`) {
		t.Fatalf("the frames were not all new and in sequence:\n%s", m)
	}
	wantCount(t, gw, "allocs", 0, 501*benchRecords)
}

// TestFetchRoundTripAllocsCompressed: the same Fetch of a topic with a
// compression.type allocates nothing per request once warm, for each codec
// (pooled compressors and scratch per state, the compressed stream written
// into the pooled response buffer), on the embedded log read inline; read
// as a networked backend (every partition concurrently, a goroutine each),
// no more than the same Fetch uncompressed.
func TestFetchRoundTripAllocsCompressed(t *testing.T) {
	measure := func(t *testing.T, gw *kiggytest.Gateway, topic, compression string) float64 {
		createCodecTopic(t, gw, topic, benchPartitions, compression)
		bc := dialBench(t, gw.Addr)
		pf := produceFrame(topic)
		for range 16 {
			checkProduce(t, bc.roundTrip(t, pf))
		}
		frame := fetchFrame(topic, 256<<10)
		for range 50 {
			bc.roundTrip(t, frame)
		}
		return testing.AllocsPerRun(50, func() { bc.roundTrip(t, frame) })
	}
	for _, fan := range []bool{false, true} {
		gw := codecGateway(t, fan)
		base := measure(t, gw, "allocs-none", "producer")
		t.Logf("fan=%v: %.3f allocations per uncompressed Fetch round trip", fan, base)
		for _, c := range fetchCodecs {
			t.Run(fmt.Sprintf("%s/fan=%v", c.name, fan), func(t *testing.T) {
				n := measure(t, gw, "allocs-"+c.name, c.name)
				t.Logf("%.3f allocations per Fetch round trip", n)
				if n > base+0.1 {
					t.Fatalf("%.2f allocations per Fetch round trip, %.2f uncompressed", n, base)
				}
			})
		}
	}
}

// networkedLog is the embedded log declaring the capabilities of a
// networked backend (Iggy's: none), so the gateway takes the Iggy path over
// it: Produce partitions appended concurrently through the partition
// queues (coalesce.go), as against Iggy, without a server's allocations in
// the measurement (the Iggy client's own Append is TestAppendAllocs in
// bridge/iggy, its server in a child process).
type networkedLog struct{ *memlog.Log }

func (networkedLog) Capabilities() store.Capabilities { return store.Capabilities{} }

// TestProduceRoundTripAllocsNetworked: the Produce of
// TestProduceRoundTripAllocs on the path a networked backend takes
// allocates less than once per request too (the log's own chunks), plain
// and idempotent.
func TestProduceRoundTripAllocsNetworked(t *testing.T) {
	for _, idem := range []bool{false, true} {
		t.Run(fmt.Sprintf("idempotent=%v", idem), func(t *testing.T) {
			backend := networkedLog{memlog.New(memlog.Config{PartitionBytes: 64 << 20})}
			gw := kiggytest.Start(t, kiggytest.Options{Log: backend})
			gw.CreateTopic(t, "allocs", benchPartitions)
			bc := dialBench(t, gw.Addr)
			frame, next := produceFrame("allocs"), func() {}
			if idem {
				f := newIdemFrame("allocs")
				frame, next = f.frame, f.next
			}
			for range 200 {
				checkProduce(t, bc.roundTrip(t, frame))
				next()
			}
			n := testing.AllocsPerRun(300, func() { bc.roundTrip(t, frame); next() })
			t.Logf("%.3f allocations per Produce round trip", n)
			if n > 0.5 {
				t.Fatalf("%.2f allocations per Produce round trip", n)
			}
			wantCount(t, gw, "allocs", 0, 501*benchRecords)
		})
	}
}

// TestFetchFromTailWindowAllocs: a Fetch of 16 partitions answered from
// the Iggy client's tail window (docs/IGGY.md, "The tail window": what
// this gateway appended, never polled; the shared fetch cache off, so
// every Fetch walks the window's frames and maps them again) allocates
// nothing per request.
func TestFetchFromTailWindowAllocs(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyNoKeepAlive: true, IggyFetchCacheBytes: -1})
	gw.CreateTopic(t, "allocs", benchPartitions)
	bc := dialBench(t, gw.Addr)
	frame := fetchFrame("allocs", 256<<10)
	bc.roundTrip(t, frame) // a consumer at the tail: the window keeps what follows
	warm := pollCount(t, gw)
	pf := produceFrame("allocs")
	for range 4 {
		checkProduce(t, bc.roundTrip(t, pf))
	}
	handedOff := func() float64 {
		return metricValue(t, gw.Metrics(), "kiggy_fetch_reads_handed_off_total")
	}
	for range 50 {
		bc.roundTrip(t, frame)
	}
	polls, handed := pollCount(t, gw), handedOff()
	n := testing.AllocsPerRun(100, func() { bc.roundTrip(t, frame) })
	t.Logf("%.3f allocations per Fetch round trip", n)
	if p := pollCount(t, gw); p != warm || polls != warm {
		t.Fatalf("%v polls of Iggy after the first Fetch: the Fetches were not answered from the tail window", p-warm)
	}
	// Reads answered from memory run on the Fetch's goroutine: none of
	// the 16 partitions is handed to a reader goroutine.
	if h := handedOff(); h != handed {
		t.Fatalf("%v partition reads handed to reader goroutines over 101 Fetches served from the tail window, want 0", h-handed)
	}
	if n >= 0.1 {
		t.Fatalf("%.2f allocations per Fetch round trip", n)
	}
}

// TestMetadataUnknownTopicsAllocs: a Metadata naming 10 topics that do not
// exist, while auto-creation is on and past --auto-create-topics-limit (the
// auto-create flood of tests/hostile), allocates nothing on the embedded
// log. A lookup miss used to format an error per name (3 allocations), and
// the garbage of a flood of random names made the collector run on the
// steady clients' time.
func TestMetadataUnknownTopicsAllocs(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Embedded: true, Bridge: bridge.Config{AutoCreateTopicsLimit: 1}})
	gw.CreateTopic(t, "present", 1)
	bc := dialBench(t, gw.Addr)
	frames := make([][]byte, 2500)
	for i := range frames {
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = 9, true
		for j := range 10 {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(fmt.Sprintf("random-%d-%d", i, j))
			req.Topics = append(req.Topics, rt)
		}
		frames[i] = requestFrame(req, 1)
	}
	i := 0
	check := func() {
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 9
		if err := resp.ReadFrom(bc.roundTrip(t, frames[i])[5:]); err != nil { // correlation id + header tags
			t.Fatal(err)
		}
		i++
		if len(resp.Topics) != 10 || resp.Topics[0].ErrorCode != 3 { // UNKNOWN_TOPIC_OR_PARTITION
			t.Fatalf("Metadata of 10 unknown topics past the limit: %+v", resp.Topics)
		}
	}
	for range 100 {
		check()
	}
	n := testing.AllocsPerRun(2000, func() { bc.roundTrip(t, frames[i]); i++ })
	t.Logf("%.3f allocations per Metadata of 10 unknown topics", n)
	if n > 0.5 {
		t.Fatalf("%.2f allocations per Metadata of 10 unknown topics", n)
	}
}
