package realiggy

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
)

// logSince is a node's output from byte offset from on (its colour codes
// removed: offsets are counted in the cleaned text).
func logSince(n *iggyserver.Node, from int) string {
	b, err := n.Log()
	if err != nil || len(b) < from {
		return ""
	}
	return string(b[from:])
}

// logSize is where a node's output ends now: a restart's output starts
// after it.
func logSize(n *iggyserver.Node) int {
	b, _ := n.Log()
	return len(b)
}

var namespace = regexp.MustCompile(`namespace_raw=(\d+)`)

// rejoined reports whether a restarted cluster node (its output since the
// restart in log) has rejoined every consensus group it recovered: each
// namespace (the metadata plane and every partition) that began a view
// probe has since reached status "normal", and every journal repair it
// requested is complete. Iggy 0.9 writes no single "caught up" line, so
// this reads the server's own lines (consensus::impls, shard; apache/iggy
// cc269ef70). A partition whose probe is followed by a completed journal
// repair and no status line has rejoined too: its repair walked its commit
// to the group's frontier, which it learned from the group's view. Seen
// for a partition created while the node was down (a system store
// generation kiggy wrote during the failover), in 2 of 11 runs beside two
// busy loops: the node logged the probe, the repair through the frontier,
// and never a ReplicaStateChanged. Otherwise it says what is pending. Killing another node
// before this holds leaves the cluster with no second settled replica;
// TestIggyClusterPrimaryKilledTwice's comment says what else it takes.
func rejoined(log string) (bool, string) {
	probing := map[string]bool{}
	repairing := map[string]bool{}
	metaRepair := false
	for line := range strings.Lines(log) {
		ns := ""
		if m := namespace.FindStringSubmatch(line); m != nil {
			ns = m[1]
		}
		switch {
		case strings.Contains(line, "beginning view probe"):
			probing[ns] = true
		case strings.Contains(line, `sim_event="ReplicaStateChanged"`) && strings.Contains(line, `status="normal"`):
			delete(probing, ns)
		case strings.Contains(line, "partition behind the group frontier; requesting repair"):
			repairing[ns] = true
		case strings.Contains(line, "partition journal repair complete"):
			delete(repairing, ns)
			delete(probing, ns)
		case strings.Contains(line, "metadata behind the group frontier; requesting repair"):
			metaRepair = true
		case strings.Contains(line, "metadata journal repair walked") && strings.Contains(line, "done=true"):
			metaRepair = false
		}
	}
	if len(probing) == 0 && len(repairing) == 0 && !metaRepair && strings.Contains(log, "beginning view probe") {
		return true, ""
	}
	return false, fmt.Sprintf("namespaces still probing for their view %v, repairing %v, metadata repair pending %v",
		slices.Sorted(maps.Keys(probing)), slices.Sorted(maps.Keys(repairing)), metaRepair)
}
