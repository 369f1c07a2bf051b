package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and parentheses must not shift fields.
	line := []byte("4242 (java (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 42 0 100 1000 2000")
	d, err := parseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := (1234 + 567) * time.Second / clockTicks; d != want {
		t.Fatalf("cpu %v, want %v", d, want)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 x y"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestProcSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("skipping: no /proc on this system")
	}
	// Burn a little CPU so that the reading is not zero.
	x := 0
	for i := range 50_000_000 {
		x += i
	}
	_ = x
	cpu, err := ProcCPU(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Fatalf("ProcCPU(self) = %v, %v", cpu, err)
	}
	rss, err := ProcPeakRSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("ProcPeakRSS(self) = %d, %v", rss, err)
	}
	if _, err := ProcCPU(1 << 30); err == nil {
		t.Fatal("ProcCPU of a missing pid: no error")
	}
}

func TestParseJavaPerf(t *testing.T) {
	out := `[2026-11-29 11:18:59,123] WARN something
49952 records sent, 9990.4 records/sec (9.76 MB/sec), 120.5 ms avg latency, 400.0 ms max latency.
100000 records sent, 10235.414534 records/sec (10.00 MB/sec), 101.20 ms avg latency, 735.00 ms max latency, 95 ms 50th, 210 ms 95th, 300 ms 99th, 410 ms 99.9th.
Steady state results: 80000 records sent, 11000.5 records/sec (10.74 MB/sec), 90.10 ms avg latency, 500.00 ms max latency, 88 ms 50th, 200 ms 95th, 250 ms 99th, 390 ms 99.9th.
`
	r, err := parseJavaPerf(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.records != 80000 || r.recordsPerSec != 11000.5 || r.p50Ms != 88 || r.p99Ms != 250 || r.p999Ms != 390 || r.maxMs != 500 {
		t.Fatalf("parsed %+v, want the steady-state line", *r)
	}
	r, err = parseJavaPerf(strings.Join(strings.Split(out, "\n")[:3], "\n"))
	if err != nil || r.records != 100000 || r.p99Ms != 300 {
		t.Fatalf("without steady state: %+v, %v", r, err)
	}
	if _, err := parseJavaPerf("Exception in thread main\n"); err == nil {
		t.Fatal("no summary: no error")
	}
}

func TestJavaPerfArgs(t *testing.T) {
	l := DefaultLoad
	args := strings.Join(javaPerfArgs("127.0.0.1:9092", "t", l, 1000, 100), " ")
	for _, want := range []string{"--topic t", "--num-records 1000", "--record-size 1024", "--throughput -1",
		"--warmup-records 100", "bootstrap.servers=127.0.0.1:9092", "acks=all", "compression.type=none",
		"linger.ms=5", "max.in.flight.requests.per.connection=5", "enable.idempotence=true"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	l.Acks = 1
	if args := strings.Join(javaPerfArgs("a", "t", l, 1, 0), " "); !strings.Contains(args, "enable.idempotence=false") || strings.Contains(args, "warmup") {
		t.Errorf("acks=1 args %q", args)
	}
}

func TestProducerOpts(t *testing.T) {
	for _, l := range []Load{DefaultLoad, {RecordSize: 1, Partitions: 1, Acks: 1, Compression: "zstd", Producers: 1, InFlight: 3, BufferBytes: 1 << 20}} {
		if _, err := producerOpts("127.0.0.1:1", "t", l); err != nil {
			t.Errorf("%v: %v", l, err)
		}
	}
	l := DefaultLoad
	l.Compression = "brotli"
	if _, err := producerOpts("a", "t", l); err == nil {
		t.Error("unknown codec accepted")
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{DefaultConfig(), SmokeConfig()} {
		if err := c.normalize(); err != nil {
			t.Fatalf("%v", err)
		}
	}
	for name, mod := range map[string]func(*Config){
		"unknown target":    func(c *Config) { c.Targets = []string{"redpanda"} },
		"twice":             func(c *Config) { c.Targets = []string{"kafka", "kafka"} },
		"no loads":          func(c *Config) { c.Loads = nil },
		"acks 2":            func(c *Config) { c.Loads[0].Acks = 2 },
		"zero duration":     func(c *Config) { c.Duration = 0 },
		"fraction no kafka": func(c *Config) { c.Targets = []string{"kiggy"}; c.Rate = 0 },
		"java target":       func(c *Config) { c.JavaTargets = []string{"x"} },
		"tiny buffer":       func(c *Config) { c.Loads[0].BufferBytes = 10 },
		"no producers":      func(c *Config) { c.Loads[0].Producers = 0 },
		"too many":          func(c *Config) { c.Loads[0].Producers = MaxProducers + 1 },
	} {
		c := DefaultConfig()
		c.Loads = slices.Clone(c.Loads)
		mod(&c)
		if err := c.normalize(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPayload(t *testing.T) {
	p := newPayload(100)
	for _, x := range []uint64{0, 1, payloadBuf - 1, payloadBuf, math.MaxUint64} {
		v := p.at(x)
		if len(v) != 100 || cap(v) != 100 {
			t.Fatalf("at(%d): len %d cap %d", x, len(v), cap(v))
		}
		for _, c := range v {
			if c < 'A' || c > 'Z' {
				t.Fatalf("payload byte %q", c)
			}
		}
	}
}

// TestAggregateRatiosGoals checks the figures a report derives from runs.
func TestAggregateRatiosGoals(t *testing.T) {
	mk := func(target, client, mode string, rate, p99, cpu float64, bytes int64) *Row {
		row := &Row{Target: target, Client: client, Mode: mode, Status: StatusOK, hist: new(Histogram)}
		h := new(Histogram)
		for range 100 {
			h.Record(time.Duration(p99 * float64(time.Millisecond)))
		}
		run := &Measurement{ProduceRecordsPerSec: rate, P99Ms: p99, ServerCPUSeconds: cpu, Bytes: bytes, CPUMeasured: true,
			ConsumeRecordsPerSec: rate * 2, consumeBytes: bytes, ConsumeServerCPUSeconds: cpu / 2,
			PeakRSS: map[string]int64{"a": 100 << 20, "b": 28 << 20}, hist: h}
		if target == TargetNull {
			run.consumeNA = true
		}
		row.Runs = append(row.Runs, run)
		row.hist.Merge(h)
		aggregate(row)
		return row
	}
	lr := &LoadReport{Load: DefaultLoad, Rate: 500, RateSource: "50% of Kafka's"}
	lr.Rows = []*Row{
		mk(TargetKafka, ClientFranz, ModeMax, 1000, 10, 4, 1e9),
		mk(TargetKiggy, ClientFranz, ModeMax, 2500, 5, 1, 1e9),
		mk(TargetNull, ClientFranz, ModeMax, 3000, 2, 0.1, 1e9),
		mk(TargetKafka, ClientFranz, ModeRate, 500, 8, 1, 1e8),
		mk(TargetKiggy, ClientFranz, ModeRate, 500, 9, 1, 1e8),
	}
	kg := lr.Rows[1]
	if kg.ServerCPUPerGB == nil || *kg.ServerCPUPerGB != 1 || kg.PeakRSSMiB == nil || *kg.PeakRSSMiB != 128 {
		t.Fatalf("kiggy row %+v", kg)
	}
	if lr.Rows[2].ConsumeRecordsPerSec != nil {
		t.Fatal("null broker has a consume rate")
	}
	got := map[string]float64{}
	for _, r := range ratios(lr) {
		got[r.Name] = r.Value
	}
	for name, want := range map[string]float64{
		"kiggy/kafka produce records/s":        2.5,
		"kiggy/kafka server CPU s/GB produced": 0.25,
		"kiggy/null produce records/s":         2500.0 / 3000,
	} {
		if math.Abs(got[name]-want) > 1e-9 {
			t.Errorf("%s = %v, want %v (all: %v)", name, got[name], want, got)
		}
	}
	met := map[string]bool{}
	for _, g := range goals(lr, 0.5, 0) {
		met[g.Name] = g.Met
	}
	want := map[string]bool{
		"produce throughput vs Kafka":                true,
		"server CPU per GB vs Kafka":                 true,
		"produce throughput vs null broker":          true,
		"produce p99 at 50% of Kafka's max vs Kafka": false,
	}
	if len(met) != len(want) {
		t.Fatalf("goals %v, want %v", met, want)
	}
	for k, v := range want {
		if met[k] != v {
			t.Errorf("goal %q met = %v, want %v", k, met[k], v)
		}
	}
	l := DefaultLoad
	l.Partitions = 1
	if goals(&LoadReport{Load: l, Rows: lr.Rows}, 0.5, 0) != nil {
		t.Error("goals evaluated on a load they are not stated for")
	}

	lr.Ratios, lr.Goals = ratios(lr), goals(lr, 0.5, 0)
	var buf bytes.Buffer
	(&Report{Loads: []LoadReport{*lr}, Failures: []string{"x failed"}}).Print(&buf)
	for _, s := range []string{"kiggy/kafka produce records/s", "MISSED", "FAILURES", "n/a"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("printed report lacks %q:\n%s", s, buf.String())
		}
	}
}

func TestParseMachineCPU(t *testing.T) {
	stat := []byte("cpu  100 5 50 800 20 3 2 10 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
	busy, total, err := parseMachineCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Second / clockTicks
	if busy != (100+5+50+3+2+10)*tick || total != (100+5+50+800+20+3+2+10)*tick {
		t.Fatalf("busy %v total %v", busy, total)
	}
	if _, _, err := parseMachineCPU([]byte("intr 1 2 3\n")); err == nil {
		t.Fatal("no cpu line: no error")
	}
	s0 := cpuSample{ok: true, server: time.Second, client: time.Second, machineBusy: 10 * time.Second, machineTotal: 20 * time.Second}
	s1 := cpuSample{ok: true, server: 2 * time.Second, client: 3 * time.Second, machineBusy: 15 * time.Second, machineTotal: 30 * time.Second}
	if got := otherShare(s0, s1); math.Abs(got-0.2) > 1e-9 {
		t.Fatalf("other share %v, want 0.2 (5 s busy - 3 s ours of 10 s)", got)
	}
}

// TestProducerWindow checks what the callback counts: acknowledgements
// arriving inside the window for throughput, and the latency of every record
// due inside it, even when acknowledged after the window closed.
func TestProducerWindow(t *testing.T) {
	p := &producer{acked: make([]atomic.Int64, 2), errc: make(chan struct{})}
	p.pool.New = func() any { return new(kgo.Record) }
	now := time.Now()
	p.winStart.Store(now.Add(-time.Second).UnixNano())
	p.winEnd.Store(now.Add(time.Hour).UnixNano())                                // still open
	p.done(&kgo.Record{Partition: 0, Timestamp: now.Add(-2 * time.Second)}, nil) // due before: ack counts, latency not
	p.done(&kgo.Record{Partition: 1, Timestamp: now.Add(-500 * time.Millisecond)}, nil)
	p.winEnd.Store(now.Add(-100 * time.Millisecond).UnixNano())                         // closed
	p.done(&kgo.Record{Partition: 1, Timestamp: now.Add(-200 * time.Millisecond)}, nil) // late ack: latency counts
	p.done(&kgo.Record{Partition: 1, Timestamp: now.Add(-50 * time.Millisecond)}, nil)  // due after the window
	if got := p.inWin.Load(); got != 2 {
		t.Errorf("acknowledged in window = %d, want 2", got)
	}
	if got := p.hist.Count(); got != 2 {
		t.Errorf("latencies recorded = %d, want 2", got)
	}
	if p.hist.Max() < 200*time.Millisecond {
		t.Errorf("late acknowledgement's latency %v, want ≥ 200ms", p.hist.Max())
	}
	if p.acked[0].Load() != 1 || p.acked[1].Load() != 3 {
		t.Errorf("acked per partition %d, %d", p.acked[0].Load(), p.acked[1].Load())
	}
	p.done(&kgo.Record{Topic: "t", Partition: 1}, errors.New("boom"))
	select {
	case <-p.errc:
	default:
		t.Fatal("a failed record did not fail the phase")
	}
	if p.err == nil || p.failed.Load() != 1 {
		t.Fatalf("err %v failed %d", p.err, p.failed.Load())
	}
}

// TestGatewayCounters reads the produce counters from a gateway's metrics
// text: Produce requests summed over versions, the append counters.
func TestGatewayCounters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `# HELP kiggy_api_requests_total Requests served.
kiggy_api_requests_total{api="Produce",version="9"} 10
kiggy_api_requests_total{api="Produce",version="11"} 5
kiggy_api_requests_total{api="Fetch",version="12"} 7
kiggy_records_produced_total 1600
kiggy_produce_appends_total 40
kiggy_produce_coalesced_total 20
kiggy_produce_round_waits_total 12
kiggy_iggy_session_waits_total 3
kiggy_iggy_request_duration_seconds_bucket{command="PollMessages",le="+Inf"} 8
kiggy_iggy_request_duration_seconds_sum{command="PollMessages"} 0.004
kiggy_iggy_request_duration_seconds_count{command="PollMessages"} 8
kiggy_iggy_request_duration_seconds_sum{command="GetTopic"} 0.5
kiggy_iggy_request_duration_seconds_count{command="GetTopic"} 2
kiggy_iggy_request_duration_seconds_bucket{command="SendMessages",le="0.001"} 70
kiggy_iggy_request_duration_seconds_bucket{command="SendMessages",le="0.005"} 90
kiggy_iggy_request_duration_seconds_bucket{command="SendMessages",le="0.01"} 99
kiggy_iggy_request_duration_seconds_bucket{command="SendMessages",le="0.05"} 100
kiggy_iggy_request_duration_seconds_bucket{command="SendMessages",le="+Inf"} 100
kiggy_request_duration_seconds_bucket{api="Fetch",le="0.001"} 1
kiggy_request_duration_seconds_bucket{api="Produce",le="0.001"} 5
kiggy_request_duration_seconds_bucket{api="Produce",le="0.05"} 14
kiggy_request_duration_seconds_bucket{api="Produce",le="+Inf"} 15
`)
	}))
	defer srv.Close()
	gc, err := gatewayCounters(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := gatewayCounts{requests: 15, records: 1600, appends: 40, coalesced: 20, roundWaits: 12, sessionWaits: 3, iggyPolls: 8,
		iggyCount: map[string]float64{"PollMessages": 8, "GetTopic": 2}, iggySeconds: map[string]float64{"PollMessages": 0.004, "GetTopic": 0.5},
		// Each histogram's observations over 1, 5, 10 and 50 ms (a bound
		// missing from the text counts as over), then all of them.
		slow: map[string]*[len(slowBounds) + 1]float64{"SendMessages": {30, 10, 1, 0, 100}, "Produce": {10, 15, 15, 1, 15}}}
	if !reflect.DeepEqual(gc, want) {
		t.Fatalf("got %+v, want %+v", gc, want)
	}
}

// TestManyProducers: 1,000 producer clients are a valid load, and the
// default buffer keeps their total at the default load's.
func TestManyProducers(t *testing.T) {
	c := DefaultConfig()
	c.Loads = []Load{DefaultLoad}
	c.Loads[0].Producers = 1000
	c.Loads[0].BufferBytes = BufferFor(1000, c.Loads[0].RecordSize)
	if err := c.normalize(); err != nil && openFileLimit() >= 3*1000+512 {
		t.Fatal(err)
	}
	for _, tc := range []struct{ n, size, want int }{
		{1, 1024, 32 << 20},
		{4, 1024, 32 << 20},
		{100, 1024, TotalBufferBytes / 100},
		{1000, 1024, TotalBufferBytes / 1000},
		{4096, 100, 64 << 10},
		{1000, 64 << 10, 256 << 10},
	} {
		if got := BufferFor(tc.n, tc.size); got != tc.want {
			t.Errorf("BufferFor(%d, %d) = %d, want %d", tc.n, tc.size, got, tc.want)
		}
	}
	if BufferFor(DefaultLoad.Producers, DefaultLoad.RecordSize) != DefaultLoad.BufferBytes {
		t.Error("BufferFor changes the default load's buffer")
	}
}

// TestProcSockets counts this process's sockets: a listener and a
// connection to it add three (listener, client end, accepted end).
func TestProcSockets(t *testing.T) {
	before, err := ProcSockets(selfPID)
	if errors.Is(err, errNoProc) {
		t.Skip("no /proc")
	}
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after, err := ProcSockets(selfPID)
	if err != nil {
		t.Fatal(err)
	}
	if after-before != 3 {
		t.Errorf("sockets %d → %d, want 3 more", before, after)
	}
}
