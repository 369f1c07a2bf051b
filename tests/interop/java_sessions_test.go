package interop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestJavaFetchSessions: a Java 4.x KafkaConsumer (tests/java/src/SessionConsumer.java)
// assigned 100, then 200, then 50 partitions of a 200-partition topic reads
// every record exactly once and nothing of the partitions it dropped. Its
// fetcher uses incremental fetch sessions (KIP-227) when the broker grants
// them: partitions are added to and forgotten from the session as the
// assignment changes (docs/design/kafka-protocol.md §7.4). On kiggy the
// session and its incremental Fetches are checked in the metrics; on a real
// Kafka 4.4 broker (KIGGY_INTEROP_TARGET=kafka) the same test proves itself.
func TestJavaFetchSessions(t *testing.T) {
	const parts, per = 200, 2
	tgt := newTarget(t)
	classes := compileJava(t, "SessionConsumer.java")
	topic := fmt.Sprintf("sessions-%d", time.Now().UnixNano())
	tgt.CreateTopic(t, topic, parts)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tgt.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for p := range int32(parts) {
		for i := range per {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v-%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	r := runJava(t, 3*time.Minute, nil, classes, "SessionConsumer", tgt.Addr(), topic, strconv.Itoa(parts), strconv.Itoa(per))
	if r.code != 0 {
		t.Fatalf("SessionConsumer on %s:\n%s", tgt.Name(), r)
	}
	// want[phase] is every "partition offset value" the phase must read.
	want := map[string]map[string]bool{"one": {}, "two": {}, "three": {}}
	for p := range parts {
		phase := "one"
		if p >= parts/2 {
			phase = "two"
		}
		for i := range per {
			want[phase][fmt.Sprintf("%d %d v-%d-%d", p, i, p, i)] = true
		}
		if p >= 3*parts/4 {
			want["three"][fmt.Sprintf("%d %d late-%d", p, per, p)] = true
		}
	}
	seen := map[string]bool{}
	for line := range strings.Lines(r.stdout) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "REC ")
		if !ok {
			continue
		}
		phase, rec, _ := strings.Cut(rest, " ")
		if !want[phase][rec] {
			t.Fatalf("%s: phase %s read %q, not one of its records", tgt.Name(), phase, rec)
		}
		if seen[rec] {
			t.Fatalf("%s: %q read twice", tgt.Name(), rec)
		}
		seen[rec] = true
	}
	for phase, recs := range want {
		for rec := range recs {
			if !seen[rec] {
				t.Fatalf("%s: phase %s never read %q", tgt.Name(), phase, rec)
			}
		}
	}
	if k, ok := tgt.(*kiggyTarget); ok {
		m := k.g.Metrics()
		if metricValue(t, m, "kiggy_fetch_sessions_created_total") < 1 || metricValue(t, m, "kiggy_fetch_session_incremental_total") < 10 {
			t.Fatalf("the Java consumer used no fetch session on kiggy:\n%s", m)
		}
		t.Logf("kiggy: %v sessions created, %v incremental Fetches", metricValue(t, m, "kiggy_fetch_sessions_created_total"), metricValue(t, m, "kiggy_fetch_session_incremental_total"))
	}
	t.Logf("%s: %d records read in three assignments", tgt.Name(), len(seen))
}

// metricValue returns the value of the unlabelled series name in a
// Prometheus text exposition.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in the metrics", name)
	return 0
}
