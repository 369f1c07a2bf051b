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
// controls: on a shared 2-core machine other processes can keep threads of
// kiggy, or of the test's own client, waiting for a CPU for a second or
// more. The kernel counts that wait per thread (/proc/PID/task/TID/schedstat,
// second field: time spent runnable but not running). schedSampler records
// it for every thread of both processes every 50 ms.
//
// For a window, starvation is estimated as the longest wait of any single
// thread of either process within it. The sum over threads would overstate
// it (a dozen threads waiting for the same second are one second of delay
// to a request, not twelve), and the two processes are starved at the same
// moments, so their waits are not added either. A produce slower than
// maxStall is excused only when its latency minus that estimate is within
// maxStall. A gateway that stops serving is not waiting for a CPU (a blocked
// loop, a lock held across I/O, or a SIGSTOP, which HarnessCatchesStall uses
// to prove this check can fail), so it still fails. On a heavily loaded
// machine the allowance can hide a real stall that coincides with
// starvation; excused produces are logged with the machine's CPU pressure.

// schedSample is every thread's run-queue wait at one time.
type schedSample struct {
	at    time.Time
	kiggy map[int]time.Duration
	self  map[int]time.Duration
}

// schedSampler records run-queue waits until stopped.
type schedSampler struct {
	pid     int
	mu      sync.Mutex
	samples []schedSample
	quit    chan struct{}
	done    chan struct{}
}

// runDelays returns the run-queue wait of every thread of pid.
func runDelays(pid int) map[int]time.Duration {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	m := make(map[int]time.Duration, len(files))
	for _, f := range files {
		tid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fs := strings.Fields(string(b))
		if len(fs) < 2 {
			continue
		}
		if ns, err := strconv.ParseInt(fs[1], 10, 64); err == nil {
			m[tid] = time.Duration(ns)
		}
	}
	return m
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
	x := schedSample{at: time.Now(), kiggy: runDelays(s.pid), self: runDelays(os.Getpid())}
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

// waited returns the longest run-queue wait of a single thread of kiggy, and
// of the test process, between the last sample at or before from and the
// first at or after to (so the span covers [from, to]).
func (s *schedSampler) waited(from, to time.Time) (kiggy, self time.Duration, ok bool) {
	s.mu.Lock()
	last := s.samples[len(s.samples)-1].at
	s.mu.Unlock()
	if last.Before(to) {
		s.sample()
	}
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
	return maxWait(a.kiggy, b.kiggy), maxWait(a.self, b.self), true
}

// maxWait is the largest per-thread growth from a to b; a thread born in
// between counts from zero.
func maxWait(a, b map[int]time.Duration) time.Duration {
	var m time.Duration
	for tid, d := range b {
		m = max(m, d-a[tid])
	}
	return m
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
