// Command kbench benchmarks kiggy side by side with Apache Kafka 4.x and a
// null broker on this machine (package bench; docs/BENCHMARKS.md).
//
//	go run ./bench/cmd/kbench                 # the full benchmark (make bench)
//	go run ./bench/cmd/kbench -smoke          # a ~1 minute check that it all works
//	go run ./bench/cmd/kbench -record-size 100,1024,16384 -compression none,zstd
//	go run ./bench/cmd/kbench -txn -partitions 4 -producers 2   # beside transactional producers
//
// List flags take comma-separated values; every combination is one load. It
// prints one table per load with the ratios kiggy/Kafka and kiggy/null, writes
// the same as JSON (-json), and exits 1 if a target failed or lost records.
// Ctrl-C stops the run cleanly (the Kafka JVM is stopped and waited for); a
// second Ctrl-C exits at once.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kiggy-io/kiggy/bench"
)

func main() {
	os.Exit(run())
}

// run is kbench: parse the flags into a configuration, run the benchmark
// until done or interrupted, print and write the report. It returns the
// exit code.
func run() int {
	o, code := parseFlags(os.Args[1:])
	if o == nil {
		return code
	}
	cfg, errs := o.config()
	if len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "kbench: %s\n", strings.Join(errs, "; "))
		return 2
	}
	ctx, cancel := interruptible()
	defer cancel()
	return runBench(ctx, cfg, o.jsonPath)
}

// options is kbench's command line as parsed.
type options struct {
	def bench.Config
	set map[string]bool // the flags given explicitly

	smoke                                                bool
	targets, sizes, partitions, acks, compression        string
	topicCompression, producers, batchBytes, bufferBytes string
	inflight                                             int
	linger                                               time.Duration
	consumers, fanoutGroups, reps                        int
	duration, warmup                                     time.Duration
	fraction, rate                                       float64
	txn                                                  bool
	txnRecords                                           int
	txnInterval                                          time.Duration
	javaPerf                                             bool
	javaTargets                                          string
	javaRecords                                          int64
	kafkaHeap, kafkaDir, iggyDir                         string
	iggyAddr, iggyServer                                 string
	iggyPID                                              int
	iggyBench, iggyBenchDurability, iggyCluster          string
	iggyUser, iggyPass                                   string
	gatewayPkg, profile, gatewayFlags, jsonPath, work    string
	keep                                                 bool
}

// parseFlags parses args; a nil result means exit with the code.
func parseFlags(args []string) (*options, int) {
	o := &options{def: bench.DefaultConfig(), set: map[string]bool{}}
	fs := flag.NewFlagSet("kbench", flag.ContinueOnError)
	o.define(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: kbench [flags]\n\nBenchmarks kiggy against Apache Kafka 4.x and a null broker on this machine.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil, 0
		}
		return nil, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "kbench: unexpected argument %q\n", fs.Arg(0))
		return nil, 2
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	return o, 0
}

// define declares the flags into o.
func (o *options) define(fs *flag.FlagSet) {
	def := o.def
	fs.BoolVar(&o.smoke, "smoke", false, "smoke mode: every target, a small load for a few seconds each, one repetition (figures not meaningful)")
	fs.StringVar(&o.targets, "targets", strings.Join(def.Targets, ","), "targets to run: "+strings.Join(bench.AllTargets, ", "))
	fs.StringVar(&o.sizes, "record-size", "1024", "record value sizes in bytes (list; KiB suffix allowed), e.g. 100,1KiB,16KiB")
	fs.StringVar(&o.partitions, "partitions", "16", "partition counts (list), e.g. 1,16")
	fs.StringVar(&o.acks, "acks", "all", "acks settings (list): all, 1")
	fs.StringVar(&o.compression, "compression", "none", "compression codecs (list): none, gzip, snappy, lz4, zstd")
	fs.StringVar(&o.topicCompression, "topic-compression", "", "the topic's compression.type, the codec consumers are served in (list): producer, uncompressed, gzip, snappy, lz4, zstd (empty = not set)")
	fs.StringVar(&o.producers, "producers", strconv.Itoa(bench.DefaultLoad.Producers), "producer clients (list), e.g. 1,100,1000; each is one franz-go client with 3 connections of its own")
	fs.IntVar(&o.inflight, "inflight", bench.DefaultLoad.InFlight, "Produce requests in flight per producer per broker (idempotent only with acks=all and 5)")
	fs.DurationVar(&o.linger, "linger", bench.DefaultLoad.Linger, "producer linger (linger.ms)")
	fs.StringVar(&o.batchBytes, "batch-bytes", "0", "producer batch cap per partition (batch.size; 0 = each client's default)")
	fs.StringVar(&o.bufferBytes, "buffer-bytes", "32MiB", "producer buffer per client (buffer.memory); when not given, loads with more than 4 producers share 128 MiB between them (at least 64 KiB and 4 records each)")
	fs.IntVar(&o.consumers, "consumers", def.Consumers, "consumer clients reading everything back")
	fs.IntVar(&o.fanoutGroups, "fanout-groups", 0, "after the read-back, this many independent readers (each -consumers clients) read the whole topic at once; their aggregate records/s is reported beside one reader's (0 or 1 = no fan-out phase)")
	fs.DurationVar(&o.duration, "duration", def.Duration, "measurement window per target per repetition")
	fs.DurationVar(&o.warmup, "warmup", def.Warmup, "warm-up before each measurement window")
	fs.IntVar(&o.reps, "reps", def.Repetitions, "repetitions (target order reversed every other one)")
	fs.Float64Var(&o.fraction, "latency-fraction", def.LatencyFraction, "rate-limited run at this fraction of Kafka's throughput (0 = none)")
	fs.Float64Var(&o.rate, "rate", 0, "rate-limited run at this many records/s instead (0 = use -latency-fraction)")
	fs.BoolVar(&o.txn, "txn", false, "also run transactional producers in every session, beside the idempotent run: each commits every -txn-records records or -txn-interval, whichever first; the topic is read back at read_uncommitted and read_committed (needs -acks all and -inflight 5)")
	fs.IntVar(&o.txnRecords, "txn-records", def.TxnRecords, "with -txn: commit every this many records per producer (0 = no record bound)")
	fs.DurationVar(&o.txnInterval, "txn-interval", def.TxnInterval, "with -txn: commit every this long per producer (0 = no time bound; default: Kafka Streams' exactly_once_v2 commit.interval.ms)")
	fs.BoolVar(&o.javaPerf, "java-perf", def.JavaPerf, "also run kafka-producer-perf-test against every target")
	fs.StringVar(&o.javaTargets, "java-targets", "", "targets kafka-producer-perf-test runs against (list; empty = every target)")
	fs.Int64Var(&o.javaRecords, "java-records", 0, "records per kafka-producer-perf-test run, the same for every target (0 = about -warmup + -duration at 100 MB/s, the warm-up part as --warmup-records)")
	fs.StringVar(&o.kafkaHeap, "kafka-heap", def.KafkaHeap, "Kafka broker JVM heap (-Xms/-Xmx)")
	fs.StringVar(&o.kafkaDir, "kafka-dir", "", "directory for the Kafka broker's data (default: /dev/shm if it is a tmpfs, like the in-memory targets; give a disk directory to measure Kafka on disk)")
	fs.StringVar(&o.iggyDir, "iggy-dir", "", "directory for the fresh iggy-servers' data (default: the Kafka broker's)")
	fs.StringVar(&o.iggyAddr, "iggy-addr", "", "run kiggy-iggy against this Iggy server instead of a fresh iggytest")
	fs.StringVar(&o.iggyServer, "iggy-server", "", "iggy-server binary the Iggy targets start with a fresh data directory per session (instead of iggytest; kiggy-iggy-cluster: a fresh 3-node cluster); its CPU and RSS are counted")
	fs.IntVar(&o.iggyPID, "iggy-pid", 0, "with -iggy-addr: the external iggy-server's pid, to count its CPU and RSS")
	fs.StringVar(&o.iggyBench, "iggy-bench", "", "iggy-bench binary run against a fresh -iggy-server (or -iggy-addr) after each load, for Iggy's own ceiling")
	fs.StringVar(&o.iggyBenchDurability, "iggy-bench-durability", "", "level iggy-bench appends at: empty = Iggy's defaults (buffered, iggy-bench creates its topics), written or fsync = kbench creates iggy-bench's topics at that level first (as kiggy-iggy's) and iggy-bench reuses them")
	fs.StringVar(&o.iggyCluster, "iggy-cluster-addr", "", "nodes of an Iggy cluster (comma separated) for the kiggy-iggy-cluster target")
	fs.StringVar(&o.iggyUser, "iggy-username", def.IggyUsername, "Iggy user for -iggy-addr")
	fs.StringVar(&o.iggyPass, "iggy-password", def.IggyPassword, "Iggy password for -iggy-addr")
	fs.StringVar(&o.gatewayPkg, "gateway-pkg", "./cmd/kiggy", "Go package built and run for the kiggy targets")
	fs.StringVar(&o.profile, "profile", "", "profile the kiggy targets (cmd/kiggy --cpuprofile --profile-on-signal), one CPU profile per measurement window into this directory")
	fs.StringVar(&o.gatewayFlags, "gateway-flags", "", "extra flags for the kiggy targets, separated by spaces (e.g. \"--fetch-cache-bytes 0\")")
	fs.StringVar(&o.jsonPath, "json", "kbench.json", "write the report as JSON here (empty = don't)")
	fs.StringVar(&o.work, "work", "", "work directory for binaries, logs and broker data (default: a temporary directory, removed)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary work directory (logs) after the run")
}

// use reports whether flag name applies: always, except that in smoke mode
// only flags given explicitly override its settings.
func (o *options) use(name string) bool { return !o.smoke || o.set[name] }

// config is the benchmark configuration the flags ask for, and what is
// wrong with them.
func (o *options) config() (bench.Config, []string) {
	cfg := o.def
	if o.smoke {
		cfg = bench.SmokeConfig()
	}
	var errs []string
	check := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if o.use("targets") {
		cfg.Targets = splitList(o.targets)
	}
	if o.use("record-size") || o.use("partitions") || o.use("acks") || o.use("compression") || o.use("topic-compression") || o.use("producers") ||
		o.use("inflight") || o.use("linger") || o.use("batch-bytes") || o.use("buffer-bytes") {
		cfg.Loads = o.loads(cfg.Loads[0], check)
	}
	o.applyRun(&cfg)
	o.applyServers(&cfg, check)
	return cfg, errs
}

// loads is every combination of the load flags' lists over base, the
// configuration's first load.
func (o *options) loads(base bench.Load, check func(error)) []bench.Load {
	prodList := []int{base.Producers}
	if o.use("producers") {
		prodList = intList(o.producers, strconv.Atoi, check)
	}
	if o.use("inflight") {
		base.InFlight = o.inflight
	}
	if o.use("linger") {
		base.Linger = o.linger
	}
	if o.use("batch-bytes") {
		n, err := parseSize(o.batchBytes)
		check(err)
		base.BatchBytes = n
	}
	if o.use("buffer-bytes") {
		n, err := parseSize(o.bufferBytes)
		check(err)
		base.BufferBytes = n
	}
	sizeList := []int{base.RecordSize}
	if o.use("record-size") {
		sizeList = intList(o.sizes, parseSize, check)
	}
	partList := []int32{base.Partitions}
	if o.use("partitions") {
		partList = nil
		for _, n := range intList(o.partitions, strconv.Atoi, check) {
			partList = append(partList, int32(n))
		}
	}
	acksList := []int{base.Acks}
	if o.use("acks") {
		acksList = parseAcks(o.acks, check)
	}
	compList := []string{base.Compression}
	if o.use("compression") {
		compList = splitList(o.compression)
	}
	topicList := []string{base.TopicCompression}
	if o.use("topic-compression") && o.topicCompression != "" {
		topicList = splitList(o.topicCompression)
	}
	// Without -buffer-bytes, a full run sizes each load's buffers for its
	// producers.
	autoBuffer := !o.set["buffer-bytes"] && !o.smoke
	var out []bench.Load
	for _, sz := range sizeList {
		for _, p := range partList {
			for _, a := range acksList {
				for _, c := range compList {
					for _, tc := range topicList {
						for _, np := range prodList {
							l := base
							l.RecordSize, l.Partitions, l.Acks, l.Compression, l.TopicCompression = sz, p, a, c, tc
							l.Producers = np
							if autoBuffer {
								l.BufferBytes = bench.BufferFor(np, sz)
							}
							out = append(out, l)
						}
					}
				}
			}
		}
	}
	return out
}

// intList parses a list flag's values with parse, passing errors to check
// (a bad value counts as 0, as it always did).
func intList(s string, parse func(string) (int, error), check func(error)) []int {
	var out []int
	for _, f := range splitList(s) {
		n, err := parse(f)
		check(err)
		out = append(out, n)
	}
	return out
}

// parseAcks parses -acks: all (or -1) and 1.
func parseAcks(s string, check func(error)) []int {
	var out []int
	for _, f := range splitList(s) {
		switch f {
		case "all", "-1":
			out = append(out, -1)
		case "1":
			out = append(out, 1)
		default:
			check(fmt.Errorf("-acks %q: want all or 1", f))
		}
	}
	return out
}

// applyRun sets the run's shape: readers, windows, repetitions, the
// rate-limited and Java runs, Kafka's heap.
func (o *options) applyRun(cfg *bench.Config) {
	if o.use("consumers") {
		cfg.Consumers = o.consumers
	}
	if o.use("fanout-groups") {
		cfg.FanoutGroups = o.fanoutGroups
	}
	if o.use("duration") {
		cfg.Duration = o.duration
	}
	if o.use("warmup") {
		cfg.Warmup = o.warmup
	}
	if o.use("reps") {
		cfg.Repetitions = o.reps
	}
	if o.use("latency-fraction") {
		cfg.LatencyFraction = o.fraction
	}
	if o.use("rate") {
		cfg.Rate = o.rate
	}
	if o.use("txn") {
		cfg.Transactions = o.txn
	}
	if o.use("txn-records") {
		cfg.TxnRecords = o.txnRecords
	}
	if o.use("txn-interval") {
		cfg.TxnInterval = o.txnInterval
	}
	if o.use("java-perf") {
		cfg.JavaPerf = o.javaPerf
	}
	if o.use("java-targets") {
		cfg.JavaTargets = splitList(o.javaTargets)
	}
	if o.use("java-records") {
		cfg.JavaRecords = o.javaRecords
	}
	if o.use("kafka-heap") {
		cfg.KafkaHeap = o.kafkaHeap
	}
}

// applyServers sets what the targets run on: Kafka's directory, the Iggy
// servers and tools, the gateway build and flags, the work directory.
func (o *options) applyServers(cfg *bench.Config, check func(error)) {
	cfg.KafkaDir, cfg.IggyDir = o.kafkaDir, o.iggyDir
	cfg.IggyAddr, cfg.IggyUsername, cfg.IggyPassword = o.iggyAddr, o.iggyUser, o.iggyPass
	cfg.IggyClusterAddr = o.iggyCluster
	cfg.IggyServerBin, cfg.IggyPID, cfg.IggyBenchBin = o.iggyServer, o.iggyPID, o.iggyBench
	switch cfg.IggyBenchDurability = o.iggyBenchDurability; cfg.IggyBenchDurability {
	case "", "written", "fsync":
	default:
		check(fmt.Errorf("-iggy-bench-durability %q: want written, fsync or empty", cfg.IggyBenchDurability))
	}
	cfg.GatewayPackage = o.gatewayPkg
	cfg.ProfileDir = o.profile
	cfg.GatewayFlags = strings.Fields(o.gatewayFlags)
	cfg.WorkDir, cfg.KeepWork = o.work, o.keep
}

// interruptible returns a context that the first Ctrl-C (or SIGTERM)
// cancels, stopping the running target cleanly; a second one exits at once.
func interruptible() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "kbench: interrupted: stopping the running target (Ctrl-C again to exit at once)")
		cancel()
		<-sig
		fmt.Fprintln(os.Stderr, "kbench: exiting without waiting; child processes are killed with us")
		os.Exit(130)
	}()
	return ctx, cancel
}

// runBench runs the benchmark, prints its report and writes it to jsonPath
// (unless empty); it returns the exit code: 1 if the run failed or a target
// did.
func runBench(ctx context.Context, cfg bench.Config, jsonPath string) int {
	start := time.Now()
	report, err := bench.Run(ctx, cfg)
	if report != nil {
		report.Command = "go run ./bench/cmd/kbench " + strings.Join(os.Args[1:], " ")
		report.Command = strings.TrimSpace(report.Command)
		fmt.Println()
		report.Print(os.Stdout)
		if jsonPath != "" {
			if jerr := report.WriteJSON(jsonPath); jerr != nil {
				fmt.Fprintf(os.Stderr, "kbench: writing %s: %v\n", jsonPath, jerr)
			} else {
				fmt.Fprintf(os.Stderr, "kbench: wrote %s\n", jsonPath)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "kbench: finished in %v\n", time.Since(start).Round(time.Second))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kbench: %v\n", err)
		return 1
	}
	if report.Failed() {
		return 1
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseSize accepts plain integers and KiB/MiB suffixes.
func parseSize(s string) (int, error) {
	mult := 1
	for _, suf := range []struct {
		s string
		m int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}} {
		if strings.HasSuffix(s, suf.s) {
			s, mult = strings.TrimSuffix(s, suf.s), suf.m
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q: want an integer, optionally with KiB or MiB", s)
	}
	return n * mult, nil
}
