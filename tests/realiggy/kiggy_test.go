package realiggy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
)

// TestMain removes the kiggy binary built for the package's tests.
func TestMain(m *testing.M) {
	code := m.Run()
	kiggyproc.RemoveBinary()
	os.Exit(code)
}

// kiggyProc is one kiggy process on loopback.
type kiggyProc struct{ *kiggyproc.Proc }

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
	args := []string{"--listen", "127.0.0.1:0", "--log-format", "json", "--drain-timeout", "2s"}
	if !slices.Contains(flags, "--admin-addr") {
		args = append(args, "--admin-addr", "")
	}
	return &kiggyProc{kiggyproc.Start(t, kiggyproc.Config{
		Name: name,
		Args: append(args, flags...),
		// A cluster's first view change is waited through.
		StartTimeout: 60 * time.Second,
	})}
}

// primary returns the Iggy node kiggy holds as the primary
// (kiggy_iggy_primary{addr} 1, with kiggy_iggy_primary_unknown 0), or "".
func (k *kiggyProc) primary() string {
	m, err := k.Metrics()
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
				t.Logf("%s log ends:\n%s", k.Name, k.Tail(20))
			}
			save(k.Name+".log", k.Log)
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
