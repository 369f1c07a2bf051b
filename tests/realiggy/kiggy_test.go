package realiggy

import (
	"bufio"
	"bytes"
	"encoding/json"
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

	"github.com/kiggy-io/kiggy/internal/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testtools"
)

// TestMain removes the kiggy binary built for the package's tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

var built struct {
	sync.Once
	dir, bin string
	err      error
}

// kiggyBinary builds ./cmd/kiggy once for the package.
func kiggyBinary(t *testing.T) string {
	t.Helper()
	built.Do(func() {
		gobin, err := testtools.GoTool()
		if err != nil {
			built.err = err
			return
		}
		root, err := testtools.RepoRoot()
		if err != nil {
			built.err = err
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "realiggy-kiggy-"); built.err != nil {
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

// kiggyProc is one kiggy process on loopback.
type kiggyProc struct {
	name  string
	cmd   *exec.Cmd
	Addr  string // the Kafka listener
	Admin string // /metrics; empty when off
	Log   string // its whole log (JSON lines)
	done  chan struct{}
	err   error // Wait's result, valid after done
	http  *http.Client
}

// iggyFlags are the flags of a kiggy in front of the Iggy at addr (one node
// or comma-separated seeds) at the given durability level.
func iggyFlags(addr, durability string) []string {
	return []string{"--iggy-addr", addr, "--iggy-username", iggyserver.Username,
		"--iggy-password", iggyserver.Password, "--iggy-durability", durability}
}

// startKiggy runs the kiggy binary on a kernel-chosen loopback port with
// the given flags (--admin-addr "" unless they set it) and returns once it
// has logged its listeners. It is stopped with SIGTERM when t ends.
func startKiggy(t *testing.T, name string, flags ...string) *kiggyProc {
	t.Helper()
	bin := kiggyBinary(t)
	args := []string{"--listen", "127.0.0.1:0", "--log-format", "json", "--drain-timeout", "2s"}
	admin := false
	for _, f := range flags {
		admin = admin || f == "--admin-addr"
	}
	if !admin {
		args = append(args, "--admin-addr", "")
	}
	args = append(args, flags...)
	k := &kiggyProc{name: name, Log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{}),
		http: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	logFile, err := os.Create(k.Log)
	if err != nil {
		t.Fatal(err)
	}
	k.cmd = exec.Command(bin, args...)
	// Only PATH: a stray KIGGY_* variable would change its configuration.
	k.cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := k.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	k.cmd.Stdout = logFile
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("start kiggy: %v", err)
	}
	listening := make(chan [2]string, 8)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			logFile.Write(append(line, '\n'))
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(line, &rec) == nil && rec.Addr != "" &&
				(rec.Msg == "kiggy listening" || rec.Msg == "admin listening") {
				select {
				case listening <- [2]string{rec.Msg, rec.Addr}:
				default:
				}
			}
		}
		_, _ = io.Copy(logFile, stderr)
		k.err = k.cmd.Wait()
		logFile.Close()
		close(k.done)
	}()
	t.Cleanup(func() { k.stop(t) })
	deadline := time.After(60 * time.Second) // a cluster's first view change is waited through
	for k.Addr == "" || (admin && k.Admin == "") {
		select {
		case l := <-listening:
			if l[0] == "kiggy listening" {
				k.Addr = l[1]
			} else {
				k.Admin = l[1]
			}
		case <-k.done:
			t.Fatalf("%s exited at start: %v\n%s", name, k.err, k.tail(30))
		case <-deadline:
			t.Fatalf("%s did not report its listeners within 60s\n%s", name, k.tail(30))
		}
	}
	return k
}

// stop sends SIGTERM and waits for the process to end (SIGKILL after 20 s).
func (k *kiggyProc) stop(t *testing.T) {
	select {
	case <-k.done:
		return
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(20 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
		t.Errorf("%s did not stop within 20s of SIGTERM\n%s", k.name, k.tail(30))
	}
}

// tail returns the last lines of the process's log.
func (k *kiggyProc) tail(lines int) string {
	b, err := os.ReadFile(k.Log)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// metrics scrapes /metrics into "name{labels}" → value.
func (k *kiggyProc) metrics() (map[string]float64, error) {
	resp, err := k.http.Get("http://" + k.Admin + "/metrics")
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
	return m, nil
}

// primary returns the Iggy node kiggy holds as the primary
// (kiggy_iggy_primary{addr} 1, with kiggy_iggy_primary_unknown 0), or "".
func (k *kiggyProc) primary() string {
	m, err := k.metrics()
	if err != nil || m["kiggy_iggy_primary_unknown"] != 0 {
		return ""
	}
	const prefix = `kiggy_iggy_primary{addr="`
	for key, v := range m {
		if v == 1 && strings.HasPrefix(key, prefix) && strings.HasSuffix(key, `"}`) {
			return key[len(prefix) : len(key)-2]
		}
	}
	return ""
}

// waitUntil polls cond every 20 ms until it holds, failing t with what
// after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testtools.WaitFor(t, timeout, what, cond)
}

// logsEnv names a directory that receives every kiggy and iggy-server log
// of the tests (they are otherwise removed with their temporary
// directories).
const logsEnv = "KIGGY_REALIGGY_LOGS"

// keepLogs registers, after the processes it names were started, a cleanup
// that runs before they are stopped: when t failed it logs the last lines
// of each, and it copies the whole logs to $KIGGY_REALIGGY_LOGS when set.
func keepLogs(t *testing.T, kiggys []*kiggyProc, nodes []*iggyserver.Node) {
	t.Cleanup(func() {
		dir := os.Getenv(logsEnv)
		if !t.Failed() && dir == "" {
			return
		}
		if dir != "" {
			dir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Logf("%s: %v", logsEnv, err)
				dir = ""
			}
		}
		save := func(name, from string) {
			if dir == "" {
				return
			}
			if b, err := os.ReadFile(from); err == nil {
				_ = os.WriteFile(filepath.Join(dir, name), b, 0o644)
			}
		}
		for _, k := range kiggys {
			if t.Failed() {
				t.Logf("%s log ends:\n%s", k.name, k.tail(20))
			}
			save(k.name+".log", k.Log)
		}
		for i, n := range nodes {
			if t.Failed() {
				t.Logf("iggy-server %d (%s) log ends:\n%s", i, n.Addr, n.LogTail(20))
			}
			save(fmt.Sprintf("iggy-%d.log", i), filepath.Join(n.Dir, "server.log"))
		}
		switch {
		case dir != "":
			t.Logf("logs kept in %s", dir)
		case t.Failed():
			t.Logf("set %s to a directory to keep the whole logs", logsEnv)
		}
	})
}

// confirmer returns the Iggy node that confirmed the last append to topic
// kiggy logged ("iggy: append confirmed", logged at --log-level debug):
// the primary of that partition's consensus group, which in Iggy 0.9 need
// not be the metadata primary kiggy_iggy_primary names. "" when none.
func (k *kiggyProc) confirmer(topic string) string {
	b, err := os.ReadFile(k.Log)
	if err != nil {
		return ""
	}
	key := []byte(`"msg":"iggy: append confirmed"`)
	for rest := b; len(rest) > 0; {
		i := bytes.LastIndexByte(rest[:len(rest)-1], '\n')
		line := rest[i+1:]
		rest = rest[:i+1]
		if !bytes.Contains(line, key) {
			if i < 0 {
				break
			}
			continue
		}
		var rec struct{ Topic, Node string }
		if json.Unmarshal(line, &rec) == nil && rec.Topic == topic {
			return rec.Node
		}
		if i < 0 {
			break
		}
	}
	return ""
}
