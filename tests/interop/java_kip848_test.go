package interop

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestJavaConsumerGroupKIP848 runs Java 4.x KafkaConsumers with
// group.protocol=consumer (KIP-848; tests/java/src/GroupConsumers.java) on a
// 6-partition topic while franz-go produces steadily, the same on kiggy and
// on Kafka 4.4: three members in one JVM share the partitions; a fourth
// joins from a second JVM; that JVM is killed with SIGKILL and its
// partitions come back after the session timeout; two partitions are added
// to the topic and assigned. With the uniform assignor the members that
// stay never lose their whole assignment (the protocol is incremental: no
// member stops for another's rebalance); every record is consumed, none after the group committed
// past it; at the end the group has committed every partition's end. The
// time each partition spent without an owner is logged per step.
func TestJavaConsumerGroupKIP848(t *testing.T) {
	tg := newTarget(t)
	classes := compileJava(t, "GroupConsumers.java")
	for _, assignor := range []string{"uniform", "range"} {
		t.Run(assignor, func(t *testing.T) { javaKIP848Group(t, tg, classes, assignor) })
	}
}

func javaKIP848Group(t *testing.T, tg target, classes, assignor string) {
	const partitions, grown = 6, 8
	topic := topicName(t)
	group := "kip848-" + topic
	topicCommandCreate(t, tg, topic, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	mode := "consumer:" + assignor
	a := startGroupProc(ctx, t, classes, tg.Addr(), topic, group, mode)
	var b *groupProc
	defer func() {
		if t.Failed() {
			t.Logf("JVM A:\n%s", a.tail())
			if b != nil {
				t.Logf("JVM B:\n%s", b.tail())
			}
		}
	}()
	load := startGroupLoad(t, tg.Addr(), topic)
	const step = 2 * time.Minute
	consumeAWhile := func() { load.consumeAWhile(1000) }
	steps := map[string]time.Time{}
	mark := func(name string) { steps[name] = time.Now() }

	mark("start")
	for _, m := range []string{"m1", "m2", "m3"} {
		a.send("join " + m)
	}
	a.waitUntil(step, "m1, m2, m3 sharing the partitions", settled(partitions, "m1", "m2", "m3"))
	consumeAWhile()

	mark("m4 joins")
	b = startGroupProc(ctx, t, classes, tg.Addr(), topic, group, mode)
	b.send("join m4")
	testtools.WaitFor(t, step, "m1..m4 sharing the partitions across both JVMs", func() bool {
		return settled(partitions, "m1", "m2", "m3", "m4")(mergeLines(a, b))
	})
	consumeAWhile()

	mark("m4 killed")
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = b.wait()
	killedAt := time.Now()
	a.waitUntil(step, "m1, m2, m3 taking m4's partitions after its session timed out", settled(partitions, "m1", "m2", "m3"))
	t.Logf("%s: m4's partitions reassigned %v after SIGKILL", tg.Name(), time.Since(killedAt).Round(10*time.Millisecond))
	consumeAWhile()

	mark("partitions added")
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreatePartitions(ctx, grown-partitions, topic); err != nil {
		t.Fatal(err)
	}
	a.waitUntil(step, "m1, m2, m3 sharing the added partitions", settled(grown, "m1", "m2", "m3"))
	// Records in the new partitions, acknowledged into what was sent.
	for p := int32(partitions); p < grown; p++ {
		for i := range 50 {
			r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "new-%d-%d", p, i)}
			res := cl.ProduceSync(ctx, r)
			load.sp.acked(r, res.FirstErr())
		}
	}
	consumeAWhile()

	sent := load.finish(tg, group, topic, grown, a)
	// The members' own closes below revoke everything: judge stops on the
	// run before them. Range is not sticky (Kafka's server-side
	// RangeAssignor neither): a member may have to revoke all it has before
	// its new range is free, on Kafka too; uniform never does that.
	if assignor == "uniform" {
		checkNeverEmptied(t, a.snapshot(), "m1", "m2", "m3")
	}
	a.quit()
	checkGroupEvents(t, mergeLines(a, b), grown, sent)
	logUnowned(t, tg.Name(), a, b, killedAt, steps)
}

// mergeLines merges the event lines of several GroupConsumers processes in
// the order they arrived (each process's own order kept).
func mergeLines(procs ...*groupProc) []string {
	type ev struct {
		at   time.Time
		line string
		proc int
		i    int
	}
	var evs []ev
	for pi, g := range procs {
		if g == nil {
			continue
		}
		g.mu.Lock()
		for i, l := range g.lines {
			evs = append(evs, ev{g.at[i], l, pi, i})
		}
		g.mu.Unlock()
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].proc == evs[j].proc {
			return evs[i].i < evs[j].i
		}
		return evs[i].at.Before(evs[j].at)
	})
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.line
	}
	return out
}

// checkNeverEmptied fails when one of members, once assigned, ever owned
// nothing while it stayed in the group: under the consumer protocol another
// member's join or death moves single partitions, it does not stop
// everyone. A member's own close (revoked, then left) is not counted.
func checkNeverEmptied(t *testing.T, lines []string, members ...string) {
	t.Helper()
	own := map[string]map[int32]bool{}
	emptied := map[string]int{} // member → event that emptied it, pending its next event
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) < 2 || !slices.Contains(members, f[1]) {
			continue
		}
		m := f[1]
		if at, ok := emptied[m]; ok {
			delete(emptied, m)
			if f[0] != "left" {
				t.Errorf("event %d: %s owned no partition after %q (a stop-the-world rebalance)", at, m, lines[at])
			}
		}
		switch f[0] {
		case "assigned", "revoked", "lost":
			if len(f) < 3 || f[2] == "" {
				continue
			}
			if own[m] == nil {
				own[m] = map[int32]bool{}
			}
			for p := range strings.SplitSeq(f[2], ",") {
				n, _ := strconv.Atoi(p)
				if f[0] == "assigned" {
					own[m][int32(n)] = true
				} else {
					delete(own[m], int32(n))
				}
			}
			if len(own[m]) == 0 {
				emptied[m] = i
			}
		}
	}
}

// logUnowned logs, per step, the longest time a partition spent without an
// owner: from its revocation (or m4's SIGKILL) to its next assignment.
func logUnowned(t *testing.T, target string, a, b *groupProc, killedAt time.Time, steps map[string]time.Time) {
	type ev struct {
		at   time.Time
		line string
	}
	var evs []ev
	for _, g := range []*groupProc{a, b} {
		g.mu.Lock()
		for i, l := range g.lines {
			evs = append(evs, ev{g.at[i], l})
		}
		g.mu.Unlock()
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	since := map[int32]time.Time{}
	worst := map[string]time.Duration{}
	orphans := map[int32]bool{} // what m4 owned when it was killed
	for p := range assignments(b.snapshot())["m4"] {
		orphans[p] = true
	}
	stepOf := func(at time.Time) string {
		name, best := "", time.Time{}
		for n, s := range steps {
			if !s.After(at) && s.After(best) {
				name, best = n, s
			}
		}
		return name
	}
	for _, e := range evs {
		f := strings.Split(e.line, "\t")
		if len(f) < 3 || f[2] == "" || (f[0] != "assigned" && f[0] != "revoked" && f[0] != "lost") {
			continue
		}
		for p := range strings.SplitSeq(f[2], ",") {
			n, _ := strconv.Atoi(p)
			pp := int32(n)
			switch f[0] {
			case "assigned":
				if s, ok := since[pp]; ok {
					if d := e.at.Sub(s); d > worst[stepOf(s)] {
						worst[stepOf(s)] = d
					}
					delete(since, pp)
				} else if orphans[pp] && e.at.After(killedAt) {
					// m4 owned it until the kill: unowned since then.
					delete(orphans, pp)
					if d := e.at.Sub(killedAt); d > worst["m4 killed"] {
						worst["m4 killed"] = d
					}
				}
			default:
				since[pp] = e.at
			}
		}
	}
	var parts []string
	for _, s := range []string{"m4 joins", "m4 killed", "partitions added"} {
		parts = append(parts, fmt.Sprintf("%s %v", s, worst[s].Round(time.Millisecond)))
	}
	t.Logf("%s: longest time a partition had no owner: %s", target, strings.Join(parts, ", "))
}
