// Command ke2e measures end-to-end latency at the tail on kiggy beside
// Apache Kafka 4.x and Iggy's own iggy-bench, in one run (bench.RunE2E;
// docs/BENCHMARKS.md "End-to-end latency at the tail").
//
//	go run ./bench/cmd/ke2e -smoke                     # kiggy alone, a few seconds
//	go run ./bench/cmd/ke2e -iggy-server ../shared/iggy/bin/iggy-server -iggy-bench ../shared/iggy/bin/iggy-bench
//
// For every target it measures the maximum rate with one consumer group at
// the tail (-max-produce-only: without; -max-rate: given), then for every
// -fractions of the base rate (-rate-of: Kafka's maximum or each target's
// own) and every -groups count it runs producers at that fixed rate and that
// many consumer groups reading at the tail, and reports the latency from
// each record's create time to its delivery, the rates, the groups' lag and
// the server processes' CPU seconds per GB consumed. It writes the same
// as JSON (-json) and exits 1 if a target or a run failed.
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

	"github.com/kiggy-io/kiggy/bench"
)

func main() {
	os.Exit(run())
}

func run() int {
	def := bench.DefaultE2EConfig()
	cfg := def
	fs := flag.NewFlagSet("ke2e", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "a short run against kiggy alone (figures not meaningful)")
	targets := fs.String("targets", strings.Join(def.Targets, ","), "targets to run: kafka, kiggy, kiggy-iggy, kiggy-iggy-cluster (or another kiggy-iggy-* target)")
	fractions := fs.String("fractions", "0.25,0.5,0.9", "produce rates, as fractions of the base rate")
	groups := fs.String("groups", "1,3", "numbers of consumer groups to run each rate with")
	fs.IntVar(&cfg.Consumers, "consumers", def.Consumers, "consumers per group")
	fs.StringVar(&cfg.RateOf, "rate-of", def.RateOf, "base rate of the fractions: kafka (Kafka's maximum, every target at the same rates) or own (each target's maximum)")
	fs.Float64Var(&cfg.MaxRate, "max-rate", 0, "every target's maximum produce rate in records/s (0 = measure it)")
	fs.DurationVar(&cfg.MaxWindow, "max-window", def.MaxWindow, "window measuring the maximum rate")
	fs.IntVar(&cfg.MaxRounds, "max-rounds", def.MaxRounds, "windows measuring the maximum rate; the maximum is their median")
	fs.BoolVar(&cfg.MaxProduceOnly, "max-produce-only", false, "measure the maximum rate without consumers (default: with one group at the tail, the lower of produced and consumed)")
	fs.IntVar(&cfg.Load.RecordSize, "record-size", def.Load.RecordSize, "record size in bytes (at least 8: the create timestamp)")
	partitions := fs.Int("partitions", int(def.Load.Partitions), "the topic's partitions")
	fs.IntVar(&cfg.Load.Producers, "producers", def.Load.Producers, "producer clients")
	fs.DurationVar(&cfg.Load.Linger, "linger", def.Load.Linger, "producers' linger")
	fs.DurationVar(&cfg.Warmup, "warmup", def.Warmup, "warm-up before each window (discarded)")
	fs.DurationVar(&cfg.Window, "window", def.Window, "measured window of each run")
	fs.DurationVar(&cfg.Drain, "drain", def.Drain, "how long the groups may catch up after the producers stop")
	fs.Int64Var(&cfg.SegmentBytes, "segment-bytes", def.SegmentBytes, "the topics' segment.bytes")
	fs.IntVar(&cfg.IggyBenchBatch, "iggy-bench-batch", def.IggyBenchBatch, "iggy-bench e2e's messages per batch (-P)")
	fs.StringVar(&cfg.IggyBenchDurability, "iggy-bench-durability", def.IggyBenchDurability,
		"the level iggy-bench e2e's topics are created at before each run (written or fsync), or empty: iggy-bench creates them with Iggy's defaults (buffered)")
	fs.IntVar(&cfg.ClientGOGC, "client-gogc", def.ClientGOGC, "the garbage collector's percent (GOGC) of this process, which runs the producers and consumers of every target (0 = GOGC's)")
	fs.StringVar(&cfg.KafkaHeap, "kafka-heap", def.KafkaHeap, "Kafka broker JVM heap")
	fs.StringVar(&cfg.KafkaDir, "kafka-dir", "", "directory for the Kafka broker's data (default: /dev/shm if it is a tmpfs)")
	fs.StringVar(&cfg.IggyDir, "iggy-dir", "", "directory for the fresh iggy-servers' data (default: the Kafka broker's)")
	fs.StringVar(&cfg.IggyAddr, "iggy-addr", "", "run kiggy-iggy against this Iggy server instead of a fresh one")
	fs.IntVar(&cfg.IggyPID, "iggy-pid", 0, "with -iggy-addr, that server's pid, whose CPU is measured")
	fs.StringVar(&cfg.IggyServerBin, "iggy-server", "", "iggy-server binary kiggy-iggy starts with a fresh data directory (instead of iggytest), and kiggy-iggy-cluster as a fresh 3-node cluster")
	fs.StringVar(&cfg.IggyBenchBin, "iggy-bench", "", "iggy-bench binary run (end-to-end-producing-consumer) on kiggy-iggy's server at the same rates")
	fs.StringVar(&cfg.IggyClusterAddr, "iggy-cluster-addr", "", "the nodes of an Iggy cluster (comma separated) for kiggy-iggy-cluster (default: a 3-node iggytest cluster)")
	fs.Func("iggy-cluster-pids", "with -iggy-cluster-addr, its nodes' pids (comma separated), whose CPU is measured", func(v string) error {
		pids, err := parseList(v, strconv.Atoi)
		cfg.IggyClusterPIDs = pids
		return err
	})
	gatewayFlags := fs.String("gateway-flags", "", "extra flags for the kiggy targets, separated by spaces")
	jsonPath := fs.String("json", "ke2e.json", "write the report as JSON here (empty = don't)")
	fs.StringVar(&cfg.WorkDir, "work", "", "work directory for binaries, logs and broker data (default: a temporary directory, removed)")
	fs.StringVar(&cfg.ProfileDir, "profile", "", "profile the kiggy targets (cmd/kiggy --cpuprofile --profile-on-signal), one CPU profile per measured window into this directory")
	fs.BoolVar(&cfg.KeepWork, "keep", false, "keep the temporary work directory (logs)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "ke2e: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg.Load.Partitions = int32(*partitions)
	var err error
	if cfg.Fractions, err = parseList(*fractions, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		fmt.Fprintln(os.Stderr, "ke2e: -fractions:", err)
		return 2
	}
	if cfg.Groups, err = parseList(*groups, strconv.Atoi); err != nil {
		fmt.Fprintln(os.Stderr, "ke2e: -groups:", err)
		return 2
	}
	cfg.Targets = strings.Split(*targets, ",")
	if *smoke {
		s := bench.SmokeE2EConfig()
		s.WorkDir, s.KeepWork = cfg.WorkDir, cfg.KeepWork
		cfg = s
	}
	if *gatewayFlags != "" {
		cfg.GatewayFlags = strings.Fields(*gatewayFlags)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.RunE2E(ctx, cfg)
	if rep != nil {
		rep.Command = strings.Join(os.Args, " ")
		rep.Print(os.Stdout)
		if *jsonPath != "" {
			if werr := rep.WriteJSON(*jsonPath); werr != nil {
				fmt.Fprintln(os.Stderr, "ke2e:", werr)
				return 1
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ke2e:", err)
		return 1
	}
	if rep.Failed() {
		return 1
	}
	return 0
}

// parseList parses a comma-separated list.
func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
