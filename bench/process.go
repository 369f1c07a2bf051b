package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

var selfPID = os.Getpid()

// process is a server process the harness started: its own executable, its
// output in a log file, SIGTERM then SIGKILL to stop it.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string

	exited   chan struct{} // closed once cmd.Wait returned
	waitErr  error         // set before exited is closed
	stopOnce sync.Once
	stopErr  error
}

// server is a server process the harness started: a *process, or an
// iggy-server (iggyNode).
type server interface {
	pid() int
	stop(timeout time.Duration) error
}

// serverEnv is the environment of a benchmarked server: the harness's own,
// less every KIGGY_* variable. The target is configured by flags alone, and
// kiggy refuses unknown KIGGY_* variables, which the test suite sets
// (KIGGY_REQUIRE_TOOLS and friends).
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KIGGY_") {
			env = append(env, kv)
		}
	}
	return env
}

// startProcess starts bin with args, its stdout and stderr going to
// dir/<name>.log. If addrLine is set, the process must print its bound
// address as the first line of stdout (iggytest and nullbroker do), which is
// returned.
func startProcess(dir, name, bin string, args []string, addrLine bool) (*process, string, error) {
	return startProcessEnv(dir, name, bin, args, nil, addrLine)
}

// startProcessEnv is startProcess with extra environment variables.
func startProcessEnv(dir, name, bin string, args, env []string, addrLine bool) (*process, string, error) {
	p := &process{name: name, logPath: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		return nil, "", fmt.Errorf("bench: %w", err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(serverEnv(), env...)
	p.cmd.Stderr = logf
	p.cmd.SysProcAttr = sysProcAttr()
	var stdout io.ReadCloser
	if addrLine {
		if stdout, err = p.cmd.StdoutPipe(); err != nil {
			logf.Close()
			return nil, "", fmt.Errorf("bench: %w", err)
		}
	} else {
		p.cmd.Stdout = logf
	}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, "", fmt.Errorf("bench: starting %s: %w", name, err)
	}
	var addr string
	if addrLine {
		line := make(chan string, 1)
		go func() {
			br := bufio.NewReader(stdout)
			s, _ := br.ReadString('\n')
			line <- strings.TrimSpace(s)
			_, _ = io.Copy(logf, br) // keep draining so the process never blocks
		}()
		select {
		case addr = <-line:
		case <-time.After(30 * time.Second):
		}
		if addr == "" {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
			logf.Close()
			return nil, "", fmt.Errorf("bench: %s printed no address; last lines of %s:\n%s", name, p.logPath, tail(p.logPath, 20))
		}
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, addr, nil
}

// pid is the process id, for /proc readings.
func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM, waits up to timeout, then kills. It reports a process
// that had to be killed or that had exited with an error on its own.
func (p *process) stop(timeout time.Duration) error {
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			if p.waitErr != nil {
				p.stopErr = fmt.Errorf("bench: %s exited on its own: %v; last lines of %s:\n%s", p.name, p.waitErr, p.logPath, tail(p.logPath, 20))
			}
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(timeout):
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.stopErr = fmt.Errorf("bench: %s ignored SIGTERM for %v and was killed", p.name, timeout)
		}
	})
	return p.stopErr
}

// waitReady waits until addr answers Metadata, failing early if one of the
// processes exits.
func waitReady(ctx context.Context, addr string, timeout time.Duration, procs ...*process) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		for _, p := range procs {
			select {
			case <-p.exited:
				return &exitedError{proc: p}
			default:
			}
		}
		if last = ping(ctx, addr); last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %s not ready after %v: %v", addr, timeout, last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// exitedError is a server process that exited while the harness waited for
// it to become ready.
type exitedError struct{ proc *process }

func (e *exitedError) Error() string {
	return fmt.Sprintf("bench: %s exited before it was ready (%v); last lines of %s:\n%s",
		e.proc.name, e.proc.waitErr, e.proc.logPath, tail(e.proc.logPath, 20))
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// buildBinary builds the Go package pkg (relative to the repository root
// root) into dir/name.
func buildBinary(ctx context.Context, root, dir, name, pkg string) (string, error) {
	gobin, err := testtools.GoTool()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bench: go build %s: %v\n%s", pkg, err, strings.TrimSpace(string(b)))
	}
	return out, nil
}

// byteSize formats a byte count for a command-line flag.
func byteSize(n int64) string { return strconv.FormatInt(n, 10) }
