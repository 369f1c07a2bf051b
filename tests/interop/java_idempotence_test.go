package interop

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// transactionsCommand is kafka-transactions.
const transactionsCommand = "org.apache.kafka.tools.TransactionsCommand"

// TestConsoleProducerLostReplies: kiggy on the Iggy backend, whose server
// stores some sends but loses their replies, so those Produce requests time
// out (the console producer's 1.5 s request.timeout.ms) although their
// records are stored. The Java producer resends them with the same
// sequences; kiggy re-reads the partition tail and answers the resends with
// the original offsets. Exactly the records sent come back, in order. Then
// kafka-transactions --describe-producers shows the producer's state.
// kiggy only: the faults are injected into iggytest.
func TestConsoleProducerLostReplies(t *testing.T) {
	testtools.JavaClasspath(t)
	g := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyModel: true})
	tg := &kiggyTarget{g: g}
	topic := topicName(t)
	tg.CreateTopic(t, topic, 1)
	// SendMessages (160): the first three are applied, their replies lost.
	g.Iggy.InjectFault(iggytest.Fault{Op: 160, Count: 3, Drop: true, Apply: true})
	var in bytes.Buffer
	var want []kiggytest.Record
	for i := range 300 {
		v := fmt.Appendf(nil, "lost-%04d%s", i, filler)
		in.Write(v)
		in.WriteByte('\n')
		want = append(want, kiggytest.Record{Value: v})
	}
	consoleProduce(t, tg, topic, in.Bytes(), want)
	m := g.Metrics()
	dup := regexp.MustCompile(`(?m)^kiggy_idempotent_duplicate_batches_total ([1-9]\d*)$`).FindStringSubmatch(m)
	if dup == nil {
		t.Fatalf("no resend was deduplicated: the lost replies did not make the producer resend\n%s", m)
	}
	t.Logf("%s batches deduplicated", dup[1])

	// kafka-transactions describe-producers: one producer, epoch 0, last
	// sequence 299, no transaction.
	d := adminTool(t, tg, transactionsCommand, "describe-producers", "--topic", topic, "--partition", "0")
	row := regexp.MustCompile(`(?m)^(\d+)\s+0\s+-1?\s+299\s+\d+\s+None\s*$`)
	if d.code != 0 || !strings.Contains(d.stdout, "ProducerId") || !row.MatchString(d.stdout) {
		t.Fatalf("kafka-transactions describe-producers: want exit 0 and one producer at epoch 0, last sequence 299:\n%s", d)
	}
	t.Logf("describe-producers:\n%s", d.stdout)
}
