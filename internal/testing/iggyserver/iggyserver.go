// Package iggyserver runs real Apache Iggy servers (the iggy-server binary)
// for tests and benchmarks: a single node or a cluster on loopback, each
// node with a fresh data directory and free ports, stopped with SIGTERM at
// the end, or killed with SIGKILL and restarted over its data when a test is
// about a crash (docs/IGGY.md, "Testing against a real iggy-server").
//
// The binary is KIGGY_IGGY_SERVER, or ../shared/iggy/bin/iggy-server beside
// the repository when that exists. Tests reach it through Require, which
// skips with one line naming the variable when there is none, or fails under
// KIGGY_REQUIRE_TOOLS=1 (CI).
package iggyserver

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// Env names the iggy-server binary the Iggy-backend tests run.
const Env = "KIGGY_IGGY_SERVER"

// Username and Password are the root credentials every server started here
// has.
const (
	Username = "iggy"
	Password = "iggy"
)

// Binary returns the iggy-server binary: $KIGGY_IGGY_SERVER, or the shared
// prebuilt one (../shared/iggy/bin/iggy-server from the repository root);
// an error says which was looked for.
func Binary() (string, error) {
	if p := os.Getenv(Env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("iggyserver: %s=%s: %w", Env, p, err)
		}
		return p, nil
	}
	root, err := testtools.RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(root), "shared", "iggy", "bin", "iggy-server")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("iggyserver: no %s set and no %s", Env, p)
	}
	return p, nil
}

// Available reports whether Binary finds a server.
func Available() bool {
	_, err := Binary()
	return err == nil
}

// Require returns the binary, or skips t (fails it under
// KIGGY_REQUIRE_TOOLS=1) with one line naming KIGGY_IGGY_SERVER.
func Require(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	testtools.Require(t, "iggy-server", err == nil,
		fmt.Sprintf("set %s to an Apache Iggy 0.9 iggy-server binary (%v)", Env, err))
	return bin
}

var versions sync.Map // binary → version line

// Version returns what the binary says of its version ("server 0.9.0-edge.5").
func Version(bin string) string {
	if v, ok := versions.Load(bin); ok {
		return v.(string)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	v := strings.TrimSpace(string(out))
	if err != nil {
		v = fmt.Sprintf("unknown (%v)", err)
	}
	versions.Store(bin, v)
	return v
}

// Node is one iggy-server process.
type Node struct {
	// Addr is its client TCP listener, host:port.
	Addr string
	// Dir is its directory: the server's data in Dir/data (IGGY_SYSTEM_PATH),
	// its output in Dir/server.log. The log is kept outside the data
	// directory because --fresh wipes that directory at boot (a log inside
	// it was unlinked while the server wrote to it, and LogTail read nothing).
	Dir string

	bin     string
	env     []string
	args    []string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error // the process's exit status, set before exited is closed
	// signalled: the running process was sent a signal by this package,
	// so its exit is expected (StopWithin).
	signalled bool
	logFile   *os.File
}

// Options configures a node.
type Options struct {
	// Dir is the data directory's parent (a temporary directory when
	// empty). The node's data directory is a fresh one below it.
	Dir string
	// Env adds IGGY_* settings (KEY=VALUE) to the defaults.
	Env []string
	// Name begins the name of the node's directory below Dir (Name-*);
	// "iggy" when empty.
	Name string
	// Username and Password are the root user's credentials; Username and
	// Password (iggy/iggy) when empty.
	Username, Password string
}

// Start starts a single-node server on a free loopback port with a fresh
// data directory, only its TCP listener and root iggy/iggy, one shard, and
// returns once the port accepts connections. Stop it with Stop (or Kill).
func Start(bin string, opts Options) (*Node, error) {
	return StartContext(context.Background(), bin, opts)
}

// StartContext is Start that gives up, killing the server, when ctx ends
// before the server listens.
func StartContext(ctx context.Context, bin string, opts Options) (*Node, error) {
	name := cmp.Or(opts.Name, "iggy")
	dir, err := dataDir(opts.Dir, name)
	if err != nil {
		return nil, err
	}
	user, pass := cmp.Or(opts.Username, Username), cmp.Or(opts.Password, Password)
	var lastErr error
	for range 3 { // a free port can be taken between the probe and the bind
		port, err := testtools.FreePort()
		if err != nil {
			return nil, err
		}
		n := &Node{Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, bin: bin, args: []string{"--fresh"}}
		n.env = append(baseEnv(n.DataDir(), n.Addr, user, pass), opts.Env...)
		if lastErr = n.launch(ctx, time.Minute); lastErr == nil {
			n.args = nil // a restart keeps the data
			return n, nil
		}
		// "Address in use", or iggy-server 0.9's own words for it.
		if msg := lastErr.Error(); !strings.Contains(msg, "in use") && !strings.Contains(msg, "Cannot bind to socket") {
			break
		}
	}
	return nil, lastErr
}

// DataDir is the server's data directory (IGGY_SYSTEM_PATH), Dir/data.
func (n *Node) DataDir() string { return filepath.Join(n.Dir, "data") }

// baseEnv is the environment of a node with its data in dir, listening on
// addr: TCP only, root user user with password pass, one shard.
func baseEnv(dir, addr, user, pass string) []string {
	return []string{
		"IGGY_SYSTEM_PATH=" + dir,
		"IGGY_TCP_ADDRESS=" + addr,
		"IGGY_HTTP_ENABLED=false", "IGGY_QUIC_ENABLED=false", "IGGY_WEBSOCKET_ENABLED=false",
		"IGGY_ROOT_USERNAME=" + user, "IGGY_ROOT_PASSWORD=" + pass,
		"IGGY_SYSTEM_SHARDING_CPU_ALLOCATION=1",
	}
}

// StartT is Start for a test: the binary from Require, the data under
// t.TempDir(), SIGTERM when t ends.
func StartT(t testing.TB) *Node {
	t.Helper()
	bin := Require(t)
	n, err := Start(bin, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	return n
}

func dataDir(parent, prefix string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	d, err := os.MkdirTemp(parent, prefix+"-")
	if err != nil {
		return "", fmt.Errorf("iggyserver: %w", err)
	}
	return d, nil
}

// launch starts the process and waits up to timeout, or until ctx ends, for
// Addr to accept.
func (n *Node) launch(ctx context.Context, timeout time.Duration) error {
	f, err := os.OpenFile(filepath.Join(n.Dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("iggyserver: %w", err)
	}
	cmd := exec.Command(n.bin, n.args...)
	cmd.Env = append(os.Environ(), n.env...)
	cmd.Env = append(cmd.Env, "NO_COLOR=1", "RUST_LOG_STYLE=never")
	cmd.Dir = n.Dir
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: a test's SIGINT does not reach it first, and
	// Kill takes nothing else down.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("iggyserver: start %s: %w", n.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		f.Close()
		n.mu.Lock()
		n.waitErr = err
		n.mu.Unlock()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited, n.logFile, n.signalled = cmd, exited, f, false
	n.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", n.Addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("iggyserver: iggy-server exited at start (%s); its log ends:\n%s", n.Addr, n.LogTail(20))
		case <-ctx.Done():
			n.Kill()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			n.Kill()
			return fmt.Errorf("iggyserver: iggy-server not listening on %s after %v; its log ends:\n%s", n.Addr, timeout, n.LogTail(20))
		}
	}
}

// Pid is the running process's id (0 when stopped).
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil || n.exitedLocked() {
		return 0
	}
	return n.cmd.Process.Pid
}

func (n *Node) exitedLocked() bool {
	select {
	case <-n.exited:
		return true
	default:
		return false
	}
}

// Running reports whether the process is alive.
func (n *Node) Running() bool { return n.Pid() != 0 }

// Kill sends SIGKILL and waits for the process to end: a crash, with
// whatever the server had not written lost.
func (n *Node) Kill() { n.signal(syscall.SIGKILL, 10*time.Second) }

// Stop sends SIGTERM and waits up to 30 s for the process to end, then
// kills it.
func (n *Node) Stop() {
	if !n.signal(syscall.SIGTERM, 30*time.Second) {
		n.Kill()
	}
}

// signal sends sig and waits up to wait for the exit; false if it did not
// end in time.
func (n *Node) signal(sig syscall.Signal, wait time.Duration) bool {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	if cmd != nil {
		n.signalled = true
	}
	n.mu.Unlock()
	if cmd == nil {
		return true
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
		n.awaitPortClosed(wait)
		return true
	case <-time.After(wait):
		return false
	}
}

// awaitPortClosed waits, up to wait, until the node's port refuses
// connections. An iggy-server's listening socket outlives its process for
// about a tenth of a second (measured: connections accepted 0.5 ms after
// the exit, then refused for ~100 ms): a Restart that dialled the port
// before that saw the old socket, took it for the new server and returned
// while the port was about to refuse.
func (n *Node) awaitPortClosed(wait time.Duration) {
	testtools.EventuallyEvery(wait, 5*time.Millisecond, func() bool {
		c, err := net.DialTimeout("tcp", n.Addr, 100*time.Millisecond)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
}

// StopWithin is Stop that waits up to wait for the exit after SIGTERM and
// says what went wrong: a server that had exited on its own with an error
// status before it was stopped, or one that ignored SIGTERM and was killed.
func (n *Node) StopWithin(wait time.Duration) error {
	n.mu.Lock()
	cmd, exited, signalled := n.cmd, n.exited, n.signalled
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		n.mu.Lock()
		err := n.waitErr
		n.mu.Unlock()
		if err != nil && !signalled {
			return fmt.Errorf("iggyserver: iggy-server (%s) exited on its own: %v; its log ends:\n%s", n.Addr, err, n.LogTail(20))
		}
		return nil
	default:
	}
	if n.signal(syscall.SIGTERM, wait) {
		return nil
	}
	n.Kill()
	return fmt.Errorf("iggyserver: iggy-server (%s) ignored SIGTERM for %v and was killed", n.Addr, wait)
}

// Restart starts the node again over its data directory, on the same port.
func (n *Node) Restart() error {
	if n.Running() {
		return errors.New("iggyserver: restart of a running node")
	}
	var err error
	for range 20 { // the old socket may linger for a moment
		if err = n.launch(context.Background(), time.Minute); err == nil || !strings.Contains(err.Error(), "in use") {
			return err
		}
		time.Sleep(250 * time.Millisecond) // the port is the point: wait for it to be free
	}
	return err
}

// LogTail returns the last lines of the node's log.
func (n *Node) LogTail(lines int) string {
	b, err := n.Log()
	if err != nil {
		return err.Error()
	}
	all := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return string(bytes.Join(all, []byte("\n")))
}

// ansiEscape matches the colour codes the server writes even to a file
// (it ignores NO_COLOR).
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// Log returns the node's whole output (every start of it, appended), its
// colour codes removed.
func (n *Node) Log() ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(n.Dir, "server.log"))
	if err != nil {
		return nil, err
	}
	return ansiEscape.ReplaceAll(b, nil), nil
}

// WaitFor polls cond every 50 ms until it is true or ctx ends.
func WaitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
