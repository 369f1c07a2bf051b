//go:build linux

package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Design note: telling a slow gateway from a starved machine.
//
// The good producer's latency includes time that neither kiggy nor the test
// controls: on a shared 2-core machine other processes can keep kiggy's
// threads waiting for a CPU for a second or more. The kernel counts that
// wait per thread (/proc/PID/task/TID/schedstat, second field: time spent
// runnable but not running). schedSampler records the sum over kiggy's
// threads (and, for the report, over the test's) every 50 ms. A produce
// slower than maxStall is excused only when kiggy's threads waited for a CPU
// at least as long as the excess over maxStall; the test's own wait is
// reported but excuses nothing, because summed over its many threads it
// overstates what delayed the one produce. A gateway that stops serving
// (a blocked loop, a lock held across I/O, or a SIGSTOP, which
// HarnessCatchesStall uses to prove this check can fail) is not waiting for
// a CPU and still fails. On a heavily loaded machine the allowance can hide
// a real stall that happens to coincide with starvation; the excused
// produces are logged with the machine's CPU pressure.

// schedSample is the summed run-queue wait of both processes at one time.
type schedSample struct {
	at    time.Time
	kiggy time.Duration
	self  time.Duration
}

// schedSampler records run-queue waits until stopped.
type schedSampler struct {
	pid     int
	mu      sync.Mutex
	samples []schedSample
	quit    chan struct{}
	done    chan struct{}
}

// runDelay sums the run-queue wait of every thread of pid.
func runDelay(pid int) time.Duration {
	dirs, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fs := strings.Fields(string(b))
		if len(fs) < 2 {
			continue
		}
		ns, err := strconv.ParseInt(fs[1], 10, 64)
		if err == nil {
			sum += time.Duration(ns)
		}
	}
	return sum
}

// startSched samples until stop.
func startSched(pid int) *schedSampler {
	s := &schedSampler{pid: pid, quit: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-tk.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *schedSampler) sample() {
	x := schedSample{at: time.Now(), kiggy: runDelay(s.pid), self: runDelay(os.Getpid())}
	s.mu.Lock()
	s.samples = append(s.samples, x)
	s.mu.Unlock()
}

func (s *schedSampler) stop() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
		<-s.done
	}
}

// waited returns how long kiggy's and the test's threads waited for a CPU
// between the last sample at or before from and the first at or after to
// (so the span covers [from, to]).
func (s *schedSampler) waited(from, to time.Time) (kiggy, self time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var a, b *schedSample
	for i := range s.samples {
		x := &s.samples[i]
		if !x.at.After(from) {
			a = x
		}
		if !x.at.Before(to) && b == nil {
			b = x
		}
	}
	if a == nil || b == nil {
		return 0, 0, false
	}
	return max(b.kiggy-a.kiggy, 0), max(b.self-a.self, 0), true
}

// cpuPressure returns the machine's CPU pressure line ("some avg10=..."),
// or "" where PSI is not available.
func cpuPressure() string {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}
