package bench

// The rebalance benchmark (RunRebalance, command krebalance): how long a
// KIP-848 consumer group (ConsumerGroupHeartbeat, server-side assignors)
// takes to settle on each target, and what its members see meanwhile.
//
// Every target is started once and given one topic; the repetitions then
// take turns across the targets (the order reversed every other
// repetition), each with a fresh group and its own steady producer. A
// repetition is three changes of the group, each measured from the
// members' own OnPartitionsAssigned / OnPartitionsRevoked / OnPartitionsLost
// callbacks and from when records reach them:
//
//  1. N members start at once: time from the first one's start to every
//     partition owned, and to the settled assignment;
//  2. one more member joins: time to the settled assignment; for every
//     member that was there before, the longest time a partition it keeps
//     went without records (beside the longest such gap in the steady
//     window just before, the flow's own granularity) and whether it ever
//     held no partition; for every partition that moves, the time it was
//     owned by nobody (the old owner's revoke to the new owner's assign)
//     and the gap in its records (the old owner's last to the new owner's
//     first);
//  3. the first member leaves cleanly (Close: LeaveGroup, member epoch -1):
//     the same measures.
//
// "Settled" is the last ownership change before the assignment was
// balanced (every partition owned by exactly one member of the group, the
// members' counts within one of each other: what the uniform and range
// assignors give one topic) and stayed so for RebalanceConfig.Quiet.
//
// Kafka and kiggy run with the same consumer-group settings: the heartbeat
// interval and session timeout are kiggy's --group-consumer-heartbeat-interval
// and --group-consumer-session-timeout and Kafka's
// group.consumer.heartbeat.interval.ms and group.consumer.session.timeout.ms
// (their minimums lowered to them); the members take the interval the
// coordinator sends (ConsumerGroupHeartbeat's HeartbeatIntervalMs).

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// RebalanceConfig configures RunRebalance. Start from
// DefaultRebalanceConfig or SmokeRebalanceConfig.
type RebalanceConfig struct {
	// Targets are the targets to run (from AllTargets, not the null
	// broker, which has no group coordinator).
	Targets []string `json:"targets"`
	// Partitions is the topic's partition count; it must exceed Members.
	Partitions int32 `json:"partitions"`
	// Members is the group's size before one more joins.
	Members int `json:"members"`
	// Repetitions is how many fresh groups go through the three changes
	// on every target.
	Repetitions int `json:"repetitions"`
	// Assignor is the server-side assignor the members ask for: uniform
	// (franz-go's CooperativeStickyBalancer) or range (RangeBalancer).
	Assignor string `json:"assignor"`
	// HeartbeatInterval and SessionTimeout are the group settings both
	// kiggy and Kafka get (above).
	HeartbeatInterval time.Duration `json:"heartbeat_interval_ns"`
	SessionTimeout    time.Duration `json:"session_timeout_ns"`
	// Rate is the steady producer's records/s over all partitions, spread
	// round robin; RecordSize its values' size.
	Rate       float64 `json:"rate"`
	RecordSize int     `json:"record_size"`
	// Quiet is how long a balanced assignment must stay unchanged to be
	// settled (0 = 4 heartbeat intervals, at least 2 s); Baseline the
	// steady window before a join or leave whose longest gap is reported
	// beside the rebalance's; SettleTimeout bounds each change.
	Quiet         time.Duration `json:"quiet_ns"`
	Baseline      time.Duration `json:"baseline_ns"`
	SettleTimeout time.Duration `json:"settle_timeout_ns"`
	// KafkaAssignmentInterval, if not negative, is Kafka's
	// group.consumer.assignment.interval.ms (4.4's default: 1 s between
	// a group's target assignment updates; kiggy updates it on every
	// change, as with 0). Negative = Kafka's default.
	KafkaAssignmentInterval time.Duration `json:"kafka_assignment_interval_ns"`

	// The servers, as in Config.
	KafkaHeap     string   `json:"kafka_heap"`
	KafkaDir      string   `json:"kafka_dir,omitempty"`
	IggyAddr      string   `json:"iggy_addr,omitempty"`
	IggyServerBin string   `json:"iggy_server_bin,omitempty"`
	IggyUsername  string   `json:"-"`
	IggyPassword  string   `json:"-"`
	GatewayFlags  []string `json:"gateway_flags,omitempty"`
	WorkDir       string   `json:"-"`
	KeepWork      bool     `json:"-"`
	// Smoke marks a smoke run (figures not meaningful).
	Smoke bool `json:"smoke,omitempty"`
	// Log receives progress lines (nil = os.Stderr).
	Log io.Writer `json:"-"`
}

// Assignor names (group.consumer.assignors).
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// DefaultRebalanceConfig is the rebalance benchmark: Kafka, kiggy and
// kiggy-iggy, 12 partitions, 3 members, 5 repetitions, the uniform
// assignor, heartbeats every 500 ms, 10 s sessions, 2,000 records/s of
// 100 B.
func DefaultRebalanceConfig() RebalanceConfig {
	return RebalanceConfig{
		Targets:           []string{TargetKafka, TargetKiggy, TargetKiggyIggy},
		Partitions:        12,
		Members:           3,
		Repetitions:       5,
		Assignor:          AssignorUniform,
		HeartbeatInterval: 500 * time.Millisecond,
		SessionTimeout:    10 * time.Second,
		Rate:              2000,
		RecordSize:        100,
		Baseline:          2 * time.Second,
		SettleTimeout:     time.Minute,

		KafkaAssignmentInterval: -1,
		KafkaHeap:               "1g",
		IggyUsername:            "iggy",
		IggyPassword:            "iggy",
	}
}

// SmokeRebalanceConfig is a short run against kiggy alone: 4 partitions, 2
// members, one repetition, fast heartbeats. Its figures mean nothing.
func SmokeRebalanceConfig() RebalanceConfig {
	c := DefaultRebalanceConfig()
	c.Smoke = true
	c.Targets = []string{TargetKiggy}
	c.Partitions, c.Members, c.Repetitions = 4, 2, 1
	c.HeartbeatInterval, c.SessionTimeout = 200*time.Millisecond, 5*time.Second
	c.Quiet, c.Baseline = time.Second, 500*time.Millisecond
	c.Rate = 400
	return c
}

func (rc *RebalanceConfig) normalize() error {
	if rc.Log == nil {
		rc.Log = os.Stderr
	}
	if rc.Quiet == 0 {
		rc.Quiet = max(4*rc.HeartbeatInterval, 2*time.Second)
	}
	if rc.SettleTimeout == 0 {
		rc.SettleTimeout = time.Minute
	}
	if rc.KafkaHeap == "" {
		rc.KafkaHeap = "1g"
	}
	var errs []error
	if len(rc.Targets) == 0 {
		errs = append(errs, errors.New("no targets"))
	}
	for i, t := range rc.Targets {
		if !slices.Contains(AllTargets, t) || t == TargetNull {
			errs = append(errs, fmt.Errorf("target %q: want one of %s but null", t, strings.Join(AllTargets, ", ")))
		}
		if slices.Contains(rc.Targets[:i], t) {
			errs = append(errs, fmt.Errorf("target %q listed twice", t))
		}
	}
	if rc.Members < 1 || rc.Partitions <= int32(rc.Members) || rc.Partitions > 1000 {
		errs = append(errs, fmt.Errorf("%d members over %d partitions: want at least 1 member and more partitions than members (at most 1,000)", rc.Members, rc.Partitions))
	}
	if rc.Repetitions < 1 {
		errs = append(errs, fmt.Errorf("repetitions %d: want ≥ 1", rc.Repetitions))
	}
	if rc.Assignor != AssignorUniform && rc.Assignor != AssignorRange {
		errs = append(errs, fmt.Errorf("assignor %q: want uniform or range", rc.Assignor))
	}
	// kiggy's flag bounds: the heartbeat interval ≥ 100 ms, the session
	// ≥ 1 s; Kafka wants the interval below the session.
	if rc.HeartbeatInterval < 100*time.Millisecond || rc.SessionTimeout < time.Second || rc.HeartbeatInterval >= rc.SessionTimeout ||
		rc.HeartbeatInterval%time.Millisecond != 0 || rc.SessionTimeout%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("heartbeat interval %v and session timeout %v: want whole milliseconds, ≥ 100 ms and ≥ 1 s, the interval below the session", rc.HeartbeatInterval, rc.SessionTimeout))
	}
	if rc.Rate <= 0 || rc.RecordSize < 1 || rc.RecordSize > 1<<20 {
		errs = append(errs, fmt.Errorf("rate %v records/s of %d bytes: want a positive rate and 1 B – 1 MiB", rc.Rate, rc.RecordSize))
	}
	if rc.Quiet < 0 || rc.Baseline <= 0 || rc.SettleTimeout <= rc.Quiet {
		errs = append(errs, fmt.Errorf("quiet %v, baseline %v, settle timeout %v: want a positive baseline and a timeout above the quiet time", rc.Quiet, rc.Baseline, rc.SettleTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: invalid rebalance config: %w", err)
	}
	return nil
}

// kiggyFlags are the gateway flags that give kiggy the group settings.
func (rc RebalanceConfig) kiggyFlags() []string {
	return []string{
		"--group-consumer-heartbeat-interval", rc.HeartbeatInterval.String(),
		"--group-consumer-session-timeout", rc.SessionTimeout.String(),
	}
}

// kafkaGroupProps are the broker properties that give Kafka the same
// settings: the interval and the session, their minimums brought down to
// them (Kafka refuses a member setting below the minimum) and their
// maximums (Kafka's defaults, 15 s and 60 s) up to them if needed.
func (rc RebalanceConfig) kafkaGroupProps() map[string]string {
	hb, st := rc.HeartbeatInterval.Milliseconds(), rc.SessionTimeout.Milliseconds()
	props := map[string]string{
		"group.consumer.heartbeat.interval.ms":     strconv.FormatInt(hb, 10),
		"group.consumer.min.heartbeat.interval.ms": strconv.FormatInt(hb, 10),
		"group.consumer.max.heartbeat.interval.ms": strconv.FormatInt(max(hb, 15000), 10),
		"group.consumer.session.timeout.ms":        strconv.FormatInt(st, 10),
		"group.consumer.min.session.timeout.ms":    strconv.FormatInt(st, 10),
		"group.consumer.max.session.timeout.ms":    strconv.FormatInt(max(st, 60000), 10),
	}
	if rc.KafkaAssignmentInterval >= 0 {
		// Its minimum defaults to 0 and its maximum to 15 s.
		props["group.consumer.assignment.interval.ms"] = strconv.FormatInt(min(rc.KafkaAssignmentInterval.Milliseconds(), 15000), 10)
	}
	return props
}

// benchConfig is the Config the targets are started with.
func (rc RebalanceConfig) benchConfig() Config {
	c := DefaultConfig()
	c.Targets = slices.Clone(rc.Targets)
	c.JavaPerf, c.LatencyFraction = false, 0
	c.KafkaHeap, c.KafkaDir = rc.KafkaHeap, rc.KafkaDir
	c.IggyAddr, c.IggyServerBin = rc.IggyAddr, rc.IggyServerBin
	c.IggyUsername, c.IggyPassword = rc.IggyUsername, rc.IggyPassword
	c.GatewayFlags = append(rc.kiggyFlags(), rc.GatewayFlags...)
	c.WorkDir, c.KeepWork, c.Log, c.Smoke = rc.WorkDir, rc.KeepWork, rc.Log, rc.Smoke
	c.brokerProps = rc.kafkaGroupProps()
	return c
}

// RebalanceReport is RunRebalance's result.
type RebalanceReport struct {
	Started  time.Time          `json:"started"`
	Finished time.Time          `json:"finished"`
	Command  string             `json:"command,omitempty"`
	Host     Host               `json:"host"`
	Config   RebalanceConfig    `json:"config"`
	Targets  []*RebalanceTarget `json:"targets"`
	// Failures lists every target or repetition that failed.
	Failures []string `json:"failures,omitempty"`
}

// Failed reports whether a target or a repetition failed.
func (r *RebalanceReport) Failed() bool { return len(r.Failures) > 0 }

// RebalanceTarget is one target's repetitions and their summary.
type RebalanceTarget struct {
	Target string `json:"target"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Note   string `json:"note,omitempty"`
	// Reps are the repetitions that completed.
	Reps []*RebalanceRep `json:"reps"`
	// Measures summarize Reps (in the order of rebalanceMeasures).
	Measures []RebalanceMeasure `json:"measures"`
}

// RebalanceRep is one fresh group's three changes.
type RebalanceRep struct {
	Rep     int            `json:"rep"`
	Initial RebalancePhase `json:"initial"`
	Join    RebalancePhase `json:"join"`
	Leave   RebalancePhase `json:"leave"`
	// Produced and ProduceErrors count the steady producer's records.
	Produced      int64 `json:"produced"`
	ProduceErrors int64 `json:"produce_errors"`
}

// RebalancePhase is what one change of the group did, in milliseconds from
// its start (a member started, or Close called).
type RebalancePhase struct {
	// CoverMs (initial phase only) is the time until every partition was
	// owned; SettleMs until the settled assignment (the package comment).
	CoverMs  float64 `json:"cover_ms,omitempty"`
	SettleMs float64 `json:"settle_ms"`
	// Moved is how many partitions changed owner; UnownedMs each one's
	// time without an owner and FlowGapMs its records' gap (-1 = no
	// record on one side).
	Moved     int       `json:"moved"`
	UnownedMs []float64 `json:"unowned_ms,omitempty"`
	FlowGapMs []float64 `json:"flow_gap_ms,omitempty"`
	// KeptGapMs is, for each member there before the change that kept a
	// partition, the longest gap in records on the partitions it kept,
	// from the change until it settled; SteadyGapMs the longest gap on any
	// owned partition in the steady window before the change.
	KeptGapMs   []float64 `json:"kept_gap_ms,omitempty"`
	SteadyGapMs float64   `json:"steady_gap_ms,omitempty"`
	// Members is how many members were there before the change and
	// stayed; ZeroMembers how many of them held no partition at some
	// point of it.
	Members     int `json:"members"`
	ZeroMembers int `json:"zero_members"`
}

// RebalanceMeasure is one measure over every repetition: its median and
// maximum (for counts, Total of Out of).
type RebalanceMeasure struct {
	Name   string  `json:"name"`
	Count  bool    `json:"count,omitempty"`
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
	Total  int     `json:"total,omitempty"`
	OutOf  int     `json:"out_of,omitempty"`
}

// RunRebalance runs the rebalance benchmark rc describes. Failures of a
// target or a repetition are in the report's Failures; the error is for a
// run that could not be set up or was interrupted. Every process it starts
// is stopped before it returns.
func RunRebalance(ctx context.Context, rc RebalanceConfig) (*RebalanceReport, error) {
	if err := rc.normalize(); err != nil {
		return nil, err
	}
	r, cleanup, err := newModeRunner(rc.benchConfig())
	defer cleanup()
	if err != nil {
		return nil, err
	}
	rep := &RebalanceReport{Started: time.Now(), Config: rc, Host: hostInfo(r.java)}
	defer func() {
		rep.Finished = time.Now()
		rep.Host.LoadAvgEnd = loadAvg()
		rep.Failures = append(rep.Failures, r.report.Failures...)
	}()
	if err := r.build(ctx); err != nil {
		return rep, err
	}
	rr := &rebalanceRunner{runner: r, rc: rc}

	// Every target is started (and given its topic) before the first
	// repetition, and stopped after the last.
	sessions := map[string]*session{}
	defer func() {
		for _, t := range rc.Targets {
			if s := sessions[t]; s != nil {
				if err := s.stop(); err != nil {
					r.failf("%s: stop: %v", t, err)
				}
			}
		}
	}()
	for _, t := range rc.Targets {
		tr := &RebalanceTarget{Target: t, Status: StatusOK}
		rep.Targets = append(rep.Targets, tr)
		s, err := rr.startTarget(ctx, t)
		if err != nil {
			switch tr.Status, tr.Error = errStatus(ctx, err); tr.Status {
			case StatusInterrupted:
				return rep, ctx.Err()
			case StatusFailed:
				r.failf("%s: %v", t, err)
			}
			continue
		}
		sessions[t], tr.Note = s, s.note
	}
	for i := range rc.Repetitions {
		order := slices.Clone(rep.Targets)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, tr := range order {
			s := sessions[tr.Target]
			if s == nil {
				continue
			}
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			r.logf("[rep %d/%d] %s", i+1, rc.Repetitions, tr.Target)
			res, err := rr.repetition(ctx, s, i)
			if err != nil {
				if ctx.Err() != nil {
					tr.Status = StatusInterrupted
					return rep, ctx.Err()
				}
				tr.Status, tr.Error = StatusFailed, err.Error()
				r.failf("%s (rep %d): %v", tr.Target, i+1, err)
				continue
			}
			tr.Reps = append(tr.Reps, res)
			tr.Measures = summarize(tr.Reps)
		}
	}
	return rep, nil
}

// rebalanceRunner runs the rebalance benchmark on a runner's targets.
type rebalanceRunner struct {
	*runner
	rc RebalanceConfig
}

// rebalanceTopic is the topic every repetition on a target reads.
const rebalanceTopic = "krebalance"

// startTarget starts target t, creates its topic and waits until its group
// coordinator answers (Kafka creates __consumer_offsets on first use, which
// would otherwise land in the first repetition's join).
func (rr *rebalanceRunner) startTarget(ctx context.Context, t string) (*session, error) {
	t0 := time.Now()
	s, err := rr.start(ctx, t, Load{}, "rebalance")
	if err != nil {
		return nil, err
	}
	if err := createTopic(ctx, s.addr, rebalanceTopic, rr.rc.Partitions, ""); err != nil {
		_ = s.stop()
		return nil, err
	}
	if err := waitCoordinator(ctx, s.addr); err != nil {
		_ = s.stop()
		return nil, err
	}
	rr.logf("%s: ready at %s with a %d-partition topic and a group coordinator in %.1fs", t, s.addr, rr.rc.Partitions, time.Since(t0).Seconds())
	return s, nil
}

// waitCoordinator waits until FindCoordinator names a coordinator for a
// group.
func waitCoordinator(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	for {
		err := adm.FindGroupCoordinators(ctx, "krebalance-probe").Error()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: no group coordinator: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// repetition runs one fresh group through its three changes on s.
func (rr *rebalanceRunner) repetition(ctx context.Context, s *session, i int) (*RebalanceRep, error) {
	rc := rr.rc
	group := fmt.Sprintf("krebalance-%s-r%d", s.target, i+1)
	prod, err := startSteady(ctx, s.addr, rebalanceTopic, rc.Partitions, rc.Rate, rc.RecordSize)
	if err != nil {
		return nil, err
	}
	defer prod.stop()
	tr := newTracker(rc.Partitions)
	var members []*rbMember
	defer func() {
		var wg sync.WaitGroup
		for _, m := range members {
			wg.Add(1)
			go func() { defer wg.Done(); m.close() }()
		}
		wg.Wait()
	}()
	add := func(id int) error {
		m, err := startMember(ctx, s.addr, group, rc.Assignor, id, tr)
		if err == nil {
			members = append(members, m)
		}
		return err
	}
	active := func() []int {
		var ids []int
		for _, m := range members {
			if !m.left {
				ids = append(ids, m.id)
			}
		}
		return ids
	}
	res := &RebalanceRep{Rep: i + 1}

	// 1. N members at once.
	t0 := time.Now()
	for id := range rc.Members {
		if err := add(id); err != nil {
			return nil, err
		}
	}
	end, err := tr.waitSettled(ctx, active(), rc.Quiet, rc.SettleTimeout)
	if err != nil {
		return nil, fmt.Errorf("bench: %d members starting: %w", rc.Members, err)
	}
	res.Initial = tr.snapshot().initial(t0, end)
	rr.logf("%s: %d members settled in %.0f ms (all partitions owned after %.0f ms)", s.target, rc.Members, res.Initial.SettleMs, res.Initial.CoverMs)

	// 2. One more joins.
	if err := sleepCtx(ctx, rr.beforeChange()); err != nil {
		return nil, err
	}
	pre := active()
	tj := time.Now()
	if err := add(rc.Members); err != nil {
		return nil, err
	}
	if end, err = tr.waitSettled(ctx, active(), rc.Quiet, rc.SettleTimeout); err != nil {
		return nil, fmt.Errorf("bench: member %d joining: %w", rc.Members+1, err)
	}
	res.Join = tr.snapshot().change(tj, end, tj.Add(-rc.Baseline), pre)
	rr.logPhase(s.target, "join", res.Join)

	// 3. The first member leaves.
	if err := sleepCtx(ctx, rr.beforeChange()); err != nil {
		return nil, err
	}
	leaver := members[0]
	tl := time.Now()
	leaver.left = true
	closed := make(chan struct{})
	go func() { defer close(closed); leaver.close() }()
	end, err = tr.waitSettled(ctx, active(), rc.Quiet, rc.SettleTimeout)
	<-closed
	if err != nil {
		return nil, fmt.Errorf("bench: member 1 leaving: %w", err)
	}
	res.Leave = tr.snapshot().change(tl, end, tl.Add(-rc.Baseline), active())
	rr.logPhase(s.target, "leave", res.Leave)
	res.Produced, res.ProduceErrors = prod.sent.Load(), prod.errs.Load()
	if res.ProduceErrors > 0 {
		rr.logf("%s: %d of %d steady records failed: %v", s.target, res.ProduceErrors, res.Produced, prod.firstErr())
	}
	return res, nil
}

// beforeChange is how long to wait before a join or leave: the steady
// window, plus a random part of a heartbeat interval. The members heartbeat
// in step with the last change (each heartbeats when its assignment
// changes, then every interval), and a settled assignment is seen a fixed
// time after that change; without the random part every trigger would
// fall at the same point of the members' heartbeat cycle, which decides
// how soon they learn of the change (seen: a leave settling in 46 ms on
// one target and 463 ms on another, both at 500 ms heartbeats).
func (rr *rebalanceRunner) beforeChange() time.Duration {
	return rr.rc.Baseline + mrand.N(rr.rc.HeartbeatInterval)
}

func (rr *rebalanceRunner) logPhase(target, name string, p RebalancePhase) {
	rr.logf("%s: %s settled in %.0f ms; %d partitions moved, unowned %s ms; kept partitions' longest gap %s ms (steady %.0f ms); %d of %d members at 0 partitions",
		target, name, p.SettleMs, p.Moved, msList(p.UnownedMs), msList(p.KeptGapMs), p.SteadyGapMs, p.ZeroMembers, p.Members)
}

func msList(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strings.Join(s, ",")
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// steady is the steady producer of a repetition: Rate records/s spread
// round robin over the partitions, acknowledged asynchronously.
type steady struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	sent   atomic.Int64
	errs   atomic.Int64
	mu     sync.Mutex
	err    error
}

// startSteady starts a steady producer on topic once one record to every
// partition has been acknowledged.
func startSteady(ctx context.Context, addr, topic string, partitions int32, rate float64, size int) (*steady, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	value := make([]byte, size)
	_, _ = rand.Read(value)
	first := make([]*kgo.Record, partitions)
	for p := range first {
		first[p] = &kgo.Record{Partition: int32(p), Value: value}
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = cl.ProduceSync(pctx, first...).FirstErr()
	cancel()
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("bench: steady producer: %w", err)
	}
	pctx, cancel = context.WithCancel(ctx)
	st := &steady{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		t0 := time.Now()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var n int64
		for {
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
			}
			due := int64(time.Since(t0).Seconds() * rate)
			for ; n < due; n++ {
				rec := &kgo.Record{Partition: int32(n % int64(partitions)), Value: value}
				cl.Produce(pctx, rec, func(_ *kgo.Record, err error) {
					st.sent.Add(1)
					if err != nil && !errors.Is(err, context.Canceled) {
						st.errs.Add(1)
						st.mu.Lock()
						if st.err == nil {
							st.err = err
						}
						st.mu.Unlock()
					}
				})
			}
		}
	}()
	return st, nil
}

func (st *steady) firstErr() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.err
}

func (st *steady) stop() {
	st.cancel()
	<-st.done
	st.cl.Close()
}

// rbMember is one consumer-protocol group member (franz-go,
// kgo.ServerSideBalancer).
type rbMember struct {
	id     int
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	// left is set by the driver when the member is told to leave.
	left bool
}

// startMember starts member id of group, its callbacks and records going
// to tr.
func startMember(ctx context.Context, addr, group, assignor string, id int, tr *tracker) (*rbMember, error) {
	balancer := kgo.CooperativeStickyBalancer() // uniform
	if assignor == AssignorRange {
		balancer = kgo.RangeBalancer()
	}
	cb := func(kind ownKind) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			tr.own(id, kind, m[rebalanceTopic], time.Now())
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(rebalanceTopic),
		kgo.ServerSideBalancer(), kgo.Balancers(balancer),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		// Kafka's Java default fetch.max.wait.ms; records flow all the
		// time, so a fetch returns as soon as they are there.
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(cb(ownAssign)), kgo.OnPartitionsRevoked(cb(ownRevoke)), kgo.OnPartitionsLost(cb(ownRevoke)))
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	m := &rbMember{id: id, cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for pctx.Err() == nil {
			fs := cl.PollFetches(pctx)
			now := time.Now()
			fs.EachPartition(func(p kgo.FetchTopicPartition) {
				if len(p.Records) > 0 {
					tr.arrived(id, p.Partition, now)
				}
			})
		}
	}()
	return m, nil
}

// close stops polling and leaves the group (Close: LeaveGroup, epoch -1).
func (m *rbMember) close() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
		m.cl.Close()
	})
}

type ownKind int8

const (
	ownAssign ownKind = iota
	ownRevoke         // revoked or lost
)

// ownEvent is one partition gained or given up by a member, as its
// callback saw it.
type ownEvent struct {
	at        time.Time
	member    int
	partition int32
	kind      ownKind
}

// tracker collects a group's ownership changes and record arrivals.
type tracker struct {
	partitions int32

	mu       sync.Mutex
	events   []ownEvent
	owned    map[int]map[int32]bool
	arrivals map[memberPartition][]time.Time
}

type memberPartition struct {
	member    int
	partition int32
}

func newTracker(partitions int32) *tracker {
	return &tracker{partitions: partitions, owned: map[int]map[int32]bool{}, arrivals: map[memberPartition][]time.Time{}}
}

func (t *tracker) own(member int, kind ownKind, parts []int32, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.owned[member] == nil {
		t.owned[member] = map[int32]bool{}
	}
	for _, p := range parts {
		t.events = append(t.events, ownEvent{at: at, member: member, partition: p, kind: kind})
		if kind == ownAssign {
			t.owned[member][p] = true
		} else {
			delete(t.owned[member], p)
		}
	}
}

func (t *tracker) arrived(member int, partition int32, at time.Time) {
	t.mu.Lock()
	k := memberPartition{member, partition}
	t.arrivals[k] = append(t.arrivals[k], at)
	t.mu.Unlock()
}

// balanced reports whether every partition is owned by exactly one of the
// active members, their counts within one of each other.
func balanced(owned map[int]map[int32]bool, active []int, partitions int32) bool {
	owners := make([]int, partitions)
	lo, hi := int(partitions), 0
	for _, m := range active {
		n := 0
		for p := range owned[m] {
			if p >= 0 && p < partitions {
				owners[p]++
				n++
			}
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	for _, n := range owners {
		if n != 1 {
			return false
		}
	}
	return hi-lo <= 1
}

// waitSettled waits until the active members' assignment is balanced and
// no callback has fired for quiet; it returns when it saw that.
func (t *tracker) waitSettled(ctx context.Context, active []int, quiet, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		now := time.Now()
		t.mu.Lock()
		ok := balanced(t.owned, active, t.partitions)
		var last time.Time
		if len(t.events) > 0 {
			last = t.events[len(t.events)-1].at
		}
		state := fmt.Sprint(t.owned)
		t.mu.Unlock()
		if ok && now.Sub(last) >= quiet {
			return now, nil
		}
		if now.After(deadline) {
			return now, fmt.Errorf("not settled after %v (members %v; owned %s)", timeout, active, state)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return now, err
		}
	}
}

// trackSnapshot is a copy of a tracker's records, for the analysis.
type trackSnapshot struct {
	partitions int32
	events     []ownEvent
	arrivals   map[memberPartition][]time.Time
}

func (t *tracker) snapshot() trackSnapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := trackSnapshot{partitions: t.partitions, events: slices.Clone(t.events), arrivals: map[memberPartition][]time.Time{}}
	for k, v := range t.arrivals {
		s.arrivals[k] = slices.Clone(v)
	}
	sort.SliceStable(s.events, func(i, j int) bool { return s.events[i].at.Before(s.events[j].at) })
	return s
}

// ownedAt is each member's partitions after the events up to at.
func (s trackSnapshot) ownedAt(at time.Time) map[int]map[int32]bool {
	owned := map[int]map[int32]bool{}
	for _, e := range s.events {
		if e.at.After(at) {
			break
		}
		if owned[e.member] == nil {
			owned[e.member] = map[int32]bool{}
		}
		if e.kind == ownAssign {
			owned[e.member][e.partition] = true
		} else {
			delete(owned[e.member], e.partition)
		}
	}
	return owned
}

// lastEventIn is the time of the last event in (from, to], or from.
func (s trackSnapshot) lastEventIn(from, to time.Time) time.Time {
	last := from
	for _, e := range s.events {
		if e.at.After(from) && !e.at.After(to) {
			last = e.at
		}
	}
	return last
}

// allOwned reports whether each of the partitions has an owner.
func allOwned(owners map[int32]int, partitions int32) bool {
	for p := range partitions {
		if owners[p] <= 0 {
			return false
		}
	}
	return true
}

// initial measures the group's start at t0, seen settled at end.
func (s trackSnapshot) initial(t0, end time.Time) RebalancePhase {
	var ph RebalancePhase
	owners := map[int32]int{}
	for _, e := range s.events {
		if e.at.After(end) {
			break
		}
		if e.kind == ownAssign {
			owners[e.partition]++
		} else {
			owners[e.partition]--
		}
		if ph.CoverMs == 0 && allOwned(owners, s.partitions) {
			ph.CoverMs = ms(e.at.Sub(t0))
		}
	}
	ph.SettleMs = ms(s.lastEventIn(t0, end).Sub(t0))
	return ph
}

// change measures a join or leave that began at trigger and was seen
// settled at end; pre are the members there before it that stayed, and
// [steadyFrom, trigger] the steady window before it.
func (s trackSnapshot) change(trigger, end, steadyFrom time.Time, pre []int) RebalancePhase {
	settled := s.lastEventIn(trigger, end)
	ph := RebalancePhase{SettleMs: ms(settled.Sub(trigger)), Members: len(pre)}
	before, after := s.ownedAt(trigger), s.ownedAt(end)

	// The steady window: every partition owned throughout it.
	atSteady := s.ownedAt(steadyFrom)
	var steady time.Duration
	for m, parts := range before {
		for p := range parts {
			if atSteady[m][p] {
				steady = max(steady, longestGap(s.arrivals[memberPartition{m, p}], steadyFrom, trigger, trigger))
			}
		}
	}
	ph.SteadyGapMs = ms(steady)

	for _, m := range pre {
		var kept time.Duration
		has := false
		for p := range before[m] {
			if after[m][p] {
				has = true
				kept = max(kept, longestGap(s.arrivals[memberPartition{m, p}], trigger, settled, end))
			}
		}
		if has {
			ph.KeptGapMs = append(ph.KeptGapMs, ms(kept))
		}
		if s.everEmpty(m, len(before[m]), trigger, end) {
			ph.ZeroMembers++
		}
	}

	ownerOf := func(owned map[int]map[int32]bool, p int32) int {
		for m, parts := range owned {
			if parts[p] {
				return m
			}
		}
		return -1
	}
	for p := range s.partitions {
		from, to := ownerOf(before, p), ownerOf(after, p)
		if from < 0 || to < 0 || from == to {
			continue
		}
		ph.Moved++
		revoked, assigned := trigger, end
		for _, e := range s.events {
			if e.partition != p || e.at.Before(trigger) || e.at.After(end) {
				continue
			}
			if e.member == from && e.kind == ownRevoke && revoked == trigger {
				revoked = e.at
			}
			if e.member == to && e.kind == ownAssign {
				assigned = e.at
			}
		}
		ph.UnownedMs = append(ph.UnownedMs, ms(assigned.Sub(revoked)))
		gap := -1.0
		old, nw := s.arrivals[memberPartition{from, p}], s.arrivals[memberPartition{to, p}]
		if i, j := lastNotAfter(old, revoked), firstNotBefore(nw, assigned); i >= 0 && j >= 0 {
			gap = ms(nw[j].Sub(old[i]))
		}
		ph.FlowGapMs = append(ph.FlowGapMs, gap)
	}
	return ph
}

// everEmpty reports whether member m, holding n partitions at from, held
// none at some point in (from, to].
func (s trackSnapshot) everEmpty(m, n int, from, to time.Time) bool {
	if n == 0 {
		return true
	}
	for _, e := range s.events {
		if e.member != m || !e.at.After(from) || e.at.After(to) {
			continue
		}
		if e.kind == ownAssign {
			n++
		} else {
			n--
		}
		if n <= 0 {
			return true
		}
	}
	return false
}

// longestGap is the longest time between consecutive arrivals xs (sorted)
// that overlaps the window [a, b], counting from a if none came before it
// and up to end if none came after the last one before b.
func longestGap(xs []time.Time, a, b, end time.Time) time.Duration {
	prev := a
	if i := lastNotAfter(xs, a); i >= 0 {
		prev = xs[i]
	}
	var gap time.Duration
	for _, x := range xs {
		if !x.After(a) {
			continue
		}
		if x.After(end) || !prev.Before(b) {
			break
		}
		gap = max(gap, x.Sub(prev))
		prev = x
	}
	if prev.Before(b) {
		gap = max(gap, end.Sub(prev))
	}
	return gap
}

// lastNotAfter is the index of the last element of xs at or before t, or -1.
func lastNotAfter(xs []time.Time, t time.Time) int {
	return sort.Search(len(xs), func(i int) bool { return xs[i].After(t) }) - 1
}

// firstNotBefore is the index of the first element of xs at or after t, or
// -1.
func firstNotBefore(xs []time.Time, t time.Time) int {
	i := sort.Search(len(xs), func(i int) bool { return !xs[i].Before(t) })
	if i == len(xs) {
		return -1
	}
	return i
}

// rebalanceMeasures names the summary's measures, in order, with how each
// takes its samples from a repetition.
var rebalanceMeasures = []struct {
	name    string
	count   bool
	samples func(*RebalanceRep) []float64
	outOf   func(*RebalanceRep) int
}{
	{name: "start: first member → all partitions owned", samples: func(r *RebalanceRep) []float64 { return []float64{r.Initial.CoverMs} }},
	{name: "start: first member → settled", samples: func(r *RebalanceRep) []float64 { return []float64{r.Initial.SettleMs} }},
	{name: "join: → settled", samples: func(r *RebalanceRep) []float64 { return []float64{r.Join.SettleMs} }},
	{name: "join: kept partitions' longest gap, per member", samples: func(r *RebalanceRep) []float64 { return r.Join.KeptGapMs }},
	{name: "join: steady longest gap before", samples: func(r *RebalanceRep) []float64 { return []float64{r.Join.SteadyGapMs} }},
	{name: "join: moved partition unowned (revoke → assign)", samples: func(r *RebalanceRep) []float64 { return r.Join.UnownedMs }},
	{name: "join: moved partition's records gap", samples: func(r *RebalanceRep) []float64 { return known(r.Join.FlowGapMs) }},
	{name: "join: members ever at 0 partitions", count: true,
		samples: func(r *RebalanceRep) []float64 { return []float64{float64(r.Join.ZeroMembers)} }, outOf: func(r *RebalanceRep) int { return r.Join.Members }},
	{name: "leave: → settled", samples: func(r *RebalanceRep) []float64 { return []float64{r.Leave.SettleMs} }},
	{name: "leave: kept partitions' longest gap, per member", samples: func(r *RebalanceRep) []float64 { return r.Leave.KeptGapMs }},
	{name: "leave: steady longest gap before", samples: func(r *RebalanceRep) []float64 { return []float64{r.Leave.SteadyGapMs} }},
	{name: "leave: moved partition unowned (revoke → assign)", samples: func(r *RebalanceRep) []float64 { return r.Leave.UnownedMs }},
	{name: "leave: moved partition's records gap", samples: func(r *RebalanceRep) []float64 { return known(r.Leave.FlowGapMs) }},
	{name: "leave: members ever at 0 partitions", count: true,
		samples: func(r *RebalanceRep) []float64 { return []float64{float64(r.Leave.ZeroMembers)} }, outOf: func(r *RebalanceRep) int { return r.Leave.Members }},
}

// known drops the -1s (no record on one side).
func known(v []float64) []float64 {
	return slices.DeleteFunc(slices.Clone(v), func(x float64) bool { return x < 0 })
}

// summarize is every measure's median and maximum over reps.
func summarize(reps []*RebalanceRep) []RebalanceMeasure {
	out := make([]RebalanceMeasure, 0, len(rebalanceMeasures))
	for _, def := range rebalanceMeasures {
		m := RebalanceMeasure{Name: def.name, Count: def.count}
		var all []float64
		for _, r := range reps {
			all = append(all, def.samples(r)...)
			if def.outOf != nil {
				m.OutOf += def.outOf(r)
			}
		}
		m.N = len(all)
		if len(all) > 0 {
			slices.Sort(all)
			m.Median, m.Max = median(all), all[len(all)-1]
		}
		if def.count {
			for _, v := range all {
				m.Total += int(v)
			}
		}
		out = append(out, m)
	}
	return out
}

// median of sorted values.
func median(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// WriteJSON writes the report as indented JSON to path.
func (r *RebalanceReport) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Print writes the summary table: per measure, each target's median / max
// in milliseconds (counts: members of all that were there), and every
// other target's ratio to Kafka's median / max.
func (r *RebalanceReport) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "KIP-848 rebalances: %d partitions, %d members (+1 joins, then 1 leaves), %s assignor, heartbeat %v, session %v, %.0f records/s of %d B; %d repetitions\n",
		c.Partitions, c.Members, c.Assignor, c.HeartbeatInterval, c.SessionTimeout, c.Rate, c.RecordSize, c.Repetitions)
	if c.KafkaAssignmentInterval >= 0 {
		fmt.Fprintf(w, "Kafka's group.consumer.assignment.interval.ms: %d\n", c.KafkaAssignmentInterval.Milliseconds())
	}
	fmt.Fprintf(w, "%s\n", r.Host)
	if c.Smoke {
		fmt.Fprintln(w, "smoke run: figures not meaningful")
	}
	var kafka *RebalanceTarget
	var shown []*RebalanceTarget
	for _, t := range r.Targets {
		if t.Target == TargetKafka && len(t.Reps) > 0 {
			kafka = t
		}
		if len(t.Reps) > 0 {
			shown = append(shown, t)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "ms: median / max\t")
	for _, t := range shown {
		fmt.Fprintf(tw, "%s\t", t.Target)
	}
	if kafka != nil {
		for _, t := range shown {
			if t != kafka {
				fmt.Fprintf(tw, "%s ÷ kafka\t", t.Target)
			}
		}
	}
	fmt.Fprintln(tw)
	width := 0
	for _, def := range rebalanceMeasures {
		width = max(width, utf8.RuneCountInString(def.name))
	}
	for i, def := range rebalanceMeasures {
		// Names to the left: padded to one width, so that the
		// right-aligning tabwriter leaves them as they are.
		fmt.Fprintf(tw, "%s%s\t", def.name, strings.Repeat(" ", width-utf8.RuneCountInString(def.name)))
		for _, t := range shown {
			fmt.Fprintf(tw, "%s\t", t.Measures[i].String())
		}
		if kafka != nil {
			k := kafka.Measures[i]
			for _, t := range shown {
				if t == kafka {
					continue
				}
				m := t.Measures[i]
				if def.count || m.N == 0 || k.N == 0 {
					fmt.Fprint(tw, "\t")
					continue
				}
				fmt.Fprintf(tw, "%s / %s\t", ratioString(m.Median, k.Median), ratioString(m.Max, k.Max))
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, t := range r.Targets {
		if t.Status != StatusOK {
			fmt.Fprintf(w, "%s: %s: %s\n", t.Target, t.Status, t.Error)
		} else if t.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", t.Target, t.Note)
		}
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAILED: %s\n", f)
	}
}

// String is "median / max", or for a count "total of out of".
func (m RebalanceMeasure) String() string {
	switch {
	case m.Count:
		return fmt.Sprintf("%d of %d", m.Total, m.OutOf)
	case m.N == 0:
		return "n/a"
	}
	return fmt.Sprintf("%.0f / %.0f", m.Median, m.Max)
}

func ratioString(a, b float64) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}
