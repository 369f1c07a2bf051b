package interop

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TargetEnv selects the system under test: unset or "kiggy" for the
// in-process gateway, "kafka" for a real Apache Kafka 4.x broker.
const TargetEnv = "KIGGY_INTEROP_TARGET"

// maxMessageBytes is the broker's message.max.bytes on the Kafka target:
// room for the 1 MiB value test (Kafka's default, 1 MiB + 12 bytes, is less
// than one batch holding a 1 MiB value).
const maxMessageBytes = 16 << 20

// target is what the tests produce to and read back from.
type target interface {
	// Name is "kiggy" or "kafka".
	Name() string
	// Addr is the bootstrap host:port.
	Addr() string
	// CreateTopic creates a topic with the given partition count and waits
	// until every partition has a leader.
	CreateTopic(t testing.TB, name string, partitions int32)
	// ReadBack returns every data record of one partition, in offset order.
	ReadBack(t testing.TB, topic string, partition int32) []kiggytest.Record
	// ExpectHeaders returns the headers a record produced with hs is read
	// back with, in order.
	ExpectHeaders(key []byte, hs []kiggytest.Header) []kiggytest.Header
}

// newTarget returns the target for t, per KIGGY_INTEROP_TARGET.
func newTarget(t testing.TB) target {
	t.Helper()
	switch v := os.Getenv(TargetEnv); v {
	case "", "kiggy":
		g := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{Group: consumerGroupTimeouts}})
		backend := "embedded log"
		if g.Iggy != nil {
			backend = "Iggy (iggytest)"
		} else if g.IggyNode != nil {
			backend = "Iggy (iggy-server)"
		}
		if err := testtools.ProbeKafka(g.Addr, 10*time.Second); err != nil {
			t.Fatalf("kiggy gateway at %s (engine %q, %s) is not answering: %v", g.Addr, os.Getenv("KIGGY_TEST_ENGINE"), backend, err)
		}
		t.Logf("kiggy gateway at %s on the %s", g.Addr, backend)
		return &kiggyTarget{g: g}
	case "kafka":
		return sharedKafka(t)
	default:
		t.Fatalf("%s=%q: want kiggy (default) or kafka", TargetEnv, v)
		return nil
	}
}

// kiggyTarget is the in-process gateway on the embedded log.
type kiggyTarget struct{ g *kiggytest.Gateway }

func (k *kiggyTarget) Name() string { return "kiggy" }
func (k *kiggyTarget) Addr() string { return k.g.Addr }

func (k *kiggyTarget) CreateTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	k.g.CreateTopic(t, name, partitions)
}

func (k *kiggyTarget) ReadBack(t testing.TB, topic string, partition int32) []kiggytest.Record {
	t.Helper()
	return k.g.Records(t, topic, partition)
}

// ExpectHeaders follows docs/design/record-mapping.md §3.5: "Native-path
// header order = sorted by name. Envelope header order = the original
// order", and docs/design/record-mapping.md §2.6: the envelope is taken for an empty key or a key over 255
// bytes, a header name over 247 bytes, or a header value null, empty or over
// 255 bytes. (The 100 000-byte header-block trigger is not reached here.)
func (k *kiggyTarget) ExpectHeaders(key []byte, hs []kiggytest.Header) []kiggytest.Header {
	if envelope(key, hs) {
		return hs
	}
	return sortedHeaders(hs)
}

func envelope(key []byte, hs []kiggytest.Header) bool {
	if key != nil && (len(key) == 0 || len(key) > 255) {
		return true
	}
	for _, h := range hs {
		if len(h.Key) > 247 || len(h.Value) == 0 || len(h.Value) > 255 {
			return true // len 0 covers both null and empty
		}
	}
	return false
}

// kafkaTarget is a real broker shared by every test of the run.
type kafkaTarget struct {
	b *kafkatest.Broker
}

// sharedKafka starts the run's broker on first use; TestMain stops it.
// consumerGroupTimeouts are the consumer-protocol group timeouts both
// targets run with: a member killed mid-test is fenced in 10 s, not 45.
var consumerGroupTimeouts = group.Config{ConsumerSessionTimeout: 10 * time.Second, ConsumerHeartbeatInterval: time.Second}

func sharedKafka(t testing.TB) *kafkaTarget {
	t.Helper()
	return &kafkaTarget{b: kafkatest.Shared(t, kafkatest.Config{
		Props: map[string]string{
			"message.max.bytes":                    fmt.Sprint(maxMessageBytes),
			"offsets.topic.num.partitions":         "1",
			"transaction.state.log.num.partitions": "1",
			// Consumer-protocol groups (KIP-848) as on kiggy
			// (consumerGroupTimeouts); Kafka's minimums come down with them.
			"group.consumer.session.timeout.ms":        "10000",
			"group.consumer.min.session.timeout.ms":    "10000",
			"group.consumer.heartbeat.interval.ms":     "1000",
			"group.consumer.min.heartbeat.interval.ms": "1000",
		},
	})}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := kafkatest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
	}
	kiggyproc.RemoveBinary()
	os.Exit(code)
}

func (k *kafkaTarget) Name() string { return "kafka" }
func (k *kafkaTarget) Addr() string { return k.b.Addr }

// ExpectHeaders: Kafka keeps headers as sent.
func (k *kafkaTarget) ExpectHeaders(_ []byte, hs []kiggytest.Header) []kiggytest.Header { return hs }

func (k *kafkaTarget) admin(t testing.TB) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	return cl, kadm.NewClient(cl)
}

func (k *kafkaTarget) CreateTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, adm := k.admin(t)
	defer cl.Close()
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, name); err != nil {
		t.Fatalf("kafka: creating topic %s: %v", name, err)
	}
	// Metadata can name a leader a moment before the leader hosts the
	// partition, so wait until ListOffsets (served by the partition's log)
	// answers for every partition too.
	for {
		err := topicReady(ctx, adm, name, partitions)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kafka: topic %s has no leaders after a minute (last error %v)", name, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func topicReady(ctx context.Context, adm *kadm.Client, name string, partitions int32) error {
	md, err := adm.Metadata(ctx, name)
	if err != nil {
		return err
	}
	td, ok := md.Topics[name]
	if !ok || td.Err != nil || int32(len(td.Partitions)) != partitions {
		return fmt.Errorf("metadata: found %v, %d partitions, %v", ok, len(td.Partitions), td.Err)
	}
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return fmt.Errorf("metadata: partition %d: leader %d, %v", p.Partition, p.Leader, p.Err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, name)
	if err != nil {
		return err
	}
	for p := range partitions {
		if o, ok := ends.Lookup(name, p); !ok || o.Err != nil {
			return fmt.Errorf("list offsets: partition %d: found %v, %v", p, ok, o.Err)
		}
	}
	return nil
}

// ReadBack consumes the partition directly (no group) from its start to the
// high watermark it had when called. Transaction markers are read (so the
// high watermark is reached) but not returned.
func (k *kafkaTarget) ReadBack(t testing.TB, topic string, partition int32) []kiggytest.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, adm := k.admin(t)
	ends, err := adm.ListEndOffsets(ctx, topic)
	cl.Close()
	if err != nil {
		t.Fatalf("kafka: listing end offsets of %s: %v", topic, err)
	}
	end, ok := ends.Lookup(topic, partition)
	if !ok || end.Err != nil {
		t.Fatalf("kafka: end offset of %s/%d: found %v, %v", topic, partition, ok, end.Err)
	}
	if end.Offset <= 0 {
		return nil
	}

	cl, err = kgo.NewClient(
		kgo.SeedBrokers(k.b.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}),
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxPartitionBytes(32<<20),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []kiggytest.Record
	next := int64(0)
	for next < end.Offset {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("kafka: reading %s/%d: at offset %d of %d after 2 minutes", topic, partition, next, end.Offset)
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Fatalf("kafka: fetching %s/%d: %v", tp, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if r.Attrs.IsControl() || r.Offset >= end.Offset {
				return
			}
			out = append(out, fromKgo(r))
		})
	}
	return out
}

// fromKgo copies a consumed record (kgo hands out views of its fetch buffers)
// into the form kiggytest reads back.
func fromKgo(r *kgo.Record) kiggytest.Record {
	rec := kiggytest.Record{
		Offset:    r.Offset,
		Timestamp: r.Timestamp.UnixMilli(),
		Key:       clone(r.Key),
		Value:     clone(r.Value),
	}
	for _, h := range r.Headers {
		rec.Headers = append(rec.Headers, kiggytest.Header{Key: h.Key, Value: clone(h.Value)})
	}
	return rec
}

// clone copies b keeping nil (null) distinct from empty.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
