package interop

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestJavaClassicGroupRidesRestart: two Java KafkaConsumers in a classic
// group (range, tests/java/src/GroupConsumers.java) consume while franz-go
// produces; the gateway, on Iggy, is stopped and started again on the same
// address. The restarted gateway restores the group as stored after its last
// rebalance (docs/design/consumer-groups.md §6), so the consumers find their
// coordinator again and heartbeat on at their generation: no partition is
// revoked, lost or assigned after the restart, every acknowledged record is
// consumed, and the group commits every partition's end. Before groups
// were stored, the restarted gateway answered UNKNOWN_MEMBER_ID and both
// members revoked everything and rejoined. kiggy only: it restarts the
// gateway.
func TestJavaClassicGroupRidesRestart(t *testing.T) {
	if v := os.Getenv(TargetEnv); v != "" && v != "kiggy" {
		t.Skipf("%s=%s: this test restarts the kiggy gateway", TargetEnv, v)
	}
	const partitions = 4
	classes := compileJava(t, "GroupConsumers.java")
	opts := kiggytest.Options{Iggy: true, Bridge: bridge.Config{Group: consumerGroupTimeouts}}
	first := kiggytest.Start(t, opts)
	topic := topicName(t)
	group := "restart-" + topic
	first.CreateTopic(t, topic, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a := startGroupProc(ctx, t, classes, first.Addr, topic, group, "org.apache.kafka.clients.consumer.RangeAssignor")
	defer func() {
		if t.Failed() {
			t.Logf("JVM:\n%s", a.tail())
		}
	}()
	load := startGroupLoad(t, first.Addr, topic)
	a.send("join m1")
	a.send("join m2")
	a.waitUntil(2*time.Minute, "m1, m2 sharing the partitions", settled(partitions, "m1", "m2"))
	load.consumeAWhile(500)
	time.Sleep(500 * time.Millisecond) // the group is stored within 100 ms of its rebalance
	mark := len(a.snapshot())

	first.Stop()
	restartedAt := time.Now()
	second := kiggytest.Start(t, first.SameIggy(kiggytest.Options{ListenAddr: first.Addr, Bridge: opts.Bridge}))
	t.Logf("gateway restarted in %v", time.Since(restartedAt).Round(time.Millisecond))
	load.consumeAWhile(1000)
	time.Sleep(7 * time.Second) // past two of the consumers' heartbeat intervals (3 s)
	sent := load.finish(&kiggyTarget{g: second}, group, topic, partitions, a)
	for _, l := range a.snapshot()[mark:] {
		if ev, _, _ := strings.Cut(l, "\t"); ev == "assigned" || ev == "revoked" || ev == "lost" || ev == "E" {
			t.Errorf("after the restart: %q", l)
		}
	}
	a.quit()
	checkGroupEvents(t, a.snapshot(), partitions, sent)
}
