package iggyserver

import (
	"os"
	"strings"
	"testing"
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
