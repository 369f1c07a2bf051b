package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Clients and modes of a Row.
const (
	// ClientFranz is the franz-go load of this package.
	ClientFranz = "franz-go"
	// ClientJava is kafka-producer-perf-test (Java 4.x client).
	ClientJava = "java-perf"
	// ModeMax drives the target as fast as the client goes.
	ModeMax = "max"
	// ModeRate drives it at a fixed records/s (Report.Loads[i].Rate).
	ModeRate = "rate"
	// ModeTxn (txn.go) drives it with transactional producers.
)

// Statuses of a Row.
const (
	StatusOK          = "ok"
	StatusFailed      = "failed"
	StatusUnavailable = "unavailable"
	// StatusInterrupted marks a row whose run was cut short by Ctrl-C.
	StatusInterrupted = "interrupted"
)

// Report is a run's result: what kbench prints and writes as JSON.
type Report struct {
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Command  string       `json:"command,omitempty"`
	Host     Host         `json:"host"`
	Config   Config       `json:"config"`
	Loads    []LoadReport `json:"loads"`
	// Failures lists every failure (a target that did not run or lost
	// records); the run fails when it is not empty.
	Failures []string `json:"failures,omitempty"`
}

// Failed reports whether a target failed or lost records.
func (r *Report) Failed() bool { return len(r.Failures) > 0 }

// LoadReport is the result of one load against every target.
type LoadReport struct {
	Load Load `json:"load"`
	// Rate is the records/s of the rate-limited runs (0 = none ran) and
	// RateSource how it was chosen.
	Rate       float64 `json:"rate,omitempty"`
	RateSource string  `json:"rate_source,omitempty"`
	Rows       []*Row  `json:"rows"`
	Ratios     []Ratio `json:"ratios"`
	Goals      []Goal  `json:"goals,omitempty"`
}

// Row is one target driven by one client in one mode, aggregated over the
// repetitions: throughputs and CPU per GB are means over the runs, latency
// percentiles come from the runs' merged histograms (franz-go) or are means
// (java-perf), peak RSS is the largest.
type Row struct {
	Target string `json:"target"`
	Client string `json:"client"`
	Mode   string `json:"mode"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Note   string `json:"note,omitempty"`

	ProduceRecordsPerSec float64 `json:"produce_records_per_sec"`
	ProduceMBPerSec      float64 `json:"produce_mb_per_sec"`
	P50Ms                float64 `json:"p50_ms"`
	P99Ms                float64 `json:"p99_ms"`
	P999Ms               float64 `json:"p999_ms"`
	// Consume figures are nil where not applicable (the null broker,
	// java-perf, rate-limited runs).
	ConsumeRecordsPerSec *float64 `json:"consume_records_per_sec"`
	ConsumeMBPerSec      *float64 `json:"consume_mb_per_sec"`
	// ServerCPUPerGB is the server processes' CPU seconds per GB (10^9
	// bytes of record values) produced; ConsumeCPUPerGB the same while
	// consuming. nil = not measured.
	ServerCPUPerGB  *float64 `json:"server_cpu_s_per_gb"`
	ConsumeCPUPerGB *float64 `json:"consume_server_cpu_s_per_gb"`
	// GatewayCPUPerGB and ConsumeGatewayCPUPerGB count the first server
	// process alone (kiggy without its Iggy server; the broker itself).
	GatewayCPUPerGB        *float64 `json:"gateway_cpu_s_per_gb"`
	ConsumeGatewayCPUPerGB *float64 `json:"consume_gateway_cpu_s_per_gb"`
	// ClientCPUPerGB is the load generator's CPU seconds per GB produced.
	ClientCPUPerGB *float64 `json:"client_cpu_s_per_gb"`
	// PeakRSSMiB is the server processes' peak resident set (VmHWM),
	// summed over processes, over the whole session the row ran in.
	PeakRSSMiB *float64 `json:"peak_rss_mib"`
	// OtherCPUPercent is the mean over the runs of the machine's CPU used
	// by other processes during the produce windows, in percent.
	OtherCPUPercent *float64 `json:"other_cpu_percent"`

	// Acked and Consumed total the runs' records (franz-go, where
	// consumed is applicable).
	Acked    int64 `json:"acked"`
	Consumed int64 `json:"consumed"`

	// Transactional rows (ModeTxn): commits per second in the windows,
	// the commit latency (Flush + EndTxn) from the runs' merged
	// histograms, and the read_committed read-back of the same topics
	// beside the read_uncommitted one in the Consume figures above.
	CommitsPerSec                   *float64 `json:"commits_per_sec,omitempty"`
	CommitP50Ms                     *float64 `json:"commit_p50_ms,omitempty"`
	CommitP99Ms                     *float64 `json:"commit_p99_ms,omitempty"`
	EndTxnP50Ms                     *float64 `json:"end_txn_p50_ms,omitempty"`
	EndTxnP99Ms                     *float64 `json:"end_txn_p99_ms,omitempty"`
	CommittedConsumeRecordsPerSec   *float64 `json:"read_committed_consume_records_per_sec,omitempty"`
	CommittedConsumeCPUPerGB        *float64 `json:"read_committed_consume_server_cpu_s_per_gb,omitempty"`
	CommittedConsumeGatewayCPUPerGB *float64 `json:"read_committed_consume_gateway_cpu_s_per_gb,omitempty"`

	Runs []*Measurement `json:"runs"`

	hist       *Histogram
	commitHist *Histogram
	endTxnHist *Histogram
}

// Measurement is one repetition of a Row.
type Measurement struct {
	Rep    int     `json:"rep"`
	Window float64 `json:"window_s"`
	// Records and Bytes were acknowledged inside the window.
	Records              int64   `json:"records"`
	Bytes                int64   `json:"bytes"`
	ProduceRecordsPerSec float64 `json:"produce_records_per_sec"`
	ProduceMBPerSec      float64 `json:"produce_mb_per_sec"`
	P50Ms                float64 `json:"p50_ms"`
	P99Ms                float64 `json:"p99_ms"`
	P999Ms               float64 `json:"p999_ms"`
	MaxMs                float64 `json:"max_ms"`
	// Acked counts every acknowledged record, warm-up included;
	// EndOffsets sums the partitions' high watermarks after producing;
	// Consumed counts the records read back. Lost and Duplicated compare
	// Consumed with Acked partition by partition.
	Acked      int64 `json:"acked"`
	EndOffsets int64 `json:"end_offsets,omitempty"`
	Consumed   int64 `json:"consumed,omitempty"`
	Lost       int64 `json:"lost,omitempty"`
	Duplicated int64 `json:"duplicated,omitempty"`
	BadValues  int64 `json:"bad_values,omitempty"`

	ConsumeSeconds       float64 `json:"consume_s,omitempty"`
	ConsumeRecordsPerSec float64 `json:"consume_records_per_sec,omitempty"`
	ConsumeMBPerSec      float64 `json:"consume_mb_per_sec,omitempty"`
	// FanoutGroups readers read the whole topic at once after the
	// read-back (Config.FanoutGroups); FanoutRecordsPerSec is their
	// aggregate rate.
	FanoutGroups        int     `json:"fanout_groups,omitempty"`
	FanoutRecordsPerSec float64 `json:"fanout_records_per_sec,omitempty"`
	// FanoutServerCPUSeconds counts every server process over the fan-out
	// phase, FanoutGatewayCPUSeconds the first (kiggy) alone.
	FanoutServerCPUSeconds  float64 `json:"fanout_server_cpu_s,omitempty"`
	FanoutGatewayCPUSeconds float64 `json:"fanout_gateway_cpu_s,omitempty"`
	// FanoutClientCPUSeconds is the load generator's (the readers') CPU
	// over the fan-out phase.
	FanoutClientCPUSeconds float64 `json:"fanout_client_cpu_s,omitempty"`

	// ServerSockets is the number of sockets the first server process
	// (kiggy, the Kafka broker) had open at the end of the produce window:
	// the producers' connections, plus its listeners and, for kiggy on
	// Iggy, its Iggy sessions. 0 = not read.
	ServerSockets int `json:"server_sockets,omitempty"`

	ServerCPUSeconds        float64 `json:"server_cpu_s"`
	ConsumeServerCPUSeconds float64 `json:"consume_server_cpu_s,omitempty"`
	// GatewayCPUSeconds and ConsumeGatewayCPUSeconds are the first server
	// process's share: kiggy without the Iggy server behind it.
	GatewayCPUSeconds        float64 `json:"gateway_cpu_s"`
	ConsumeGatewayCPUSeconds float64 `json:"consume_gateway_cpu_s,omitempty"`
	ClientCPUSeconds         float64 `json:"client_cpu_s"`
	CPUMeasured              bool    `json:"cpu_measured"`
	// OtherCPUShare is the share (0–1) of the machine's CPU time during
	// the produce window used by processes other than the servers and the
	// load generator: how much other work competed with this run.
	OtherCPUShare *float64 `json:"other_cpu_share,omitempty"`
	// PeakRSS is each server process's VmHWM in bytes at the end of the
	// session.
	PeakRSS map[string]int64 `json:"peak_rss_bytes,omitempty"`
	// ProduceProfile and ConsumeProfile are the gateway's CPU profiles of
	// the two windows, with -profile.
	ProduceProfile string `json:"produce_cpu_profile,omitempty"`
	ConsumeProfile string `json:"consume_cpu_profile,omitempty"`
	FanoutProfile  string `json:"fanout_cpu_profile,omitempty"`

	// Transactional runs (ModeTxn): Commits counts the transactions
	// committed inside the window (Records are their records), CommitP50Ms
	// and CommitP99Ms their commit latency (Flush + EndTxn), EndTxnP50Ms
	// and EndTxnP99Ms the EndTransaction call alone. Committed*
	// is the read_committed read-back of the topic, the Consume figures
	// above its read_uncommitted one; CommittedFirst says which ran first.
	Commits                           int64   `json:"commits,omitempty"`
	CommitP50Ms                       float64 `json:"commit_p50_ms,omitempty"`
	CommitP99Ms                       float64 `json:"commit_p99_ms,omitempty"`
	EndTxnP50Ms                       float64 `json:"end_txn_p50_ms,omitempty"`
	EndTxnP99Ms                       float64 `json:"end_txn_p99_ms,omitempty"`
	CommittedConsumed                 int64   `json:"read_committed_consumed,omitempty"`
	CommittedConsumeSeconds           float64 `json:"read_committed_consume_s,omitempty"`
	CommittedConsumeRecordsPerSec     float64 `json:"read_committed_consume_records_per_sec,omitempty"`
	CommittedConsumeMBPerSec          float64 `json:"read_committed_consume_mb_per_sec,omitempty"`
	CommittedConsumeServerCPUSeconds  float64 `json:"read_committed_consume_server_cpu_s,omitempty"`
	CommittedConsumeGatewayCPUSeconds float64 `json:"read_committed_consume_gateway_cpu_s,omitempty"`
	CommittedFirst                    bool    `json:"read_committed_first,omitempty"`
	CommittedConsumeProfile           string  `json:"read_committed_consume_cpu_profile,omitempty"`

	hist           *Histogram // franz-go latencies, merged into the Row's
	commitHist     *Histogram // commit latencies (ModeTxn), merged into the Row's
	endTxnHist     *Histogram // EndTxn latencies (ModeTxn), merged into the Row's
	committedBytes int64      // bytes read back at read_committed
	consumeNA      bool       // nothing was read back (null broker, java-perf)
	consumeBytes   int64      // bytes read back
	cpuBytes       int64      // bytes ServerCPUSeconds is charged to, when not Bytes
}

// Ratio compares two targets on one figure.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Goal is one of the project's benchmark goals, checked against this run.
type Goal struct {
	Name   string  `json:"name"`
	Want   string  `json:"want"`
	Value  float64 `json:"value"`
	Met    bool    `json:"met"`
	Detail string  `json:"detail,omitempty"`
}

const gb = 1e9

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// WriteJSON writes r as indented JSON to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Print writes the report as text: the host line, then per load one table,
// the ratios and the goals, then the failures.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "kbench %s — %s\n", r.Started.Format(time.RFC3339), r.Host.String())
	if r.Config.Smoke {
		fmt.Fprintln(w, "SMOKE RUN: tiny load, figures are not meaningful")
	}
	fmt.Fprintf(w, "%v warm-up + %v measured per target per repetition, %d repetition(s), order reversed every other repetition\n",
		r.Config.Warmup, r.Config.Duration, r.Config.Repetitions)
	if r.Host.LoadAvgStart != "" {
		fmt.Fprintf(w, "Load average (1/5/15 min) at start: %s, at end: %s\n", r.Host.LoadAvgStart, r.Host.LoadAvgEnd)
	}
	for _, lr := range r.Loads {
		fmt.Fprintf(w, "\nLoad: %s\n", lr.Load.String())
		if lr.Rate > 0 {
			fmt.Fprintf(w, "Rate-limited runs: %.0f records/s (%s)\n", lr.Rate, lr.RateSource)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "target\tclient\tmode\tprod rec/s\tprod MB/s\tp50 ms\tp99 ms\tp99.9 ms\tcons rec/s\tcons MB/s\tsrv CPU s/GB\tcons CPU s/GB\tgw CPU s/GB\tpeak RSS MiB\tothers %\tstatus\t")
		for _, row := range lr.Rows {
			status := row.Status
			if row.Status == StatusOK && row.Note != "" {
				status += " (" + row.Note + ")"
			}
			if len(row.Runs) == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t\n", row.Target, row.Client, row.Mode, status)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
				row.Target, row.Client, row.Mode,
				num(row.ProduceRecordsPerSec, 0), num(row.ProduceMBPerSec, 1),
				num(row.P50Ms, 2), num(row.P99Ms, 2), num(row.P999Ms, 2),
				opt(row.ConsumeRecordsPerSec, 0), opt(row.ConsumeMBPerSec, 1),
				opt(row.ServerCPUPerGB, 2), opt(row.ConsumeCPUPerGB, 2), opt(row.GatewayCPUPerGB, 2), opt(row.PeakRSSMiB, 0), opt(row.OtherCPUPercent, 0), status)
		}
		tw.Flush()
		printTxn(w, &lr, r.Config)
		for _, line := range statusLines(&lr) {
			fmt.Fprintf(w, "  %s\n", line)
		}
		if len(lr.Ratios) > 0 {
			fmt.Fprintln(w, "Ratios (this run, this machine):")
			for _, ra := range lr.Ratios {
				fmt.Fprintf(w, "  %-72s %6.2f×\n", ra.Name, ra.Value)
			}
		}
		if len(lr.Goals) > 0 {
			fmt.Fprintln(w, "Goals:")
			for _, g := range lr.Goals {
				mark := "MISSED"
				if g.Met {
					mark = "met"
				}
				fmt.Fprintf(w, "  %-6s %s: %s (%s)\n", mark, g.Name, g.Detail, g.Want)
			}
		}
	}
	if len(r.Failures) > 0 {
		fmt.Fprintln(w, "\nFAILURES:")
		for _, f := range r.Failures {
			fmt.Fprintf(w, "  - %s\n", strings.ReplaceAll(f, "\n", "\n    "))
		}
	}
}

func num(v float64, prec int) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

func opt(v *float64, prec int) string {
	if v == nil {
		return "n/a"
	}
	return num(*v, prec)
}
