package bridge_test

import (
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// startClusterGateway starts a 3-node iggytest cluster (elections after
// 1 s) and a gateway on it with fastGroups.
func startClusterGateway(t *testing.T) (*iggytest.Cluster, *kiggytest.Gateway) {
	cl := iggytest.NewCluster(3, iggytest.Config{})
	cl.ElectionDelay = time.Second
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	opts := fastGroups
	opts.IggyCluster = cl
	return cl, kiggytest.Start(t, opts)
}

// TestIggyClusterFailover runs kiggy on a 3-node iggytest cluster, kills
// the primary under a steady franz-go produce load and a committing
// consumer group, and checks that produce resumes by itself (the client
// follows the new primary, docs/IGGY.md "Iggy clusters"), that every
// acknowledged record is stored exactly where it was acknowledged, that no
// offset was acknowledged twice and that the group's commits survived.
// The killed node then comes back and rejoins as a backup.
func TestIggyClusterFailover(t *testing.T) {
	cl, gw := startClusterGateway(t)
	var res crashResult
	old := -1
	faultUnderLoad(t, gw, &res, func() {
		old = cl.Primary()
		cl.Kill(old)
	})
	if cl.Primary() == old {
		t.Fatalf("node %d is still the primary", old)
	}
	if err := cl.Restart(old); err != nil {
		t.Fatal(err)
	}
	t.Logf("acknowledged %d, lost %d, offsets reused %d, commits %d (lost %d), first acknowledgement %v after the kill",
		res.acked, res.lost, res.reused, res.commits, res.commitsLost, res.pause.Round(time.Millisecond))
	if res.lost != 0 || res.reused != 0 || res.commitsLost != 0 {
		t.Fatalf("%d acknowledged records lost, %d offsets acknowledged twice, %d acknowledged commits lost", res.lost, res.reused, res.commitsLost)
	}
	// The restarted node is a backup: writes keep going to the new primary.
	gw.CreateTopic(t, "after", 1)
	if recs := produceN(t, gw.Addr, "after", 1, 10); len(recs) != 10 {
		t.Fatalf("produced %d after the rejoin", len(recs))
	}
}
