package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactions (Config.Transactions). Each session runs, beside the
// idempotent max run, a transactional one: every producer is a franz-go
// client with a transactional id of its own that begins a transaction,
// produces as fast as it goes until the transaction is due (TxnRecords
// records or TxnInterval, whichever first), flushes and commits
// (EndTransaction TryCommit), and begins the next, like a Kafka Streams
// task under exactly_once_v2 committing every commit.interval.ms (100 ms).
// Its throughput counts the records of the transactions whose commit
// returned inside the window; latency is, as in the idempotent run, from a
// record's Produce to its acknowledgement, and the commit latency (Flush +
// EndTxn) is reported beside it. The topic is then read back twice, at
// read_uncommitted and at read_committed (first one, then the other,
// alternating across repetitions), and the server's CPU per GB consumed is
// reported for each.

// ModeTxn is a Row of the franz-go client driving the target with
// transactional producers (Config.Transactions).
const ModeTxn = "txn"

// DefaultTxnInterval is how often each transactional producer commits by
// default: Kafka Streams' commit.interval.ms under exactly_once_v2.
const DefaultTxnInterval = 100 * time.Millisecond

// txnOpTimeout bounds one commit (Flush and EndTxn) and the check that a
// target serves transactions at all: a target that stalls or refuses fails
// the run with an error, not a hang.
const txnOpTimeout = 30 * time.Second

// txnSettings are when a transactional producer commits.
type txnSettings struct {
	// records and interval: commit after this many records or this long,
	// whichever comes first (0 = no such bound).
	records  int
	interval time.Duration
}

// commitDue reports whether a transaction that has produced n records and
// been open for elapsed is due to commit.
func (t txnSettings) commitDue(n int, elapsed time.Duration) bool {
	return (t.records > 0 && n >= t.records) || (t.interval > 0 && elapsed >= t.interval)
}

// String describes when the producers commit.
func (t txnSettings) String() string {
	switch {
	case t.records > 0 && t.interval > 0:
		return fmt.Sprintf("every %d records or %v, whichever first", t.records, t.interval)
	case t.records > 0:
		return fmt.Sprintf("every %d records", t.records)
	}
	return fmt.Sprintf("every %v", t.interval)
}

// txnID is the transactional id of producer i of a phase producing to
// topic: unique per producer and per phase (topic names are unique per
// run), so no producer fences another.
func txnID(topic string, i int) string { return fmt.Sprintf("kbench-%s-p%d", topic, i) }

// txnState is what a transactional produce phase adds to its producer.
type txnState struct {
	txnSettings
	// commitsInWin counts the transactions committed inside the window,
	// commitHist their commit latencies (Flush + EndTxn), endTxnHist the
	// EndTxn part alone.
	commitsInWin atomic.Int64
	commitHist   Histogram
	endTxnHist   Histogram
}

// txnLoop is one transactional producer's loop: transactions, back to back,
// each committed when due, the last one when the phase stops.
func (p *producer) txnLoop(ctx context.Context, cl *kgo.Client, seed uint64, stop *atomic.Bool) {
	rnd := rand.New(rand.NewPCG(seed, 0x6b6267))
	for !stop.Load() && ctx.Err() == nil {
		if err := cl.BeginTransaction(); err != nil {
			p.fail(fmt.Errorf("bench: BeginTransaction: %w", err))
			return
		}
		t0 := time.Now()
		n := 0
		for !stop.Load() && ctx.Err() == nil && !p.txn.commitDue(n, time.Since(t0)) {
			cl.Produce(ctx, p.record(p.payload.at(rnd.Uint64()), time.Now()), p.done)
			n++
		}
		if err := p.commit(ctx, cl, n); err != nil {
			if ctx.Err() == nil {
				p.fail(err)
			}
			return
		}
	}
}

// commit flushes the open transaction's n records and commits it, within
// txnOpTimeout, counting it toward the window if it ends inside.
func (p *producer) commit(ctx context.Context, cl *kgo.Client, n int) error {
	cctx, cancel := context.WithTimeout(ctx, txnOpTimeout)
	defer cancel()
	t0 := time.Now()
	stalled := func(what string, err error) error {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("bench: %s did not complete within %v: the target stalled or does not serve transactions: %w", what, txnOpTimeout, err)
		}
		return fmt.Errorf("bench: %s: %w", what, err)
	}
	if err := cl.Flush(cctx); err != nil {
		return stalled("flushing a transaction's records", err)
	}
	t1 := time.Now()
	if err := cl.EndTransaction(cctx, kgo.TryCommit); err != nil {
		return stalled("committing a transaction (EndTransaction)", err)
	}
	now := time.Now()
	if t := now.UnixNano(); t >= p.winStart.Load() && t < p.winEnd.Load() {
		p.inWin.Add(int64(n))
		p.txn.commitsInWin.Add(1)
		p.txn.commitHist.Record(now.Sub(t0))
		p.txn.endTxnHist.Record(now.Sub(t1))
	}
	return nil
}

// txnResult is what a transactional produce phase measured beyond a
// produceResult.
type txnResult struct {
	*produceResult
	commits    int64
	commitHist *Histogram
	endTxnHist *Histogram
}

// runTxnProduce is runProduce with transactional producers committing as t
// says: warm-up, the measurement window, then the last transactions
// committed. It first checks that the target serves transactions
// (txnPreflight), so that one that refuses fails at once with the reason.
func runTxnProduce(ctx context.Context, addr, topic string, l Load, t txnSettings, warmup, window time.Duration, meter cpuMeter, hooks windowHooks) (*txnResult, error) {
	if !l.idempotent() {
		return nil, fmt.Errorf("bench: transactions need idempotent producers (acks=all, 5 in flight); the load has acks=%s, %d in flight", l.AcksString(), l.InFlight)
	}
	if t.records <= 0 && t.interval <= 0 {
		return nil, errors.New("bench: transactional producers need a commit bound (records or interval)")
	}
	if err := txnPreflight(ctx, addr, txnID(topic, -1)); err != nil {
		return nil, err
	}
	opts, err := producerOpts(addr, topic, l)
	if err != nil {
		return nil, err
	}
	p := newProducer(l)
	p.txn = &txnState{txnSettings: t}
	clients := make([]*kgo.Client, 0, l.Producers)
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for i := range l.Producers {
		cl, err := kgo.NewClient(append(opts, kgo.TransactionalID(txnID(topic, i)), kgo.TransactionTimeout(time.Minute))...)
		if err != nil {
			return nil, fmt.Errorf("bench: transactional producer: %w", err)
		}
		clients = append(clients, cl)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Go(func() { p.txnLoop(pctx, cl, uint64(i), &stop) })
	}
	w, err := p.measure(ctx, warmup, window, meter, hooks)
	stop.Store(true)
	if err != nil {
		cancel()
		wg.Wait()
		return nil, err
	}
	// The loops commit their last transactions as they stop; the flush
	// after them has nothing left to send.
	if err := flushProducers(ctx, pctx, cancel, clients, &wg); err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	return &txnResult{produceResult: p.result(w), commits: p.txn.commitsInWin.Load(),
		commitHist: &p.txn.commitHist, endTxnHist: &p.txn.endTxnHist}, nil
}

// txnPreflight checks that addr serves transactions for id: a
// FindCoordinator for it and an InitProducerId through its coordinator,
// within txnOpTimeout. Kafka creates its transaction state log on the first
// request, so this also keeps that out of the measurement.
func txnPreflight(ctx context.Context, addr, id string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, txnOpTimeout)
	defer cancel()
	refused := func(what string, err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("bench: the target does not serve transactions: no successful %s within %v (last error: %w)", what, txnOpTimeout, err)
		}
		return fmt.Errorf("bench: the target does not serve transactions: %s: %w", what, err)
	}
	// Kafka answers COORDINATOR_NOT_AVAILABLE (retriable) while it creates
	// its transaction state log: retriable errors are retried until the
	// deadline, any other fails at once.
	retry := func(what string, do func() error) error {
		for {
			err := do()
			if err == nil {
				return nil
			}
			if !kerr.IsRetriable(err) || ctx.Err() != nil {
				return refused(what, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	err = retry("FindCoordinator", func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType = 1 // transaction
		fc.CoordinatorKey = id
		fc.CoordinatorKeys = []string{id}
		resp, err := fc.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return findCoordinatorErr(resp)
	})
	if err != nil {
		return err
	}
	return retry("InitProducerId", func() error {
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.TransactionalID = &id
		ip.TransactionTimeoutMillis = int32(time.Minute / time.Millisecond)
		resp, err := ip.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
}

// findCoordinatorErr is a FindCoordinator response's error, of the
// response (v0–3) or of its one coordinator (v4+).
func findCoordinatorErr(resp *kmsg.FindCoordinatorResponse) error {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, c := range resp.Coordinators {
		if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}

// kafkaProps are the broker properties kbench sets: with transactions, the
// transaction state log's replication for one node (kafkatest's defaults
// already, set here so that the run does not depend on them); and those a
// mode of the harness adds (Config.brokerProps: the rebalance benchmark's
// consumer-group timeouts).
func kafkaProps(cfg Config) map[string]string {
	if !cfg.Transactions && len(cfg.brokerProps) == 0 {
		return nil
	}
	props := maps.Clone(cfg.brokerProps)
	if props == nil {
		props = map[string]string{}
	}
	if cfg.Transactions {
		props["transaction.state.log.replication.factor"] = "1"
		props["transaction.state.log.min.isr"] = "1"
	}
	return props
}

// txnSettings are the configuration's commit bounds.
func (c Config) txnSettings() txnSettings {
	return txnSettings{records: c.TxnRecords, interval: c.TxnInterval}
}

// txnRun is the session's transactional run, reported in tr; nil if it
// failed or is unavailable (the null broker).
func (r *runner) txnRun(ctx context.Context, s *session, l Load, topic string, rep int, target, tag string, tr *Row) *Measurement {
	tr.Note = s.note
	if !s.consume {
		tr.Status, tr.Error = StatusUnavailable, "the null broker has no transaction coordinator (it refuses transactional ids)"
		return nil
	}
	run, err := r.franzTxn(ctx, s, l, topic+"-txn", rep)
	if err != nil {
		if ctx.Err() != nil {
			tr.Status = StatusInterrupted
		} else {
			tr.Status, tr.Error = StatusFailed, err.Error()
			r.failf("%s (%s) franz-go transactional: %v", target, tag, err)
		}
		return nil
	}
	r.addRun(tr, run)
	return run
}

// franzTxn runs the transactional load once against s: produce, then read
// everything back at both isolation levels and compare each with what was
// acknowledged (every transaction committed).
func (r *runner) franzTxn(ctx context.Context, s *session, l Load, topic string, rep int) (*Measurement, error) {
	t0 := time.Now()
	if err := createTopic(ctx, s.addr, topic, l.Partitions, l.TopicCompression); err != nil {
		return nil, err
	}
	r.logf("%s: topic %s with %d partitions ready in %.1fs", s.target, topic, l.Partitions, time.Since(t0).Seconds())
	defer r.dropTopic(ctx, s, topic)
	meter := cpuMeter{pids: s.pids()}
	ts := r.cfg.txnSettings()
	r.logf("%s: producing transactionally, committing %s: %v warm-up + %v", s.target, ts, r.cfg.Warmup, r.cfg.Duration)
	hooks, prof := s.profileHooks()
	tr, err := runTxnProduce(ctx, s.addr, topic, l, ts, r.cfg.Warmup, r.cfg.Duration, meter, hooks)
	if err != nil {
		return nil, err
	}
	run := produceMeasurement(rep, tr.produceResult, prof)
	run.Commits, run.commitHist, run.endTxnHist = tr.commits, tr.commitHist, tr.endTxnHist
	run.CommitP50Ms, run.CommitP99Ms = ms(tr.commitHist.Quantile(0.50)), ms(tr.commitHist.Quantile(0.99))
	run.EndTxnP50Ms, run.EndTxnP99Ms = ms(tr.endTxnHist.Quantile(0.50)), ms(tr.endTxnHist.Quantile(0.99))
	if prof != "" {
		r.logf("%s: gateway CPU profile of this transactional produce window: %s", s.target, prof)
	}
	r.logf("%s: produced transactionally %.0f records/s (%.1f MB/s) in %d commits (%.0f/s; Flush + EndTxn p50 %.2f ms, p99 %.2f ms; EndTxn alone p50 %.2f ms, p99 %.2f ms), record p99 %.2f ms; %d acknowledged in all",
		s.target, run.ProduceRecordsPerSec, run.ProduceMBPerSec, run.Commits, float64(run.Commits)/run.Window,
		run.CommitP50Ms, run.CommitP99Ms, run.EndTxnP50Ms, run.EndTxnP99Ms, run.P99Ms, run.Acked)

	// Which read-back goes first alternates across repetitions: the
	// second may find the data warmer.
	run.CommittedFirst = rep%2 == 1
	for _, committed := range []bool{run.CommittedFirst, !run.CommittedFirst} {
		if s.profiled != nil {
			// Two pending profile signals are not delivered in the
			// order sent (franzFanout).
			time.Sleep(500 * time.Millisecond)
		}
		if committed {
			err = r.readCommitted(ctx, s, l, topic, meter, run, tr.acked)
		} else {
			_, _, err = r.franzReadBack(ctx, s, l, topic, meter, run, tr.acked)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := readBackErr(run, l.RecordSize); err != nil {
		return nil, fmt.Errorf("bench: %s (read_uncommitted): %w", topic, err)
	}
	return run, nil
}

// readCommitted is franzTxn's read_committed read-back: everything up to
// the end offsets, counted into run's Committed figures against acked.
func (r *runner) readCommitted(ctx context.Context, s *session, l Load, topic string, meter cpuMeter, run *Measurement, acked []int64) error {
	ends, err := endOffsets(ctx, s.addr, topic, l.Partitions)
	if err != nil {
		return err
	}
	hooks, prof := s.profileHooks()
	run.CommittedConsumeProfile = prof
	cr, err := runConsume(ctx, s.addr, topic, ends, r.cfg.Consumers, l.RecordSize, kgo.ReadCommitted(), meter, hooks)
	if err != nil {
		return fmt.Errorf("bench: %s (read_committed): %w", topic, err)
	}
	run.CommittedConsumed = cr.records
	run.CommittedConsumeSeconds = cr.elapsed.Seconds()
	run.CommittedConsumeRecordsPerSec = float64(cr.records) / cr.elapsed.Seconds()
	run.CommittedConsumeMBPerSec = float64(cr.bytes) / 1e6 / cr.elapsed.Seconds()
	run.CommittedConsumeServerCPUSeconds = cr.serverCPU.Seconds()
	run.CommittedConsumeGatewayCPUSeconds = cr.gatewayCPU.Seconds()
	run.committedBytes = cr.bytes
	r.logf("%s: consumed %d records at read_committed at %.0f records/s (%.1f MB/s)", s.target, cr.records, run.CommittedConsumeRecordsPerSec, run.CommittedConsumeMBPerSec)
	if prof != "" {
		r.logf("%s: gateway CPU profile of the read_committed read-back: %s", s.target, prof)
	}
	return countErr(acked, cr, l.RecordSize, "read_committed")
}

// countErr compares the records a read-back found, partition by partition,
// with those acknowledged.
func countErr(acked []int64, cr *consumeResult, recordSize int, what string) error {
	var lost, dup, consumed, total int64
	for p := range acked {
		total += acked[p]
		if d := acked[p] - cr.byPartition[p]; d > 0 {
			lost += d
		} else {
			dup -= d
		}
	}
	for _, n := range cr.byPartition {
		consumed += n
	}
	var errs []error
	if lost > 0 || dup > 0 {
		errs = append(errs, fmt.Errorf("%s: consumed %d records but %d were acknowledged (%d lost, %d duplicated)", what, consumed, total, lost, dup))
	}
	if cr.badValues > 0 {
		errs = append(errs, fmt.Errorf("%s: %d records read back with a value size other than %d", what, cr.badValues, recordSize))
	}
	return errors.Join(errs...)
}

// aggregateTxn fills a transactional row's commit and read_committed
// figures from its runs; cpuOK says every run's CPU was measured.
func aggregateTxn(row *Row, cpuOK bool) {
	if row.Mode != ModeTxn || len(row.Runs) == 0 {
		return
	}
	var commits int64
	var window, p50, p99, e50, e99, rate, cpu, gw float64
	var bytes int64
	for _, run := range row.Runs {
		commits += run.Commits
		window += run.Window
		p50 += run.CommitP50Ms
		p99 += run.CommitP99Ms
		e50 += run.EndTxnP50Ms
		e99 += run.EndTxnP99Ms
		rate += run.CommittedConsumeRecordsPerSec
		cpu += run.CommittedConsumeServerCPUSeconds
		gw += run.CommittedConsumeGatewayCPUSeconds
		bytes += run.committedBytes
	}
	n := float64(len(row.Runs))
	if window > 0 {
		row.CommitsPerSec = ptr(float64(commits) / window)
	}
	if row.commitHist != nil && row.commitHist.Count() > 0 {
		row.CommitP50Ms = ptr(ms(row.commitHist.Quantile(0.50)))
		row.CommitP99Ms = ptr(ms(row.commitHist.Quantile(0.99)))
	} else {
		row.CommitP50Ms, row.CommitP99Ms = ptr(p50/n), ptr(p99/n)
	}
	if row.endTxnHist != nil && row.endTxnHist.Count() > 0 {
		row.EndTxnP50Ms = ptr(ms(row.endTxnHist.Quantile(0.50)))
		row.EndTxnP99Ms = ptr(ms(row.endTxnHist.Quantile(0.99)))
	} else {
		row.EndTxnP50Ms, row.EndTxnP99Ms = ptr(e50/n), ptr(e99/n)
	}
	row.CommittedConsumeRecordsPerSec = ptr(rate / n)
	if cpuOK && bytes > 0 {
		row.CommittedConsumeCPUPerGB = ptr(cpu / (float64(bytes) / gb))
		row.CommittedConsumeGatewayCPUPerGB = ptr(gw / (float64(bytes) / gb))
	}
}

// txnRatios compares each target's transactional run with its idempotent
// one, each kiggy target's with Kafka's, and the CPU per GB of the
// read_committed read-back with the read_uncommitted one's.
func txnRatios(lr *LoadReport) []Ratio {
	var rl ratioList
	kt := findRow(lr, TargetKafka, ClientFranz, ModeTxn)
	for _, t := range AllTargets {
		tr := findRow(lr, t, ClientFranz, ModeTxn)
		if tr == nil {
			continue
		}
		if mr := findRow(lr, t, ClientFranz, ModeMax); mr != nil {
			rl.add(t+" transactional/idempotent produce records/s", tr.ProduceRecordsPerSec, mr.ProduceRecordsPerSec)
			rl.addp(t+" transactional/idempotent server CPU s/GB produced", tr.ServerCPUPerGB, mr.ServerCPUPerGB)
		}
		if t != TargetKafka && kt != nil {
			rl.add(t+"/kafka transactional produce records/s", tr.ProduceRecordsPerSec, kt.ProduceRecordsPerSec)
			rl.addp(t+"/kafka transactional server CPU s/GB produced", tr.ServerCPUPerGB, kt.ServerCPUPerGB)
		}
		rl.addp(t+" read_committed/read_uncommitted server CPU s/GB consumed", tr.CommittedConsumeCPUPerGB, tr.ConsumeCPUPerGB)
		if tr.ConsumeGatewayCPUPerGB != nil && tr.ConsumeCPUPerGB != nil && *tr.ConsumeGatewayCPUPerGB != *tr.ConsumeCPUPerGB {
			rl.addp(t+" read_committed/read_uncommitted gateway-only CPU s/GB consumed", tr.CommittedConsumeGatewayCPUPerGB, tr.ConsumeGatewayCPUPerGB)
		}
	}
	return rl
}

// txnGoals checks the transaction goals for every kiggy target with a
// transactional row, on any load (each compares two figures of one run):
// transactional produce ≥ 0.8× its idempotent produce and ≥ Kafka's
// transactional produce; the server's CPU per GB consumed at read_committed
// ≤ 1.1× at read_uncommitted.
func txnGoals(lr *LoadReport) []Goal {
	var out []Goal
	kt := findRow(lr, TargetKafka, ClientFranz, ModeTxn)
	for _, t := range AllTargets {
		tr := findRow(lr, t, ClientFranz, ModeTxn)
		if t == TargetKafka || tr == nil {
			continue
		}
		if mr := findRow(lr, t, ClientFranz, ModeMax); mr != nil && mr.ProduceRecordsPerSec > 0 {
			v := tr.ProduceRecordsPerSec / mr.ProduceRecordsPerSec
			out = append(out, Goal{Name: t + ": transactional produce vs its idempotent produce", Want: "≥ 0.8×", Value: v, Met: v >= 0.8,
				Detail: fmt.Sprintf("%.2f× (%.0f vs %.0f records/s)", v, tr.ProduceRecordsPerSec, mr.ProduceRecordsPerSec)})
		}
		if kt != nil && kt.ProduceRecordsPerSec > 0 {
			v := tr.ProduceRecordsPerSec / kt.ProduceRecordsPerSec
			out = append(out, Goal{Name: t + ": transactional produce vs Kafka's transactional produce", Want: "≥ 1× Kafka", Value: v, Met: v >= 1,
				Detail: fmt.Sprintf("%.2f× (%.0f vs %.0f records/s)", v, tr.ProduceRecordsPerSec, kt.ProduceRecordsPerSec)})
		}
		if tr.CommittedConsumeCPUPerGB != nil && tr.ConsumeCPUPerGB != nil && *tr.ConsumeCPUPerGB > 0 {
			v := *tr.CommittedConsumeCPUPerGB / *tr.ConsumeCPUPerGB
			d := fmt.Sprintf("%.2f× (%.2f vs %.2f server CPU s/GB", v, *tr.CommittedConsumeCPUPerGB, *tr.ConsumeCPUPerGB)
			if g, gu := tr.CommittedConsumeGatewayCPUPerGB, tr.ConsumeGatewayCPUPerGB; g != nil && gu != nil && *gu > 0 && *gu != *tr.ConsumeCPUPerGB {
				d += fmt.Sprintf("; kiggy alone %.2f×, %.2f vs %.2f", *g / *gu, *g, *gu)
			}
			out = append(out, Goal{Name: t + ": read_committed consume CPU vs read_uncommitted", Want: "≤ 1.1×", Value: v, Met: v <= 1.1,
				Detail: d + ")"})
		}
	}
	return out
}

// printTxn prints the transactional rows of lr beside their targets'
// idempotent rows, if there are any.
func printTxn(w io.Writer, lr *LoadReport, cfg Config) {
	var rows []*Row
	for _, row := range lr.Rows {
		if row.Mode == ModeTxn && len(row.Runs) > 0 {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "Transactions: each producer commits %s; commit = Flush + EndTxn; the transactional topic read back at read_uncommitted (RU) and read_committed (RC)\n", cfg.txnSettings())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tidem rec/s\ttxn rec/s\ttxn/idem\tcommits/s\tcommit p50 ms\tcommit p99 ms\tEndTxn p50 ms\tEndTxn p99 ms\tRU cons rec/s\tRC cons rec/s\tRU srv CPU s/GB\tRC srv CPU s/GB\tRC/RU\tRU gw CPU s/GB\tRC gw CPU s/GB\tRC/RU gw\t")
	for _, row := range rows {
		idem, ratio := "n/a", "n/a"
		if mr := findRow(lr, row.Target, ClientFranz, ModeMax); mr != nil {
			idem = num(mr.ProduceRecordsPerSec, 0)
			if mr.ProduceRecordsPerSec > 0 {
				ratio = num(row.ProduceRecordsPerSec/mr.ProduceRecordsPerSec, 2) + "×"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			row.Target, idem, num(row.ProduceRecordsPerSec, 0), ratio,
			opt(row.CommitsPerSec, 1), opt(row.CommitP50Ms, 2), opt(row.CommitP99Ms, 2), opt(row.EndTxnP50Ms, 2), opt(row.EndTxnP99Ms, 2),
			opt(row.ConsumeRecordsPerSec, 0), opt(row.CommittedConsumeRecordsPerSec, 0),
			opt(row.ConsumeCPUPerGB, 2), opt(row.CommittedConsumeCPUPerGB, 2), quot(row.CommittedConsumeCPUPerGB, row.ConsumeCPUPerGB),
			opt(row.ConsumeGatewayCPUPerGB, 2), opt(row.CommittedConsumeGatewayCPUPerGB, 2), quot(row.CommittedConsumeGatewayCPUPerGB, row.ConsumeGatewayCPUPerGB))
	}
	tw.Flush()
}

// quot is a/b as a ratio, "n/a" without both.
func quot(a, b *float64) string {
	if a == nil || b == nil || *b == 0 {
		return "n/a"
	}
	return num(*a / *b, 2) + "×"
}
