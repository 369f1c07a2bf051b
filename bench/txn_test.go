package bench

import (
	"bytes"
	"context"
	"math"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bench/nullbroker"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestCommitDue(t *testing.T) {
	for _, tc := range []struct {
		ts      txnSettings
		n       int
		elapsed time.Duration
		want    bool
	}{
		{txnSettings{interval: 100 * time.Millisecond}, 1 << 20, 99 * time.Millisecond, false},
		{txnSettings{interval: 100 * time.Millisecond}, 0, 100 * time.Millisecond, true},
		{txnSettings{records: 10}, 9, time.Hour, false},
		{txnSettings{records: 10}, 10, 0, true},
		{txnSettings{records: 10, interval: time.Second}, 10, 0, true},
		{txnSettings{records: 10, interval: time.Second}, 3, time.Second, true},
		{txnSettings{records: 10, interval: time.Second}, 3, time.Millisecond, false},
	} {
		if got := tc.ts.commitDue(tc.n, tc.elapsed); got != tc.want {
			t.Errorf("%v: commitDue(%d, %v) = %v, want %v", tc.ts, tc.n, tc.elapsed, got, tc.want)
		}
	}
	for ts, want := range map[txnSettings]string{
		{interval: 100 * time.Millisecond}:               "every 100ms",
		{records: 500}:                                   "every 500 records",
		{records: 500, interval: 100 * time.Millisecond}: "every 500 records or 100ms, whichever first",
	} {
		if got := ts.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	seen := map[string]bool{}
	for _, topic := range []string{"kbench-l1-r1-txn", "kbench-l1-r2-txn"} {
		for i := -1; i < 3; i++ {
			id := txnID(topic, i)
			if seen[id] {
				t.Fatalf("transactional id %q twice", id)
			}
			seen[id] = true
		}
	}
}

func TestTxnConfigValidation(t *testing.T) {
	c := DefaultConfig()
	c.Transactions = true
	if err := c.normalize(); err != nil {
		t.Fatalf("default config with transactions: %v", err)
	}
	if c.TxnInterval != 100*time.Millisecond || c.TxnRecords != 0 {
		t.Errorf("default commit bounds %d records, %v", c.TxnRecords, c.TxnInterval)
	}
	if p := kafkaProps(c); p["transaction.state.log.replication.factor"] != "1" || p["transaction.state.log.min.isr"] != "1" {
		t.Errorf("Kafka props %v", p)
	}
	if kafkaProps(DefaultConfig()) != nil {
		t.Error("Kafka props without transactions")
	}
	for name, mod := range map[string]func(*Config){
		"acks 1":        func(c *Config) { c.Loads[0].Acks = 1 },
		"in flight 1":   func(c *Config) { c.Loads[0].InFlight = 1 },
		"no bound":      func(c *Config) { c.TxnInterval, c.TxnRecords = 0, 0 },
		"negative":      func(c *Config) { c.TxnRecords = -1 },
		"negative time": func(c *Config) { c.TxnInterval = -time.Second },
	} {
		c := DefaultConfig()
		c.Transactions = true
		c.Loads = slices.Clone(c.Loads)
		mod(&c)
		if err := c.normalize(); err == nil {
			t.Errorf("%s: accepted", name)
		}
		c.Transactions = false
		if name == "no bound" || strings.HasPrefix(name, "negative") {
			if err := c.normalize(); err != nil {
				t.Errorf("%s without transactions: %v", name, err)
			}
		}
	}
}

// TestTxnAggregateRatiosGoals checks the figures a report derives from
// transactional runs.
func TestTxnAggregateRatiosGoals(t *testing.T) {
	mk := func(target, mode string, rate float64, cpuRU, cpuRC float64) *Row {
		row := &Row{Target: target, Client: ClientFranz, Mode: mode, Status: StatusOK, hist: new(Histogram)}
		run := &Measurement{ProduceRecordsPerSec: rate, Window: 10, ServerCPUSeconds: 1, GatewayCPUSeconds: 1, Bytes: 1e9, CPUMeasured: true,
			ConsumeRecordsPerSec: rate, consumeBytes: 1e9, ConsumeServerCPUSeconds: cpuRU, ConsumeGatewayCPUSeconds: cpuRU / 2}
		if mode == ModeTxn {
			run.Commits = 200
			run.commitHist = new(Histogram)
			for range 100 {
				run.commitHist.Record(5 * time.Millisecond)
			}
			run.CommittedConsumeRecordsPerSec = rate / 2
			run.committedBytes = 2e9
			run.CommittedConsumeServerCPUSeconds = 2 * cpuRC
			run.CommittedConsumeGatewayCPUSeconds = cpuRC
		}
		row.Runs = append(row.Runs, run)
		if run.commitHist != nil {
			row.commitHist = new(Histogram)
			row.commitHist.Merge(run.commitHist)
		}
		aggregate(row)
		return row
	}
	l := DefaultLoad
	l.Partitions = 4 // the transaction goals hold for any load
	lr := &LoadReport{Load: l}
	lr.Rows = []*Row{
		mk(TargetKafka, ModeMax, 1000, 1, 0),
		mk(TargetKiggy, ModeMax, 1000, 1, 0),
		mk(TargetKafka, ModeTxn, 600, 1, 1),
		mk(TargetKiggy, ModeTxn, 900, 1, 1.05),
	}
	kt := lr.Rows[3]
	if kt.CommitsPerSec == nil || *kt.CommitsPerSec != 20 || kt.CommitP50Ms == nil || math.Abs(*kt.CommitP50Ms-5) > 0.5 {
		t.Fatalf("commit figures %v, %v", kt.CommitsPerSec, kt.CommitP50Ms)
	}
	if kt.CommittedConsumeCPUPerGB == nil || *kt.CommittedConsumeCPUPerGB != 1.05 || *kt.CommittedConsumeRecordsPerSec != 450 {
		t.Fatalf("read_committed figures %v, %v", kt.CommittedConsumeCPUPerGB, kt.CommittedConsumeRecordsPerSec)
	}
	if lr.Rows[1].CommitsPerSec != nil || lr.Rows[1].CommittedConsumeCPUPerGB != nil {
		t.Fatal("an idempotent row has transaction figures")
	}
	got := map[string]float64{}
	for _, r := range txnRatios(lr) {
		got[r.Name] = r.Value
	}
	for name, want := range map[string]float64{
		"kiggy transactional/idempotent produce records/s":                     0.9,
		"kafka transactional/idempotent produce records/s":                     0.6,
		"kiggy/kafka transactional produce records/s":                          1.5,
		"kiggy read_committed/read_uncommitted server CPU s/GB consumed":       1.05,
		"kiggy read_committed/read_uncommitted gateway-only CPU s/GB consumed": 1.05,
	} {
		if math.Abs(got[name]-want) > 1e-9 {
			t.Errorf("%s = %v, want %v (all: %v)", name, got[name], want, got)
		}
	}
	met := map[string]bool{}
	for _, g := range txnGoals(lr) {
		met[g.Name] = g.Met
	}
	want := map[string]bool{
		"kiggy: transactional produce vs its idempotent produce":        true,
		"kiggy: transactional produce vs Kafka's transactional produce": true,
		"kiggy: read_committed consume CPU vs read_uncommitted":         true,
	}
	if len(met) != len(want) {
		t.Fatalf("goals %v, want %v", met, want)
	}
	for k, v := range want {
		if met[k] != v {
			t.Errorf("goal %q met = %v, want %v", k, met[k], v)
		}
	}
	lr.Rows[3] = mk(TargetKiggy, ModeTxn, 500, 1, 1.2)
	for _, g := range txnGoals(lr) {
		if g.Met {
			t.Errorf("goal %q met at 0.5× idempotent, 0.83× Kafka, 1.2× CPU: %s", g.Name, g.Detail)
		}
	}

	var buf bytes.Buffer
	lr.Ratios, lr.Goals = txnRatios(lr), txnGoals(lr)
	(&Report{Config: Config{TxnInterval: DefaultTxnInterval}, Loads: []LoadReport{*lr}}).Print(&buf)
	for _, s := range []string{"Transactions: each producer commits every 100ms", "RC/RU", "0.50×", "1.20×", "read_committed consume CPU"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("printed report lacks %q:\n%s", s, buf.String())
		}
	}
}

func TestCountErr(t *testing.T) {
	cr := &consumeResult{byPartition: []int64{3, 5}}
	if err := countErr([]int64{3, 5}, cr, 10, "x"); err != nil {
		t.Fatal(err)
	}
	if err := countErr([]int64{4, 4}, cr, 10, "x"); err == nil || !strings.Contains(err.Error(), "1 lost, 1 duplicated") {
		t.Fatalf("got %v", err)
	}
	cr.badValues = 1
	if err := countErr([]int64{3, 5}, cr, 10, "x"); err == nil {
		t.Fatal("bad value size accepted")
	}
}

// TestTxnLoadInProcess drives the transactional load against an
// in-process kiggy gateway, then reads everything back at both isolation
// levels: every acknowledged record is committed and read back once at
// each, the transaction markers not counted.
func TestTxnLoadInProcess(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := Load{RecordSize: 200, Partitions: 3, Acks: -1, Compression: "none", Producers: 2, InFlight: 5,
		Linger: time.Millisecond, BufferBytes: 1 << 20}
	const topic = "txn"
	if err := createTopic(ctx, gw.Addr, topic, l.Partitions, ""); err != nil {
		t.Fatal(err)
	}
	tr, err := runTxnProduce(ctx, gw.Addr, topic, l, txnSettings{records: 500, interval: 20 * time.Millisecond},
		300*time.Millisecond, 700*time.Millisecond, cpuMeter{}, windowHooks{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records in %d commits in %v, commit p50 %v", tr.records, tr.commits, tr.window, tr.commitHist.Quantile(0.5))
	if tr.commits == 0 || tr.records == 0 {
		t.Fatalf("%d commits, %d records in the window", tr.commits, tr.records)
	}
	var acked int64
	for _, a := range tr.acked {
		acked += a
	}
	ends, err := endOffsets(ctx, gw.Addr, topic, l.Partitions)
	if err != nil {
		t.Fatal(err)
	}
	var endSum int64
	for _, e := range ends {
		endSum += e
	}
	if endSum <= acked {
		t.Errorf("end offsets sum to %d, %d records acknowledged: no room for transaction markers", endSum, acked)
	}
	for _, iso := range []kgo.IsolationLevel{kgo.ReadUncommitted(), kgo.ReadCommitted()} {
		cr, err := runConsume(ctx, gw.Addr, topic, ends, 2, l.RecordSize, iso, cpuMeter{}, windowHooks{})
		if err != nil {
			t.Fatal(err)
		}
		if err := countErr(tr.acked, cr, l.RecordSize, "read back"); err != nil {
			t.Fatal(err)
		}
		if cr.records != acked {
			t.Fatalf("read back %d of %d", cr.records, acked)
		}
	}
}

// TestTxnRefused: a target that does not serve transactions (the null
// broker: no FindCoordinator, transactional ids refused) fails the
// transactional run at once, saying so.
func TestTxnRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := nullbroker.New(nullbroker.Config{Partitions: 2})
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := Load{RecordSize: 100, Partitions: 2, Acks: -1, Compression: "none", Producers: 1, InFlight: 5, BufferBytes: 1 << 20}
	t0 := time.Now()
	_, err = runTxnProduce(ctx, ln.Addr().String(), "t", l, txnSettings{interval: 100 * time.Millisecond}, 0, time.Second, cpuMeter{}, windowHooks{})
	if err == nil || !strings.Contains(err.Error(), "does not serve transactions") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("refusal took %v", d)
	}
	t.Logf("%v: %v", time.Since(t0).Round(time.Millisecond), err)
	l.Acks = 1
	if _, err := runTxnProduce(ctx, ln.Addr().String(), "t", l, txnSettings{interval: time.Second}, 0, time.Second, cpuMeter{}, windowHooks{}); err == nil {
		t.Fatal("transactions with acks=1 accepted")
	}
}
