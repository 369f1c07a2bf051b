package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// javaPerfClass is kafka-producer-perf-test's main class (kafka-tools).
const javaPerfClass = "org.apache.kafka.tools.ProducerPerformance"

// javaPerfArgs returns the kafka-producer-perf-test arguments for l: the
// same for every target but the bootstrap address. The producer settings
// mirror the franz-go load's (acks, compression, linger, in-flight depth,
// idempotence rule); batch.size stays at the Java default unless the load
// sets one.
func javaPerfArgs(addr, topic string, l Load, records, warmup int64) []string {
	args := []string{
		"--topic", topic,
		"--num-records", strconv.FormatInt(records, 10),
		"--record-size", strconv.Itoa(l.RecordSize),
		"--throughput", "-1",
	}
	if warmup > 0 {
		args = append(args, "--warmup-records", strconv.FormatInt(warmup, 10))
	}
	args = append(args, "--command-property",
		"bootstrap.servers="+addr,
		"acks="+l.AcksString(),
		"compression.type="+l.Compression,
		"linger.ms="+strconv.FormatInt(l.Linger.Milliseconds(), 10),
		"max.in.flight.requests.per.connection="+strconv.Itoa(l.InFlight),
		"enable.idempotence="+strconv.FormatBool(l.idempotent()),
		"buffer.memory="+strconv.Itoa(l.BufferBytes),
	)
	if l.BatchBytes > 0 {
		args = append(args, "batch.size="+strconv.Itoa(l.BatchBytes))
	}
	return args
}

// javaResult is kafka-producer-perf-test's final summary line.
type javaResult struct {
	records                     int64
	recordsPerSec, mbPerSec     float64
	avgMs, maxMs                float64
	p50Ms, p95Ms, p99Ms, p999Ms float64
	elapsed                     time.Duration
	serverCPU, clientCPU        time.Duration
	gatewayCPU                  time.Duration // serverCPU's first process
	cpuOK                       bool
}

// javaSummary matches the line ProducerPerformance prints at the end:
// "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max
// latency, a ms 50th, b ms 95th, c ms 99th, d ms 99.9th."
var javaSummary = regexp.MustCompile(`^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, ([\d.]+) ms 99th, ([\d.]+) ms 99\.9th\.?$`)

// parseJavaPerf returns the last summary line's figures in out (with
// --warmup-records the tool prints the whole run's summary and then the
// steady state's; the last one is the one without warm-up).
func parseJavaPerf(out string) (*javaResult, error) {
	var res *javaResult
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "records sent,"); i > 0 {
			// Drop any prefix (the steady-state line is labelled).
			j := strings.LastIndexAny(line[:i-1], " :")
			line = line[j+1:]
		}
		m := javaSummary.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := make([]float64, len(m))
		for i := 2; i < len(m); i++ {
			f[i], _ = strconv.ParseFloat(m[i], 64)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		res = &javaResult{records: n, recordsPerSec: f[2], mbPerSec: f[3], avgMs: f[4], maxMs: f[5],
			p50Ms: f[6], p95Ms: f[7], p99Ms: f[8], p999Ms: f[9]}
	}
	if res == nil {
		return nil, errors.New("bench: kafka-producer-perf-test printed no summary line")
	}
	return res, nil
}

// runJavaPerf runs kafka-producer-perf-test against addr and parses its
// summary. Its output goes to logPath.
func runJavaPerf(ctx context.Context, java, classpath, addr, topic string, l Load, records, warmup int64, logPath string, meter cpuMeter) (*javaResult, error) {
	jvm := []string{"-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath, javaPerfClass}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, append(jvm, javaPerfArgs(addr, topic, l, records, warmup)...)...)
	cmd.SysProcAttr = sysProcAttr()
	c0 := meter.read()
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(t0)
	c1 := meter.read()
	if werr := os.WriteFile(logPath, out, 0o644); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("bench: kafka-producer-perf-test: %v; last lines of %s:\n%s", err, logPath, tail(logPath, 15))
	}
	res, err := parseJavaPerf(string(out))
	if err != nil {
		return nil, fmt.Errorf("%w; last lines of %s:\n%s", err, logPath, tail(logPath, 15))
	}
	res.elapsed = elapsed
	res.serverCPU, res.cpuOK = c1.server-c0.server, c0.ok && c1.ok
	res.gatewayCPU = c1.gateway - c0.gateway
	if ps := cmd.ProcessState; ps != nil {
		res.clientCPU = ps.UserTime() + ps.SystemTime()
	}
	return res, nil
}
