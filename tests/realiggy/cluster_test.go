package realiggy

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

const (
	clusterTopic      = "primary-killed"
	clusterPartitions = 3
	// ackedBetween records are acknowledged at each step: before the first
	// kill, after kiggy followed a new primary, after the restart.
	ackedBetween = 1_000
	// stepTimeout bounds every wait: an election takes the 5 s heartbeat
	// timeout plus a few seconds under load (5–13 s seen here).
	stepTimeout = 40 * time.Second
)

// cannotAppend is what a restarted Iggy 0.9 replica logs when it fails to
// apply a replicated partition prepare; from then on it drops every later
// prepare of that partition as a gap and never acknowledges one again.
const cannotAppend = `error="Cannot append message"`

// restartUnderLoadEnv, set to 1, keeps the load running while a killed
// node restarts and rejoins: it reproduces the Iggy 0.9 problem
// TestIggyClusterPrimaryKilledTwice steps around (see there).
const restartUnderLoadEnv = "KIGGY_REALIGGY_RESTART_UNDER_LOAD"

// TestIggyClusterPrimaryKilledTwice kills the primary of a real 3-node
// Iggy cluster with SIGKILL under an acks=all produce load through kiggy
// (given all three nodes as seeds), waits for kiggy to follow the new
// primary and for acknowledgements to flow again, restarts the killed node,
// and, once it has rejoined, kills the new primary the same way. Everything
// is then read back through a fresh kiggy: no acknowledged record is lost
// or moved, no offset was acknowledged for two records (docs/IGGY.md
// "Iggy clusters": the primary confirms a batch once a quorum has it, so
// the loss of any one node loses nothing acknowledged), and no record of
// the idempotent producer is stored twice.
//
// The node killed is the primary of the topic's partitions: the node kiggy
// logged as confirming the topic's last append. That is kiggy_iggy_primary
// (the metadata primary) too unless the two planes' views have parted, as
// they can on a fresh cluster (docs/IGGY.md); both are logged.
//
// The load pauses while the killed node restarts and rejoins, and resumes
// before the next kill. Under load, Iggy 0.9 (cc269ef70) breaks the
// restarted replica: live prepares reach it while its journal repair is
// still walking, it logs `error="Cannot append message" failed to apply
// replicated partition operation`, and from then on drops every prepare of
// that partition as a gap ("dropping out-of-order prepare (gap)", also at
// op = commit + 1), so it never acknowledges one again. The cluster still
// commits with the other backup, but the second kill leaves the new
// primary without a quorum and every append stalls for good. Seen in 5 of
// 8 runs that restarted under load (2 with the second kill within 0.5 s
// of the restart, 2 once the node had reported its repair complete, 1
// stopped at the check below), in none of 4 with the pause. docs/IGGY.md
// records a related double-fault loss seen by hand.
// Set KIGGY_REALIGGY_RESTART_UNDER_LOAD=1 to reproduce it.
func TestIggyClusterPrimaryKilledTwice(t *testing.T) {
	iggyserver.Require(t)
	kiggyproc.Binary(t)
	start := time.Now()
	c := iggyserver.StartClusterT(t, 3)
	byAddr := map[string]*iggyserver.Node{}
	for _, n := range c.Nodes {
		byAddr[n.Addr] = n
	}
	// --log-level debug: kiggy logs every append Iggy confirmed ("iggy:
	// append confirmed", with the node that confirmed it): how the victim
	// is found, and the evidence a loss would be read against.
	k := startKiggy(t, "kiggy", append(iggyFlags(c.Seeds(), "written"), "--admin-addr", "127.0.0.1:0", "--log-level", "debug")...)
	keepLogs(t, []*kiggyProc{k}, c.Nodes)
	testtools.WaitFor(t, stepTimeout, "kiggy to name a primary", func() bool { return k.primary() != "" })
	kiggyUp := time.Since(start)
	createTopic(t, k.Addr, clusterTopic, clusterPartitions)
	l := startLoad(t, k.Addr, clusterTopic)
	testtools.WaitFor(t, stepTimeout, "acknowledgements before the first kill", func() bool { return l.acked() >= ackedBetween })
	t.Logf("cluster %s: kiggy up after %v, %d acknowledged after %v", c.Seeds(),
		kiggyUp.Round(time.Millisecond), ackedBetween, time.Since(start).Round(time.Millisecond))

	type kill struct {
		at                   time.Time
		victim, meta, after  string
		followed, rejoinedIn time.Duration
	}
	var kills []kill
	for round := 1; round <= 2; round++ {
		kl := kill{victim: k.confirmer(clusterTopic), meta: k.primary()}
		victim := byAddr[kl.victim]
		if victim == nil {
			t.Fatalf("kill %d: the node that confirmed the last append, %q, is none of the nodes %s", round, kl.victim, c.Seeds())
		}
		kl.at = time.Now()
		victim.Kill()
		testtools.WaitFor(t, stepTimeout, fmt.Sprintf("kill %d: kiggy to hold a primary other than %s", round, kl.victim), func() bool {
			kl.after = k.primary()
			return kl.after != "" && kl.after != kl.victim
		})
		kl.followed = time.Since(kl.at)
		atFollow := l.acked()
		testtools.WaitFor(t, stepTimeout, fmt.Sprintf("kill %d: acknowledgements after the failover", round), func() bool { return l.acked() >= atFollow+ackedBetween })
		if by := k.confirmer(clusterTopic); by == kl.victim || by == "" {
			t.Fatalf("kill %d: the last append was confirmed by %q, the killed node", round, by)
		}

		underLoad := os.Getenv(restartUnderLoadEnv) == "1"
		if !underLoad {
			l.pause(t)
		}
		mark := logSize(victim)
		restartAt := time.Now()
		if err := victim.Restart(); err != nil {
			t.Fatalf("kill %d: restart %s: %v", round, kl.victim, err)
		}
		var pending string
		if !testtools.EventuallyEvery(time.Until(restartAt.Add(stepTimeout)), 50*time.Millisecond, func() bool {
			var ok bool
			ok, pending = rejoined(logSince(victim, mark))
			return ok
		}) {
			t.Fatalf("kill %d: %s did not rejoin within %v of its restart (%s)", round, kl.victim, stepTimeout, pending)
		}
		kl.rejoinedIn = time.Since(restartAt)
		kills = append(kills, kl)
		l.resume()
		atRestart := l.acked()
		testtools.WaitFor(t, stepTimeout, fmt.Sprintf("kill %d: acknowledgements after the restart", round), func() bool { return l.acked() >= atRestart+ackedBetween })
		if b := logSince(victim, mark); strings.Contains(b, cannotAppend) {
			t.Fatalf("kill %d: the restarted %s logged %d × %s: Iggy's replica is broken and the next kill would stall the cluster (see the test's comment)",
				round, kl.victim, strings.Count(b, cannotAppend), cannotAppend)
		}
	}
	acks := l.finish(t)
	m, _ := k.Metrics()
	k.Stop(t)
	for i, kl := range kills {
		t.Logf("kill %d at %v of %s, the partitions' primary (kiggy_iggy_primary %s): kiggy held %s after %v; longest pause in acknowledgements %v; restarted, it rejoined in %v",
			i+1, kl.at.Sub(start).Round(time.Millisecond), kl.victim, kl.meta, kl.after, kl.followed.Round(time.Millisecond),
			longestPause(acks, kl.at, kl.at.Add(kl.followed)).Round(time.Millisecond), kl.rejoinedIn.Round(time.Millisecond))
	}
	t.Logf("kiggy_iggy_failovers_total %v, kiggy_iggy_primary_changes_total %v, kiggy_iggy_partition_reroutes_total %v",
		m["kiggy_iggy_failovers_total"], m["kiggy_iggy_primary_changes_total"], m["kiggy_iggy_partition_reroutes_total"])

	reader := startKiggy(t, "kiggy-read", iggyFlags(c.Seeds(), "written")...)
	keepLogs(t, []*kiggyProc{reader}, nil)
	v := check(acks, readBack(t, reader.Addr, clusterTopic, clusterPartitions))
	t.Logf("%v; failed records: %s (%v)", v, l.errors(), time.Since(start).Round(time.Millisecond))
	for _, e := range v.examples {
		t.Logf("  %s", e)
	}
	if v.lost != 0 || v.reused != 0 {
		t.Fatalf("primary kills lost acknowledged records: %v", v)
	}
	// The idempotent producer's resends are stored once: kiggy settles a
	// partition before it reads the tail for a write of unknown outcome
	// (docs/IGGY.md, "Writes whose outcome was unknown"); without that, 5
	// of 13 runs beside two busy loops stored some of them twice.
	if v.idempotentTwice != 0 {
		t.Fatalf("%d idempotent records stored twice across the primary kills: %v", v.idempotentTwice, v)
	}
}
