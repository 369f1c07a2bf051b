package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestSlotsDue checks the pacing of a rate-limited producer from computed
// times, not the clock: one record owed at its start, then one more every
// interval, missed slots still owed.
func TestSlotsDue(t *testing.T) {
	const interval = float64(time.Millisecond) // 1,000 records/s
	for _, tc := range []struct {
		elapsed time.Duration
		want    int64
	}{
		{-time.Second, 0},
		{0, 1},
		{999 * time.Microsecond, 1},
		{time.Millisecond, 2},
		{time.Second, 1001},
		{10*time.Second + 500*time.Microsecond, 10001},
	} {
		if got := slotsDue(tc.elapsed, interval); got != tc.want {
			t.Errorf("slotsDue(%v) = %d, want %d", tc.elapsed, got, tc.want)
		}
	}
	start := time.Unix(100, 0)
	// 3 records/s: slots at 0, 1/3 and 2/3 s, to the nanosecond.
	third := float64(time.Second) / 3
	for i, want := range []time.Duration{0, 333333333, 666666666, time.Second} {
		if got := slotAt(start, int64(i), third).Sub(start); got != want {
			t.Errorf("slot %d at %v, want %v", i, got, want)
		}
	}
	// Over any span, the slots owed match the rate within one.
	for _, rate := range []float64{1, 7, 1000, 123456} {
		iv := float64(time.Second) / rate
		if n := slotsDue(10*time.Second, iv); float64(n) < 10*rate || float64(n) > 10*rate+1 {
			t.Errorf("rate %v: %d slots owed in 10s", rate, n)
		}
	}
}

func TestStampValue(t *testing.T) {
	p := newPayload(64)
	v := p.at(12345)
	at := time.Unix(1_700_000_000, 123_456_789)
	s := stampValue(v, at)
	if len(s) != len(v) || string(s[stampBytes:]) != string(v[stampBytes:]) {
		t.Fatal("stamped value differs from the payload past the stamp")
	}
	if string(p.at(12345)) != string(v) {
		t.Fatal("stampValue wrote into the shared payload buffer")
	}
	got, ok := readStamp(s)
	if !ok || !got.Equal(at) {
		t.Fatalf("readStamp = %v, %v; want %v", got, ok, at)
	}
	if _, ok := readStamp([]byte("short")); ok {
		t.Fatal("a value shorter than the stamp was read")
	}
	// The producer stamps a copy of every record's value with its due time.
	pr := newProducer(Load{RecordSize: 32, Partitions: 1})
	pr.stamp = true
	r := pr.record(pr.payload.at(7), at)
	if got, _ := readStamp(r.Value); !got.Equal(at) || !r.Timestamp.Equal(at) {
		t.Fatalf("record stamped %v, timestamp %v; want %v", got, r.Timestamp, at)
	}
}

// TestE2ERow checks the figures of a run from counts and CPU readings
// given, and the window bounds the consumers record latencies in.
func TestE2ERow(t *testing.T) {
	if !inWindow(10, 10, 20) || inWindow(20, 10, 20) || inWindow(9, 10, 20) {
		t.Fatal("inWindow is not [start, end)")
	}
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	groups := []*e2eGroup{{}, {}, {}}
	for _, g := range groups {
		g.winRecords.Store(10000)
		g.winBytes.Store(333_333_333)
		g.read.Store(50000)
	}
	groups[1].read.Store(49000)
	if lag := maxLag(50000, groups); lag != 1000 {
		t.Fatalf("maxLag = %d, want 1000", lag)
	}
	if lag := maxLag(40000, groups); lag != 0 {
		t.Fatalf("maxLag with every group ahead = %d, want 0", lag)
	}
	procs := []measuredProc{{"kiggy", 1}, {"iggy-server", 2}}
	row := &E2ERow{}
	fillE2ERow(row, 20000, 2*time.Second, groups, &h, procs,
		[]time.Duration{time.Second, 10 * time.Second}, []time.Duration{3 * time.Second, 11 * time.Second})
	if row.Produced != 10000 || row.Consumed != 5000 || row.Records != 1000 {
		t.Fatalf("rates %v / %v, %d records", row.Produced, row.Consumed, row.Records)
	}
	// Percentiles are within the histogram's 1.6 % of the true ones.
	near := func(got, want float64) bool { return got >= want && got <= want*1.016 }
	if !near(row.P50Ms, 500) || !near(row.P99Ms, 990) || !near(row.P999Ms, 999) || row.MaxMs != 1000 {
		t.Fatalf("p50 %v p99 %v p99.9 %v max %v", row.P50Ms, row.P99Ms, row.P999Ms, row.MaxMs)
	}
	if row.ConsumedGB < 0.99 || row.ConsumedGB > 1.01 {
		t.Fatalf("consumed %v GB", row.ConsumedGB)
	}
	if k, i := row.CPUPerGB["kiggy"], row.CPUPerGB["iggy-server"]; k < 1.99 || k > 2.01 || i < 0.99 || i > 1.01 || row.CPUPerGBSum < 2.99 || row.CPUPerGBSum > 3.01 {
		t.Fatalf("CPU per GB %v, sum %v", row.CPUPerGB, row.CPUPerGBSum)
	}
	// A process whose CPU could not be read leaves the CPU unknown.
	row = &E2ERow{}
	fillE2ERow(row, 1, time.Second, groups, &h, procs, []time.Duration{-1, 0}, []time.Duration{0, 0})
	if row.CPUPerGB != nil || row.CPUPerGBSum != 0 {
		t.Fatalf("CPU %v with an unknown reading", row.CPUPerGB)
	}
}

// TestParseIggyBenchE2E reads iggy-bench e2e's summary line (as iggy-bench
// 0.9 prints it) and checks the arguments it is run with.
func TestParseIggyBenchE2E(t *testing.T) {
	out := "2026-12-02T23:02:36Z INFO noise p99 latency: 1 ms\n\x1b[32mProducing Consumer Results: Total throughput: 1.86 MB/s, 1927 messages/s, average throughput per Producing Consumer: 0.46 MB/s, p50 latency: 44.02 ms, p90 latency: 44.46 ms, p95 latency: 44.70 ms, p99 latency: 47.64 ms, p999 latency: 48.63 ms, p9999 latency: 48.83 ms, average latency: 44.08 ms, median latency: 44.02 ms, min: 42.73 ms, max: 48.98 ms, std dev: 0.13 ms, total time: 10.80 s\x1b[0m\n"
	r, ok := parseIggyBenchE2E(out)
	if !ok || r.msgsPerSec != 1927 || r.p50 != 44.02 || r.p99 != 47.64 || r.p999 != 48.63 || r.max != 48.98 {
		t.Fatalf("parsed %+v, %v", r, ok)
	}
	if _, ok := parseIggyBenchE2E("Producers Results: Total throughput: 1 MB/s, 2 messages/s"); ok {
		t.Fatal("parsed a summary that is not end-to-end")
	}
	args := strings.Join(iggyBenchE2EArgs(1000, 1024, 10, 16, 2*time.Second, 10*time.Second, "127.0.0.1:1", "u", "p", false), " ")
	// 1,000 records/s of 1 KiB, sent and polled: 2,048 KB/s, 20,480 KB in 10 s.
	for _, want := range []string{"-m 1024", "-P 10", "-T 20480KB", "-r 2048KB", "-w 2000ms", "end-to-end-producing-consumer -s 16 -p 16 tcp --server-address 127.0.0.1:1 --nodelay"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "--reuse-streams") {
		t.Errorf("args %q reuse streams kbench did not create", args)
	}
	// At a durability level kbench creates the topics: iggy-bench reuses
	// them (a global option, before the command).
	args = strings.Join(iggyBenchE2EArgs(1000, 1024, 10, 16, 2*time.Second, 10*time.Second, "127.0.0.1:1", "u", "p", true), " ")
	if !strings.Contains(args, "--reuse-streams end-to-end-producing-consumer ") {
		t.Errorf("args %q do not reuse the streams", args)
	}
}

func TestPrintE2ERows(t *testing.T) {
	rows := []*E2ERow{
		{Target: TargetKafka, Fraction: 0.5, Groups: 3, Rate: 50000, Status: StatusOK, Produced: 49990, Consumed: 49980,
			P50Ms: 1.5, P99Ms: 4.25, P999Ms: 9, MaxMs: 20, LagEnd: 12, LagLeft: 0, CPUPerGB: map[string]float64{"kafka": 3.25}, CPUPerGBSum: 3.25,
			IggyPolls: -1, IggySends: -1},
		{Target: TargetKiggyIggy, Fraction: 0.9, Groups: 1, Rate: 90000, Status: StatusFailed},
		{Target: TargetKiggyIggy, Fraction: 0.5, Groups: 3, Rate: 50000, Status: StatusOK, IggyPolls: 12.4, IggySends: 3400},
		{Target: TargetIggyBench + " e2e", Fraction: 0.5, Groups: 1, Rate: 50000, Status: StatusOK, P99Ms: 2, IggyPolls: -1, IggySends: -1},
	}
	var b strings.Builder
	printE2ERows(&b, rows)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		{"target", "p99.9 ms", "lag end / left", "kafka", "sum", "Iggy polls / sends per s"},
		{"---:"},
		{"kafka", "50 % (50000/s)", "| 3 ", "49990", "49980", "1.50", "4.25", "9.00", "20.00", "12 / 0", "| –", "3.2", "3.2 | – "},
		{"kiggy-iggy", "90 % (90000/s)", "failed"},
		{"kiggy-iggy", "| 12 / 3400 "},
		{"iggy-bench e2e", "2.00", "| n/a", "| – "},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
		if !strings.HasPrefix(lines[i], "|") {
			t.Errorf("line %d %q is not a table row", i, lines[i])
		}
	}
}

// TestFormatRates: a measured maximum names its rounds, a given one says so.
func TestFormatRates(t *testing.T) {
	rates := []float64{150123.4, 101000, 192000}
	if got, want := median(slices.Sorted(slices.Values(rates))), 150123.4; got != want {
		t.Errorf("median %v, want %v", got, want)
	}
	if got, want := formatRates(rates), "median of 150123, 101000, 192000"; got != want {
		t.Errorf("formatRates %q, want %q", got, want)
	}
	if got := formatRates(nil); got != "given" {
		t.Errorf("formatRates(nil) %q", got)
	}
}

func TestE2EConfig(t *testing.T) {
	for _, c := range []E2EConfig{DefaultE2EConfig(), SmokeE2EConfig()} {
		if err := c.normalize(); err != nil {
			t.Fatal(err)
		}
		if bc := c.benchConfig(); bc.normalize() != nil {
			t.Fatal(bc.normalize())
		}
	}
	for name, mod := range map[string]func(*E2EConfig){
		"null target":     func(c *E2EConfig) { c.Targets = []string{TargetNull} },
		"twice":           func(c *E2EConfig) { c.Targets = []string{TargetKiggy, TargetKiggy} },
		"no stamp room":   func(c *E2EConfig) { c.Load.RecordSize = 7 },
		"no fractions":    func(c *E2EConfig) { c.Fractions = nil },
		"zero fraction":   func(c *E2EConfig) { c.Fractions = []float64{0} },
		"zero groups":     func(c *E2EConfig) { c.Groups = []int{0} },
		"no consumers":    func(c *E2EConfig) { c.Consumers = 0 },
		"rate of nothing": func(c *E2EConfig) { c.RateOf = "x" },
		"kafka's, no kafka": func(c *E2EConfig) {
			c.Targets = []string{TargetKiggy}
		},
		"tiny segments": func(c *E2EConfig) { c.SegmentBytes = 1000 },
		"no window":     func(c *E2EConfig) { c.Window = 0 },
		"no max rounds": func(c *E2EConfig) { c.MaxRounds = 0 },
	} {
		c := DefaultE2EConfig()
		mod(&c)
		if err := c.normalize(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestE2ESmoke runs the smoke configuration: kiggy alone, one rate, one
// and two groups. It asserts that every run produced a result in which the
// groups read what was produced, not what the figures are.
func TestE2ESmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts kiggy and consumer groups (-short)")
	}
	if _, err := testtools.GoTool(); err != nil {
		t.Skipf("skipping: no go tool to build kiggy: %v", err)
	}
	cfg := SmokeE2EConfig()
	cfg.Log = testLog{t}
	cfg.WorkDir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := RunE2E(ctx, cfg)
	if rep != nil {
		var b strings.Builder
		rep.Print(&b)
		t.Logf("report:\n%s", b.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || len(rep.Targets) != 1 || len(rep.Targets[0].Rows) != 2 {
		t.Fatalf("failures %v, %d targets", rep.Failures, len(rep.Targets))
	}
	for _, row := range rep.Targets[0].Rows {
		if row.Status != StatusOK || row.Records == 0 || row.Consumed == 0 || row.LagLeft != 0 {
			t.Errorf("row %+v", *row)
		}
	}
}
