package interop

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestJavaGroupRidesRestart: two Java KafkaConsumers in a group
// (tests/java/src/GroupConsumers.java), classic (range) or of the consumer
// protocol (KIP-848, uniform), consume while franz-go produces; the server
// is restarted on the same address: kiggy on Iggy stopped and started
// again, a Kafka 4.4 broker of its own killed with SIGKILL and started again
// over its data. Kafka loads the group from __consumer_offsets; kiggy
// restores it from its system store (docs/design/consumer-groups.md §6).
// Either way the consumers find their coordinator again and go on at their
// generation or epoch: no partition is lost and no commit fails after the
// restart, every acknowledged record is consumed, and the group commits
// every partition's end. An ordinary classic rebalance (revoked, then the
// same partitions assigned) passes only with the cause the Java client logs
// for the one it asks for itself after a rebootstrap (below). Before kiggy stored classic groups, both classic members lost
// everything and were reassigned it, and commits in flight failed
// (CommitFailedException: "the group has already rebalanced"), their records
// read again. KIGGY_INTEROP_TARGET picks the target, as for the other tests
// (kiggy when unset).
func TestJavaGroupRidesRestart(t *testing.T) {
	classes := compileJava(t, "GroupConsumers.java")
	for _, p := range []struct{ name, assignors string }{
		{"classic", "org.apache.kafka.clients.consumer.RangeAssignor"},
		{"consumer", "consumer:uniform"},
	} {
		t.Run(p.name, func(t *testing.T) { javaGroupRidesRestart(t, classes, p.assignors) })
	}
}

func javaGroupRidesRestart(t *testing.T, classes, assignors string) {
	v := os.Getenv(TargetEnv)
	if v == "" || v == "kiggy" {
		t.Run("kiggy", func(t *testing.T) {
			opts := kiggytest.Options{Iggy: true, Bridge: bridge.Config{Group: consumerGroupTimeouts}}
			g := kiggytest.Start(t, opts)
			tg := &kiggyTarget{g: g}
			groupThroughRestart(t, classes, assignors, tg, func() target {
				g.Stop()
				return &kiggyTarget{g: kiggytest.Start(t, g.SameIggy(kiggytest.Options{ListenAddr: g.Addr, Bridge: opts.Bridge}))}
			})
		})
	}
	if v == "kafka" {
		t.Run("kafka", func(t *testing.T) {
			b := kafkatest.StartConfig(t, kafkatest.Config{})
			tg := &kafkaTarget{b: b}
			groupThroughRestart(t, classes, assignors, tg, func() target {
				if err := b.Kill9AndRestart(); err != nil {
					t.Fatal(err)
				}
				return tg
			})
		})
	}
}

// groupThroughRestart runs TestJavaGroupRidesRestart on tg with the
// GroupConsumers assignors argument; restart restarts tg on the same
// address and returns it.
func groupThroughRestart(t *testing.T, classes, assignors string, tg target, restart func() target) {
	const partitions = 4
	topic := topicName(t)
	group := "restart-" + topic
	tg.CreateTopic(t, topic, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The client's metadata and coordinator logs name why a member rejoins.
	a := startGroupProc(ctx, t, classes, tg.Addr(), topic, group, assignors,
		"-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.Metadata=info",
		"-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.consumer.internals.ConsumerCoordinator=info")
	defer func() {
		if t.Failed() {
			t.Logf("JVM:\n%s", a.tail())
		}
	}()
	load := startGroupLoad(t, tg.Addr(), topic)
	a.send("join m1")
	a.send("join m2")
	a.waitUntil(2*time.Minute, "m1, m2 sharing the partitions", settled(partitions, "m1", "m2"))
	load.consumeAWhile(500)
	time.Sleep(500 * time.Millisecond) // the members' heartbeats acknowledging their assignments reach the coordinator, which stores each change before answering it
	mark := len(a.snapshot())

	restartedAt := time.Now()
	tg = restart()
	t.Logf("%s restarted in %v", tg.Name(), time.Since(restartedAt).Round(time.Millisecond))
	load.consumeAWhile(1000)
	time.Sleep(7 * time.Second) // past two of the consumers' heartbeat intervals (3 s)
	sent := load.finish(tg, group, topic, partitions, a)
	rebalanced := false
	for _, l := range a.snapshot()[mark:] {
		ev, _, _ := strings.Cut(l, "\t")
		switch {
		case ev == "E":
			t.Errorf("after the restart: %q", l)
		case ev == "lost" || ev == "F":
			// A partition lost (the member's generation refused: the group
			// was not restored) or a commit failed (CommitFailedException).
			// On Kafka too: its coordinator reloads the group.
			t.Errorf("after the restart: %q", l)
		case ev == "revoked" || ev == "assigned":
			// An ordinary rebalance, the members keeping their generation
			// until it: checked below.
			rebalanced = true
			t.Logf("%s, a rebalance after the restart: %q", tg.Name(), l)
		}
	}
	a.quit()
	if rebalanced && !strings.HasPrefix(assignors, "consumer:") {
		// A classic leader asks for one itself when, while its only broker
		// refused connections, its client rebootstrapped (KIP-899's default
		// metadata.recovery.strategy) and emptied its metadata cache, and
		// one poll copied the emptied cache before the coordinator came
		// back: the topic then has no partitions in that copy, and
		// rejoinNeededOrPending finds the "cached metadata has changed".
		// Seen on Kafka 4.4 in 3 of 5 runs, on kiggy in 1 of 15 on a loaded
		// machine. Any other cause fails.
		log := a.stderr.String()
		if !strings.Contains(log, "Rebootstrapping") || !strings.Contains(log, "Request joining group due to: cached metadata has changed") {
			t.Errorf("%s: a classic rebalance after the restart without the client's rebootstrap; the Java log:\n%s", tg.Name(), tail(log))
		}
	}
	checkGroupEvents(t, a.snapshot(), partitions, sent)
}
