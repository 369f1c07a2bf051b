package ecosystem

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TargetEnv narrows the targets: unset runs every test against both kiggy
// and Kafka; "kiggy" or "kafka" runs only that one.
const TargetEnv = "KIGGY_ECOSYSTEM_TARGET"

// target is a system under test: its name ("kiggy" or "kafka") and the
// bootstrap address its clients connect to.
type target struct {
	name string
	addr string
}

// forEachTarget runs fn as a parallel subtest against each target: a fresh
// kiggy gateway per subtest, and the run's shared Kafka broker.
func forEachTarget(t *testing.T, fn func(t *testing.T, tg target)) {
	t.Helper()
	only := os.Getenv(TargetEnv)
	switch only {
	case "", "kiggy", "kafka":
	default:
		t.Fatalf("%s=%q: want kiggy, kafka or nothing (both)", TargetEnv, only)
	}
	for _, name := range []string{"kiggy", "kafka"} {
		if only != "" && only != name {
			continue
		}
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

// sharedKafka starts the run's Kafka broker on first use; TestMain stops it.
func sharedKafka(t testing.TB) *kafkatest.Broker {
	t.Helper()
	return kafkatest.Shared(t, kafkatest.Config{
		Heap: "512m",
		Props: map[string]string{
			"offsets.topic.num.partitions":         "1",
			"transaction.state.log.num.partitions": "1",
		},
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := kafkatest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "ecosystem:", err)
	}
	for _, f := range cleanups {
		f()
	}
	os.Exit(code)
}

// admin returns a franz-go client and its admin client for tg, closed when
// t ends.
func admin(t testing.TB, tg target) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// createTopic creates a topic with replication factor 1 and waits until
// every partition answers ListOffsets.
func createTopic(t testing.TB, tg target, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, adm := admin(t, tg)
	if _, err := adm.CreateTopic(ctx, partitions, 1, configs, name); err != nil {
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

// readAll returns every record of topic, partition by partition in offset
// order, up to the end offsets it has when called.
func readAll(t testing.TB, tg target, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, adm := admin(t, tg)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("%s: end offsets of %s: %v", tg.name, topic, err)
	}
	want := map[int32]int64{}
	offs := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("%s: end offset of %s/%d: %v", tg.name, topic, o.Partition, o.Err)
		}
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			offs[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	next := map[int32]int64{}
	for {
		done := true
		for p, end := range want {
			if next[p] < end {
				done = false
			}
		}
		if done {
			break
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: reading %s: at %v of %v after a minute", tg.name, topic, next, want)
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Fatalf("%s: fetching %s/%d: %v", tg.name, tp, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if r.Offset < want[r.Partition] {
				out = append(out, r)
			}
		})
	}
	return out
}

// topicConfigs returns the configs DescribeConfigs reports for topic, by
// name, with the source of each.
func topicConfigs(t testing.TB, tg target, topic string) map[string]kadm.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, adm := admin(t, tg)
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("%s: describing the configs of %s: %v", tg.name, topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("%s: describing the configs of %s: %v %v", tg.name, topic, err, rc.Err)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

// showConfigs prints the configs set on a topic (not defaults), sorted, for
// failure messages and logs.
func showConfigs(cs map[string]kadm.Config) string {
	var parts []string
	for k, c := range cs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			parts = append(parts, k+"="+c.MaybeValue())
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func contextTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
