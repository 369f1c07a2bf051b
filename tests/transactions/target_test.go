package transactions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TargetEnv narrows the targets: unset runs every test against both kiggy
// and Kafka; "kiggy" or "kafka" runs only that one.
const TargetEnv = "KIGGY_TXN_TARGET"

// target is a system under test: its name ("kiggy" or "kafka") and the
// bootstrap its clients connect to: one address, or several separated by
// commas (a kiggy cluster), as Java's bootstrap.servers takes them.
type target struct {
	name string
	addr string
}

// seeds returns the bootstrap's addresses, for kgo.SeedBrokers.
func (tg target) seeds() []string { return strings.Split(tg.addr, ",") }

// targets returns the target names TargetEnv selects, or fails t.
func targets(t *testing.T) []string {
	t.Helper()
	switch only := os.Getenv(TargetEnv); only {
	case "":
		return []string{"kiggy", "kafka"}
	case "kiggy", "kafka":
		return []string{only}
	default:
		t.Fatalf("%s=%q: want kiggy, kafka or nothing (both)", TargetEnv, only)
		return nil
	}
}

// forEachTarget runs fn as a parallel subtest against each target: a fresh
// in-process kiggy gateway (embedded log) per subtest, and the run's shared
// Kafka broker.
func forEachTarget(t *testing.T, fn func(t *testing.T, tg target)) {
	t.Helper()
	for _, name := range targets(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var tg target
			if name == "kiggy" {
				g := kiggytest.Start(t, kiggytest.Options{})
				if err := testtools.ProbeKafka(g.Addr, 10*time.Second); err != nil {
					t.Fatalf("kiggy gateway at %s is not answering: %v", g.Addr, err)
				}
				tg = target{name: "kiggy", addr: g.Addr}
			} else {
				tg = target{name: "kafka", addr: sharedKafka(t).Addr}
			}
			fn(t, tg)
		})
	}
}

// kafkaProps are the broker settings of every Kafka the suite starts: a
// single node's transaction state log, and the coordinator checking for
// timed-out transactions every second instead of every ten (TestTxnTimeout).
var kafkaProps = map[string]string{
	"offsets.topic.num.partitions":                                "1",
	"transaction.state.log.num.partitions":                        "1",
	"transaction.state.log.replication.factor":                    "1",
	"transaction.state.log.min.isr":                               "1",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}

// sharedKafka starts the run's Kafka broker on first use; TestMain stops it.
func sharedKafka(t testing.TB) *kafkatest.Broker {
	t.Helper()
	return kafkatest.Shared(t, kafkatest.Config{Heap: "512m", Props: kafkaProps})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := kafkatest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "transactions:", err)
	}
	for _, f := range cleanups {
		f()
	}
	kiggyproc.RemoveBinary()
	os.Exit(code)
}

// cleanups run after every test (TestMain).
var cleanups []func()

// uniqueName returns a name unique to this run (topics, groups and
// transactional ids on the shared Kafka broker), derived from the test name.
func uniqueName(t testing.TB, prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return prefix + "-" + strings.Trim(name, "-") + "-" + hex.EncodeToString(b[:])
}

// client returns a franz-go client of tg with opts, closed when t ends.
func client(t testing.TB, tg target, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tg.seeds()...)}, opts...)...)
	if err != nil {
		t.Fatalf("%s: %v", tg.name, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// admin returns an admin client of tg, closed when t ends.
func admin(t testing.TB, tg target) *kadm.Client {
	t.Helper()
	return kadm.NewClient(client(t, tg))
}

// createTopic creates a topic with replication factor 1 and waits until
// every partition answers ListOffsets.
func createTopic(t testing.TB, tg target, name string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := admin(t, tg)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, name); err != nil {
		t.Fatalf("%s: creating topic %s: %v", tg.name, name, err)
	}
	for {
		ends, err := adm.ListEndOffsets(ctx, name)
		ready := err == nil
		for p := range partitions {
			if o, ok := ends.Lookup(name, p); !ok || o.Err != nil {
				ready = false
			}
		}
		if ready {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: topic %s not ready after a minute (%v)", tg.name, name, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ends are a partition's two end offsets: the last stable offset
// (ListOffsets latest with read_committed) and the high watermark (with
// read_uncommitted).
type ends struct{ lso, hw int64 }

func (e ends) String() string { return fmt.Sprintf("LSO %d, HW %d", e.lso, e.hw) }

// endOffsets returns every partition's ends.
func endOffsets(t testing.TB, tg target, topic string) map[int32]ends {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	hw, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = hw.Error()
	}
	if err != nil {
		t.Fatalf("%s: ListOffsets (read_uncommitted) of %s: %v", tg.name, topic, err)
	}
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		t.Fatalf("%s: ListOffsets (read_committed) of %s: %v", tg.name, topic, err)
	}
	out := map[int32]ends{}
	hw.Each(func(o kadm.ListedOffset) {
		e := out[o.Partition]
		e.hw = o.Offset
		out[o.Partition] = e
	})
	lso.Each(func(o kadm.ListedOffset) {
		e := out[o.Partition]
		e.lso = o.Offset
		out[o.Partition] = e
	})
	return out
}

// sentinelPrefix begins the values of the records readAll writes to mark
// the end of a topic.
const sentinelPrefix = "~sentinel~"

// readAll reads every record of topic with the given isolation level, from
// the start: it first writes a non-transactional sentinel record (keyed,
// for a compacted topic) to each partition, then consumes until it has seen that sentinel in every
// partition (a read_committed consumer sees it only once every transaction
// before it has ended) and returns the records before the sentinels, in
// offset order within a partition, sentinels of earlier calls excluded.
// extra adds client options (kgo.KeepControlRecords).
// A consumer cannot otherwise tell where a read_committed topic ends: the
// last offsets below the LSO are control records and aborted data that
// it never returns.
func readAll(t testing.TB, tg target, topic string, partitions int32, level kgo.IsolationLevel, extra ...kgo.Opt) []*kgo.Record {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	sentinel := sentinelPrefix + hex.EncodeToString(b[:])
	pr := client(t, tg, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for p := range partitions {
		if err := pr.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Key: []byte(sentinelPrefix), Value: []byte(sentinel)}).FirstErr(); err != nil {
			t.Fatalf("%s: writing the end sentinel to %s/%d: %v", tg.name, topic, p, err)
		}
	}
	offs := map[int32]kgo.Offset{}
	for p := range partitions {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := client(t, tg, append([]kgo.Opt{kgo.FetchIsolationLevel(level),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs})}, extra...)...)
	var out []*kgo.Record
	seen := map[int32]bool{}
	for len(seen) < int(partitions) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			var missing []int32
			for p := range partitions {
				if !seen[p] {
					missing = append(missing, p)
				}
			}
			t.Fatalf("%s: reading %s (%s): no end sentinel seen within 90 s on partitions %v (they have %v); %d records read",
				tg.name, topic, isolationName(level), missing, endOffsets(t, tg, topic), len(out))
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Fatalf("%s: fetching %s/%d (%s): %v", tg.name, tp, p, isolationName(level), err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			switch {
			case seen[r.Partition]:
			case string(r.Value) == sentinel:
				seen[r.Partition] = true
			case strings.HasPrefix(string(r.Value), sentinelPrefix):
			default:
				out = append(out, r)
			}
		})
	}
	slices.SortStableFunc(out, func(a, b *kgo.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out
}

func isolationName(l kgo.IsolationLevel) string {
	if l == kgo.ReadCommitted() {
		return "read_committed"
	}
	return "read_uncommitted"
}

// values returns the records' values.
func values(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

// controls returns the records that are control records (a consumer must
// never return one).
func controls(recs []*kgo.Record) []*kgo.Record {
	var out []*kgo.Record
	for _, r := range recs {
		if r.Attrs.IsControl() {
			out = append(out, r)
		}
	}
	return out
}

// exactlyOnce compares the values read (got) with the values written
// (want, each once) and describes what differs: values missing, values
// read more than once, values never written; "" when got holds every value
// of want exactly once and nothing else.
func exactlyOnce(want, got []string) string {
	n := map[string]int{}
	for _, v := range got {
		n[v]++
	}
	var missing, twice []string
	wanted := map[string]bool{}
	for _, v := range want {
		wanted[v] = true
		switch c := n[v]; {
		case c == 0:
			missing = append(missing, v)
		case c > 1:
			twice = append(twice, fmt.Sprintf("%s×%d", v, c))
		}
	}
	var extra []string
	for v := range n {
		if !wanted[v] {
			extra = append(extra, v)
		}
	}
	if len(missing)+len(twice)+len(extra) == 0 {
		return ""
	}
	slices.Sort(extra)
	return fmt.Sprintf("%d values read for %d written: %d missing %s, %d more than once %s, %d never written %s",
		len(got), len(want), len(missing), head(missing), len(twice), head(twice), len(extra), head(extra))
}

// head returns the first few of vs for a message.
func head(vs []string) string {
	if len(vs) > 8 {
		return fmt.Sprintf("%v...", vs[:8])
	}
	return fmt.Sprint(vs)
}
