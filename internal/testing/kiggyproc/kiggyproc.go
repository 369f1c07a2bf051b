// Package kiggyproc builds ./cmd/kiggy and runs it as a process for the
// suites that test the shipped binary (tests/realiggy, tests/hostile,
// tests/kgosuite, tests/interop): flags and signals as an operator gives
// them, its JSON log in a file, the addresses it listens on read from that
// log. Test-only: nothing outside tests imports it.
//
// A package that calls Binary removes the binary from its TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		kiggyproc.RemoveBinary()
//		os.Exit(code)
//	}
package kiggyproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

var built struct {
	sync.Once
	dir, bin string
	err      error
}

// Binary returns a kiggy binary built from ./cmd/kiggy, once per test
// process (RemoveBinary removes it), or fails t.
func Binary(t testing.TB) string {
	t.Helper()
	built.Do(func() {
		gobin, err := testtools.GoTool()
		if err != nil {
			built.err = fmt.Errorf("no go command to build cmd/kiggy: %w", err)
			return
		}
		root, err := testtools.RepoRoot()
		if err != nil {
			built.err = err
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "kiggyproc-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "kiggy")
		cmd := exec.Command(gobin, "build", "-o", built.bin, "./cmd/kiggy")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/kiggy: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// RemoveBinary removes what Binary built, if anything; for TestMain.
func RemoveBinary() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// Config is how to run one kiggy process.
type Config struct {
	// Name names the process in messages and its log file ("kiggy" when
	// empty).
	Name string
	// Bin is the binary (Binary's when empty).
	Bin string
	// Args are all of its flags. --log-format json is added unless they
	// set --log-format: the listeners are read from the JSON log.
	Args []string
	// Env is added to its environment, which otherwise holds only PATH: a
	// stray KIGGY_* variable of the test's would configure it.
	Env []string
	// LogFile receives its whole log, stdout and stderr
	// (<t.TempDir()>/<Name>.log when empty).
	LogFile string
	// StartTimeout bounds the wait for its listeners (30 s when 0).
	StartTimeout time.Duration
	// StopTimeout is how long SIGTERM may take to end it before SIGKILL
	// and a failure (20 s when 0).
	StopTimeout time.Duration
	// MustLive fails the test when the process exits before the test
	// ends.
	MustLive bool
	// CleanExit fails the test when SIGTERM ends the process with an
	// error (unless the test failed already).
	CleanExit bool
}

// Proc is a running kiggy process. It is stopped with SIGTERM when the test
// that started it ends.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Pid  int
	// Addr is the first Kafka listener's address, Listeners every one's
	// by listener name (PLAINTEXT for --listen).
	Addr      string
	Listeners map[string]string
	// Admin is the admin listener's address (/metrics, /healthz,
	// /readyz); empty when off.
	Admin string
	// Log is the file holding its whole log.
	Log string
	// HTTP is a client for the admin listener.
	HTTP *http.Client

	cfg     Config
	stopped bool // Stop or Kill was called: the exit is the test's
	done    chan struct{}
	err     error // Wait's result, valid after done
}

// Start runs cfg's process and returns once it has logged every listener
// its flags ask for (and the admin listener, which is logged first). A
// process that exits first fails the test.
func Start(t testing.TB, cfg Config) *Proc {
	t.Helper()
	p, err := TryStart(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ErrExitedAtStart is TryStart's error for a process that exited before it
// reported its listeners (its log tail follows in the error's text).
var ErrExitedAtStart = errors.New("exited at start")

// TryStart is Start for a caller that handles a process exiting at start
// (ErrExitedAtStart, with the process's log tail; a port taken between
// choosing and binding it, say) instead of failing the test.
func TryStart(t testing.TB, cfg Config) (*Proc, error) {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "kiggy"
	}
	if cfg.Bin == "" {
		cfg.Bin = Binary(t)
	}
	if cfg.LogFile == "" {
		cfg.LogFile = filepath.Join(t.TempDir(), cfg.Name+".log")
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = 20 * time.Second
	}
	args := cfg.Args
	if _, ok := flagValue(args, "--log-format"); !ok {
		args = append(args[:len(args):len(args)], "--log-format", "json")
	}
	want := 1
	if v, ok := flagValue(args, "--listeners"); ok {
		want = strings.Count(v, ",") + 1
	}
	logFile, err := os.Create(cfg.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{
		Name: cfg.Name, Log: cfg.LogFile, Listeners: map[string]string{}, cfg: cfg, done: make(chan struct{}),
		HTTP: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	p.Cmd = exec.Command(cfg.Bin, args...)
	p.Cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, cfg.Env...)
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.Cmd.Stdout = logFile
	stderr, err := p.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", cfg.Name, err)
	}
	p.Pid = p.Cmd.Process.Pid
	listening := make(chan [3]string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = logFile.Write(append(line, '\n'))
			var rec struct{ Msg, Listener, Addr string }
			if json.Unmarshal(line, &rec) == nil && rec.Addr != "" &&
				(rec.Msg == "kiggy listening" || rec.Msg == "admin listening") {
				select {
				case listening <- [3]string{rec.Msg, rec.Listener, rec.Addr}:
				default:
				}
			}
		}
		_, _ = io.Copy(logFile, stderr)
		p.err = p.Cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.stopped {
			p.stop(t)
		}
	})

	deadline := time.After(cfg.StartTimeout)
	for len(p.Listeners) < want {
		select {
		case l := <-listening:
			if l[0] == "admin listening" {
				p.Admin = l[2]
				continue
			}
			if p.Addr == "" {
				p.Addr = l[2]
			}
			p.Listeners[l[1]] = l[2]
		case <-p.done:
			p.stopped = true // the caller's to handle, not an exit during the test
			return nil, fmt.Errorf("%s %w: %v\n%s", p.Name, ErrExitedAtStart, p.err, p.Tail(30))
		case <-deadline:
			t.Fatalf("%s did not report its listeners within %v\n%s", p.Name, cfg.StartTimeout, p.Tail(30))
		}
	}
	return p, nil
}

// flagValue returns the value of flag in args ("--flag value" or
// "--flag=value"), the last one given.
func flagValue(args []string, flag string) (string, bool) {
	v, ok := "", false
	for i, a := range args {
		switch {
		case a == flag && i+1 < len(args):
			v, ok = args[i+1], true
		case strings.HasPrefix(a, flag+"="):
			v, ok = a[len(flag)+1:], true
		}
	}
	return v, ok
}

// Stop ends the process as the end of the test does: SIGTERM, then SIGKILL
// and a failure after Config.StopTimeout.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	p.stop(t)
	p.stopped = true
}

func (p *Proc) stop(t testing.TB) {
	cfg := p.cfg
	select {
	case <-p.done:
		if cfg.MustLive && !p.stopped {
			t.Errorf("%s exited before the end of the test: %v\n%s", p.Name, p.err, p.Tail(40))
		}
		return
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if cfg.CleanExit && p.err != nil && !t.Failed() {
			t.Errorf("%s exited with %v after SIGTERM\n%s", p.Name, p.err, p.Tail(40))
		}
	case <-time.After(cfg.StopTimeout):
		_ = p.Cmd.Process.Kill()
		<-p.done
		t.Errorf("%s did not stop within %v of SIGTERM\n%s", p.Name, cfg.StopTimeout, p.Tail(40))
	}
}

// Kill ends the process with SIGKILL and waits for it.
func (p *Proc) Kill() {
	p.stopped = true
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// Done is closed when the process has exited; Err then says how.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error, once Done is closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Tail returns the last n lines of the process's log.
func (p *Proc) Tail(n int) string { return testtools.FileTail(p.Log, n) }

// Metrics scrapes the admin listener's /metrics into "name{labels}" →
// value.
func (p *Proc) Metrics() (map[string]float64, error) {
	resp, err := p.HTTP.Get("http://" + p.Admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return ParseMetrics(body), nil
}

// ParseMetrics reads the Prometheus text format into "name{labels}" →
// value, skipping comments and lines it cannot read.
func ParseMetrics(body []byte) map[string]float64 {
	m := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}
