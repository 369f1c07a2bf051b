package interop

import (
	"context"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestJavaConsumerGroupMigration upgrades a running classic group of Java
// consumers (cooperative-sticky) to the consumer protocol of KIP-848 member
// by member while franz-go produces, then downgrades it again, the same on
// kiggy and on Kafka 4.4 (whose migration policy is bidirectional by
// default): the first consumer-protocol member converts the group online,
// classic and consumer members share the partitions, and when the last
// consumer-protocol member leaves the group is classic again. Every record
// is consumed, none after the group committed past it, and the group ends
// having committed every partition's end.
func TestJavaConsumerGroupMigration(t *testing.T) {
	tg := newTarget(t)
	classes := compileJava(t, "GroupConsumers.java")
	const partitions = 6
	topic := topicName(t)
	group := "migrate-" + topic
	topicCommandCreate(t, tg, topic, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	classic := startGroupProc(ctx, t, classes, tg.Addr(), topic, group, "org.apache.kafka.clients.consumer.CooperativeStickyAssignor")
	consumer := startGroupProc(ctx, t, classes, tg.Addr(), topic, group, "consumer")
	defer func() {
		if t.Failed() {
			t.Logf("classic JVM:\n%s", classic.tail())
			t.Logf("consumer JVM:\n%s", consumer.tail())
		}
	}()
	load := startGroupLoad(t, tg.Addr(), topic)
	const step = 2 * time.Minute
	wait := func(what string, members ...string) {
		t.Helper()
		start := time.Now()
		testtools.WaitFor(t, step, what, func() bool {
			return settled(partitions, members...)(mergeLines(classic, consumer))
		})
		t.Logf("%s: %s after %v", tg.Name(), what, time.Since(start).Round(10*time.Millisecond))
		load.consumeAWhile(500)
	}
	for _, m := range []string{"m1", "m2", "m3"} {
		classic.send("join " + m)
	}
	wait("classic m1, m2, m3", "m1", "m2", "m3")
	// The upgrade, member by member.
	consumer.send("join c1")
	wait("the group upgraded by c1", "m1", "m2", "m3", "c1")
	classic.send("leave m1")
	consumer.send("join c2")
	wait("m2, m3 classic beside c1, c2", "m2", "m3", "c1", "c2")
	classic.send("leave m2")
	classic.send("leave m3")
	consumer.send("join c3")
	wait("c1, c2, c3 on the consumer protocol", "c1", "c2", "c3")
	// And back: classic members join the consumer group, then the last
	// consumer-protocol member's leave makes it a classic group again.
	classic.send("join m4")
	classic.send("join m5")
	wait("m4, m5 classic beside c1, c2, c3", "m4", "m5", "c1", "c2", "c3")
	consumer.send("leave c1")
	consumer.send("leave c2")
	consumer.send("leave c3")
	wait("the group downgraded to m4, m5", "m4", "m5")

	sent := load.finish(tg, group, topic, partitions, classic)
	classic.quit()
	consumer.quit()
	checkGroupEvents(t, mergeLines(classic, consumer), partitions, sent)
}
