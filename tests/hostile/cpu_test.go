//go:build linux

package hostile

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// What a flood costs the machine. The steady producer's p99 during a flood
// mixes two waits: kiggy's own (a request queued behind the flood's on the
// event loop, a lock, the group coordinator's work) and the CPU's (the flood
// client runs in the test process, beside the producer, and with kiggy the
// two can keep both cores of the test machine busy, so every thread of
// either waits in the kernel's run queue). floodCPU measures the second:
// each process's CPU time and the run-queue wait summed over its threads
// (/proc/PID/task/TID/schedstat, as schedSampler reads it). A wait near the
// flood's length means a thread of that process was runnable and not
// running for most of the flood; TestCheapRequestFlood is the reference for
// what the CPUs alone cost the producer.

// cpuSample is one reading of the three processes.
type cpuSample struct {
	kiggyCPU, selfCPU, producerCPU    time.Duration
	kiggyWait, selfWait, producerWait time.Duration
}

// floodCPU is the difference of two cpuSamples.
type floodCPU cpuSample

// cpuNow reads kiggy's (pid), the test process's and the steady producer
// process's CPU time and summed run-queue wait.
func cpuNow(pid, producer int) cpuSample {
	return cpuSample{
		kiggyCPU: cpuTime(pid), selfCPU: cpuTime(os.Getpid()), producerCPU: cpuTime(producer),
		kiggyWait: sumDelays(runDelays(pid)), selfWait: sumDelays(runDelays(os.Getpid())), producerWait: sumDelays(runDelays(producer)),
	}
}

// since returns what was used from a to s.
func (s cpuSample) since(a cpuSample) floodCPU {
	return floodCPU{s.kiggyCPU - a.kiggyCPU, s.selfCPU - a.selfCPU, s.producerCPU - a.producerCPU,
		s.kiggyWait - a.kiggyWait, s.selfWait - a.selfWait, s.producerWait - a.producerWait}
}

// String formats f for a flood of length d.
func (f floodCPU) String(d time.Duration) string {
	pct := func(x time.Duration) float64 { return 100 * float64(x) / float64(max(d, time.Millisecond)) }
	return fmt.Sprintf("kiggy used %v of CPU (%.0f%% of a core) and its threads waited %v for one; the test process (flood client and steady consumer) %v (%.0f%%), waited %v; the steady producer %v (%.0f%%), waited %v",
		f.kiggyCPU, pct(f.kiggyCPU), f.kiggyWait.Round(time.Millisecond), f.selfCPU, pct(f.selfCPU), f.selfWait.Round(time.Millisecond),
		f.producerCPU, pct(f.producerCPU), f.producerWait.Round(time.Millisecond))
}

// cpuTime returns the user and system time of pid (/proc/PID/stat, in
// clock ticks of 10 ms), or 0.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:]) // from field 3, state
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// sumDelays sums the waits of all threads.
func sumDelays(m map[int]time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range m {
		sum += d
	}
	return sum
}

// TestCheapRequestFlood is the reference the state floods are judged
// against: 50,000 ApiVersions requests, which create no state and take no
// lock (the answer is the advertised table), sent as the group floods send theirs
// (two connections, 50 in flight each), beside the steady clients, against
// the request quota the floods run with (floodQuota). What the steady
// producer's p99 loses here is the flood's rate on the shared CPUs, not
// any work of kiggy's per request; the quota charges the flood what its
// requests cost the engine and throttles it.
func TestCheapRequestFlood(t *testing.T) {
	k := startFloodKiggy(t, floodQuota(t)...)
	s := startSteady(t, k)
	s.flood(func() {
		pipelined(t, k.Addr, "", 50_000, 2, 50, func(int) kmsg.Request {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 3
			req.ClientSoftwareName = "hostile"
			req.ClientSoftwareVersion = "1"
			return req
		}, func(r kmsg.Response) {
			if code := r.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
				t.Errorf("ApiVersions answered %d", code)
			}
		})
	})
	// Not required: the flood lasts about a second, the quota's span, and
	// on a loaded machine it may stay under it.
	checkThrottled(t, k, false)
	s.check(t)
}

// pinEnv, set to 1, pins the processes of a flood (pinFlood).
const pinEnv = "KIGGY_HOSTILE_PIN"

// pinFlood gives kiggy a CPU of its own for a flood, as a server has: its
// process (pid) runs on CPU 0, the test process (the flood client) and the
// producer process (producer) on the others, until t ends, when
// KIGGY_HOSTILE_PIN=1 and there are CPUs for both. The test process also
// runs at SCHED_IDLE meanwhile: on two CPUs it shares the producer's, and
// at normal priority the flood client kept the waking producer waiting for
// that CPU; at SCHED_IDLE it runs only when the producer does not, as a
// flood from another host would. The steady producer's p99
// then measures what kiggy's handling of the flood costs it, not what the
// flood client's own CPU use costs the machine (floodCPU).
func pinFlood(t *testing.T, pid, producer int) {
	t.Helper()
	n := runtime.NumCPU()
	if !pinning() {
		t.Logf("processes not pinned (%d CPUs, %s=%q)", n, pinEnv, os.Getenv(pinEnv))
		return
	}
	var server, clients, all unix.CPUSet
	server.Set(0)
	for c := range n {
		all.Set(c)
		if c > 0 {
			clients.Set(c)
		}
	}
	for _, p := range []struct {
		pid int
		set *unix.CPUSet
	}{{pid, &server}, {os.Getpid(), &clients}, {producer, &clients}} {
		if err := setAffinity(p.pid, p.set); err != nil {
			t.Logf("pinning process %d: %v (not pinned)", p.pid, err)
		}
	}
	t.Cleanup(func() { _ = setAffinity(os.Getpid(), &all) })
	if err := setPolicy(os.Getpid(), schedIdle); err != nil {
		t.Logf("SCHED_IDLE for the test process: %v (left at its priority)", err)
	}
	t.Cleanup(func() { _ = setPolicy(os.Getpid(), schedOther) })
	t.Logf("kiggy pinned to CPU 0, the flood client (at SCHED_IDLE) and the steady producer to CPUs 1–%d", n-1)
}

// pinning reports whether pinFlood pins.
func pinning() bool { return runtime.NumCPU() >= 2 && os.Getenv(pinEnv) == "1" }

// setAffinity sets the CPU affinity of every thread of pid (threads it
// starts later inherit it).
func setAffinity(pid int, set *unix.CPUSet) error {
	return eachThread(pid, func(tid int) error { return unix.SchedSetaffinity(tid, set) })
}

// Linux scheduling policies (sched(7)).
const (
	schedOther = 0
	schedIdle  = 5
)

// setPolicy sets the scheduling policy of every thread of pid (threads it
// starts later inherit it).
func setPolicy(pid int, policy uint32) error {
	return eachThread(pid, func(tid int) error {
		return unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: policy}, 0)
	})
}

// eachThread calls set for every thread of pid; a thread that ended
// meanwhile is skipped.
func eachThread(pid int, set func(tid int) error) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if err := set(tid); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	return nil
}
