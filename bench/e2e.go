package bench

// The end-to-end latency benchmark (RunE2E, command ke2e), after the
// OpenMessaging Benchmark's driver semantics: producers at a fixed
// aggregate rate, consumer groups reading at the tail from the start, and
// the latency of every record from its create timestamp to its delivery to
// a consumer (docs/BENCHMARKS.md, "End-to-end latency at the tail").
//
// Every target is started once. Its maximum rate is measured first (the
// franz-go load unthrottled with one group at the tail, as OMB finds it:
// the lower of the produced and the consumed rate; or without consumers,
// as kbench's max run, with E2EConfig.MaxProduceOnly) or taken from
// E2EConfig.MaxRate; then for every fraction of a base
// rate (that maximum, or Kafka's: E2EConfig.RateOf) and every number of
// groups, on a fresh topic:
//
//  1. the groups' consumers (franz-go, classic consumer groups, reset to
//     the earliest offset) join and own every partition;
//  2. the producers (Load.Producers franz-go clients, each paced to its
//     share of the rate: slotsDue) send records whose value begins with
//     their due time in Unix nanoseconds (stampValue): the create
//     timestamp, at a finer grain than the record's millisecond
//     timestamp, and charging a producer that falls behind its schedule
//     with the wait (no coordinated omission);
//  3. after the warm-up, the measured window: a consumer records, for
//     every record due in it, the time from its stamp to the poll that
//     delivered it, however late that comes (during the drain included);
//     the server processes' CPU time is read at both ends;
//  4. the producers stop and flush, and the groups get E2EConfig.Drain to
//     read what is left; what each group had not read at the window's end
//     and after the drain is its lag.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/twmb/franz-go/pkg/kgo"
)

// E2EConfig configures RunE2E. Start from DefaultE2EConfig or
// SmokeE2EConfig.
type E2EConfig struct {
	// Targets are the targets to run, from AllTargets but the null broker
	// (which stores nothing to consume).
	Targets []string `json:"targets"`
	// Load is the producer load; Load.RecordSize must be at least 8 (the
	// stamp).
	Load Load `json:"load"`
	// Fractions are the produce rates, as fractions of the base rate.
	Fractions []float64 `json:"fractions"`
	// Groups are the numbers of consumer groups (fan-out) to run each rate
	// with; every group has Consumers members.
	Groups    []int `json:"groups"`
	Consumers int   `json:"consumers"`
	// RateOf is the base rate of the fractions: RateOfOwn (each target's
	// own maximum) or RateOfKafka (Kafka's, for every target: the same
	// absolute rates everywhere; needs the kafka target or MaxRate).
	RateOf string `json:"rate_of"`
	// MaxRate, if positive, is every target's maximum produce rate in
	// records/s, instead of measuring it.
	MaxRate float64 `json:"max_rate,omitempty"`
	// MaxWindow is the measuring window of the maximum rate (after
	// Warmup). MaxProduceOnly measures it without consumers (else with one
	// group at the tail: RunE2E).
	MaxWindow      time.Duration `json:"max_window_ns"`
	MaxProduceOnly bool          `json:"max_produce_only,omitempty"`
	// MaxRounds is how many windows measure the maximum; it is their
	// median. One 5-s window is noise on a shared two-vCPU machine: six
	// in one setting gave 101k–192k records/s.
	MaxRounds int `json:"max_rounds"`
	// Warmup is discarded before every measured Window; Drain bounds the
	// groups' catching up after the producers stop.
	Warmup time.Duration `json:"warmup_ns"`
	Window time.Duration `json:"window_ns"`
	Drain  time.Duration `json:"drain_ns"`
	// SegmentBytes is the topics' segment.bytes (Kafka's and kiggy's
	// embedded log's segments), small so that a window rolls through a few.
	SegmentBytes int64 `json:"segment_bytes"`
	// IggyBenchBatch is iggy-bench e2e's messages per batch (-P).
	IggyBenchBatch int `json:"iggy_bench_batch"`
	// IggyBenchDurability is the level iggy-bench e2e appends at, as
	// Config.IggyBenchDurability: "written" or "fsync" has its topics
	// created fresh before each run at that level, with SegmentBytes, and
	// iggy-bench reuse them; "" leaves iggy-bench to create them with
	// Iggy's defaults (buffered, 1 GiB segments).
	IggyBenchDurability string `json:"iggy_bench_durability,omitempty"`

	// The servers, as in Config.
	KafkaHeap       string   `json:"kafka_heap"`
	KafkaDir        string   `json:"kafka_dir,omitempty"`
	IggyDir         string   `json:"iggy_dir,omitempty"`
	IggyAddr        string   `json:"iggy_addr,omitempty"`
	IggyPID         int      `json:"iggy_pid,omitempty"`
	IggyServerBin   string   `json:"iggy_server_bin,omitempty"`
	IggyBenchBin    string   `json:"iggy_bench_bin,omitempty"`
	IggyClusterAddr string   `json:"iggy_cluster_addr,omitempty"`
	IggyClusterPIDs []int    `json:"iggy_cluster_pids,omitempty"`
	IggyUsername    string   `json:"-"`
	IggyPassword    string   `json:"-"`
	GatewayFlags    []string `json:"gateway_flags,omitempty"`
	// ProfileDir, as Config.ProfileDir: a CPU profile of the kiggy targets
	// per measured window.
	ProfileDir string `json:"profile_dir,omitempty"`
	// ClientGOGC is the garbage collector's percent (GOGC) of the process
	// running the benchmark, whose producers and consumers measure every
	// target: the clients allocate per record, and at Go's default (100)
	// over a few MiB of live heap they collected 50–70 times a second,
	// each collection's pauses landing in some records' latency, whatever
	// the target. 0 leaves the process's setting.
	ClientGOGC int    `json:"client_gogc,omitempty"`
	WorkDir    string `json:"-"`
	KeepWork   bool   `json:"-"`
	// Smoke marks a smoke run (figures not meaningful).
	Smoke bool `json:"smoke,omitempty"`
	// Log receives progress lines (nil = os.Stderr).
	Log io.Writer `json:"-"`
}

// Base rates of E2EConfig.RateOf.
const (
	RateOfOwn   = "own"
	RateOfKafka = "kafka"
)

// stampBytes is the size of the create timestamp at the start of every
// record value of the end-to-end benchmark.
const stampBytes = 8

// DefaultE2EConfig is the end-to-end benchmark: Kafka, kiggy and
// kiggy-iggy; 1 KiB records to 16 partitions from 4 idempotent producers
// with linger 1 ms (OMB's Kafka driver setting); 25, 50 and 90 % of Kafka's
// maximum; 1 and 3 groups of 2 consumers; 30 s windows after a 5 s warm-up
// and 8 MiB segments.
func DefaultE2EConfig() E2EConfig {
	l := DefaultLoad
	l.Linger = time.Millisecond
	return E2EConfig{
		Targets:        []string{TargetKafka, TargetKiggy, TargetKiggyIggy},
		Load:           l,
		Fractions:      []float64{0.25, 0.5, 0.9},
		Groups:         []int{1, 3},
		Consumers:      2,
		RateOf:         RateOfKafka,
		MaxWindow:      5 * time.Second,
		MaxRounds:      3,
		Warmup:         5 * time.Second,
		Window:         30 * time.Second,
		Drain:          10 * time.Second,
		SegmentBytes:   8 << 20,
		IggyBenchBatch: 10,
		// kiggy-iggy's default level: the like-for-like comparison.
		IggyBenchDurability: "written",
		KafkaHeap:           "1g",
		ClientGOGC:          800,
		IggyUsername:        "iggy",
		IggyPassword:        "iggy",
	}
}

// SmokeE2EConfig is a short run against kiggy alone at a fixed maximum of
// 2,000 records/s: 4 partitions, one fraction, 1 s windows. Its figures
// mean nothing.
func SmokeE2EConfig() E2EConfig {
	c := DefaultE2EConfig()
	c.Smoke = true
	c.Targets = []string{TargetKiggy}
	c.Load.Partitions, c.Load.Producers, c.Load.BufferBytes = 4, 2, 4<<20
	c.Fractions, c.Groups, c.Consumers = []float64{0.5}, []int{1, 2}, 1
	c.RateOf, c.MaxRate = RateOfOwn, 2000
	c.Warmup, c.Window, c.Drain = 500*time.Millisecond, time.Second, 5*time.Second
	c.SegmentBytes = 1 << 20
	return c
}

func (ec *E2EConfig) normalize() error {
	if ec.Log == nil {
		ec.Log = os.Stderr
	}
	if ec.KafkaHeap == "" {
		ec.KafkaHeap = "1g"
	}
	var errs []error
	if len(ec.Targets) == 0 {
		errs = append(errs, errors.New("no targets"))
	}
	for i, t := range ec.Targets {
		if !slices.Contains(AllTargets, t) || t == TargetNull {
			errs = append(errs, fmt.Errorf("target %q: want one of %s but null", t, strings.Join(AllTargets, ", ")))
		}
		if slices.Contains(ec.Targets[:i], t) {
			errs = append(errs, fmt.Errorf("target %q listed twice", t))
		}
	}
	if err := ec.Load.validate(); err != nil {
		errs = append(errs, err)
	}
	if ec.Load.RecordSize < stampBytes {
		errs = append(errs, fmt.Errorf("record size %d: want at least %d (the create timestamp)", ec.Load.RecordSize, stampBytes))
	}
	if len(ec.Fractions) == 0 || len(ec.Groups) == 0 {
		errs = append(errs, errors.New("no fractions or no groups"))
	}
	for _, f := range ec.Fractions {
		if f <= 0 || f > 2 {
			errs = append(errs, fmt.Errorf("fraction %v out of (0, 2]", f))
		}
	}
	for _, g := range ec.Groups {
		if g < 1 || g > 64 {
			errs = append(errs, fmt.Errorf("groups %d out of [1, 64]", g))
		}
	}
	if ec.Consumers < 1 {
		errs = append(errs, fmt.Errorf("consumers %d: want ≥ 1", ec.Consumers))
	}
	switch {
	case ec.RateOf != RateOfOwn && ec.RateOf != RateOfKafka:
		errs = append(errs, fmt.Errorf("rate of %q: want own or kafka", ec.RateOf))
	case ec.RateOf == RateOfKafka && ec.MaxRate <= 0 && !slices.Contains(ec.Targets, TargetKafka):
		errs = append(errs, errors.New("rates of Kafka's maximum need the kafka target (or a maximum rate)"))
	}
	if ec.MaxRate < 0 || ec.MaxWindow <= 0 || ec.MaxRounds < 1 || ec.Warmup < 0 || ec.Window <= 0 || ec.Drain < 0 {
		errs = append(errs, fmt.Errorf("max rate %v, max window %v, max rounds %d, warm-up %v, window %v, drain %v: want ≥ 0, positive windows and rounds",
			ec.MaxRate, ec.MaxWindow, ec.MaxRounds, ec.Warmup, ec.Window, ec.Drain))
	}
	if ec.SegmentBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("segment bytes %d: want at least 1 MiB (Kafka's minimum)", ec.SegmentBytes))
	}
	if ec.IggyBenchBatch < 1 {
		errs = append(errs, fmt.Errorf("iggy-bench batch %d: want ≥ 1", ec.IggyBenchBatch))
	}
	if d := ec.IggyBenchDurability; d != "" && d != "written" && d != "fsync" {
		errs = append(errs, fmt.Errorf("iggy-bench durability %q: want written, fsync or empty", d))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: invalid end-to-end config: %w", err)
	}
	return nil
}

// benchConfig is the Config the targets are started with.
func (ec E2EConfig) benchConfig() Config {
	c := DefaultConfig()
	c.Targets = slices.Clone(ec.Targets)
	c.Loads = []Load{ec.Load}
	c.JavaPerf, c.LatencyFraction = false, 0
	c.KafkaHeap, c.KafkaDir, c.IggyDir = ec.KafkaHeap, ec.KafkaDir, ec.IggyDir
	c.IggyAddr, c.IggyPID, c.IggyServerBin = ec.IggyAddr, ec.IggyPID, ec.IggyServerBin
	c.IggyClusterAddr, c.IggyClusterPIDs = ec.IggyClusterAddr, slices.Clone(ec.IggyClusterPIDs)
	c.IggyUsername, c.IggyPassword = ec.IggyUsername, ec.IggyPassword
	c.GatewayFlags, c.ProfileDir = slices.Clone(ec.GatewayFlags), ec.ProfileDir
	c.WorkDir, c.KeepWork, c.Log, c.Smoke = ec.WorkDir, ec.KeepWork, ec.Log, ec.Smoke
	return c
}

// E2EReport is RunE2E's result.
type E2EReport struct {
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Command  string       `json:"command,omitempty"`
	Host     Host         `json:"host"`
	Config   E2EConfig    `json:"config"`
	Targets  []*E2ETarget `json:"targets"`
	// Failures lists every target or run that failed.
	Failures []string `json:"failures,omitempty"`
}

// Failed reports whether a target or a run failed.
func (r *E2EReport) Failed() bool { return len(r.Failures) > 0 }

// E2ETarget is one target's maximum rate and runs.
type E2ETarget struct {
	Target string `json:"target"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Note   string `json:"note,omitempty"`
	// MaxRate is its maximum produce rate in records/s (measured, or
	// E2EConfig.MaxRate).
	MaxRate float64 `json:"max_rate"`
	// MaxRates are the rounds whose median MaxRate is (measured only).
	MaxRates []float64 `json:"max_rates,omitempty"`
	// Rows are its runs, then iggy-bench's beside it (kiggy-iggy targets
	// with E2EConfig.IggyBenchBin).
	Rows []*E2ERow `json:"rows"`
}

// E2ERow is one run: a target at one rate with one number of groups.
type E2ERow struct {
	Target   string  `json:"target"`
	Fraction float64 `json:"fraction"`
	Groups   int     `json:"groups"`
	Status   string  `json:"status"`
	Error    string  `json:"error,omitempty"`
	Note     string  `json:"note,omitempty"`
	// Rate is the target rate in records/s; Produced the records/s
	// acknowledged in the window; Consumed the records/s each group read
	// in it (their mean).
	Rate     float64 `json:"rate"`
	Produced float64 `json:"produced"`
	Consumed float64 `json:"consumed"`
	// Latency percentiles and maximum, in milliseconds, of the records due
	// in the window; Records counts them.
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	P999Ms  float64 `json:"p999_ms"`
	MaxMs   float64 `json:"max_ms"`
	Records uint64  `json:"records"`
	// LagEnd is the largest group's records acknowledged but not read at
	// the window's end; LagLeft after the drain (not 0 = a group fell
	// behind for good).
	LagEnd  int64 `json:"lag_end"`
	LagLeft int64 `json:"lag_left"`
	// ConsumedGB is what every group together read in the window (10^9
	// bytes); CPUPerGB each server process's CPU seconds in the window per
	// GB of it, by process name (kiggy, iggy-server, kafka, …), and
	// CPUPerGBSum their sum; nil when unknown.
	ConsumedGB  float64            `json:"consumed_gb"`
	CPUPerGB    map[string]float64 `json:"cpu_s_per_gb,omitempty"`
	CPUPerGBSum float64            `json:"cpu_s_per_gb_sum,omitempty"`
	// IggyPolls and IggySends are the PollMessages and SendMessages a
	// kiggy target on Iggy sent its server (or cluster) per second of the
	// window (from its /metrics); -1 where not known.
	IggyPolls float64 `json:"iggy_polls_per_s"`
	IggySends float64 `json:"iggy_sends_per_s"`
	// ClientGCs is the garbage collections per second of the window in the
	// process running the clients (E2EConfig.ClientGOGC).
	ClientGCs float64 `json:"client_gc_per_s"`
}

// RunE2E runs the end-to-end benchmark ec describes. Failures of a target
// or a run are in the report's Failures; the error is for a run that could
// not be set up or was interrupted. Every process it starts is stopped
// before it returns.
func RunE2E(ctx context.Context, ec E2EConfig) (*E2EReport, error) {
	if err := ec.normalize(); err != nil {
		return nil, err
	}
	r, cleanup, err := newModeRunner(ec.benchConfig())
	defer cleanup()
	if err != nil {
		return nil, err
	}
	if ec.ClientGOGC > 0 {
		defer debug.SetGCPercent(debug.SetGCPercent(ec.ClientGOGC))
	}
	rep := &E2EReport{Started: time.Now(), Config: ec, Host: hostInfo(r.java)}
	defer func() {
		rep.Finished = time.Now()
		rep.Host.LoadAvgEnd = loadAvg()
		rep.Failures = append(rep.Failures, r.report.Failures...)
	}()
	if err := r.build(ctx); err != nil {
		return rep, err
	}
	er := &e2eRunner{runner: r, ec: ec}
	// Canonical order: Kafka first, its maximum the others' base rate.
	targets := slices.DeleteFunc(slices.Clone(AllTargets), func(t string) bool { return !slices.Contains(ec.Targets, t) })
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		tr := &E2ETarget{Target: t, Status: StatusOK}
		rep.Targets = append(rep.Targets, tr)
		if err := er.target(ctx, tr); err != nil {
			switch tr.Status, tr.Error = errStatus(ctx, err); tr.Status {
			case StatusInterrupted:
				return rep, ctx.Err()
			case StatusFailed:
				r.failf("%s: %v", t, err)
			}
		}
	}
	return rep, nil
}

// e2eRunner runs the end-to-end benchmark on a runner's targets.
type e2eRunner struct {
	*runner
	ec E2EConfig
	// kafkaMax is Kafka's measured maximum (0 = not known).
	kafkaMax float64
	// runs counts the runs so far.
	runs int
}

// target starts tr's target, finds its maximum rate and runs every
// fraction and number of groups, then iggy-bench beside it.
func (er *e2eRunner) target(ctx context.Context, tr *E2ETarget) error {
	ec := er.ec
	s, err := er.start(ctx, tr.Target, ec.Load, "e2e")
	if err != nil {
		return err
	}
	defer func() {
		if err := s.stop(); err != nil {
			er.failf("%s: stop: %v", tr.Target, err)
		}
	}()
	tr.Note = s.note
	if err := waitCoordinator(ctx, s.addr); err != nil {
		return err
	}
	tr.MaxRate = ec.MaxRate
	if tr.MaxRate <= 0 {
		if tr.MaxRates, err = er.maxRates(ctx, s); err != nil {
			return fmt.Errorf("maximum rate: %w", err)
		}
		tr.MaxRate = median(slices.Sorted(slices.Values(tr.MaxRates)))
	}
	er.logf("%s: maximum %.0f records/s (%s)", tr.Target, tr.MaxRate, formatRates(tr.MaxRates))
	if tr.Target == TargetKafka {
		er.kafkaMax = tr.MaxRate
	}
	base := tr.MaxRate
	if ec.RateOf == RateOfKafka && ec.MaxRate <= 0 {
		if er.kafkaMax <= 0 {
			return &unavailableError{reason: "Kafka's maximum rate, the base rate, is not known (the kafka target failed)"}
		}
		base = er.kafkaMax
	}
	for _, f := range ec.Fractions {
		for _, g := range ec.Groups {
			if err := ctx.Err(); err != nil {
				return err
			}
			row := &E2ERow{Target: tr.Target, Fraction: f, Groups: g, Rate: f * base, Status: StatusOK}
			tr.Rows = append(tr.Rows, row)
			er.logf("%s: %.0f %% (%.0f records/s), %d group%s", tr.Target, 100*f, row.Rate, g, plural(g))
			if err := er.run(ctx, s, row, ec.Window); err != nil {
				if ctx.Err() != nil {
					row.Status = StatusInterrupted
					return ctx.Err()
				}
				row.Status, row.Error = StatusFailed, err.Error()
				er.failf("%s at %.0f %% with %d groups: %v", tr.Target, 100*f, g, err)
				continue
			}
			er.logf("%s: produced %.0f/s, consumed %.0f/s per group, p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms, lag %d then %d; the clients collected garbage %.1f times a second",
				tr.Target, row.Produced, row.Consumed, row.P50Ms, row.P99Ms, row.P999Ms, row.MaxMs, row.LagEnd, row.LagLeft, row.ClientGCs)
		}
	}
	if s.iggyAddr != "" && ec.IggyBenchBin != "" {
		for _, f := range ec.Fractions {
			if err := ctx.Err(); err != nil {
				return err
			}
			row := er.iggyBenchE2E(ctx, s, f, f*base)
			tr.Rows = append(tr.Rows, row)
		}
	}
	return nil
}

// maxRates measures s's maximum rate E2EConfig.MaxRounds times.
func (er *e2eRunner) maxRates(ctx context.Context, s *session) ([]float64, error) {
	var rates []float64
	for range er.ec.MaxRounds {
		r, err := er.maxRate(ctx, s)
		if err != nil {
			return nil, err
		}
		rates = append(rates, r)
	}
	return rates, nil
}

// formatRates lists measured maxima ("given" when there are none).
func formatRates(rates []float64) string {
	if len(rates) == 0 {
		return "given"
	}
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = strconv.FormatFloat(r, 'f', 0, 64)
	}
	return "median of " + strings.Join(parts, ", ")
}

// maxRate measures s's maximum rate once: the load unthrottled for
// E2EConfig.MaxWindow after the warm-up, with one consumer group at the
// tail (OMB's maximum: what the target sustains end to end, the lower of
// the produced and the consumed rate), or with no consumer when
// E2EConfig.MaxProduceOnly (kbench's max run).
func (er *e2eRunner) maxRate(ctx context.Context, s *session) (float64, error) {
	// A server just started may acknowledge nothing in its first window
	// (seen with Kafka on the shared machine): one more try.
	for try := 0; try < 2; try++ {
		row := &E2ERow{Target: s.target, Groups: 1}
		if er.ec.MaxProduceOnly {
			row.Groups = 0
		}
		if err := er.run(ctx, s, row, er.ec.MaxWindow); err != nil {
			return 0, err
		}
		rate := row.Produced
		if row.Groups > 0 {
			rate = min(rate, row.Consumed)
		}
		if rate > 0 {
			return rate, nil
		}
	}
	return 0, errors.New("no record acknowledged and read")
}

func (er *e2eRunner) createTopic(ctx context.Context, s *session, topic string) error {
	seg := strconv.FormatInt(er.ec.SegmentBytes, 10)
	return createTopicWith(ctx, s.addr, topic, er.ec.Load.Partitions, map[string]*string{"segment.bytes": &seg})
}

// e2eGroup is one consumer group's members and counts.
type e2eGroup struct {
	name    string
	clients []*kgo.Client
	// owned counts the partitions its members own (assigned minus revoked
	// and lost).
	owned atomic.Int64
	// read counts every record its members read; winRecords and winBytes
	// those delivered inside the window.
	read, winRecords, winBytes atomic.Int64
}

// run is one end-to-end run on s with a measured window of window,
// filling row; row.Rate 0 is unthrottled, row.Groups 0 no consumer.
func (er *e2eRunner) run(ctx context.Context, s *session, row *E2ERow, window time.Duration) error {
	ec, l := er.ec, er.ec.Load
	er.runs++ // a fresh topic name every run (a deleted topic may linger)
	topic := fmt.Sprintf("ke2e-%d-%03.0f-g%d", er.runs, 100*row.Fraction, row.Groups)
	if err := er.createTopic(ctx, s, topic); err != nil {
		return err
	}
	defer func() {
		if err := deleteTopic(context.WithoutCancel(ctx), s.addr, topic); err != nil {
			er.logf("%s: %v", s.target, err)
		}
	}()
	p := newProducer(l)
	p.stamp = true
	var hist Histogram

	// 1. The groups join and own every partition.
	tg := &tailGroups{errs: make(chan error, row.Groups*ec.Consumers)}
	defer tg.close()
	if err := tg.start(ctx, s.addr, topic, row.Groups, ec.Consumers, p, &hist); err != nil {
		return err
	}
	if err := waitOwned(ctx, tg.groups, l.Partitions, time.Minute); err != nil {
		return err
	}

	// 2. The producers, paced to the rate, and 3. the window: CPU and lag
	// read at its ends.
	var cpu0, cpu1 []time.Duration
	var lagEnd int64
	var gc0, gc1 gatewayCounts
	gcErr := errors.New("no /metrics")
	var clientGCs0, clientGCs1 uint64
	prof, profName := s.profileHooks()
	hooks := windowHooks{
		onBegin: func() {
			if prof.onBegin != nil {
				prof.onBegin()
			}
			cpu0 = procCPUs(s.procs)
			clientGCs0 = gcCycles()
			if s.metricsURL != "" {
				gc0, gcErr = gatewayCounters(ctx, s.metricsURL)
			}
		},
		onEnd: func() {
			cpu1 = procCPUs(s.procs)
			clientGCs1 = gcCycles()
			if prof.onEnd != nil {
				prof.onEnd()
				er.logf("%s: CPU profile of the window: %s", s.target, profName)
			}
			lagEnd = maxLag(ackedTotal(p), tg.groups)
			if gcErr == nil {
				gc1, gcErr = gatewayCounters(ctx, s.metricsURL)
			}
		},
	}
	res, err := p.run(ctx, s.addr, topic, ec.Warmup, window, row.Rate, cpuMeter{}, hooks)
	if err != nil {
		return err
	}

	// 4. The drain.
	acked := ackedTotal(p)
	if err := tg.drain(ctx, acked, ec.Drain); err != nil {
		return err
	}
	row.LagEnd, row.LagLeft = lagEnd, maxLag(acked, tg.groups)
	if h := res.hist; h != nil && h.Count() > 0 {
		// The produce side's share of the latency: create time to the
		// producer's acknowledgement.
		er.logf("%s: acknowledged p50 %.2f p99 %.2f p99.9 %.2f ms after their create time", s.target,
			ms(h.Quantile(0.5)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999)))
	}
	fillE2ERow(row, res.records, res.window, tg.groups, &hist, s.procs, cpu0, cpu1)
	if secs := res.window.Seconds(); secs > 0 {
		row.ClientGCs = float64(clientGCs1-clientGCs0) / secs
	}
	row.IggyPolls, row.IggySends = -1, -1
	if gcErr == nil {
		er.logGateway(s.target, row, &gc0, &gc1, res.window.Seconds())
	}
	return nil
}

// gcCycles returns the garbage collections this process has completed
// (runtime/metrics: no stop of the world, unlike runtime.ReadMemStats).
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// tailGroups is a run's consumer groups and their members' goroutines.
type tailGroups struct {
	groups []*e2eGroup
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error // a member's failure
}

// start makes n groups of members each reading topic at the tail from now.
func (tg *tailGroups) start(ctx context.Context, addr, topic string, n, members int, p *producer, hist *Histogram) error {
	cctx, cancel := context.WithCancel(ctx)
	tg.cancel = cancel
	for gi := range n {
		g := &e2eGroup{name: fmt.Sprintf("%s-group-%d", topic, gi+1)}
		tg.groups = append(tg.groups, g)
		for range members {
			cl, err := e2eConsumer(addr, topic, g)
			if err != nil {
				return err
			}
			g.clients = append(g.clients, cl)
			tg.wg.Go(func() {
				if err := consumeTail(cctx, cl, p, g, hist); err != nil {
					tg.errs <- err
				}
			})
		}
	}
	return nil
}

// drain waits up to timeout for every group to read the acked records, and
// returns a member's failure.
func (tg *tailGroups) drain(ctx context.Context, acked int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for maxLag(acked, tg.groups) > 0 && time.Now().Before(deadline) {
		select {
		case err := <-tg.errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	select {
	case err := <-tg.errs:
		return err
	default:
		return nil
	}
}

// close stops the members and closes their clients.
func (tg *tailGroups) close() {
	if tg.cancel != nil {
		tg.cancel()
	}
	tg.wg.Wait()
	for _, g := range tg.groups {
		for _, cl := range g.clients {
			cl.Close()
		}
	}
}

// logGateway fills row's Iggy request rates from the gateway's counters at
// the window's ends (gc0, gc1; secs long) and logs its Iggy requests, how
// its appends went and its slow Produce requests and SendMessages.
func (er *e2eRunner) logGateway(target string, row *E2ERow, gc0, gc1 *gatewayCounts, secs float64) {
	if gc1.iggyCount != nil && secs > 0 {
		row.IggyPolls = (gc1.iggyPolls - gc0.iggyPolls) / secs
		row.IggySends = (gc1.iggySends - gc0.iggySends) / secs
		var each []string
		for _, cmd := range slices.Sorted(maps.Keys(gc1.iggyCount)) {
			if n := gc1.iggyCount[cmd] - gc0.iggyCount[cmd]; n > 0 {
				mean := (gc1.iggySeconds[cmd] - gc0.iggySeconds[cmd]) / n
				each = append(each, fmt.Sprintf("%s %.0f/s (mean %.2f ms)", cmd, n/secs, 1000*mean))
			}
		}
		er.logf("%s: Iggy requests in the window: %s; %.0f waited for a free session", target, strings.Join(each, ", "),
			gc1.sessionWaits-gc0.sessionWaits)
		if trips := gc1.appends - gc0.appends; trips > 0 {
			// An append rode in another's round, led one at once, or
			// waited for its partition's running round and led the next.
			co, waits := gc1.coalesced-gc0.coalesced, gc1.roundWaits-gc0.roundWaits
			all := trips + co
			er.logf("%s: appends in the window: %.0f in %.0f rounds; %.0f %% led one at once, %.0f %% waited for a running round, %.0f %% rode in another's",
				target, all, trips, 100*(trips-waits)/all, 100*waits/all, 100*co/all)
		}
	}
	for _, h := range slices.Sorted(maps.Values(slowSeries)) {
		if a, b := gc0.slow[h], gc1.slow[h]; a != nil && b != nil {
			n := b[len(slowBounds)] - a[len(slowBounds)]
			var over []string
			for i, bound := range slowBounds {
				over = append(over, fmt.Sprintf("%.0f over %s s", b[i]-a[i], bound))
			}
			er.logf("%s: %s in the window: %.0f, of which %s", target, h, n, strings.Join(over, ", "))
		}
	}
}

// e2eConsumer is one member of group g reading topic from its earliest
// offset (the topic is fresh: that is its tail), fetching as the Java
// consumer does by default (fetch.max.wait.ms 500, fetch.min.bytes 1).
func e2eConsumer(addr, topic string, g *e2eGroup) (*kgo.Client, error) {
	count := func(parts map[string][]int32) int64 {
		n := 0
		for _, ps := range parts {
			n += len(ps)
		}
		return int64(n)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumerGroup(g.name),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { g.owned.Add(count(m)) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { g.owned.Add(-count(m)) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { g.owned.Add(-count(m)) }),
	)
	if err != nil {
		return nil, fmt.Errorf("bench: consumer: %w", err)
	}
	return cl, nil
}

// consumeTail polls cl until ctx ends, recording into hist the latency of
// every record due in p's window and counting what g reads.
func consumeTail(ctx context.Context, cl *kgo.Client, p *producer, g *e2eGroup, hist *Histogram) error {
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
				continue
			}
			return fmt.Errorf("bench: group %s consuming %s/%d: %w", g.name, fe.Topic, fe.Partition, fe.Err)
		}
		now := time.Now()
		inWin := inWindow(now.UnixNano(), p.winStart.Load(), p.winEnd.Load())
		var n, bytes int64
		fs.EachRecord(func(r *kgo.Record) {
			n++
			bytes += int64(len(r.Value))
			if due, ok := readStamp(r.Value); ok && inWindow(due.UnixNano(), p.winStart.Load(), p.winEnd.Load()) {
				hist.Record(now.Sub(due))
			}
		})
		g.read.Add(n)
		if inWin {
			g.winRecords.Add(n)
			g.winBytes.Add(bytes)
		}
	}
}

// inWindow reports whether t (Unix ns) is in [start, end).
func inWindow(t, start, end int64) bool { return t >= start && t < end }

// stampValue returns a copy of value with t, in Unix nanoseconds, in its
// first stampBytes bytes (big-endian); value must be at least that long.
func stampValue(value []byte, t time.Time) []byte {
	v := make([]byte, len(value))
	copy(v, value)
	binary.BigEndian.PutUint64(v, uint64(t.UnixNano()))
	return v
}

// readStamp reads the time stampValue wrote; false if value is too short.
func readStamp(value []byte) (time.Time, bool) {
	if len(value) < stampBytes {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(value))), true
}

// waitOwned waits until every group's members own every partition.
func waitOwned(ctx context.Context, groups []*e2eGroup, partitions int32, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		all := true
		for _, g := range groups {
			if g.owned.Load() != int64(partitions) {
				all = false
			}
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the consumer groups did not own all %d partitions within %v", partitions, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ackedTotal is every record p's producers have had acknowledged.
func ackedTotal(p *producer) int64 {
	var n int64
	for i := range p.acked {
		n += p.acked[i].Load()
	}
	return n
}

// maxLag is the largest of the groups' records acknowledged (acked) but
// not read (0 when all have read them all).
func maxLag(acked int64, groups []*e2eGroup) int64 {
	var lag int64
	for _, g := range groups {
		lag = max(lag, acked-g.read.Load())
	}
	return lag
}

// procCPUs reads every process's CPU time (-1 where unknown).
func procCPUs(procs []measuredProc) []time.Duration {
	out := make([]time.Duration, len(procs))
	for i, p := range procs {
		d, err := ProcCPU(p.pid)
		if err != nil {
			d = -1
		}
		out[i] = d
	}
	return out
}

// fillE2ERow computes row's figures from a window of length window: the
// records produced in it, the groups' counts, the latency histogram and
// the processes' CPU at its ends.
func fillE2ERow(row *E2ERow, produced int64, window time.Duration, groups []*e2eGroup, hist *Histogram, procs []measuredProc, cpu0, cpu1 []time.Duration) {
	secs := window.Seconds()
	if secs <= 0 {
		return
	}
	row.Produced = float64(produced) / secs
	var records, bytes int64
	for _, g := range groups {
		records += g.winRecords.Load()
		bytes += g.winBytes.Load()
	}
	if len(groups) > 0 {
		row.Consumed = float64(records) / float64(len(groups)) / secs
	}
	row.Records = hist.Count()
	row.P50Ms, row.P99Ms, row.P999Ms = ms(hist.Quantile(0.5)), ms(hist.Quantile(0.99)), ms(hist.Quantile(0.999))
	row.MaxMs = ms(hist.Max())
	row.ConsumedGB = float64(bytes) / gb
	if row.ConsumedGB <= 0 || len(cpu0) != len(procs) || len(cpu1) != len(procs) {
		return
	}
	row.CPUPerGB = map[string]float64{}
	for i, p := range procs {
		if cpu0[i] < 0 || cpu1[i] < 0 {
			row.CPUPerGB, row.CPUPerGBSum = nil, 0
			return
		}
		v := (cpu1[i] - cpu0[i]).Seconds() / row.ConsumedGB
		row.CPUPerGB[p.name] += v
		row.CPUPerGBSum += v
	}
}

// iggyBenchE2ELine matches the summary of iggy-bench
// end-to-end-producing-consumer ("Producing Consumer Results: Total
// throughput: X MB/s, Y messages/s, … p50 latency: A ms, … p99 latency: B
// ms, p999 latency: C ms, … max: D ms, …").
var iggyBenchE2ELine = regexp.MustCompile(`Producing Consumer Results: Total throughput: ([0-9.]+) MB/s, ([0-9.]+) messages/s.*?p50 latency: ([0-9.]+) ms.*?p99 latency: ([0-9.]+) ms, p999 latency: ([0-9.]+) ms.*?max: ([0-9.]+) ms`)

// iggyBenchE2E is what iggy-bench e2e printed: messages/s (sent and
// polled together, as iggy-bench counts them) and its latency figures in
// ms.
type iggyBenchE2E struct {
	msgsPerSec, p50, p99, p999, max float64
}

// parseIggyBenchE2E reads iggy-bench e2e's summary from its output.
func parseIggyBenchE2E(out string) (iggyBenchE2E, bool) {
	m := iggyBenchE2ELine.FindStringSubmatch(stripANSI(out))
	if m == nil {
		return iggyBenchE2E{}, false
	}
	f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
	return iggyBenchE2E{msgsPerSec: f(2), p50: f(3), p99: f(4), p999: f(5), max: f(6)}, true
}

// iggyBenchE2EArgs are iggy-bench's arguments for an end-to-end run at
// rate records/s of size bytes for window (after warmup) with actors
// producing consumers, each on a stream of one partition, against addr.
// -r and -T count bytes sent and polled together (iggy-bench's
// aggregate), so both are twice the produced bytes. --nodelay turns
// Nagle's algorithm off, as Go's (and so franz-go's) connections have it:
// with it on, a producing consumer's small batches waited ~40 ms each for
// the delayed acknowledgement of the one before.
func iggyBenchE2EArgs(rate float64, size, batch, actors int, warmup, window time.Duration, addr, user, pass string, reuse bool) []string {
	bytesPerSec := 2 * rate * float64(size)
	total := int64(bytesPerSec * window.Seconds())
	n := strconv.Itoa(actors)
	args := []string{"-m", strconv.Itoa(size), "-P", strconv.Itoa(batch),
		"-T", strconv.FormatInt(total/1000, 10) + "KB", "-r", strconv.FormatInt(int64(bytesPerSec/1000), 10) + "KB",
		"-w", strconv.FormatInt(warmup.Milliseconds(), 10) + "ms",
		"-u", user, "-p", pass}
	if reuse {
		args = append(args, "--reuse-streams")
	}
	return append(args, "end-to-end-producing-consumer", "-s", n, "-p", n, "tcp", "--server-address", addr, "--nodelay")
}

// iggyBenchE2E runs iggy-bench e2e on s's Iggy server at rate records/s
// (fraction f of the base rate) and returns its row.
func (er *e2eRunner) iggyBenchE2E(ctx context.Context, s *session, f, rate float64) *E2ERow {
	ec := er.ec
	row := &E2ERow{Target: TargetIggyBench + " e2e", Fraction: f, Groups: 1, Rate: rate, Status: StatusOK, IggyPolls: -1, IggySends: -1,
		Note: "iggy-bench's own latency: a producing consumer's send of a batch to its poll of it"}
	actors := int(max(1, min(ec.Load.Partitions, maxIggyBenchActors)))
	durable := ec.IggyBenchDurability != ""
	if durable {
		row.Note += ", at " + ec.IggyBenchDurability + " (kiggy-iggy's topic options)"
		topic := store.TopicConfig{SegmentBytes: ec.SegmentBytes}
		if err := prepareIggyBenchStreams(ctx, s.iggyAddr, ec.IggyUsername, ec.IggyPassword, actors, ec.IggyBenchDurability, topic, true); err != nil {
			row.Status, row.Error = StatusFailed, err.Error()
			er.failf("%s at %.0f %%: %s", row.Target, 100*f, row.Error)
			return row
		}
	}
	args := iggyBenchE2EArgs(rate, ec.Load.RecordSize, ec.IggyBenchBatch, actors, ec.Warmup, ec.Window, s.iggyAddr, ec.IggyUsername, ec.IggyPassword, durable)
	pid := 0
	for _, p := range s.procs {
		if p.name == "iggy-server" {
			pid = p.pid
		}
	}
	er.logf("iggy-bench %s", strings.Join(args, " "))
	cctx, cancel := context.WithTimeout(ctx, 3*(ec.Warmup+ec.Window)+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, ec.IggyBenchBin, args...)
	cmd.Dir = er.work
	var c0 time.Duration
	if pid > 0 {
		c0, _ = ProcCPU(pid)
	}
	b, err := cmd.CombinedOutput()
	var cpu time.Duration
	if pid > 0 {
		if c1, cerr := ProcCPU(pid); cerr == nil {
			cpu = c1 - c0
		}
	}
	logPath := filepath.Join(er.work, fmt.Sprintf("iggy-bench-e2e-%03.0f.log", 100*f))
	_ = os.WriteFile(logPath, b, 0o644)
	res, ok := parseIggyBenchE2E(string(b))
	switch {
	case err != nil:
		row.Status, row.Error = StatusFailed, fmt.Sprintf("iggy-bench: %v; see %s", err, logPath)
	case !ok:
		row.Status, row.Error = StatusFailed, "iggy-bench printed no end-to-end summary; see "+logPath
	}
	if row.Status != StatusOK {
		er.failf("%s at %.0f %%: %s", row.Target, 100*f, row.Error)
		return row
	}
	row.Produced, row.Consumed = res.msgsPerSec/2, res.msgsPerSec/2
	row.P50Ms, row.P99Ms, row.P999Ms, row.MaxMs = res.p50, res.p99, res.p999, res.max
	if pid > 0 && cpu > 0 {
		// Polled bytes: half of -T (its warm-up's CPU is counted too).
		row.ConsumedGB = rate * float64(ec.Load.RecordSize) * ec.Window.Seconds() / gb
		row.CPUPerGB = map[string]float64{"iggy-server": cpu.Seconds() / row.ConsumedGB}
		row.CPUPerGBSum = row.CPUPerGB["iggy-server"]
	}
	er.logf("iggy-bench e2e at %.0f %%: p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms", 100*f, row.P50Ms, row.P99Ms, row.P999Ms, row.MaxMs)
	return row
}

// WriteJSON writes the report as indented JSON to path.
func (r *E2EReport) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Print writes the table: one line per target, rate and number of groups.
func (r *E2EReport) Print(w io.Writer) {
	c := r.Config
	base := map[string]string{RateOfOwn: "each target's maximum", RateOfKafka: "Kafka's maximum"}[c.RateOf]
	if c.MaxRate > 0 {
		base = fmt.Sprintf("%.0f records/s", c.MaxRate)
	}
	gogc := "the process's"
	if c.ClientGOGC > 0 {
		gogc = strconv.Itoa(c.ClientGOGC)
	}
	fmt.Fprintf(w, "End-to-end latency at the tail: %s; %d consumer%s per group; warm-up %v, window %v, drain ≤ %v; segment.bytes %d; rates of %s; the clients' GOGC %s\n",
		c.Load, c.Consumers, plural(c.Consumers), c.Warmup, c.Window, c.Drain, c.SegmentBytes, base, gogc)
	fmt.Fprintf(w, "%s\n", r.Host)
	if c.Smoke {
		fmt.Fprintln(w, "smoke run: figures not meaningful")
	}
	for _, t := range r.Targets {
		if t.Status == StatusOK || t.MaxRate > 0 {
			fmt.Fprintf(w, "%s: maximum %.0f records/s (%s)\n", t.Target, t.MaxRate, formatRates(t.MaxRates))
		}
	}
	var rows []*E2ERow
	for _, t := range r.Targets {
		rows = append(rows, t.Rows...)
	}
	printE2ERows(w, rows)
	for _, t := range r.Targets {
		if t.Status != StatusOK {
			fmt.Fprintf(w, "%s: %s: %s\n", t.Target, t.Status, t.Error)
		} else if t.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", t.Target, t.Note)
		}
		for _, row := range t.Rows {
			if row.Status != StatusOK {
				fmt.Fprintf(w, "%s at %.0f %% with %d group%s: %s: %s\n", row.Target, 100*row.Fraction, row.Groups, plural(row.Groups), row.Status, row.Error)
			}
		}
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAILED: %s\n", f)
	}
}

// printE2ERows writes rows as a Markdown table (docs/BENCHMARKS.md keeps it
// as printed).
func printE2ERows(w io.Writer, rows []*E2ERow) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| target\t rate\t groups\t produced/s\t consumed/s per group\t p50 ms\t p99 ms\t p99.9 ms\t max ms\t lag end / left\t CPU s/GB: kiggy\t iggy\t kafka\t sum\t Iggy polls / sends per s\t")
	fmt.Fprintln(tw, "|---\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t")
	for _, r := range rows {
		if r.Status != StatusOK {
			fmt.Fprintf(tw, "| %s\t %.0f %% (%.0f/s)\t %d\t %s\t\t\t\t\t\t\t\t\t\t\t\t\n", r.Target, 100*r.Fraction, r.Rate, r.Groups, r.Status)
			continue
		}
		cpu := func(names ...string) string {
			if r.CPUPerGB == nil {
				return "n/a"
			}
			v, ok := 0.0, false
			for _, n := range names {
				if x, has := r.CPUPerGB[n]; has {
					v, ok = v+x, true
				}
			}
			if !ok {
				return "–"
			}
			return fmt.Sprintf("%.1f", v)
		}
		sum := "n/a"
		if r.CPUPerGB != nil {
			sum = fmt.Sprintf("%.1f", r.CPUPerGBSum)
		}
		lag := fmt.Sprintf("%d / %d", r.LagEnd, r.LagLeft)
		if strings.HasPrefix(r.Target, TargetIggyBench) {
			lag = "–"
		}
		requests := "–"
		if r.IggyPolls >= 0 && r.IggySends >= 0 {
			requests = fmt.Sprintf("%.0f / %.0f", r.IggyPolls, r.IggySends)
		}
		fmt.Fprintf(tw, "| %s\t %.0f %% (%.0f/s)\t %d\t %.0f\t %.0f\t %.2f\t %.2f\t %.2f\t %.2f\t %s\t %s\t %s\t %s\t %s\t %s\t\n",
			r.Target, 100*r.Fraction, r.Rate, r.Groups, r.Produced, r.Consumed, r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs, lag,
			cpu("kiggy"), cpu("iggy-server", "iggytest"), cpu("kafka"), sum, requests)
	}
	tw.Flush()
}
