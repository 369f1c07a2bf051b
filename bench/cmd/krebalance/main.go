// Command krebalance measures KIP-848 consumer group rebalances on kiggy
// beside Apache Kafka 4.x, in one run (bench.RunRebalance; docs/BENCHMARKS.md
// "Consumer group rebalances (KIP-848)").
//
//	go run ./bench/cmd/krebalance                       # kafka, kiggy, kiggy-iggy (iggytest)
//	go run ./bench/cmd/krebalance -iggy-server ../shared/iggy/bin/iggy-server -reps 3
//
// For every target a fresh group of -members franz-go members
// (kgo.ServerSideBalancer) starts on a -partitions topic with a steady
// producer, one more member joins, then the first leaves; it prints, per
// measure, each target's median and maximum and the ratios to Kafka, writes
// the same as JSON (-json), and exits 1 if a target or a repetition failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kiggy-io/kiggy/bench"
)

func main() {
	os.Exit(run())
}

func run() int {
	def := bench.DefaultRebalanceConfig()
	cfg := def
	fs := flag.NewFlagSet("krebalance", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "a short run against kiggy alone (figures not meaningful)")
	targets := fs.String("targets", strings.Join(def.Targets, ","), "targets to run: kafka, kiggy, kiggy-iggy (or another kiggy-iggy-* target)")
	fs.Func("partitions", fmt.Sprintf("the topic's partitions (default %d)", def.Partitions), func(s string) error {
		var n int32
		_, err := fmt.Sscan(s, &n)
		cfg.Partitions = n
		return err
	})
	fs.IntVar(&cfg.Members, "members", def.Members, "members before one more joins")
	fs.IntVar(&cfg.Repetitions, "reps", def.Repetitions, "repetitions, each a fresh group on every target (order reversed every other one)")
	fs.StringVar(&cfg.Assignor, "assignor", def.Assignor, "server-side assignor: uniform or range")
	fs.DurationVar(&cfg.HeartbeatInterval, "heartbeat", def.HeartbeatInterval, "group.consumer.heartbeat.interval.ms for Kafka and kiggy alike")
	fs.DurationVar(&cfg.SessionTimeout, "session", def.SessionTimeout, "group.consumer.session.timeout.ms for Kafka and kiggy alike")
	fs.Float64Var(&cfg.Rate, "rate", def.Rate, "the steady producer's records/s")
	fs.IntVar(&cfg.RecordSize, "record-size", def.RecordSize, "the steady producer's record size in bytes")
	fs.DurationVar(&cfg.Quiet, "quiet", 0, "a balanced assignment unchanged this long is settled (0 = 4 heartbeats, at least 2s)")
	fs.DurationVar(&cfg.Baseline, "baseline", def.Baseline, "steady window measured before each join and leave")
	fs.DurationVar(&cfg.KafkaAssignmentInterval, "kafka-assignment-interval", def.KafkaAssignmentInterval, "Kafka's group.consumer.assignment.interval.ms (negative = Kafka's default, 1s; kiggy updates assignments at once, as with 0)")
	fs.StringVar(&cfg.KafkaHeap, "kafka-heap", def.KafkaHeap, "Kafka broker JVM heap")
	fs.StringVar(&cfg.KafkaDir, "kafka-dir", "", "directory for the Kafka broker's data (default: /dev/shm if it is a tmpfs)")
	fs.StringVar(&cfg.IggyAddr, "iggy-addr", "", "run kiggy-iggy against this Iggy server instead of a fresh iggytest")
	fs.StringVar(&cfg.IggyServerBin, "iggy-server", "", "iggy-server binary kiggy-iggy starts with a fresh data directory (instead of iggytest)")
	gatewayFlags := fs.String("gateway-flags", "", "extra flags for the kiggy targets, separated by spaces")
	jsonPath := fs.String("json", "krebalance.json", "write the report as JSON here (empty = don't)")
	fs.StringVar(&cfg.WorkDir, "work", "", "work directory for binaries, logs and broker data (default: a temporary directory, removed)")
	fs.BoolVar(&cfg.KeepWork, "keep", false, "keep the temporary work directory (logs)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "krebalance: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *smoke {
		s := bench.SmokeRebalanceConfig()
		s.WorkDir, s.KeepWork, s.GatewayFlags = cfg.WorkDir, cfg.KeepWork, cfg.GatewayFlags
		cfg = s
	} else {
		cfg.Targets = strings.Split(*targets, ",")
	}
	if *gatewayFlags != "" {
		cfg.GatewayFlags = strings.Fields(*gatewayFlags)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.RunRebalance(ctx, cfg)
	if rep != nil {
		rep.Command = strings.Join(os.Args, " ")
		rep.Print(os.Stdout)
		if *jsonPath != "" {
			if werr := rep.WriteJSON(*jsonPath); werr != nil {
				fmt.Fprintln(os.Stderr, "krebalance:", werr)
				return 1
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "krebalance:", err)
		return 1
	}
	if rep.Failed() {
		return 1
	}
	return 0
}
