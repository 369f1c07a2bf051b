package bridge_test

import (
	"testing"
	"time"
)

// TestIggyPartitionPrimaryElsewhere runs kiggy on a 3-node iggytest
// cluster under a steady franz-go produce load and a committing consumer
// group, then gives two of the topic's partitions primaries of their own,
// apart from the metadata primary (whose node now answers their writes 58,
// as a real Iggy 0.9 cluster does when its partition planes are in another
// view, docs/IGGY.md "Iggy clusters"). Produce and commits go on through
// kiggy's reroute; every acknowledged record is stored where it was
// acknowledged, no offset is acknowledged twice and no commit is lost.
func TestIggyPartitionPrimaryElsewhere(t *testing.T) {
	cl, gw := startClusterGateway(t)
	var res crashResult
	faultUnderLoad(t, gw, &res, func() {
		cl.SetPartitionPrimary("crash", 1, 2)
		cl.SetPartitionPrimary("crash", 2, 1)
	})
	t.Logf("acknowledged %d, lost %d, offsets reused %d, commits %d (lost %d), first acknowledgement %v after the move",
		res.acked, res.lost, res.reused, res.commits, res.commitsLost, res.pause.Round(time.Millisecond))
	if res.lost != 0 || res.reused != 0 || res.commitsLost != 0 {
		t.Fatalf("%d acknowledged records lost, %d offsets acknowledged twice, %d acknowledged commits lost", res.lost, res.reused, res.commitsLost)
	}
	for p := 1; p <= 2; p++ {
		if cl.PartitionReads(0, "crash", p) == 0 || cl.PartitionReads(3-p, "crash", p) == 0 {
			t.Errorf("partition %d: reads on the metadata primary %d, on its own primary %d", p, cl.PartitionReads(0, "crash", p), cl.PartitionReads(3-p, "crash", p))
		}
	}
}
