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
// restart (an ordinary rebalance, revoked then assigned, is logged), every
// acknowledged record is consumed, and the group commits every partition's
// end. Before kiggy stored classic groups, both classic members lost
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
	a := startGroupProc(ctx, t, classes, tg.Addr(), topic, group, assignors)
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
			// until it. On Kafka the Java leader asks for one by itself in
			// about half the runs ("cached metadata has changed" in the
			// broker's log: a metadata refresh during its 12-s unclean
			// restart saw partitions without a leader). On kiggy seen once
			// in CI and once in three runs on a loaded machine, cause not
			// yet found. Logged, not failed.
			t.Logf("%s, a rebalance after the restart: %q", tg.Name(), l)
		}
	}
	a.quit()
	checkGroupEvents(t, a.snapshot(), partitions, sent)
}
