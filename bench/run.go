package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runner holds what a run shares across targets: built binaries, the Java
// setup, the report being filled.
type runner struct {
	cfg       Config
	root      string
	work      string
	bins      map[string]string
	buildErrs map[string]error
	java      string
	classpath string
	javaErr   error

	report *Report
	mu     sync.Mutex // guards report.Failures
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "kbench: "+format+"\n", args...)
}

func (r *runner) failf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.report.Failures = append(r.report.Failures, msg)
	r.mu.Unlock()
	r.logf("FAILED: %s", msg)
}

// Run runs the benchmark cfg describes and returns its report. Target
// failures and lost records are recorded in Report.Failures; the error is
// for a run that could not be set up (bad config, no repository, a binary
// every target needs would not build) or was interrupted (ctx), in which
// case the report so far is returned with it. Every process Run starts is
// stopped, and the Kafka JVM waited for, before it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, bins: map[string]string{}, buildErrs: map[string]error{}}
	r.report = &Report{Started: time.Now(), Config: cfg}
	defer func() {
		r.report.Finished = time.Now()
		r.report.Host.LoadAvgEnd = loadAvg()
	}()

	needJava := cfg.JavaPerf || slices.Contains(cfg.Targets, TargetKafka)
	cleanup, err := r.prepare(needJava)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	r.report.Host = hostInfo(r.java)
	if err := r.build(ctx); err != nil {
		return r.report, err
	}

	// Canonical order (Kafka first), so that in the first repetition
	// Kafka's throughput is known before the others' rate-limited runs.
	targets := slices.DeleteFunc(slices.Clone(AllTargets), func(t string) bool { return !slices.Contains(cfg.Targets, t) })
	for li, l := range cfg.Loads {
		lr := &LoadReport{Load: l}
		r.report.Loads = append(r.report.Loads, *lr)
		if err := r.runLoad(ctx, li, lr, targets); err != nil {
			r.report.Loads[li] = *lr
			return r.report, err
		}
		r.report.Loads[li] = *lr
	}
	return r.report, nil
}

// newModeRunner is the runner of a benchmark mode with a report of its own
// (RunRebalance, RunE2E): cfg checked and the work directory prepared, with
// Java when the kafka target runs. Call cleanup (it removes the work
// directory unless Config.KeepWork) even when err is not nil.
func newModeRunner(cfg Config) (r *runner, cleanup func(), err error) {
	if err := cfg.normalize(); err != nil {
		return nil, func() {}, err
	}
	r = &runner{cfg: cfg, bins: map[string]string{}, buildErrs: map[string]error{}, report: &Report{}}
	cleanup, err = r.prepare(slices.Contains(cfg.Targets, TargetKafka))
	return r, cleanup, err
}

// prepare finds the repository, makes the work directory (a temporary one
// unless Config.WorkDir; cleanup removes it unless Config.KeepWork) and the
// profile directory, and finds Java when needJava (r.javaErr says why not).
func (r *runner) prepare(needJava bool) (cleanup func(), err error) {
	cleanup = func() {}
	root, err := testtools.RepoRoot()
	if err != nil {
		return cleanup, err
	}
	r.root = root
	if r.cfg.WorkDir != "" {
		r.work = r.cfg.WorkDir
		if err := os.MkdirAll(r.work, 0o755); err != nil {
			return cleanup, fmt.Errorf("bench: %w", err)
		}
	} else {
		if r.work, err = os.MkdirTemp("", "kbench-"); err != nil {
			return cleanup, fmt.Errorf("bench: %w", err)
		}
		if !r.cfg.KeepWork {
			work := r.work
			cleanup = func() { os.RemoveAll(work) }
		}
	}
	if r.cfg.ProfileDir != "" {
		if err := os.MkdirAll(r.cfg.ProfileDir, 0o755); err != nil {
			return cleanup, fmt.Errorf("bench: %w", err)
		}
	}
	r.logf("work directory %s", r.work)
	if needJava {
		r.java, r.classpath, r.javaErr = testtools.FindJava()
		if r.javaErr != nil {
			r.javaErr = fmt.Errorf("%w (%s)", r.javaErr, testtools.Install)
		}
	}
	return cleanup, nil
}

// build compiles the binaries the targets need. A binary only kiggy-iggy
// needs (iggytest) may fail to build: that target is then unavailable.
func (r *runner) build(ctx context.Context) error {
	type job struct{ name, pkg string }
	var jobs []job
	if slices.Contains(r.cfg.Targets, TargetKiggy) || wantsIggy(r.cfg.Targets) {
		jobs = append(jobs, job{"kiggy", r.cfg.GatewayPackage})
	}
	if wantsIggy(r.cfg.Targets) && r.cfg.IggyAddr == "" && r.cfg.IggyServerBin == "" {
		jobs = append(jobs, job{"iggytest", "./bridge/iggy/iggytest/cmd/iggytest"})
	}
	if slices.Contains(r.cfg.Targets, TargetNull) {
		jobs = append(jobs, job{"nullbroker", "./bench/cmd/nullbroker"})
	}
	for _, j := range jobs {
		t0 := time.Now()
		bin, err := buildBinary(ctx, r.root, r.work, j.name, j.pkg)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.buildErrs[j.name] = err
			r.logf("could not build %s: %v", j.pkg, err)
			continue
		}
		r.bins[j.name] = bin
		r.logf("built %s in %.1fs", j.pkg, time.Since(t0).Seconds())
	}
	return nil
}

// rowKey identifies a Row within a load.
type rowKey struct{ target, client, mode string }

func (r *runner) runLoad(ctx context.Context, li int, lr *LoadReport, targets []string) error {
	rows := map[rowKey]*Row{}
	row := func(target, client, mode string) *Row {
		k := rowKey{target, client, mode}
		if rows[k] == nil {
			rows[k] = &Row{Target: target, Client: client, Mode: mode, Status: StatusOK, hist: new(Histogram)}
		}
		return rows[k]
	}
	lr.Rate, lr.RateSource = r.cfg.Rate, "fixed by -rate"
	if r.cfg.Rate <= 0 {
		lr.RateSource = ""
	}
	l := lr.Load
	for rep := range r.cfg.Repetitions {
		order := slices.Clone(targets)
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			if err := ctx.Err(); err != nil {
				r.finishLoad(lr, rows)
				return err
			}
			tag := fmt.Sprintf("l%d-r%d", li+1, rep+1)
			r.logf("[load %d/%d, rep %d/%d] %s: starting", li+1, len(r.cfg.Loads), rep+1, r.cfg.Repetitions, t)
			r.session(ctx, t, l, rep, tag, lr, row)
		}
	}
	if r.cfg.IggyBenchBin != "" && ctx.Err() == nil {
		r.iggyBench(ctx, li, l, row)
	}
	r.finishLoad(lr, rows)
	return ctx.Err()
}

// iggyBench runs iggy-bench for load l into the row "iggy-bench".
func (r *runner) iggyBench(ctx context.Context, li int, l Load, row func(t, c, m string) *Row) {
	main := row(TargetIggyBench, TargetIggyBench, ModeMax)
	if l.Partitions > maxIggyBenchActors {
		main.Status = StatusUnavailable
		main.Error = fmt.Sprintf("iggy-bench's pinned modes give each of at most %d actors one partition of its own; no row above %d partitions", maxIggyBenchActors, maxIggyBenchActors)
		return
	}
	if d := r.cfg.IggyBenchDurability; d != "" {
		main.Note = "topics created at " + d
	} else {
		main.Note = "Iggy's default topic options (buffered)"
	}
	name := fmt.Sprintf("iggy-bench-l%d", li+1)
	addr := r.cfg.IggyAddr
	pid := 0
	if addr == "" {
		if r.cfg.IggyServerBin == "" {
			main.Status, main.Error = StatusUnavailable, "iggy-bench needs -iggy-server or -iggy-addr"
			return
		}
		p, err := r.startIggyServer(ctx, name+"-server")
		if err != nil {
			main.Status, main.Error = StatusFailed, err.Error()
			r.failf("iggy-bench: %v", err)
			return
		}
		defer p.stop(stopTimeout)
		addr = p.Addr
		pid = p.pid()
	} else if r.cfg.IggyPID > 0 {
		pid = r.cfg.IggyPID
	}
	r.logf("iggy-bench against %s", addr)
	res, err := r.runIggyBench(ctx, addr, l, name, pid)
	if err != nil {
		main.Status, main.Error = StatusFailed, err.Error()
		r.failf("iggy-bench: %v", err)
		return
	}
	m := &Measurement{Rep: 1}
	if p, ok := res.kinds["Producers"]; ok {
		m.ProduceRecordsPerSec, m.ProduceMBPerSec, m.P99Ms = p.msgsPerSec, p.mbPerSec, p.p99Ms
	}
	if res.serverCPU > 0 {
		// The server's CPU over the producer phase, per the bytes it
		// produced (-T): srv CPU s/GB beside kiggy-iggy's.
		m.ServerCPUSeconds, m.GatewayCPUSeconds = res.serverCPU.Seconds(), res.serverCPU.Seconds()
		m.Bytes, m.CPUMeasured = res.producedBytes, true
		r.logf("iggy-bench: iggy-server used %.2f CPU s and iggy-bench's producers %.2f over the producer phase (%d bytes)",
			res.serverCPU.Seconds(), res.benchCPU.Seconds(), res.producedBytes)
	}
	if c, ok := res.kinds["Consumers"]; ok {
		m.ConsumeRecordsPerSec, m.ConsumeMBPerSec = c.msgsPerSec, c.mbPerSec
	} else {
		m.consumeNA = true
	}
	main.Runs = append(main.Runs, m)
}

// session runs everything one target does in one repetition: start it,
// the franz-go max run, the rate-limited run, kafka-producer-perf-test,
// peak RSS, stop it.
func (r *runner) session(ctx context.Context, target string, l Load, rep int, tag string, lr *LoadReport, row func(t, c, m string) *Row) {
	main := row(target, ClientFranz, ModeMax)
	s := r.startSession(ctx, target, l, tag, main)
	if s == nil {
		return
	}
	var runs []*Measurement
	defer func() { r.endSession(s, runs, target, tag) }()
	if s.note != "" {
		main.Note = s.note
	}

	topic := "kbench-" + tag
	// The transactional run goes after the idempotent one in odd
	// repetitions and before it in even ones, so that neither always has
	// the warmer server.
	txnFirst := r.cfg.Transactions && rep%2 == 1
	if txnFirst {
		if run := r.txnRun(ctx, s, l, topic, rep, target, tag, row(target, ClientFranz, ModeTxn)); run != nil {
			runs = append(runs, run)
		}
	}
	run, err := r.franz(ctx, s, l, topic, 0, rep)
	if err != nil {
		if ctx.Err() != nil {
			main.Status = StatusInterrupted
		} else {
			main.Status, main.Error = StatusFailed, err.Error()
			r.failf("%s (%s) franz-go max: %v", target, tag, err)
		}
		return
	}
	runs = append(runs, run)
	r.addRun(main, run)
	if r.cfg.Transactions && !txnFirst && ctx.Err() == nil {
		if run := r.txnRun(ctx, s, l, topic, rep, target, tag, row(target, ClientFranz, ModeTxn)); run != nil {
			runs = append(runs, run)
		}
	}

	if target == TargetKafka && rep == 0 && r.cfg.Rate <= 0 && r.cfg.LatencyFraction > 0 && lr.Rate == 0 {
		lr.Rate = math.Round(run.ProduceRecordsPerSec * r.cfg.LatencyFraction)
		lr.RateSource = fmt.Sprintf("%.0f%% of Kafka's %.0f records/s in repetition 1", r.cfg.LatencyFraction*100, run.ProduceRecordsPerSec)
	}
	if lr.Rate > 0 {
		if run := r.rateRun(ctx, s, l, topic, rep, target, tag, lr.Rate, row(target, ClientFranz, ModeRate)); run != nil {
			runs = append(runs, run)
		}
	}
	if r.cfg.JavaPerf && ctx.Err() == nil && (r.cfg.JavaTargets == nil || slices.Contains(r.cfg.JavaTargets, target)) {
		if run := r.javaRun(ctx, s, l, topic, rep, target, tag, row(target, ClientJava, ModeMax)); run != nil {
			runs = append(runs, run)
		}
	}
}

// startSession starts target for a session; nil means it did not start,
// and main (its franz-go max row) says why.
func (r *runner) startSession(ctx context.Context, target string, l Load, tag string, main *Row) *session {
	t0 := time.Now()
	s, err := r.start(ctx, target, l, tag)
	if err != nil {
		var ue *unavailableError
		if errors.As(err, &ue) {
			main.Status, main.Error = StatusUnavailable, ue.reason
			r.logf("%s: unavailable: %s", target, ue.reason)
			return nil
		}
		if ctx.Err() != nil {
			main.Status = StatusInterrupted
			return nil
		}
		main.Status, main.Error = StatusFailed, err.Error()
		r.failf("%s (%s): start: %v", target, tag, err)
		return nil
	}
	r.logf("%s: ready at %s in %.1fs", target, s.addr, time.Since(t0).Seconds())
	return s
}

// endSession records the peak RSS of s's processes in each of its runs,
// then stops it.
func (r *runner) endSession(s *session, runs []*Measurement, target, tag string) {
	rss := map[string]int64{}
	for _, p := range s.procs {
		if v, err := ProcPeakRSS(p.pid); err == nil {
			rss[p.name] = v
		}
	}
	for _, run := range runs {
		run.PeakRSS = maps.Clone(rss)
	}
	if err := s.stop(); err != nil {
		r.failf("%s (%s): stop: %v", target, tag, err)
	} else {
		r.logf("%s: stopped", target)
	}
}

// rateRun is the session's franz-go run at rate records/s, reported in rr;
// nil if it failed.
func (r *runner) rateRun(ctx context.Context, s *session, l Load, topic string, rep int, target, tag string, rate float64, rr *Row) *Measurement {
	rr.Note = s.note
	run, err := r.franz(ctx, s, l, topic+"-rate", rate, rep)
	if err != nil {
		if ctx.Err() == nil {
			rr.Status, rr.Error = StatusFailed, err.Error()
			r.failf("%s (%s) franz-go at %.0f records/s: %v", target, tag, rate, err)
		}
		return nil
	}
	r.addRun(rr, run)
	return run
}

// javaRun is the session's kafka-producer-perf-test run, reported in jr;
// nil if it failed or is unavailable.
func (r *runner) javaRun(ctx context.Context, s *session, l Load, topic string, rep int, target, tag string, jr *Row) *Measurement {
	jr.Note = s.note
	run, err := r.javaPerf(ctx, s, l, topic+"-java", rep)
	if err != nil {
		if ctx.Err() == nil {
			var ue *unavailableError
			if errors.As(err, &ue) {
				jr.Status, jr.Error = StatusUnavailable, ue.reason
			} else {
				jr.Status, jr.Error = StatusFailed, err.Error()
				r.failf("%s (%s) kafka-producer-perf-test: %v", target, tag, err)
			}
		}
		return nil
	}
	r.addRun(jr, run)
	return run
}

// franz runs the franz-go load once against s: produce (rate 0 = max), then
// read everything back and compare with what was acknowledged.
func (r *runner) franz(ctx context.Context, s *session, l Load, topic string, rate float64, rep int) (*Measurement, error) {
	if s.createTopics {
		t0 := time.Now()
		if err := createTopic(ctx, s.addr, topic, l.Partitions, l.TopicCompression); err != nil {
			return nil, err
		}
		r.logf("%s: topic %s with %d partitions ready in %.1fs", s.target, topic, l.Partitions, time.Since(t0).Seconds())
		defer r.dropTopic(ctx, s, topic)
	}
	meter := cpuMeter{pids: s.pids()}
	run, acked, err := r.franzProduce(ctx, s, l, topic, rate, rep, meter)
	if err != nil {
		return nil, err
	}
	if !s.consume {
		run.consumeNA = true
		return run, nil
	}
	ends, cr, err := r.franzReadBack(ctx, s, l, topic, meter, run, acked)
	if err != nil {
		return nil, err
	}
	if g := r.cfg.FanoutGroups; g > 1 && ctx.Err() == nil {
		if err := r.franzFanout(ctx, s, l, topic, ends, g, meter, run, cr); err != nil {
			return nil, err
		}
	}
	if run.ConsumeProfile != "" {
		r.logf("%s: gateway CPU profile of this consume phase: %s", s.target, run.ConsumeProfile)
	}
	if rate > 0 {
		// A rate-limited run reads back only to check it: its small
		// volume says nothing about consume throughput.
		run.consumeNA = true
	}
	if err := readBackErr(run, l.RecordSize); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", topic, err)
	}
	return run, nil
}

// franzProduce is franz's produce phase: the measurement so far, and the
// records acknowledged per partition.
func (r *runner) franzProduce(ctx context.Context, s *session, l Load, topic string, rate float64, rep int, meter cpuMeter) (*Measurement, []int64, error) {
	mode := "as fast as it goes"
	if rate > 0 {
		mode = fmt.Sprintf("at %.0f records/s", rate)
	}
	r.logf("%s: producing %s: %v warm-up + %v", s.target, mode, r.cfg.Warmup, r.cfg.Duration)
	hooks, prof := s.profileHooks()
	pr, err := runProduce(ctx, s.addr, topic, l, r.cfg.Warmup, r.cfg.Duration, rate, meter, hooks)
	if err != nil {
		return nil, nil, err
	}
	run := produceMeasurement(rep, pr, prof)
	if prof != "" {
		r.logf("%s: gateway CPU profile of this produce window: %s", s.target, prof)
	}
	r.logf("%s: produced %.0f records/s (%.1f MB/s), p99 %.2f ms; %d acknowledged in all; %d producers, %d sockets open in the server",
		s.target, run.ProduceRecordsPerSec, run.ProduceMBPerSec, run.P99Ms, run.Acked, l.Producers, run.ServerSockets)
	if s.metricsURL != "" {
		if gc, err := gatewayCounters(ctx, s.metricsURL); err == nil && gc.appends > 0 {
			// Cumulative since the gateway started (warm-ups included).
			r.logf("%s: so far %.0f Produce requests, %.0f records in %.0f backend appends (%.2f partition batches and %.0f records per append, %.2f appends per request), %.0f Iggy session waits",
				s.target, gc.requests, gc.records, gc.appends, (gc.appends+gc.coalesced)/gc.appends, gc.records/gc.appends, gc.appends/max(gc.requests, 1), gc.sessionWaits)
		}
	}
	return run, pr.acked, nil
}

// produceMeasurement is the Measurement of repetition rep's produce phase
// pr, with the gateway's CPU profile of its window (prof).
func produceMeasurement(rep int, pr *produceResult, prof string) *Measurement {
	run := &Measurement{
		Rep:                  rep + 1,
		Window:               pr.window.Seconds(),
		Records:              pr.records,
		Bytes:                pr.bytes,
		ProduceRecordsPerSec: float64(pr.records) / pr.window.Seconds(),
		ProduceMBPerSec:      float64(pr.bytes) / 1e6 / pr.window.Seconds(),
		P50Ms:                ms(pr.hist.Quantile(0.50)),
		P99Ms:                ms(pr.hist.Quantile(0.99)),
		P999Ms:               ms(pr.hist.Quantile(0.999)),
		MaxMs:                ms(pr.hist.Max()),
		ServerCPUSeconds:     pr.serverCPU.Seconds(),
		GatewayCPUSeconds:    pr.gatewayCPU.Seconds(),
		ClientCPUSeconds:     pr.clientCPU.Seconds(),
		CPUMeasured:          pr.cpuOK,
		ProduceProfile:       prof,
		OtherCPUShare:        ptr(pr.otherCPU),
		ServerSockets:        pr.sockets,
		hist:                 pr.hist,
	}
	for _, a := range pr.acked {
		run.Acked += a
	}
	return run
}

// franzReadBack is franz's consume phase: everything up to the end offsets
// read back by Config.Consumers consumers, counted into run against acked.
func (r *runner) franzReadBack(ctx context.Context, s *session, l Load, topic string, meter cpuMeter, run *Measurement, acked []int64) ([]int64, *consumeResult, error) {
	ends, err := endOffsets(ctx, s.addr, topic, l.Partitions)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ends {
		run.EndOffsets += e
	}
	hooks, prof := s.profileHooks()
	run.ConsumeProfile = prof
	cr, cerr := runConsume(ctx, s.addr, topic, ends, r.cfg.Consumers, l.RecordSize, kgo.ReadUncommitted(), meter, hooks)
	if cr != nil {
		run.Consumed = cr.records
		run.BadValues = cr.badValues
		run.ConsumeSeconds = cr.elapsed.Seconds()
		run.ConsumeRecordsPerSec = float64(cr.records) / cr.elapsed.Seconds()
		run.ConsumeMBPerSec = float64(cr.bytes) / 1e6 / cr.elapsed.Seconds()
		run.ConsumeServerCPUSeconds = cr.serverCPU.Seconds()
		run.ConsumeGatewayCPUSeconds = cr.gatewayCPU.Seconds()
		run.consumeBytes = cr.bytes
		for p := range acked {
			if d := acked[p] - cr.byPartition[p]; d > 0 {
				run.Lost += d
			} else {
				run.Duplicated -= d
			}
		}
	}
	if cerr != nil {
		return nil, nil, cerr
	}
	r.logf("%s: consumed %d records at %.0f records/s (%.1f MB/s)", s.target, run.Consumed, run.ConsumeRecordsPerSec, run.ConsumeMBPerSec)
	return ends, cr, nil
}

// franzFanout is franz's fan-out phase: g independent readers of the whole
// topic at once, their aggregate rate and CPU counted into run beside the
// read-back's (cr).
func (r *runner) franzFanout(ctx context.Context, s *session, l Load, topic string, ends []int64, g int, meter cpuMeter, run *Measurement, cr *consumeResult) error {
	fhooks, fprof := s.profileHooks()
	if fprof != "" {
		// The read-back's stop signal must reach the gateway before
		// this phase's start: two pending signals are not delivered
		// in the order sent.
		time.Sleep(500 * time.Millisecond)
	}
	rate, cpu, err := fanout(ctx, s.addr, topic, ends, g, r.cfg.Consumers, l.RecordSize, run.Consumed, meter, fhooks)
	if err != nil {
		return err
	}
	run.FanoutGroups, run.FanoutRecordsPerSec = g, rate
	run.FanoutServerCPUSeconds, run.FanoutGatewayCPUSeconds = cpu.server.Seconds(), cpu.gateway.Seconds()
	run.FanoutClientCPUSeconds, run.FanoutProfile = cpu.client.Seconds(), fprof
	r.logf("%s: %d groups at once consumed at %.0f records/s in all (%.2f× one group's %.0f); CPU s gateway %.2f, other server processes %.2f, readers %.2f (one group: %.2f, %.2f, %.2f)",
		s.target, g, rate, rate/run.ConsumeRecordsPerSec, run.ConsumeRecordsPerSec,
		cpu.gateway.Seconds(), (cpu.server - cpu.gateway).Seconds(), cpu.client.Seconds(),
		run.ConsumeGatewayCPUSeconds, run.ConsumeServerCPUSeconds-run.ConsumeGatewayCPUSeconds, cr.clientCPU.Seconds())
	if fprof != "" {
		r.logf("%s: gateway CPU profile of the fan-out phase: %s", s.target, fprof)
	}
	return nil
}

// readBackErr is what the read-back found wrong: records lost or
// duplicated against those acknowledged, or values of another size.
func readBackErr(run *Measurement, recordSize int) error {
	var errs []error
	if run.Lost > 0 || run.Duplicated > 0 {
		errs = append(errs, fmt.Errorf("consumed %d records but %d were acknowledged (%d lost, %d duplicated; end offsets sum to %d)",
			run.Consumed, run.Acked, run.Lost, run.Duplicated, run.EndOffsets))
	}
	if run.BadValues > 0 {
		errs = append(errs, fmt.Errorf("%d records read back with a value size other than %d", run.BadValues, recordSize))
	}
	return errors.Join(errs...)
}

// javaPerf runs kafka-producer-perf-test once against s.
func (r *runner) javaPerf(ctx context.Context, s *session, l Load, topic string, rep int) (*Measurement, error) {
	if r.javaErr != nil {
		return nil, &unavailableError{reason: r.javaErr.Error()}
	}
	if s.createTopics {
		if err := createTopic(ctx, s.addr, topic, l.Partitions, l.TopicCompression); err != nil {
			return nil, err
		}
		defer r.dropTopic(ctx, s, topic)
	}
	records, warmup := javaRecords(r.cfg, l)
	logPath := filepath.Join(r.work, "java-perf-"+topic+".log")
	r.logf("%s: kafka-producer-perf-test, %d records", s.target, records)
	jr, err := runJavaPerf(ctx, r.java, r.classpath, s.addr, topic, l, records, warmup, logPath, cpuMeter{pids: s.pids()})
	if err != nil {
		return nil, err
	}
	bytes := records * int64(l.RecordSize)
	run := &Measurement{
		Rep:                  rep + 1,
		Window:               jr.elapsed.Seconds(),
		Records:              jr.records,
		Bytes:                jr.records * int64(l.RecordSize),
		ProduceRecordsPerSec: jr.recordsPerSec,
		ProduceMBPerSec:      jr.recordsPerSec * float64(l.RecordSize) / 1e6,
		P50Ms:                jr.p50Ms,
		P99Ms:                jr.p99Ms,
		P999Ms:               jr.p999Ms,
		MaxMs:                jr.maxMs,
		Acked:                records,
		ServerCPUSeconds:     jr.serverCPU.Seconds(),
		GatewayCPUSeconds:    jr.gatewayCPU.Seconds(),
		ClientCPUSeconds:     jr.clientCPU.Seconds(),
		CPUMeasured:          jr.cpuOK,
		consumeNA:            true,
		cpuBytes:             bytes,
	}
	r.logf("%s: kafka-producer-perf-test %.0f records/s, p99 %.0f ms", s.target, run.ProduceRecordsPerSec, run.P99Ms)
	return run, nil
}

// dropTopic deletes a phase's topic once it has been checked, so that the
// in-memory targets do not carry one phase's data into the next (peak RSS
// is then the largest phase's, not their sum). A failure is only logged.
func (r *runner) dropTopic(ctx context.Context, s *session, topic string) {
	if ctx.Err() != nil {
		return
	}
	if err := deleteTopic(ctx, s.addr, topic); err != nil {
		r.logf("%s: %v", s.target, err)
	}
}

// javaRecords returns the records kafka-producer-perf-test sends, warm-up
// included, and how many of them are warm-up: Config.JavaRecords if set (no
// warm-up), else about Warmup+Duration at 100 MB/s, bounded to 20,000 –
// 300,000 records/s. The count depends only on the config and the load, so
// every target gets the same arguments.
func javaRecords(cfg Config, l Load) (records, warmup int64) {
	if cfg.JavaRecords > 0 {
		return cfg.JavaRecords, 0
	}
	const guessBytesPerSec, maxRate = 100e6, 300000
	rate := min(guessBytesPerSec/float64(l.RecordSize), maxRate)
	records = max(20000, int64(rate*cfg.Duration.Seconds()))
	warmup = int64(rate * cfg.Warmup.Seconds())
	return records + warmup, warmup
}

// addRun appends run to row.
func (r *runner) addRun(row *Row, run *Measurement) {
	row.Runs = append(row.Runs, run)
	if run.hist != nil {
		row.hist.Merge(run.hist)
	}
	if run.commitHist != nil {
		if row.commitHist == nil {
			row.commitHist = new(Histogram)
		}
		row.commitHist.Merge(run.commitHist)
	}
	if run.endTxnHist != nil {
		if row.endTxnHist == nil {
			row.endTxnHist = new(Histogram)
		}
		row.endTxnHist.Merge(run.endTxnHist)
	}
}

// gatewayCounts are the gateway's produce counters (docs/METRICS.md).
type gatewayCounts struct {
	requests, records, appends, coalesced, sessionWaits float64
	// roundWaits: appends that waited for their partition's running round
	// and led the next (kiggy_produce_round_waits_total).
	roundWaits float64
	// iggyPolls and iggySends: the Iggy requests the gateway sent
	// (PollMessages; SendMessages), on the Iggy backend; iggyCount and
	// iggySeconds every command's count and summed latency.
	iggyPolls, iggySends   float64
	iggyCount, iggySeconds map[string]float64
	// slow counts, by slowSeries, the observations of a latency histogram
	// over each bound of slowBounds (from its cumulative buckets), and last
	// all of them.
	slow map[string]*[len(slowBounds) + 1]float64
}

// slowBounds are the latency histogram bounds ke2e counts the slow
// observations over, and slowSeries the histograms it reads them for: the
// gateway's Produce requests and its appends to Iggy.
var (
	slowBounds = [...]string{"0.001", "0.005", "0.01", "0.05"}
	slowSeries = map[string]string{
		`kiggy_request_duration_seconds_bucket{api="Produce"`:               "Produce",
		`kiggy_iggy_request_duration_seconds_bucket{command="SendMessages"`: "SendMessages",
	}
)

// gatewayCounters reads the produce counters from a gateway's /metrics.
func gatewayCounters(ctx context.Context, url string) (gatewayCounts, error) {
	var gc gatewayCounts
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return gc, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return gc, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, `kiggy_api_requests_total{api="Produce"`):
			gc.requests += v
		case name == "kiggy_records_produced_total":
			gc.records = v
		case name == "kiggy_produce_appends_total":
			gc.appends = v
		case name == "kiggy_produce_coalesced_total":
			gc.coalesced = v
		case name == "kiggy_produce_round_waits_total":
			gc.roundWaits = v
		case name == "kiggy_iggy_session_waits_total":
			gc.sessionWaits = v
		default:
			if series, le, ok := strings.Cut(name, `,le="`); ok && slowSeries[series] != "" {
				gc.addBucket(slowSeries[series], strings.TrimSuffix(le, `"}`), v)
				continue
			}
			if cmd, ok := iggyCommand(name, "count"); ok {
				gc.iggyCount = setIn(gc.iggyCount, cmd, v)
				switch cmd {
				case "PollMessages":
					gc.iggyPolls = v
				case "SendMessages":
					gc.iggySends = v
				}
			} else if cmd, ok := iggyCommand(name, "sum"); ok {
				gc.iggySeconds = setIn(gc.iggySeconds, cmd, v)
			}
		}
	}
	return gc, sc.Err()
}

// addBucket records cumulative bucket le (count v) of histogram h: the
// observations over each of slowBounds are the +Inf bucket's less the
// bound's.
func (gc *gatewayCounts) addBucket(h, le string, v float64) {
	if gc.slow == nil {
		gc.slow = map[string]*[len(slowBounds) + 1]float64{}
	}
	over := gc.slow[h]
	if over == nil {
		over = new([len(slowBounds) + 1]float64)
		gc.slow[h] = over
	}
	if le == "+Inf" {
		over[len(slowBounds)] = v
	}
	for i, b := range slowBounds {
		switch le {
		case "+Inf":
			over[i] += v
		case b:
			over[i] -= v
		}
	}
}

// iggyCommand returns the command of a series name of the Iggy request
// latency histogram's part (count or sum).
func iggyCommand(name, part string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "kiggy_iggy_request_duration_seconds_"+part+`{command="`)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, `"}`)
}

// setIn sets m[k] = v, making m when nil.
func setIn(m map[string]float64, k string, v float64) map[string]float64 {
	if m == nil {
		m = map[string]float64{}
	}
	m[k] = v
	return m
}
