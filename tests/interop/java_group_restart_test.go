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

// TestJavaClassicGroupRidesRestart: two Java KafkaConsumers in a classic
// group (range, tests/java/src/GroupConsumers.java) consume while franz-go
// produces; the server is restarted on the same address: kiggy on Iggy
// stopped and started again, a Kafka 4.4 broker of its own killed with
// SIGKILL and started again over its data. Kafka loads the group from
// __consumer_offsets; kiggy restores it as stored after its last rebalance
// (docs/design/consumer-groups.md §6). Either way the consumers find their
// coordinator again and heartbeat on at their generation: no partition is
// revoked, lost or assigned after the restart, every acknowledged record is
// consumed, and the group commits every partition's end. Before kiggy
// stored groups, both members lost everything and were reassigned it.
// KIGGY_INTEROP_TARGET picks one target, as for the other tests.
func TestJavaClassicGroupRidesRestart(t *testing.T) {
	classes := compileJava(t, "GroupConsumers.java")
	v := os.Getenv(TargetEnv)
	if v == "" || v == "kiggy" {
		t.Run("kiggy", func(t *testing.T) {
			opts := kiggytest.Options{Iggy: true, Bridge: bridge.Config{Group: consumerGroupTimeouts}}
			g := kiggytest.Start(t, opts)
			tg := &kiggyTarget{g: g}
			classicGroupThroughRestart(t, classes, tg, func() target {
				g.Stop()
				return &kiggyTarget{g: kiggytest.Start(t, g.SameIggy(kiggytest.Options{ListenAddr: g.Addr, Bridge: opts.Bridge}))}
			})
		})
	}
	if v == "" || v == "kafka" {
		t.Run("kafka", func(t *testing.T) {
			b := kafkatest.StartConfig(t, kafkatest.Config{})
			tg := &kafkaTarget{b: b}
			classicGroupThroughRestart(t, classes, tg, func() target {
				if err := b.Kill9AndRestart(); err != nil {
					t.Fatal(err)
				}
				return tg
			})
		})
	}
}

// classicGroupThroughRestart runs TestJavaClassicGroupRidesRestart on tg;
// restart restarts it on the same address and returns it.
func classicGroupThroughRestart(t *testing.T, classes string, tg target, restart func() target) {
	const partitions = 4
	topic := topicName(t)
	group := "restart-" + topic
	tg.CreateTopic(t, topic, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a := startGroupProc(ctx, t, classes, tg.Addr(), topic, group, "org.apache.kafka.clients.consumer.RangeAssignor")
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
	time.Sleep(500 * time.Millisecond) // kiggy stores the group within 100 ms of its rebalance
	mark := len(a.snapshot())

	restartedAt := time.Now()
	tg = restart()
	t.Logf("%s restarted in %v", tg.Name(), time.Since(restartedAt).Round(time.Millisecond))
	load.consumeAWhile(1000)
	time.Sleep(7 * time.Second) // past two of the consumers' heartbeat intervals (3 s)
	sent := load.finish(tg, group, topic, partitions, a)
	for _, l := range a.snapshot()[mark:] {
		if ev, _, _ := strings.Cut(l, "\t"); ev == "assigned" || ev == "revoked" || ev == "lost" || ev == "E" {
			t.Errorf("after the restart: %q", l)
		}
	}
	a.quit()
	checkGroupEvents(t, a.snapshot(), partitions, sent)
}
