package iggyserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// Cluster is an Iggy 0.9 VSR cluster of nodes on loopback, started from
// the server's default configuration with [cluster] enabled and one
// [[cluster.nodes]] entry per node.
type Cluster struct {
	Nodes []*Node
}

// Addrs returns every node's client address (the seeds kiggy is given).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// Seeds is Addrs joined with commas, as --iggy-addr takes them.
func (c *Cluster) Seeds() string { return strings.Join(c.Addrs(), ",") }

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}

// configFile is the default server configuration beside the binary
// (shared/iggy/config.toml next to shared/iggy/bin/iggy-server), or
// $KIGGY_IGGY_CONFIG.
func configFile(bin string) (string, error) {
	if p := os.Getenv("KIGGY_IGGY_CONFIG"); p != "" {
		return p, nil
	}
	p := filepath.Join(filepath.Dir(filepath.Dir(bin)), "config.toml")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("iggyserver: a cluster needs the server's default config.toml (KIGGY_IGGY_CONFIG or %s): %w", p, err)
	}
	return p, nil
}

// clusterConfig rewrites the default configuration for nodes on loopback:
// [cluster] enabled, its example [[cluster.nodes]] replaced by one entry per
// node with the given client and replica ports.
func clusterConfig(def string, tcp, replica []int) (string, error) {
	lines := strings.Split(def, "\n")
	var out []string
	inCluster, enabled, skipping, replaced := false, false, false, false
	for _, l := range lines {
		trim := strings.TrimSpace(l)
		if trim == "[[cluster.nodes]]" {
			// An example entry: its lines run to the next blank line.
			skipping = true
			if !replaced {
				replaced = true
				for i := range tcp {
					out = append(out, "[[cluster.nodes]]",
						fmt.Sprintf("name = \"n%d\"", i),
						"ip = \"127.0.0.1\"",
						fmt.Sprintf("replica_id = %d", i),
						fmt.Sprintf("ports = { tcp = %d, tcp_replica = %d }", tcp[i], replica[i]),
						"")
				}
			}
			continue
		}
		if skipping {
			skipping = trim != ""
			continue
		}
		if strings.HasPrefix(trim, "[") {
			inCluster = trim == "[cluster]"
		}
		if inCluster && !enabled && strings.HasPrefix(trim, "enabled") {
			l, enabled = "enabled = true", true
		}
		out = append(out, l)
	}
	if !enabled || !replaced {
		return "", errors.New("iggyserver: the default config.toml has no [cluster] enabled line or no [[cluster.nodes]] entries to replace")
	}
	return strings.Join(out, "\n"), nil
}

// StartCluster starts an n-node cluster: replica 0 is the first primary.
// Every node has a fresh data directory below parent (a temporary directory
// when empty) and kernel-chosen ports; it returns once every node's client
// port accepts connections and every node has connected to all its peers.
func StartCluster(bin, parent string, n int) (*Cluster, error) {
	cfgPath, err := configFile(bin)
	if err != nil {
		return nil, err
	}
	def, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("iggyserver: %w", err)
	}
	root, err := dataDir(parent, "iggy-cluster")
	if err != nil {
		return nil, err
	}
	tcp, replica := make([]int, n), make([]int, n)
	for i := range n {
		if tcp[i], err = testtools.FreePort(); err != nil {
			return nil, err
		}
		if replica[i], err = testtools.FreePort(); err != nil {
			return nil, err
		}
	}
	cfg, err := clusterConfig(string(def), tcp, replica)
	if err != nil {
		return nil, err
	}
	cfgFile := filepath.Join(root, "cluster.toml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("iggyserver: %w", err)
	}
	c := &Cluster{}
	for i := range n {
		dir := filepath.Join(root, "n"+strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("iggyserver: %w", err)
		}
		node := &Node{Addr: "127.0.0.1:" + strconv.Itoa(tcp[i]), Dir: dir, bin: bin,
			args: []string{"--fresh", "--replica-id", strconv.Itoa(i)}}
		node.env = append(baseEnv(node.DataDir(), node.Addr, Username, Password), "IGGY_CONFIG_PATH="+cfgFile)
		c.Nodes = append(c.Nodes, node)
	}
	// Highest replica id first, each once it listens: a node dials the peers
	// of higher ids when it starts, and one not listening yet is dialled
	// again only 5 s later. Launched all at once, the nodes often missed
	// each other, replica 0's heartbeats reached a backup only after that
	// redial, and the backup's 5 s heartbeat timeout had started a view
	// change: the metadata plane moved to replica 1 while the partitions
	// created afterwards stayed with replica 0 (seen in 2 of 7 starts with
	// kiggy connecting at once; docs/IGGY.md "Iggy clusters" describes that
	// state). In this order every dial finds its peer listening and the
	// mesh forms at once (none in 11 starts since).
	var first error
	for i := n - 1; i >= 0 && first == nil; i-- {
		first = c.Nodes[i].launch(context.Background(), time.Minute)
	}
	for _, node := range c.Nodes {
		node.args = []string{"--replica-id", node.args[2]} // a restart keeps the data
	}
	if first == nil {
		first = c.waitMeshed(time.Minute)
	}
	if first != nil {
		c.Stop()
		return nil, first
	}
	return c, nil
}

// meshComplete is what a node logs once it has a connection to every peer
// replica (message_bus::installer::replica, apache/iggy cc269ef70).
const meshComplete = "replica mesh complete"

// waitMeshed waits until every node has logged that its replica mesh is
// complete. A node whose peer was not listening yet when it dialled it
// dials again only 5 s later (seen: the nodes' listeners up 1.4 s after
// their start on a loaded machine, the mesh complete 5 s after that);
// until then a backup may hear nothing from the primary and start a view
// change, and a test that kills a node meets a partial mesh.
func (c *Cluster) waitMeshed(timeout time.Duration) error {
	if len(c.Nodes) < 2 {
		return nil // no peers
	}
	deadline := time.Now().Add(timeout)
	for _, n := range c.Nodes {
		for {
			b, _ := n.Log()
			if bytes.Contains(b, []byte(meshComplete)) {
				break
			}
			if !n.Running() {
				return fmt.Errorf("iggyserver: cluster node %s exited before its replica mesh formed; its log ends:\n%s", n.Addr, n.LogTail(20))
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("iggyserver: cluster node %s logged no %q within %v; its log ends:\n%s", n.Addr, meshComplete, timeout, n.LogTail(20))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// StartClusterT is StartCluster for a test: the binary from Require, data
// under t.TempDir(), every node stopped when t ends.
func StartClusterT(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := Require(t)
	c, err := StartCluster(bin, t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}
