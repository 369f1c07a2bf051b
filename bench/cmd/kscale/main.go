// Command kscale measures how kiggy scales out: 1, 2, 3 … kiggy processes as
// one Kafka cluster (--cluster-membership iggy, docs/design/cluster.md) over
// one real iggy-server, franz-go producers and consumers bootstrapped from
// every instance, aggregate produce and consume records/s and the CPU of
// every process, each as a ratio to one instance (docs/BENCHMARKS.md
// "Several instances").
//
//	go run ./bench/cmd/kscale -iggy-server /path/to/iggy-server
//	go run ./bench/cmd/kscale -iggy-server BIN -instances 1,2,3 -reps 2 -duration 20s
//
// For each instance count and repetition it starts a fresh iggy-server
// (fresh data directory, TCP only, one shard) and N fresh kiggy processes
// (built from this checkout unless -kiggy names a binary), waits until every
// instance lists all N brokers and leads its share of the topic's
// partitions, produces as fast as it goes for -warmup + -duration (only the
// window counts), then reads everything back with -consumers group-less
// consumers and checks every acknowledged record is there. The order of
// instance counts is reversed on every other repetition. Figures are only
// meaningful when the machine has more cores than the processes need; the
// load average at the start and end of each run is printed beside them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run())
}

// run is kscale: parse the flags, prepare the work directory and the kiggy
// binary, measure every instance count, print and write the results. It
// returns the exit code.
func run() int {
	cfg, o, code := parseFlags(os.Args[1:])
	if o == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cleanup, err := prepare(ctx, &cfg, o.keep)
	defer cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kscale:", err)
		return 1
	}
	results, failed, interrupted := measureAll(ctx, cfg)
	if interrupted {
		return 1
	}
	printTable(os.Stdout, cfg, results)
	if o.jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"config": cfg.public(), "results": results}, "", "  ")
		if err := os.WriteFile(o.jsonOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "kscale:", err)
			failed = true
		}
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "kscale: logs in", cfg.work)
	}
	if failed {
		return 1
	}
	return 0
}

// outputs is what the flags say about kscale's output rather than the
// measurement.
type outputs struct {
	keep    bool
	jsonOut string
}

// parseFlags parses args into a checked configuration; a nil outputs means
// exit with the code.
func parseFlags(args []string) (config, *outputs, int) {
	var cfg config
	o := &outputs{}
	fs := flag.NewFlagSet("kscale", flag.ContinueOnError)
	fs.StringVar(&cfg.iggyServer, "iggy-server", "", "iggy-server binary (required): one fresh server per run")
	fs.StringVar(&cfg.kiggy, "kiggy", "", "kiggy binary (default: built from this checkout into the work directory)")
	instances := fs.String("instances", "1,2,3", "instance counts to measure (list); ratios are to the first")
	fs.IntVar(&cfg.partitions, "partitions", 12, "the topic's partitions (spread over the instances by the placement)")
	fs.IntVar(&cfg.recordSize, "record-size", 1024, "record value size in bytes")
	fs.IntVar(&cfg.producers, "producers", 3, "producer clients, each bootstrapped from every instance (idempotent, acks=all)")
	fs.IntVar(&cfg.consumers, "consumers", 3, "consumer clients reading everything back, each bootstrapped from every instance")
	fs.DurationVar(&cfg.linger, "linger", 5*time.Millisecond, "producer linger")
	fs.DurationVar(&cfg.warmup, "warmup", 5*time.Second, "produce warm-up before the window")
	fs.DurationVar(&cfg.duration, "duration", 15*time.Second, "produce measurement window")
	fs.IntVar(&cfg.reps, "reps", 1, "repetitions (instance order reversed every other one)")
	fs.StringVar(&cfg.work, "work", "", "work directory for data and logs (default: a new one under $TMPDIR, removed unless -keep)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (logs of every process)")
	fs.StringVar(&o.jsonOut, "json", "", "also write the results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return cfg, nil, 2
	}
	for _, s := range strings.Split(*instances, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 16 {
			fmt.Fprintf(os.Stderr, "kscale: -instances %q: want counts in [1, 16]\n", *instances)
			return cfg, nil, 2
		}
		cfg.instances = append(cfg.instances, n)
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "kscale:", err)
		return cfg, nil, 2
	}
	return cfg, o, 0
}

// prepare makes the work directory (a temporary one unless cfg.work is
// set) and builds kiggy into it unless cfg.kiggy names a binary. cleanup
// removes a temporary work directory unless keep.
func prepare(ctx context.Context, cfg *config, keep bool) (cleanup func(), err error) {
	cleanup = func() {}
	if cfg.work == "" {
		d, err := os.MkdirTemp("", "kscale-")
		if err != nil {
			return cleanup, err
		}
		cfg.work = d
		if !keep {
			cleanup = func() { os.RemoveAll(d) }
		}
	} else if err := os.MkdirAll(cfg.work, 0o755); err != nil {
		return cleanup, err
	}
	if cfg.kiggy == "" {
		bin, err := buildKiggy(ctx, cfg.work)
		if err != nil {
			return cleanup, err
		}
		cfg.kiggy = bin
	}
	return cleanup, nil
}

// measureAll measures every instance count, reps times (the order
// reversed every other repetition). failed reports a run that failed;
// interrupted, that ctx ended (the results are then not reported).
func measureAll(ctx context.Context, cfg config) (results []result, failed, interrupted bool) {
	for rep := range cfg.reps {
		order := append([]int(nil), cfg.instances...)
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		for _, n := range order {
			logf("run: %d instance(s), repetition %d", n, rep+1)
			res, err := measure(ctx, cfg, n, rep)
			if err != nil {
				if ctx.Err() != nil {
					logf("interrupted")
					return results, failed, true
				}
				logf("%d instance(s), repetition %d: %v", n, rep+1, err)
				failed = true
				continue
			}
			results = append(results, *res)
			logf("%d instance(s): produce %.0f records/s, consume %.0f records/s", n, res.ProduceRecordsPerSec, res.ConsumeRecordsPerSec)
		}
	}
	return results, failed, false
}

// config is one kscale invocation.
type config struct {
	iggyServer, kiggy, work string
	instances               []int
	partitions, recordSize  int
	producers, consumers    int
	linger, warmup          time.Duration
	duration                time.Duration
	reps                    int
}

func (c *config) validate() error {
	var errs []error
	if c.iggyServer == "" {
		errs = append(errs, errors.New("-iggy-server is required: kscale measures kiggy over a real iggy-server"))
	} else if _, err := os.Stat(c.iggyServer); err != nil {
		errs = append(errs, fmt.Errorf("-iggy-server: %w", err))
	}
	if c.partitions < 1 || c.partitions > 1024 {
		errs = append(errs, fmt.Errorf("-partitions %d out of [1, 1024]", c.partitions))
	}
	if c.recordSize < 1 || c.recordSize > 1<<20 {
		errs = append(errs, fmt.Errorf("-record-size %d out of [1, 1 MiB]", c.recordSize))
	}
	if c.producers < 1 || c.consumers < 1 || c.producers > 64 || c.consumers > 64 {
		errs = append(errs, errors.New("-producers and -consumers must be in [1, 64]"))
	}
	if c.warmup < 0 || c.duration <= 0 || c.reps < 1 {
		errs = append(errs, errors.New("-warmup ≥ 0, -duration > 0 and -reps ≥ 1 please"))
	}
	return errors.Join(errs...)
}

// public is the configuration as written to JSON.
func (c *config) public() map[string]any {
	return map[string]any{
		"instances": c.instances, "partitions": c.partitions, "record_size": c.recordSize,
		"producers": c.producers, "consumers": c.consumers, "linger": c.linger.String(),
		"warmup": c.warmup.String(), "duration": c.duration.String(), "reps": c.reps,
		"iggy_server": filepath.Base(c.iggyServer),
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s kscale: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
