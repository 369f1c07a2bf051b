// Command kbench benchmarks kiggy side by side with Apache Kafka 4.x and a
// null broker on this machine (package bench; docs/BENCHMARKS.md).
//
//	go run ./bench/cmd/kbench                 # the full benchmark (make bench)
//	go run ./bench/cmd/kbench -smoke          # a ~1 minute check that it all works
//	go run ./bench/cmd/kbench -record-size 100,1024,16384 -compression none,zstd
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

func run() int {
	def := bench.DefaultConfig()
	fs := flag.NewFlagSet("kbench", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "smoke mode: every target, a small load for a few seconds each, one repetition (figures not meaningful)")
	targets := fs.String("targets", strings.Join(def.Targets, ","), "targets to run: "+strings.Join(bench.AllTargets, ", "))
	sizes := fs.String("record-size", "1024", "record value sizes in bytes (list; KiB suffix allowed), e.g. 100,1KiB,16KiB")
	partitions := fs.String("partitions", "16", "partition counts (list), e.g. 1,16")
	acks := fs.String("acks", "all", "acks settings (list): all, 1")
	compression := fs.String("compression", "none", "compression codecs (list): none, gzip, snappy, lz4, zstd")
	topicCompression := fs.String("topic-compression", "", "the topic's compression.type, the codec consumers are served in (list): producer, uncompressed, gzip, snappy, lz4, zstd (empty = not set)")
	producers := fs.String("producers", strconv.Itoa(bench.DefaultLoad.Producers), "producer clients (list), e.g. 1,100,1000; each is one franz-go client with 3 connections of its own")
	inflight := fs.Int("inflight", bench.DefaultLoad.InFlight, "Produce requests in flight per producer per broker (idempotent only with acks=all and 5)")
	linger := fs.Duration("linger", bench.DefaultLoad.Linger, "producer linger (linger.ms)")
	batchBytes := fs.String("batch-bytes", "0", "producer batch cap per partition (batch.size; 0 = each client's default)")
	bufferBytes := fs.String("buffer-bytes", "32MiB", "producer buffer per client (buffer.memory); when not given, loads with more than 4 producers share 128 MiB between them (at least 64 KiB and 4 records each)")
	consumers := fs.Int("consumers", def.Consumers, "consumer clients reading everything back")
	fanoutGroups := fs.Int("fanout-groups", 0, "after the read-back, this many independent readers (each -consumers clients) read the whole topic at once; their aggregate records/s is reported beside one reader's (0 or 1 = no fan-out phase)")
	duration := fs.Duration("duration", def.Duration, "measurement window per target per repetition")
	warmup := fs.Duration("warmup", def.Warmup, "warm-up before each measurement window")
	reps := fs.Int("reps", def.Repetitions, "repetitions (target order reversed every other one)")
	fraction := fs.Float64("latency-fraction", def.LatencyFraction, "rate-limited run at this fraction of Kafka's throughput (0 = none)")
	rate := fs.Float64("rate", 0, "rate-limited run at this many records/s instead (0 = use -latency-fraction)")
	javaPerf := fs.Bool("java-perf", def.JavaPerf, "also run kafka-producer-perf-test against every target")
	javaTargets := fs.String("java-targets", "", "targets kafka-producer-perf-test runs against (list; empty = every target)")
	javaRecords := fs.Int64("java-records", 0, "records per kafka-producer-perf-test run, the same for every target (0 = about -warmup + -duration at 100 MB/s, the warm-up part as --warmup-records)")
	kafkaHeap := fs.String("kafka-heap", def.KafkaHeap, "Kafka broker JVM heap (-Xms/-Xmx)")
	kafkaDir := fs.String("kafka-dir", "", "directory for the Kafka broker's data (default: /dev/shm if it is a tmpfs, like the in-memory targets; give a disk directory to measure Kafka on disk)")
	iggyAddr := fs.String("iggy-addr", "", "run kiggy-iggy against this Iggy server instead of a fresh iggytest")
	iggyServer := fs.String("iggy-server", "", "iggy-server binary the Iggy targets start with a fresh data directory per session (instead of iggytest); its CPU and RSS are counted")
	iggyPID := fs.Int("iggy-pid", 0, "with -iggy-addr: the external iggy-server's pid, to count its CPU and RSS")
	iggyBench := fs.String("iggy-bench", "", "iggy-bench binary run against a fresh -iggy-server (or -iggy-addr) after each load, for Iggy's own ceiling")
	iggyBenchDurability := fs.String("iggy-bench-durability", "", "level iggy-bench appends at: empty = Iggy's defaults (buffered, iggy-bench creates its topics), written or fsync = kbench creates iggy-bench's topics at that level first (as kiggy-iggy's) and iggy-bench reuses them")
	iggyCluster := fs.String("iggy-cluster-addr", "", "nodes of an Iggy cluster (comma separated) for the kiggy-iggy-cluster target")
	iggyUser := fs.String("iggy-username", def.IggyUsername, "Iggy user for -iggy-addr")
	iggyPass := fs.String("iggy-password", def.IggyPassword, "Iggy password for -iggy-addr")
	gatewayPkg := fs.String("gateway-pkg", "./cmd/kiggy", "Go package built and run for the kiggy targets")
	profile := fs.String("profile", "", "profile the kiggy targets (cmd/kiggy --cpuprofile --profile-on-signal), one CPU profile per measurement window into this directory")
	gatewayFlags := fs.String("gateway-flags", "", "extra flags for the kiggy targets, separated by spaces (e.g. \"--fetch-cache-bytes 0\")")
	jsonPath := fs.String("json", "kbench.json", "write the report as JSON here (empty = don't)")
	work := fs.String("work", "", "work directory for binaries, logs and broker data (default: a temporary directory, removed)")
	keep := fs.Bool("keep", false, "keep the temporary work directory (logs) after the run")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: kbench [flags]\n\nBenchmarks kiggy against Apache Kafka 4.x and a null broker on this machine.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "kbench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}

	cfg := def
	if *smoke {
		cfg = bench.SmokeConfig()
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// In smoke mode only flags given explicitly override its settings.
	use := func(name string) bool { return !*smoke || set[name] }

	var errs []string
	check := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if use("targets") {
		cfg.Targets = splitList(*targets)
	}
	if use("record-size") || use("partitions") || use("acks") || use("compression") || use("topic-compression") || use("producers") ||
		use("inflight") || use("linger") || use("batch-bytes") || use("buffer-bytes") {
		base := cfg.Loads[0]
		prodList := []int{base.Producers}
		if use("producers") {
			prodList = nil
			for _, s := range splitList(*producers) {
				n, err := strconv.Atoi(s)
				check(err)
				prodList = append(prodList, n)
			}
		}
		if use("inflight") {
			base.InFlight = *inflight
		}
		if use("linger") {
			base.Linger = *linger
		}
		if use("batch-bytes") {
			n, err := parseSize(*batchBytes)
			check(err)
			base.BatchBytes = n
		}
		if use("buffer-bytes") {
			n, err := parseSize(*bufferBytes)
			check(err)
			base.BufferBytes = n
		}
		sizeList := []int{base.RecordSize}
		if use("record-size") {
			sizeList = nil
			for _, s := range splitList(*sizes) {
				n, err := parseSize(s)
				check(err)
				sizeList = append(sizeList, n)
			}
		}
		partList := []int32{base.Partitions}
		if use("partitions") {
			partList = nil
			for _, s := range splitList(*partitions) {
				n, err := strconv.Atoi(s)
				check(err)
				partList = append(partList, int32(n))
			}
		}
		acksList := []int{base.Acks}
		if use("acks") {
			acksList = nil
			for _, s := range splitList(*acks) {
				switch s {
				case "all", "-1":
					acksList = append(acksList, -1)
				case "1":
					acksList = append(acksList, 1)
				default:
					check(fmt.Errorf("-acks %q: want all or 1", s))
				}
			}
		}
		compList := []string{base.Compression}
		if use("compression") {
			compList = splitList(*compression)
		}
		topicList := []string{base.TopicCompression}
		if use("topic-compression") && *topicCompression != "" {
			topicList = splitList(*topicCompression)
		}
		cfg.Loads = nil
		for _, sz := range sizeList {
			for _, p := range partList {
				for _, a := range acksList {
					for _, c := range compList {
						for _, tc := range topicList {
							for _, np := range prodList {
								l := base
								l.RecordSize, l.Partitions, l.Acks, l.Compression, l.TopicCompression = sz, p, a, c, tc
								l.Producers = np
								if !set["buffer-bytes"] && !*smoke {
									l.BufferBytes = bench.BufferFor(np, sz)
								}
								cfg.Loads = append(cfg.Loads, l)
							}
						}
					}
				}
			}
		}
	}
	if use("consumers") {
		cfg.Consumers = *consumers
	}
	if use("fanout-groups") {
		cfg.FanoutGroups = *fanoutGroups
	}
	if use("duration") {
		cfg.Duration = *duration
	}
	if use("warmup") {
		cfg.Warmup = *warmup
	}
	if use("reps") {
		cfg.Repetitions = *reps
	}
	if use("latency-fraction") {
		cfg.LatencyFraction = *fraction
	}
	if use("rate") {
		cfg.Rate = *rate
	}
	if use("java-perf") {
		cfg.JavaPerf = *javaPerf
	}
	if use("java-targets") {
		cfg.JavaTargets = splitList(*javaTargets)
	}
	if use("java-records") {
		cfg.JavaRecords = *javaRecords
	}
	if use("kafka-heap") {
		cfg.KafkaHeap = *kafkaHeap
	}
	cfg.KafkaDir = *kafkaDir
	cfg.IggyAddr, cfg.IggyUsername, cfg.IggyPassword = *iggyAddr, *iggyUser, *iggyPass
	cfg.IggyClusterAddr = *iggyCluster
	cfg.IggyServerBin, cfg.IggyPID, cfg.IggyBenchBin = *iggyServer, *iggyPID, *iggyBench
	switch cfg.IggyBenchDurability = *iggyBenchDurability; cfg.IggyBenchDurability {
	case "", "written", "fsync":
	default:
		check(fmt.Errorf("-iggy-bench-durability %q: want written, fsync or empty", cfg.IggyBenchDurability))
	}
	cfg.GatewayPackage = *gatewayPkg
	cfg.ProfileDir = *profile
	cfg.GatewayFlags = strings.Fields(*gatewayFlags)
	cfg.WorkDir, cfg.KeepWork = *work, *keep
	if len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "kbench: %s\n", strings.Join(errs, "; "))
		return 2
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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

	start := time.Now()
	report, err := bench.Run(ctx, cfg)
	if report != nil {
		report.Command = "go run ./bench/cmd/kbench " + strings.Join(os.Args[1:], " ")
		report.Command = strings.TrimSpace(report.Command)
		fmt.Println()
		report.Print(os.Stdout)
		if *jsonPath != "" {
			if jerr := report.WriteJSON(*jsonPath); jerr != nil {
				fmt.Fprintf(os.Stderr, "kbench: writing %s: %v\n", *jsonPath, jerr)
			} else {
				fmt.Fprintf(os.Stderr, "kbench: wrote %s\n", *jsonPath)
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
