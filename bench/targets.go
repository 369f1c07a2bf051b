package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// session is one target, started fresh for one repetition of one load.
type session struct {
	target string
	addr   string
	// procs are the server processes whose CPU and peak RSS are measured
	// (the gateway and, for kiggy-iggy, iggytest).
	procs []measuredProc
	// consume is false for the null broker, which stores nothing.
	consume bool
	// createTopics is false for the null broker, which knows every topic.
	createTopics bool
	// note says something the table should carry (an external Iggy whose
	// CPU is not measured, a profiled gateway).
	note string
	stop func() error
	// metricsURL is the gateway's /metrics (kiggy targets), read after
	// each produce window for the append counters (gatewayCounters).
	metricsURL string
	// iggyAddr is the Iggy server behind a kiggy-iggy target ("" for the
	// others), where iggy-bench runs beside it (e2e.go).
	iggyAddr string

	// profiled is the gateway run with --cpuprofile --profile-on-signal
	// (nil = no profiling); profPrefix names its profiles and profN
	// counts them.
	profiled   *process
	profPrefix string
	profN      int
}

// profileHooks returns hooks that profile the gateway during one window and
// the name of the profile they will write, or zero values when the session
// is not profiled.
func (s *session) profileHooks() (windowHooks, string) {
	if s.profiled == nil {
		return windowHooks{}, ""
	}
	s.profN++
	name := fmt.Sprintf("%s-%d.pprof", s.profPrefix, s.profN)
	p := s.profiled
	return windowHooks{
		onBegin: func() { signalProfile(p.cmd.Process, true) },
		onEnd:   func() { signalProfile(p.cmd.Process, false) },
	}, name
}

type measuredProc struct {
	name string
	pid  int
}

func (s *session) pids() []int {
	pids := make([]int, len(s.procs))
	for i, p := range s.procs {
		pids[i] = p.pid
	}
	return pids
}

// unavailableError marks a target that cannot run in this checkout or on
// this machine (a part still being built, a missing tool): reported, but not
// a failure of the run.
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string { return "unavailable: " + e.reason }

// errStatus is the status of a target that returned err, and the error
// its report shows: interrupted (ctx ended), unavailable (unavailableError,
// its reason) or failed (the caller records the failure).
func errStatus(ctx context.Context, err error) (status, msg string) {
	if ctx.Err() != nil {
		return StatusInterrupted, ""
	}
	var ue *unavailableError
	if errors.As(err, &ue) {
		return StatusUnavailable, ue.reason
	}
	return StatusFailed, err.Error()
}

// stopTimeout bounds each server process's graceful stop.
const stopTimeout = time.Minute

// readyTimeout bounds a Go server's start.
const readyTimeout = 30 * time.Second

// memlogPartitionBytes is the embedded log's per-partition cap for the
// benchmark: far above what a run writes, so that nothing is dropped before
// it is read back (the default, 1 GiB, could be reached by one partition).
const memlogPartitionBytes = 64 << 30

// memlogTotalBytes is the embedded log's total cap for the benchmark: none in
// effect (the default, a quarter of the machine's memory, could be reached by
// a run before it reads its records back).
const memlogTotalBytes = 1 << 50

func (r *runner) start(ctx context.Context, target string, l Load, tag string) (*session, error) {
	switch target {
	case TargetKafka:
		return r.startKafka(tag)
	case TargetKiggy:
		return r.startKiggy(ctx, TargetKiggy, tag, "", "")
	case TargetKiggyIggy, TargetKiggyIggyFsync, TargetKiggyIggyBuffered, TargetKiggyIggySole:
		return r.startKiggyIggy(ctx, target, tag)
	case TargetKiggyIggyCluster:
		return r.startKiggyIggyCluster(ctx, tag)
	case TargetNull:
		return r.startNull(ctx, l, tag)
	}
	return nil, fmt.Errorf("bench: unknown target %q", target)
}

func (r *runner) startKafka(tag string) (*session, error) {
	if r.javaErr != nil {
		return nil, fmt.Errorf("bench: Kafka needs Java and the Kafka 4.x jars: %w", r.javaErr)
	}
	dir, err := os.MkdirTemp(r.cfg.KafkaDir, "kbench-kafka-"+tag+"-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	note := "log dir on disk"
	if r.cfg.KafkaOnTmpfs {
		note = "log dir on tmpfs"
	}
	b, err := kafkatest.StartProcess(dir, kafkatest.Config{
		Java:        r.java,
		Classpath:   r.classpath,
		Heap:        r.cfg.KafkaHeap,
		Props:       kafkaProps(r.cfg),
		StopTimeout: stopTimeout,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &session{
		target:       TargetKafka,
		addr:         b.Addr,
		procs:        []measuredProc{{"kafka", b.Pid}},
		consume:      true,
		createTopics: true,
		note:         note,
		stop: func() error {
			err := b.Stop() // waits for the JVM to exit
			if err != nil {
				err = fmt.Errorf("%w; last lines of %s:\n%s", err, b.LogPath, b.LogTail(20))
			}
			// Keep the broker's own log with the others for a post-mortem.
			if log, rerr := os.ReadFile(b.LogPath); rerr == nil {
				_ = os.WriteFile(filepath.Join(r.work, "kafka-"+tag+".log"), log, 0o644)
			}
			os.RemoveAll(dir)
			return err
		},
	}, nil
}

// startKiggy starts the gateway binary on a free port as target name;
// iggyAddr selects the Iggy backend, with --iggy-durability durability.
func (r *runner) startKiggy(ctx context.Context, name, tag, iggyAddr, durability string) (*session, error) {
	bin, note := r.bins["kiggy"], ""
	if r.cfg.ProfileDir != "" {
		note = "profiled (--cpuprofile --profile-on-signal)"
	}
	if bin == "" {
		return nil, fmt.Errorf("bench: gateway binary missing: %v", r.buildErrs["kiggy"])
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := testtools.FreePort()
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		adminPort, err := testtools.FreePort()
		if err != nil {
			return nil, err
		}
		admin := "127.0.0.1:" + strconv.Itoa(adminPort)
		args := []string{
			"--listen", addr,
			"--admin-addr", admin,
			"--log-level", "warn",
			"--memlog-partition-bytes", byteSize(memlogPartitionBytes),
			"--memlog-total-bytes", byteSize(memlogTotalBytes),
		}
		if iggyAddr != "" {
			args = append(args, "--iggy-addr", iggyAddr, "--iggy-username", r.cfg.IggyUsername, "--iggy-password", r.cfg.IggyPassword,
				"--iggy-durability", durability)
			if name == TargetKiggyIggySole {
				args = append(args, "--iggy-sole-writer")
			}
		}
		args = append(args, r.cfg.GatewayFlags...)
		prefix := ""
		if r.cfg.ProfileDir != "" {
			prefix = filepath.Join(r.cfg.ProfileDir, name+"-"+tag)
			args = append(args, "--cpuprofile", prefix, "--profile-on-signal")
		}
		p, _, err := startProcess(r.work, name+"-"+tag, bin, args, false)
		if err != nil {
			return nil, err
		}
		err = waitReady(ctx, addr, readyTimeout, p)
		if err == nil {
			s := &session{
				target:       name,
				addr:         addr,
				procs:        []measuredProc{{"kiggy", p.pid()}},
				consume:      true,
				createTopics: true,
				note:         note,
				metricsURL:   "http://" + admin + "/metrics",
				stop:         func() error { return p.stop(stopTimeout) },
			}
			if prefix != "" {
				s.profiled, s.profPrefix = p, prefix
			}
			return s, nil
		}
		_ = p.stop(stopTimeout)
		lastErr = err
		log := tail(p.logPath, 20)
		var ee *exitedError
		if !errors.As(err, &ee) {
			return nil, err
		}
		if iggyAddr != "" && strings.Contains(log, "not built into this binary") {
			return nil, &unavailableError{reason: "the gateway binary has no Iggy backend yet (" + firstLine(log) + ")"}
		}
		if !strings.Contains(log, "address already in use") {
			return nil, err
		}
	}
	return nil, lastErr
}

func (r *runner) startKiggyIggy(ctx context.Context, target, tag string) (*session, error) {
	durability := iggyTargets[target]
	if r.cfg.IggyAddr != "" {
		s, err := r.startKiggy(ctx, target, tag, r.cfg.IggyAddr, durability)
		if err != nil {
			return nil, err
		}
		s.iggyAddr = r.cfg.IggyAddr
		if r.cfg.IggyPID > 0 {
			s.procs = append(s.procs, measuredProc{"iggy-server", r.cfg.IggyPID})
			s.note = strings.TrimPrefix(s.note+"; external Iggy at "+r.cfg.IggyAddr+" (pid "+strconv.Itoa(r.cfg.IggyPID)+" measured)", "; ")
		} else {
			s.note = strings.TrimPrefix(s.note+"; external Iggy at "+r.cfg.IggyAddr+" (its CPU and RSS not measured)", "; ")
		}
		return s, nil
	}
	var ig server
	var iaddr, procName string
	var err error
	if r.cfg.IggyServerBin != "" {
		procName = "iggy-server"
		var n iggyNode
		if n, err = r.startIggyServer(ctx, "iggy-server-"+target+"-"+tag); err == nil {
			ig, iaddr = n, n.Addr
		}
	} else {
		bin := r.bins["iggytest"]
		if bin == "" {
			return nil, &unavailableError{reason: "iggytest does not build: " + firstLine(fmt.Sprint(r.buildErrs["iggytest"]))}
		}
		procName = "iggytest"
		ig, iaddr, err = startProcess(r.work, "iggytest-"+target+"-"+tag, bin, []string{"-addr", "127.0.0.1:0"}, true)
	}
	if err != nil {
		return nil, err
	}
	s, err := r.startKiggy(ctx, target, tag, iaddr, durability)
	if err != nil {
		_ = ig.stop(stopTimeout)
		return nil, err
	}
	if procName == "iggy-server" {
		s.note = strings.TrimPrefix(s.note+"; "+iggyMedium(r.cfg.IggyOnTmpfs), "; ")
	}
	s.procs = append(s.procs, measuredProc{procName, ig.pid()})
	s.iggyAddr = iaddr
	gwStop := s.stop
	s.stop = func() error {
		return errors.Join(gwStop(), ig.stop(stopTimeout))
	}
	return s, nil
}

// iggyMedium says where the fresh iggy-servers keep their data.
func iggyMedium(tmpfs bool) string {
	if tmpfs {
		return "iggy-server data on tmpfs"
	}
	return "iggy-server data on disk"
}

// startKiggyIggyCluster runs kiggy against Config.IggyClusterAddr; else
// against a fresh 3-node cluster of Config.IggyServerBin (real iggy-server
// processes, their CPU measured) when that is set; else against a fresh
// 3-node iggytest cluster (one process).
func (r *runner) startKiggyIggyCluster(ctx context.Context, tag string) (*session, error) {
	const target = TargetKiggyIggyCluster
	if r.cfg.IggyClusterAddr == "" && r.cfg.IggyServerBin != "" {
		bin, err := filepath.Abs(r.cfg.IggyServerBin) // the nodes run in their own directories
		if err != nil {
			return nil, err
		}
		dir, release, err := r.iggyDataDir("iggy-cluster-" + tag)
		if err != nil {
			return nil, err
		}
		c, err := iggyserver.StartCluster(bin, dir, 3)
		if err != nil {
			release()
			return nil, err
		}
		s, err := r.startKiggy(ctx, target, tag, c.Seeds(), iggyTargets[target])
		if err != nil {
			c.Stop()
			release()
			return nil, err
		}
		s.note = strings.TrimPrefix(s.note+"; a fresh 3-node iggy-server cluster, its nodes' CPU measured, "+iggyMedium(r.cfg.IggyOnTmpfs), "; ")
		for _, n := range c.Nodes {
			s.procs = append(s.procs, measuredProc{"iggy-server", n.Pid()})
		}
		gwStop := s.stop
		s.stop = func() error { err := gwStop(); c.Stop(); release(); return err }
		return s, nil
	}
	if r.cfg.IggyClusterAddr != "" {
		s, err := r.startKiggy(ctx, target, tag, r.cfg.IggyClusterAddr, iggyTargets[target])
		if err != nil {
			return nil, err
		}
		s.note = strings.TrimPrefix(s.note+"; external Iggy cluster at "+r.cfg.IggyClusterAddr+" (its CPU and RSS not measured)", "; ")
		if len(r.cfg.IggyClusterPIDs) > 0 {
			s.note = strings.Replace(s.note, "its CPU and RSS not measured", fmt.Sprintf("its %d nodes' CPU measured", len(r.cfg.IggyClusterPIDs)), 1)
			for _, pid := range r.cfg.IggyClusterPIDs {
				s.procs = append(s.procs, measuredProc{"iggy-server", pid})
			}
		}
		return s, nil
	}
	bin := r.bins["iggytest"]
	if bin == "" {
		return nil, &unavailableError{reason: "iggytest does not build: " + firstLine(fmt.Sprint(r.buildErrs["iggytest"]))}
	}
	ig, addrs, err := startProcess(r.work, "iggytest-cluster-"+tag, bin, []string{"-cluster", "3"}, true)
	if err != nil {
		return nil, err
	}
	s, err := r.startKiggy(ctx, target, tag, addrs, iggyTargets[target])
	if err != nil {
		_ = ig.stop(stopTimeout)
		return nil, err
	}
	s.procs = append(s.procs, measuredProc{"iggytest", ig.pid()})
	gwStop := s.stop
	s.stop = func() error { return errors.Join(gwStop(), ig.stop(stopTimeout)) }
	return s, nil
}

func (r *runner) startNull(ctx context.Context, l Load, tag string) (*session, error) {
	bin := r.bins["nullbroker"]
	if bin == "" {
		return nil, fmt.Errorf("bench: null broker binary missing: %v", r.buildErrs["nullbroker"])
	}
	p, addr, err := startProcess(r.work, "null-"+tag, bin,
		[]string{"-listen", "127.0.0.1:0", "-partitions", strconv.Itoa(int(l.Partitions))}, true)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, addr, readyTimeout, p); err != nil {
		_ = p.stop(stopTimeout)
		return nil, err
	}
	return &session{
		target: TargetNull,
		addr:   addr,
		procs:  []measuredProc{{"nullbroker", p.pid()}},
		stop:   func() error { return p.stop(stopTimeout) },
	}, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
