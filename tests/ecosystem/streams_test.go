package ecosystem

import (
	"encoding/binary"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/twmb/franz-go/pkg/kgo"
)

// words is the vocabulary of the word-count input; line i of a batch holds
// words chosen from it by i, so the expected counts are known.
var words = []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}

// wordLines returns n input lines starting at line number from, and adds
// their words to counts.
func wordLines(from, n int, counts map[string]int64) []string {
	var lines []string
	for i := from; i < from+n; i++ {
		var ws []string
		for j := 0; j <= i%4; j++ {
			w := words[(i*3+j*5)%len(words)]
			ws = append(ws, w)
			counts[w]++
		}
		// Upper case and punctuation: the app lower-cases and splits on \W+.
		lines = append(lines, strings.ToUpper(ws[0][:1])+ws[0][1:]+", "+strings.Join(ws[1:], " ")+".")
	}
	return lines
}

// streamsInternalConfigs are the topic configs Kafka Streams 4.4 asks for
// when it creates its internal topics (with replication.factor 1 and the
// defaults of everything else), as a Kafka 4.4 broker reports them as
// DYNAMIC_TOPIC_CONFIG.
var streamsInternalConfigs = map[string]map[string]string{
	"words-repartition": {
		"cleanup.policy":         "delete",
		"segment.bytes":          "52428800",
		"retention.ms":           "-1",
		"message.timestamp.type": "CreateTime",
	},
	"counts-changelog": {
		"cleanup.policy":         "compact",
		"message.timestamp.type": "CreateTime",
	},
}

// TestStreamsWordCount runs tests/java/src/kiggy/ecosystem/WordCount (Kafka
// Streams 4.4, a repartition through groupByKey after a map, a RocksDB count
// store with its changelog, at-least-once) over a 2-partition input topic:
// the counts on the output topic must equal the words produced; the two
// internal topics must exist with the configs Streams asked for; and a
// second run, with more input and a fresh state directory (so the store has
// to be restored from its changelog), must continue every word's count from
// where the first run ended — neither reprocessing the first input (the
// committed offsets) nor starting the counts again (the changelog).
func TestStreamsWordCount(t *testing.T) {
	t.Parallel()
	javaClasses(t) // compile (or skip) before starting a target
	forEachTarget(t, func(t *testing.T, tg target) {
		start := time.Now()
		app := uniqueName(t, "wc")
		in, out := app+"-in", app+"-out"
		createTopic(t, tg, in, 2, nil)
		createTopic(t, tg, out, 1, nil)

		want := map[string]int64{}
		produceLines(t, tg, in, wordLines(0, 60, want))
		first := maps.Clone(want)

		runWordCount(t, tg, in, out, app, want)
		checkInternalTopics(t, tg, app)
		end1 := len(readAll(t, tg, out))
		t.Logf("%s: first run done after %v (%d output records)", tg.name, time.Since(start).Round(time.Millisecond), end1)

		produceLines(t, tg, in, wordLines(60, 40, want))
		runWordCount(t, tg, in, out, app, want)

		// Every count the second run wrote continues the first run's:
		// word w's counts run first[w]+1, first[w]+2, ... want[w].
		got := readAll(t, tg, out)
		next := maps.Clone(first)
		for _, r := range got[end1:] {
			w, n := string(r.Key), decodeLong(t, r.Value)
			if n != next[w]+1 {
				t.Errorf("%s: second run: %q counted %d after %d (first run ended at %d): not resumed from the committed offsets and the changelog", tg.name, w, n, next[w], first[w])
			}
			next[w] = n
		}
		if !maps.Equal(next, want) {
			t.Errorf("%s: counts after the second run %v, want %v", tg.name, next, want)
		}
		t.Logf("%s: %v in all", tg.name, time.Since(start).Round(time.Millisecond))
	})
}

func produceLines(t testing.TB, tg target, topic string, lines []string) {
	t.Helper()
	recs := make([]*kgo.Record, len(lines))
	for i, l := range lines {
		// Keyless records spread over both input partitions.
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(l)}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := contextTimeout(time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("%s: producing to %s: %v", tg.name, topic, err)
	}
}

var streamsState = regexp.MustCompile(`^state \S+->(\S+)$`)

// runWordCount runs WordCount with a fresh state directory until the
// output topic holds want as every word's latest count, then stops it (its
// close commits) and checks it exited cleanly.
func runWordCount(t *testing.T, tg target, in, out, app string, want map[string]int64) {
	t.Helper()
	p := startJava(t, "kiggy.ecosystem.WordCount", tg.addr, in, out, app, t.TempDir())
	p.beforeFail = func() { skipIfConfigRefused(t, tg, p) }
	p.waitLine(regexp.MustCompile(`->RUNNING$`), 90*time.Second)
	var got map[string]int64
	testtools.EventuallyEvery(60*time.Second, 300*time.Millisecond, func() bool {
		got = latestCounts(t, readAll(t, tg, out))
		return maps.Equal(got, want) || p.exited()
	})
	if !maps.Equal(got, want) {
		p.closeStdin()
		_ = p.wait(40 * time.Second)
		skipIfConfigRefused(t, tg, p)
		t.Fatalf("%s: output counts %v, want %v (exited %v)\n%s", tg.name, got, want, p.exited(), p.describe())
	}
	p.closeStdin()
	if err := p.wait(45 * time.Second); err != nil {
		t.Fatalf("%s: WordCount exited with %v after its counts were right\n%s", tg.name, err, p.describe())
	}
	for _, l := range p.output() {
		if m := streamsState.FindStringSubmatch(l); m != nil && (m[1] == "ERROR" || m[1] == "PENDING_ERROR") {
			t.Errorf("%s: WordCount went to %s\n%s", tg.name, m[1], p.describe())
		}
	}
}

func latestCounts(t testing.TB, recs []*kgo.Record) map[string]int64 {
	got := map[string]int64{}
	for _, r := range recs {
		got[string(r.Key)] = decodeLong(t, r.Value)
	}
	return got
}

// decodeLong decodes a Serdes.Long value: 8 bytes, big-endian.
func decodeLong(t testing.TB, b []byte) int64 {
	t.Helper()
	if len(b) != 8 {
		t.Fatalf("output value %q is not an 8-byte long", b)
	}
	return int64(binary.BigEndian.Uint64(b))
}

// checkInternalTopics checks that Streams' repartition and changelog topics
// exist with 2 partitions (one per input partition) and the configs it asked
// for.
func checkInternalTopics(t *testing.T, tg target, app string) {
	t.Helper()
	ctx, cancel := contextTimeout(30 * time.Second)
	defer cancel()
	_, adm := admin(t, tg)
	names := slices.Sorted(maps.Keys(streamsInternalConfigs))
	full := make([]string, len(names))
	for i, n := range names {
		full[i] = app + "-" + n
	}
	md, err := adm.Metadata(ctx, full...)
	if err != nil {
		t.Fatalf("%s: metadata of the internal topics: %v", tg.name, err)
	}
	for i, n := range names {
		topic := full[i]
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil {
			t.Errorf("%s: internal topic %s: found %v, %v", tg.name, topic, ok, td.Err)
			continue
		}
		if len(td.Partitions) != 2 {
			t.Errorf("%s: internal topic %s has %d partitions, want 2", tg.name, topic, len(td.Partitions))
		}
		cs := topicConfigs(t, tg, topic)
		t.Logf("%s: %s configs set: %s", tg.name, topic, showConfigs(cs))
		for k, v := range streamsInternalConfigs[n] {
			if c, ok := cs[k]; !ok || c.MaybeValue() != v {
				t.Errorf("%s: internal topic %s: %s = %q (found %v), want %q as Streams asked", tg.name, topic, k, c.MaybeValue(), ok, v)
			}
		}
	}
}
