//go:build linux

package hostile

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// Limits the kiggy process runs with: small enough that every timeout case
// finishes in seconds (the suite must stay under ~3 minutes on two cores).
const (
	readTimeout  = 2 * time.Second
	idleTimeout  = 5 * time.Second
	writeTimeout = 3 * time.Second
	// maxOutputBytes is --max-output-bytes.
	maxOutputBytes = 1 << 20
	// decodeBudget is --decode-budget-bytes: what one Produce request may
	// decompress.
	decodeBudget = 64 << 20
	// maxFrameSize is the gateway's default --max-frame-size (Kafka's
	// socket.request.max.bytes), left as shipped.
	maxFrameSize = 100 << 20
)

// engineEnv selects the network engine (--engine); unset = the default.
const engineEnv = "KIGGY_TEST_ENGINE"

// logEnv names a file that receives the kiggy process's whole log; when it
// is set, a case that finds the gateway stuck also has the process dump its
// goroutines there (SIGQUIT) before failing.
const logEnv = "KIGGY_HOSTILE_LOG"

// flagsEnv adds kiggy flags (separated by spaces) to every kiggy the
// floods start: one binary compared with a setting and without it, side by
// side (e.g. KIGGY_HOSTILE_FLAGS="--iggy-read-sessions 32").
const flagsEnv = "KIGGY_HOSTILE_FLAGS"

// profileEnv names a file that receives the kiggy process's CPU profile
// (--cpuprofile, written when it stops); a case that starts kiggy twice
// keeps the second's.
const profileEnv = "KIGGY_HOSTILE_CPUPROFILE"

// TestMain removes the kiggy binary the tests built.
func TestMain(m *testing.M) {
	if spec := os.Getenv(producerProcEnv); spec != "" {
		os.Exit(runProducerProcess(spec))
	}
	code := m.Run()
	kiggyproc.RemoveBinary()
	os.Exit(code)
}

// kiggyProc is one kiggy process.
type kiggyProc struct {
	*kiggyproc.Proc
	// dumpable: the full log goes to a file the test keeps, so dump may
	// kill the process for its goroutine stacks.
	dumpable bool
}

// log is the end of the process's log, for failure messages.
func (k *kiggyProc) log() string { return k.Tail(400) }

// dump has the process write its goroutine stacks to the log file and exit
// (SIGQUIT), when a log file was asked for; the test is failing anyway.
func (k *kiggyProc) dump(t testing.TB) {
	if !k.dumpable {
		t.Logf("set %s=/path/to/file to get the process's goroutine stacks here", logEnv)
		return
	}
	_ = k.Cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-k.Done():
	case <-time.After(10 * time.Second):
	}
	t.Logf("kiggy's goroutine stacks are in %s", os.Getenv(logEnv))
}

// startKiggy runs kiggy on 127.0.0.1 ephemeral ports and waits until both
// listeners are up and /readyz answers; extra flags come after the suite's
// (a flag given twice takes the later value). The process is stopped
// (SIGTERM, then SIGKILL) when the test ends; an exit with an error after
// SIGTERM fails the test.
func startKiggy(t *testing.T, extra ...string) *kiggyProc {
	t.Helper()
	return startKiggyEnv(t, nil, extra...)
}

// startKiggyEnv is startKiggy with env added to the process's environment.
func startKiggyEnv(t *testing.T, env []string, extra ...string) *kiggyProc {
	t.Helper()
	args := []string{
		"--listen", "127.0.0.1:0",
		"--admin-addr", "127.0.0.1:0",
		"--read-timeout", readTimeout.String(),
		"--idle-timeout", idleTimeout.String(),
		"--write-timeout", writeTimeout.String(),
		"--max-output-bytes", strconv.Itoa(maxOutputBytes),
		"--decode-budget-bytes", strconv.Itoa(decodeBudget),
		"--drain-timeout", "2s",
		"--log-format", "json",
		"--admin-pprof", // aftermath forces a GC through /debug/pprof/heap?gc=1
	}
	if e := os.Getenv(engineEnv); e != "" {
		args = append(args, "--engine", e)
	}
	if f := os.Getenv(profileEnv); f != "" {
		args = append(args, "--cpuprofile", f)
	}
	if f := strings.Fields(os.Getenv(flagsEnv)); len(f) > 0 {
		t.Logf("extra kiggy flags (%s): %v", flagsEnv, f)
		args = append(args, f...)
	}
	if slices.Contains(extra, "--listeners") {
		// --listen is the one-listener shorthand and conflicts with it.
		args = slices.Delete(args, 0, 2)
	}
	cfg := kiggyproc.Config{
		Args:         append(args, extra...),
		LogFile:      os.Getenv(logEnv),
		StartTimeout: 20 * time.Second,
		StopTimeout:  15 * time.Second,
		CleanExit:    true,
	}
	if g := os.Getenv("GODEBUG"); g != "" {
		cfg.Env = []string{"GODEBUG=" + g} // e.g. gctrace=1 with KIGGY_HOSTILE_LOG
	}
	cfg.Env = append(cfg.Env, env...)
	k := &kiggyProc{Proc: kiggyproc.Start(t, cfg), dumpable: cfg.LogFile != ""}
	waitFor(t, 10*time.Second, "kiggy /readyz", func() bool {
		resp, err := k.HTTP.Get("http://" + k.Admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return k
}

// alive fails the test if the process has exited.
func (k *kiggyProc) alive(t testing.TB) {
	t.Helper()
	if k.Exited() {
		t.Fatalf("kiggy process exited: %v\nlast log lines:\n%s", k.Err(), k.log())
	}
}

// metrics scrapes /metrics into "name{labels}" → value.
func (k *kiggyProc) metrics(t testing.TB) metrics {
	t.Helper()
	m, err := k.Metrics()
	if err != nil {
		k.alive(t)
		t.Fatalf("GET /metrics: %v", err)
	}
	if _, ok := m["go_goroutines"]; !ok {
		t.Fatalf("/metrics has no go_goroutines: %v", m)
	}
	return m
}

// metrics is one scrape of /metrics.
type metrics map[string]float64

// closed returns kiggy_connections_closed_total for reason.
func (m metrics) closed(reason string) float64 {
	return m[`kiggy_connections_closed_total{reason="`+reason+`"}`]
}

// open returns kiggy_connections_open.
func (m metrics) open() float64 { return m["kiggy_connections_open"] }

// reasons lists the close reasons present in m.
func (m metrics) reasons() []string {
	var rs []string
	for k := range m {
		if r, ok := strings.CutPrefix(k, `kiggy_connections_closed_total{reason="`); ok {
			rs = append(rs, strings.TrimSuffix(r, `"}`))
		}
	}
	return rs
}

// waitClosed polls /metrics until at least n more connections than in base
// were closed for reason.
func (k *kiggyProc) waitClosed(t testing.TB, base metrics, reason string, n int, timeout time.Duration) {
	t.Helper()
	want := base.closed(reason) + float64(n)
	var last metrics
	ok := poll(timeout, func() bool {
		last = k.metrics(t)
		return last.closed(reason) >= want
	})
	if !ok {
		t.Fatalf("closed{reason=%q}: %v, want >= %v (+%d) within %v", reason, last.closed(reason), want, n, timeout)
	}
}

// waitOpen polls until kiggy_connections_open is at most n.
func (k *kiggyProc) waitOpen(t testing.TB, n float64, timeout time.Duration) {
	t.Helper()
	var last metrics
	if !poll(timeout, func() bool {
		last = k.metrics(t)
		return last.open() <= n
	}) {
		t.Fatalf("kiggy_connections_open = %v, want <= %v within %v (closes: %v)", last.open(), n, timeout, closeCounts(last))
	}
}

// closeCounts formats the close counters of m.
func closeCounts(m metrics) string {
	var b strings.Builder
	for _, r := range m.reasons() {
		fmt.Fprintf(&b, "%s=%v ", r, m.closed(r))
	}
	return b.String()
}

// rss returns the process's resident set size.
func (k *kiggyProc) rss(t testing.TB) int64 {
	t.Helper()
	n, err := testtools.ProcStatusBytes(k.Pid, "VmRSS")
	if err != nil {
		k.alive(t)
		t.Fatal(err)
	}
	return n
}

// peak measures the process's peak RSS over a case: VmHWM after resetting
// it through /proc/pid/clear_refs, and a 10 ms sampler in case the reset is
// not permitted. Stop the returned func to get the peak.
func (k *kiggyProc) peak(t testing.TB) (stop func() int64) {
	t.Helper()
	hwm := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", k.Pid), []byte("5"), 0) == nil
	var mu sync.Mutex
	high := k.rss(t)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tk.C:
				if n, err := testtools.ProcStatusBytes(k.Pid, "VmRSS"); err == nil {
					mu.Lock()
					high = max(high, n)
					mu.Unlock()
				}
			}
		}
	}()
	return func() int64 {
		close(quit)
		<-done
		if hwm {
			if n, err := testtools.ProcStatusBytes(k.Pid, "VmHWM"); err == nil {
				high = max(high, n)
			}
		}
		return high
	}
}

// raiseNoFile raises this process's RLIMIT_NOFILE (soft, and hard when
// needed, which takes root) to at least n. The kiggy child inherits it.
func raiseNoFile(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		// Set it anyway: Go restores the original soft limit in children
		// unless the program called Setrlimit itself.
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
		return
	}
	lim.Cur = n
	if lim.Max < n {
		lim.Max = n
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("RLIMIT_NOFILE to %d: %v (the suite needs root or a hard limit of at least %d)", n, err, n)
	}
}

// poll calls cond every 50 ms until it holds or timeout passes.
func poll(timeout time.Duration, cond func() bool) bool {
	return testtools.EventuallyEvery(timeout, 50*time.Millisecond, cond)
}

// waitFor is poll that fails the test on timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// ctxFor returns a context that ends with the test.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
