package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// proc is one server process kscale started (and only those are ever
// signalled, by their own pid).
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startProc starts bin with args and extra environment, its output in
// work/name.log, in a process group of its own so a Ctrl-C to kscale does
// not reach it before kscale stops it.
func startProc(work, name, bin string, args, env []string) (*proc, error) {
	logPath := filepath.Join(work, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits up to timeout, then SIGKILL.
func (p *proc) stop(timeout time.Duration) error {
	if p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %v after SIGTERM: killed", p.name, timeout)
	}
}

// waitListening waits until addr accepts TCP connections or p exits.
func waitListening(ctx context.Context, p *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited at start; see %s", p.name, p.log)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening on %s after %v; see %s", p.name, addr, timeout, p.log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startKiggy starts instance id of a cluster over iggyAddr on a free port.
func startKiggy(ctx context.Context, bin, work, name string, id int, iggyAddr string) (*proc, string, error) {
	var lastErr error
	for range 3 { // a free port can be taken between the probe and the bind
		port, err := testtools.FreePort()
		if err != nil {
			return nil, "", err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		args := []string{
			"--listen", addr, "--admin-addr", "", "--log-level", "warn",
			"--iggy-addr", iggyAddr, "--iggy-username", "iggy", "--iggy-password", "iggy",
			"--cluster-membership", "iggy", "--node-id", strconv.Itoa(id),
		}
		p, err := startProc(work, name, bin, args, nil)
		if err != nil {
			return nil, "", err
		}
		if err = waitListening(ctx, p, addr, 30*time.Second); err == nil {
			return p, addr, nil
		}
		_ = p.stop(10 * time.Second)
		lastErr = err
	}
	return nil, "", lastErr
}

// buildKiggy builds cmd/kiggy of this checkout into work.
func buildKiggy(ctx context.Context, work string) (string, error) {
	bin := filepath.Join(work, "kiggy")
	logf("building kiggy into %s", bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kiggy-io/kiggy/cmd/kiggy")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kiggy: %w\n%s", err, out)
	}
	return bin, nil
}

// loadAvg is the first field of /proc/loadavg ("" where there is none).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	var one, five, fifteen string
	if _, err := fmt.Sscan(string(b), &one, &five, &fifteen); err != nil {
		return ""
	}
	return one + " " + five + " " + fifteen
}

var errMismatch = errors.New("records read back differ from those acknowledged")
