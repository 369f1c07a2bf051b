package bench

// Iggy's own numbers: the iggy-server the harness starts for the Iggy
// targets, and iggy-bench, Iggy's benchmark tool, run against one.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
)

// iggyNode is an iggy-server the harness started (internal/testing/iggyserver),
// with the pid and stop of a process; stop removes its data directory
// (Config.IggyDir) after copying its log into the work directory.
type iggyNode struct {
	*iggyserver.Node
	release func()
}

func (n iggyNode) pid() int { return n.Pid() }

func (n iggyNode) stop(timeout time.Duration) error {
	err := n.StopWithin(timeout)
	n.release()
	return err
}

// iggyDataDir makes a fresh directory for the data of the iggy-server(s)
// name under Config.IggyDir, and returns it with the function that, once
// they stopped, copies each server.log below it into the work directory
// (<name>-<i>.log: one for a single node, one per node of a cluster) and
// removes it (kept with KeepWork).
func (r *runner) iggyDataDir(name string) (string, func(), error) {
	dir, err := os.MkdirTemp(r.cfg.IggyDir, "kbench-"+name+"-")
	if err != nil {
		return "", nil, fmt.Errorf("bench: %w", err)
	}
	return dir, func() {
		i := 0
		_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && e.Name() == "server.log" {
				if b, err := os.ReadFile(path); err == nil {
					_ = os.WriteFile(filepath.Join(r.work, fmt.Sprintf("%s-%d.log", name, i)), b, 0o644)
					i++
				}
			}
			return nil
		})
		if !r.cfg.KeepWork {
			os.RemoveAll(dir)
		}
	}, nil
}

// startIggyServer starts the iggy-server binary Config.IggyServerBin on a
// free loopback port with a fresh data directory under Config.IggyDir,
// only its TCP listener and root Config.IggyUsername, one shard
// (docs/BENCHMARKS.md, "The Iggy path"). It returns the server once the
// port accepts connections; its output ends up in <work>/<name>-0.log.
func (r *runner) startIggyServer(ctx context.Context, name string) (iggyNode, error) {
	dir, release, err := r.iggyDataDir(name)
	if err != nil {
		return iggyNode{}, err
	}
	n, err := iggyserver.StartContext(ctx, r.cfg.IggyServerBin, iggyserver.Options{
		Dir: dir, Name: name, Username: r.cfg.IggyUsername, Password: r.cfg.IggyPassword})
	if err != nil {
		release()
		return iggyNode{}, fmt.Errorf("bench: %w", err)
	}
	return iggyNode{n, release}, nil
}

// maxIggyBenchActors bounds iggy-bench's producers and consumers. Its
// pinned modes give every actor a stream with one partition, so the actors
// are the partitions; more than 16 on this 2-vCPU machine would measure
// their contention. Loads with more partitions get no iggy-bench row.
const maxIggyBenchActors = 16

// iggyBenchResult is what iggy-bench printed for one actor kind.
type iggyBenchResult struct {
	msgsPerSec, mbPerSec, p99Ms float64
}

// iggyBenchLine matches iggy-bench's summary line ("Producers Results:
// Total throughput: X MB/s, Y messages/s, ... p99 latency: Z ms, ...").
var iggyBenchLine = regexp.MustCompile(`(Producers|Consumers) Results: Total throughput: ([0-9.]+) MB/s, ([0-9.]+) messages/s.*?p99 latency: ([0-9.]+) ms`)

// parseIggyBench reads the producer and consumer summaries of iggy-bench's
// output; a kind it did not print is absent from the map.
func parseIggyBench(out string) map[string]iggyBenchResult {
	res := map[string]iggyBenchResult{}
	sc := bufio.NewScanner(strings.NewReader(stripANSI(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := iggyBenchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		mb, _ := strconv.ParseFloat(m[2], 64)
		msgs, _ := strconv.ParseFloat(m[3], 64)
		p99, _ := strconv.ParseFloat(m[4], 64)
		res[m[1]] = iggyBenchResult{msgsPerSec: msgs, mbPerSec: mb, p99Ms: p99}
	}
	return res
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

func stripANSI(s string) string { return ansi.ReplaceAllString(s, "") }

// iggyBenchRun is what one iggy-bench run measured: the summaries by actor
// kind ("Producers", "Consumers"), and when the server's pid is known its
// CPU over the producer phase, iggy-bench's own CPU then, and the bytes
// produced (-T).
type iggyBenchRun struct {
	kinds               map[string]iggyBenchResult
	serverCPU, benchCPU time.Duration
	producedBytes       int64
}

// iggyBenchBytes is what -T asks iggy-bench to produce ("1GB": 10^9 bytes,
// or 50 MB in smoke mode).
func iggyBenchBytes(smoke bool) (string, int64) {
	if smoke {
		return "50MB", 50e6
	}
	return "1GB", 1e9
}

// runIggyBench runs Iggy's own benchmark tool (Config.IggyBenchBin) against
// addr with the load's message size and partitions, producers then
// consumers on the same data (pinned-producer, then pinned-consumer with
// --reuse-streams), and returns what it measured: the path's ceiling
// without Kafka in front. With Config.IggyBenchDurability its topics are
// created first at that level (prepareIggyBenchStreams) and the producers
// reuse them. pid, when > 0, is the server's, whose CPU is measured.
func (r *runner) runIggyBench(ctx context.Context, addr string, l Load, name string, pid int) (iggyBenchRun, error) {
	n := int(max(1, min(l.Partitions, maxIggyBenchActors)))
	actors := strconv.Itoa(n)
	total, totalBytes := iggyBenchBytes(r.cfg.Smoke)
	common := []string{"-m", strconv.Itoa(l.RecordSize), "-P", "100", "-T", total,
		"-u", r.cfg.IggyUsername, "-p", r.cfg.IggyPassword}
	out := iggyBenchRun{kinds: map[string]iggyBenchResult{}}
	if d := r.cfg.IggyBenchDurability; d != "" {
		if err := prepareIggyBenchStreams(ctx, addr, r.cfg.IggyUsername, r.cfg.IggyPassword, n, d, store.TopicConfig{}, false); err != nil {
			return out, err
		}
	}
	for _, phase := range []struct{ sub, flag string }{{"pinned-producer", "-p"}, {"pinned-consumer", "-c"}} {
		args := append([]string(nil), common...)
		if phase.sub == "pinned-consumer" || r.cfg.IggyBenchDurability != "" {
			args = append(args, "--reuse-streams")
		}
		args = append(args, phase.sub, phase.flag, actors, "tcp", "--server-address", addr)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		cmd := exec.CommandContext(cctx, r.cfg.IggyBenchBin, args...)
		cmd.Dir = r.work
		var c0 time.Duration
		cpuOK := pid > 0 && phase.sub == "pinned-producer"
		if cpuOK {
			var err error
			c0, err = ProcCPU(pid)
			cpuOK = err == nil
		}
		b, err := cmd.CombinedOutput()
		cancel()
		if cpuOK {
			if c1, cerr := ProcCPU(pid); cerr == nil && err == nil {
				out.serverCPU, out.producedBytes = c1-c0, totalBytes
				if ps := cmd.ProcessState; ps != nil {
					out.benchCPU = ps.UserTime() + ps.SystemTime()
				}
			}
		}
		logPath := filepath.Join(r.work, name+"-"+phase.sub+".log")
		_ = os.WriteFile(logPath, b, 0o644)
		if err != nil {
			return out, fmt.Errorf("bench: iggy-bench %s: %w; see %s", strings.Join(args, " "), err, logPath)
		}
		for k, v := range parseIggyBench(string(b)) {
			out.kinds[k] = v
		}
	}
	if len(out.kinds) == 0 {
		return out, errors.New("bench: iggy-bench printed no summary")
	}
	return out, nil
}

// prepareIggyBenchStreams creates the streams and topics iggy-bench's
// pinned producers and end-to-end producing consumers use, as iggy-bench
// names them (bench-stream-1 … bench-stream-n, each with topic "topic-1" of
// one partition: apache/iggy core/bench, init_streams and one partition per
// stream for both), through kiggy's Iggy client at durability and with
// topic's options, so that iggy-bench --reuse-streams appends with the
// topic options kiggy-iggy's topics get. fresh deletes each topic first, so
// that a run starts at offset 0.
func prepareIggyBenchStreams(ctx context.Context, addr, user, pass string, n int, durability string, topic store.TopicConfig, fresh bool) error {
	d, err := store.ParseDurability(durability)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for i := 1; i <= n; i++ {
		c, err := iggy.Open(ctx, iggy.Config{Addr: addr, Username: user, Password: pass,
			Stream: fmt.Sprintf("bench-stream-%d", i), Durability: d, PoolSize: 1, PingInterval: -1, ReadCacheBytes: -1,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return fmt.Errorf("bench: iggy-bench streams: %w", err)
		}
		if fresh {
			if err = c.DeleteTopic(ctx, "topic-1"); errors.Is(err, store.ErrUnknownTopic) {
				err = nil
			}
		}
		if err == nil {
			_, err = c.CreateTopic(ctx, "topic-1", 1, topic)
		}
		c.Close()
		if err != nil && !errors.Is(err, store.ErrTopicExists) {
			return fmt.Errorf("bench: iggy-bench streams: %w", err)
		}
	}
	return nil
}
