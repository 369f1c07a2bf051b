package iggyserver

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestClusterConfig: the shared default configuration becomes a loopback
// cluster of three with the ports given, and nothing else changes.
func TestClusterConfig(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	p, err := configFile(bin)
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	def, _ := os.ReadFile(p)
	cfg, err := clusterConfig(string(def), []int{1, 2, 3}, []int{4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(cfg, "\n[[cluster.nodes]]"); n != 3 {
		t.Errorf("%d [[cluster.nodes]] entries, want 3", n)
	}
	for _, want := range []string{"ports = { tcp = 2, tcp_replica = 5 }", "replica_id = 2", "\nenabled = true"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("no %q in the config", want)
		}
	}
	if strings.Contains(cfg, "iggy-node-2") {
		t.Error("an example node is left")
	}
	if _, err := clusterConfig("[system]\npath = \"x\"\n", []int{1}, []int{2}); err == nil {
		t.Error("a config without [cluster] accepted")
	}
}

// TestStartKillRestart: a single node starts, answers, dies with SIGKILL
// and comes back on the same address.
func TestStartKillRestart(t *testing.T) {
	n := StartT(t)
	if !n.Running() {
		t.Fatal("not running")
	}
	if !strings.Contains(n.LogTail(50), n.Addr) {
		t.Errorf("the log does not name the address %s; it ends:\n%s", n.Addr, n.LogTail(50))
	}
	n.Kill()
	if n.Running() {
		t.Fatal("running after Kill")
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	if !n.Running() {
		t.Fatal("not running after Restart")
	}
	t.Logf("%s at %s", Version(n.bin), n.Addr)
}

// TestStartCluster: three nodes start, connect to each other, and one
// killed comes back on its address with its log kept.
func TestStartCluster(t *testing.T) {
	c := StartClusterT(t, 3)
	for i, n := range c.Nodes {
		b, err := n.Log()
		if !n.Running() || err != nil || !strings.Contains(string(b), meshComplete) {
			t.Fatalf("node %d (%s): running %v, log %v, mesh complete %v", i, n.Addr, n.Running(), err, strings.Contains(string(b), meshComplete))
		}
	}
	if got := strings.Count(c.Seeds(), ","); got != 2 {
		t.Fatalf("seeds %q", c.Seeds())
	}
	n := c.Nodes[2]
	n.Kill()
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	// The server's output reaches the file a moment after it listens.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := WaitFor(ctx, func() bool {
		b, _ := n.Log()
		return strings.Count(string(b), "Initializing system") == 2
	}); err != nil {
		t.Errorf("the restart's output is not appended to the first start's:\n%s", n.LogTail(20))
	}
}
