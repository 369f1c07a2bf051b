package transactions

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// proc is a running helper program (a JVM or python3): its stdout lines
// are collected as they arrive, its stderr goes to a file that failure
// messages quote.
type proc struct {
	t       testing.TB
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	errPath string
	done    chan struct{} // closed when the process has exited

	mu    sync.Mutex
	lines []string
	err   error // cmd.Wait's result, once done is closed
}

// startProc starts name with args; it is killed when t ends if it is
// still running.
func startProc(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.WaitDelay = 5 * time.Second
	errFile, err := os.CreateTemp(t.TempDir(), "stderr-*")
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, name: filepath.Base(name), cmd: cmd, errPath: errFile.Name(), done: make(chan struct{})}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = errFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	errFile.Close()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p
}

// output returns the stdout lines so far.
func (p *proc) output() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// stderr returns the end of what the process wrote to stderr.
func (p *proc) stderr() string {
	b, _ := os.ReadFile(p.errPath)
	const max = 6000
	if len(b) > max {
		return "..." + string(b[len(b)-max:])
	}
	return string(b)
}

// describe is the process's output for a failure message.
func (p *proc) describe() string {
	out := strings.Join(p.output(), "\n")
	if len(out) > 3000 {
		out = "..." + out[len(out)-3000:]
	}
	return fmt.Sprintf("--- %s stdout:\n%s\n--- %s stderr:\n%s", p.name, out, p.name, p.stderr())
}

func (p *proc) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// wait waits up to timeout for the process to exit and returns how it
// ended; it fails t on a timeout (and kills the process).
func (p *proc) wait(timeout time.Duration) error {
	p.t.Helper()
	select {
	case <-p.done:
		return p.exitErr()
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("%s did not exit within %v; killed\n%s", p.name, timeout, p.describe())
		return nil
	}
}

// pythonWith returns a python3 (its real executable, not a pyenv shim)
// that imports every module of mods, or skips (fails under
// KIGGY_REQUIRE_TOOLS=1).
func pythonWith(t testing.TB, mods ...string) string {
	t.Helper()
	pythonOnce.Do(func() {
		p, err := exec.LookPath("python3")
		if err != nil {
			pythonOnce.err = errors.New("python3 not on PATH")
			return
		}
		out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
		if err != nil {
			pythonOnce.err = fmt.Errorf("%s: %v", p, err)
			return
		}
		pythonOnce.path = strings.TrimSpace(string(out))
	})
	testtools.Require(t, "python3", pythonOnce.err == nil, fmt.Sprint(pythonOnce.err, "; ", testtools.Install))
	out, err := exec.Command(pythonOnce.path, "-c", "import "+strings.Join(mods, ", ")).CombinedOutput()
	if err != nil {
		testtools.Require(t, "python3 with "+strings.Join(mods, ", "), false, fmt.Sprintf("%v: %s; %s", err, strings.TrimSpace(string(out)), testtools.Install))
	}
	return pythonOnce.path
}

var pythonOnce struct {
	sync.Once
	path string
	err  error
}
