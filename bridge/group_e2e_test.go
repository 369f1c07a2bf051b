package bridge_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// fastGroups keeps the tests quick: a short initial rebalance delay.
var fastGroups = kiggytest.Options{Bridge: bridge.Config{Group: group.Config{InitialRebalanceDelay: 200 * time.Millisecond}}}

// consumeGroup runs a franz-go group member until want distinct keys were
// seen by all members together or the context ends.
func consumeGroup(ctx context.Context, t *testing.T, addr, groupID, topic string, seen *sync.Map, count *int64, mu *sync.Mutex) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.AutoCommitInterval(200*time.Millisecond))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close() // commits and leaves the group
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if _, dup := seen.LoadOrStore(string(r.Key), true); !dup {
				mu.Lock()
				*count++
				mu.Unlock()
			}
		})
	}
}

func TestFranzGroupOfThree(t *testing.T) {
	gw := kiggytest.Start(t, fastGroups)
	gw.CreateTopic(t, "g", 6)
	sent := produceN(t, gw.Addr, "g", 6, 3000)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var seen sync.Map
	var n int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); consumeGroup(ctx, t, gw.Addr, "g3", "g", &seen, &n, &mu) }()
	}
	testtools.Eventually(60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return n == int64(len(sent)) || ctx.Err() != nil
	})
	cancel()
	wg.Wait()
	if n != int64(len(sent)) {
		t.Fatalf("group consumed %d distinct records of %d", n, len(sent))
	}
	// Everything was committed: the committed offsets reach the end.
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	offs, err := adm.FetchOffsets(context.Background(), "g3")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != int64(len(sent)) {
		t.Fatalf("committed offsets sum to %d, want %d", total, len(sent))
	}
	described, err := adm.DescribeGroups(context.Background(), "g3")
	if err != nil || described["g3"].State != "Empty" {
		t.Fatalf("describe after all left: %v %+v", err, described["g3"])
	}
}

// TestGroupResumesFromCommit: a second run of the same group reads nothing
// old, only what was produced after the first run committed.
func TestGroupResumesFromCommit(t *testing.T) {
	gw := kiggytest.Start(t, fastGroups)
	gw.CreateTopic(t, "r", 2)
	produceN(t, gw.Addr, "r", 2, 100)
	run := func(want int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var seen sync.Map
		var n int64
		var mu sync.Mutex
		go func() {
			defer cancel()
			read := func() bool { mu.Lock(); defer mu.Unlock(); return n >= int64(want) }
			if testtools.Eventually(30*time.Second, func() bool { return read() || ctx.Err() != nil }) && ctx.Err() == nil {
				// A negative check: extra records get 500 ms to show up; one that does ends the wait at once.
				testtools.Consistently(500*time.Millisecond, func() bool { mu.Lock(); defer mu.Unlock(); return n <= int64(want) })
			}
		}()
		consumeGroup(ctx, t, gw.Addr, "resume", "r", &seen, &n, &mu)
		if n != int64(want) {
			t.Fatalf("run read %d records, want %d", n, want)
		}
	}
	run(100)
	cl, _ := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "r", Partition: int32(i % 2), Key: []byte(fmt.Sprintf("new%d", i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	run(10)
}

func TestSaramaConsumerGroup(t *testing.T) {
	gw := kiggytest.Start(t, fastGroups)
	gw.CreateTopic(t, "s", 3)
	sent := produceN(t, gw.Addr, "s", 3, 300)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cg, err := sarama.NewConsumerGroup([]string{gw.Addr}, "sarama-g", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	h := &saramaHandler{want: len(sent), done: make(chan struct{}), seen: map[string]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{"s"}, h); err != nil {
				return
			}
		}
	}()
	select {
	case <-h.done:
	case <-ctx.Done():
		t.Fatalf("sarama group read %d of %d", h.count(), len(sent))
	}
}

type saramaHandler struct {
	mu   sync.Mutex
	seen map[string]bool
	want int
	done chan struct{}
	once sync.Once
}

func (h *saramaHandler) count() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.seen) }

func (*saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (*saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		h.seen[string(m.Key)] = true
		n := len(h.seen)
		h.mu.Unlock()
		s.MarkMessage(m, "")
		if n == h.want {
			h.once.Do(func() { close(h.done) })
		}
	}
	return nil
}

func TestKafkaGoReaderGroup(t *testing.T) {
	gw := kiggytest.Start(t, fastGroups)
	gw.CreateTopic(t, "kg", 2)
	sent := produceN(t, gw.Addr, "kg", 2, 200)
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{gw.Addr}, GroupID: "kafkago-g", Topic: "kg",
		StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond, CommitInterval: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	seen := map[string]bool{}
	for len(seen) < len(sent) {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go read after %d records: %v", len(seen), err)
		}
		seen[string(m.Key)] = true
	}
}
