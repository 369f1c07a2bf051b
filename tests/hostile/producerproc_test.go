//go:build linux

package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producerProcEnv, set to "addr topic", makes the test binary the steady
// producer and nothing else (runProducerProcess). The floods run it as a
// process of its own: in the test's process its produces would wait for
// the Go scheduler behind the flood client's goroutines, and its p99 would
// measure the test's own client more than the gateway.
const producerProcEnv = "KIGGY_HOSTILE_PRODUCER"

// producerReport is what the producer process writes when its standard
// input closes.
type producerReport struct {
	Samples []producerSample `json:"samples"`
	InDoubt int64            `json:"in_doubt"`
	Events  []string         `json:"events"`
}

type producerSample struct {
	StartNs int64  `json:"start_ns"`
	TookNs  int64  `json:"took_ns"`
	Err     string `json:"err,omitempty"`
}

// runProducerProcess is the producer process: a goodProducer until its
// standard input closes, then its report on standard output.
func runProducerProcess(spec string) int {
	addr, topic, ok := strings.Cut(spec, " ")
	if !ok {
		fmt.Fprintf(os.Stderr, "%s=%q: want \"addr topic\"\n", producerProcEnv, spec)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &goodProducer{topic: topic, cancel: cancel, done: make(chan struct{})}
	var err error
	if p.cl, err = kgo.NewClient(producerOpts(addr, topic, kgo.WithHooks(p))...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go p.run(ctx)
	_, _ = io.Copy(io.Discard, os.Stdin)
	p.stop()
	var r producerReport
	p.mu.Lock()
	for _, s := range p.sample {
		ps := producerSample{StartNs: s.start.UnixNano(), TookNs: int64(s.took)}
		if s.err != nil {
			ps.Err = s.err.Error()
		}
		r.Samples = append(r.Samples, ps)
	}
	r.InDoubt = p.inDoubt
	for _, e := range p.events {
		r.Events = append(r.Events, e.at.Format(time.RFC3339Nano)+" "+e.what)
	}
	p.mu.Unlock()
	if err := json.NewEncoder(os.Stdout).Encode(&r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startProducerProcess runs the steady producer as a process of its own
// (runProducerProcess) producing to topic, which must exist. The returned
// goodProducer holds its samples once stopped.
func startProducerProcess(t *testing.T, addr, topic string) *goodProducer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), producerProcEnv+"="+addr+" "+topic)
	// It stops when its stdin closes; should the test process die
	// without closing it (a killed CI run), the kernel stops it too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &goodProducer{topic: topic, done: make(chan struct{}), pid: cmd.Process.Pid}
	close(p.done)
	p.cancel = func() {
		_ = stdin.Close()
		err := cmd.Wait()
		var r producerReport
		if err == nil {
			err = json.NewDecoder(bufio.NewReader(strings.NewReader(stdout.String()))).Decode(&r)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.sample = append(p.sample, sample{start: time.Now(), err: fmt.Errorf("the producer process: %w; stderr: %s", err, stderr.String())})
			return
		}
		for _, s := range r.Samples {
			x := sample{start: time.Unix(0, s.StartNs), took: time.Duration(s.TookNs)}
			if s.Err != "" {
				x.err = errors.New(s.Err)
			}
			p.sample = append(p.sample, x)
		}
		p.inDoubt = r.InDoubt
		for _, e := range r.Events {
			p.events = append(p.events, event{what: e})
		}
	}
	t.Cleanup(p.stop)
	return p
}
