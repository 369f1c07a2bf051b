package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestTopicChurnNoForeignRecords: many topics are created, produced to,
// read (two consumer groups and a direct partition consumer, with the read
// cache's read-ahead and the shared Fetch batches on, as by default) and
// deleted at once, some names used once and some re-created round after
// round. Every record's value names its topic and the round (the topic's
// incarnation) that wrote it: a record read from a topic whose name and
// incarnation it does not carry fails the test. Each incarnation's reads
// also start right after its creation, while other topics are being
// deleted, as a consumer that is already assigned the partition would
// (docs/IGGY.md, "Topic incarnations").
func TestTopicChurnNoForeignRecords(t *testing.T) {
	for _, b := range []struct {
		name string
		opts kiggytest.Options
	}{
		{"embedded", kiggytest.Options{Embedded: true}},
		{"iggy", kiggytest.Options{Iggy: true}},
	} {
		t.Run(b.name, func(t *testing.T) {
			gw := kiggytest.Start(t, b.opts)
			churn(t, gw.Addr, 6, 4, 3000)
		})
	}
}

// churnPartitions is the partition count of every churned topic.
const churnPartitions = 16

// churn runs workers × rounds topic lives on the gateway at addr, each of
// records records over churnPartitions partitions; worker w re-creates the name
// "churn-w<w>" on even rounds and uses a fresh name on odd ones.
func churn(t *testing.T, addr string, workers, rounds, records int) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	var foreign atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				topic := fmt.Sprintf("churn-w%d", w)
				if r%2 == 1 {
					topic = fmt.Sprintf("churn-w%d-r%d", w, r)
				}
				if err := topicLife(ctx, t, adm, addr, topic, r, records, &foreign); err != nil {
					t.Errorf("%s round %d: %v", topic, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := foreign.Load(); n > 0 {
		t.Fatalf("%d records read from a topic (or an incarnation of it) that did not write them", n)
	}
}

// topicLife creates topic, starts its readers at once, produces records
// values "<topic>|<round>|<i>", waits until every reader has them all (and
// counts any record that is not the topic's own into foreign), then deletes
// the topic.
func topicLife(ctx context.Context, t *testing.T, adm *kadm.Client, addr, topic string, round, records int, foreign *atomic.Int64) error {
	prefix := fmt.Sprintf("%s|%d|", topic, round)
	pad := strings.Repeat("p", 300)
	lctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	// A direct consumer of every partition from offset 0, and two groups,
	// all polling before the topic exists: the first reads of a topic come
	// right after its creation, while other topics are being deleted.
	direct := map[int32]kgo.Offset{}
	for p := range churnPartitions {
		direct[int32(p)] = kgo.NewOffset().At(0)
	}
	readers := [][]kgo.Opt{
		{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: direct})},
		{kgo.ConsumerGroup(fmt.Sprintf("%s-%d-a", topic, round)), kgo.ConsumeTopics(topic)},
		{kgo.ConsumerGroup(fmt.Sprintf("%s-%d-b", topic, round)), kgo.ConsumeTopics(topic)},
	}
	errs := make(chan error, len(readers)+1)
	var wg sync.WaitGroup
	var clients []*kgo.Client
	for _, how := range readers {
		opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.FetchMaxWait(100 * time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, how...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		clients = append(clients, cl)
		wg.Go(func() {
			defer cl.Close()
			seen := map[string]bool{}
			for len(seen) < records && lctx.Err() == nil {
				fs := cl.PollFetches(lctx)
				fs.EachRecord(func(r *kgo.Record) {
					v := string(r.Value)
					if !strings.HasPrefix(v, prefix) || r.Topic != topic {
						if foreign.Add(1) <= 5 {
							t.Errorf("%s round %d partition %d offset %d: read %.40q", topic, round, r.Partition, r.Offset, v)
						}
						return
					}
					seen[v[:strings.LastIndexByte(v, '|')]] = true
				})
			}
			if len(seen) < records {
				errs <- fmt.Errorf("a reader saw %d of %d records", len(seen), records)
			}
		})
	}
	if err := createTopic(ctx, adm, topic, churnPartitions); err != nil {
		cancel()
		wg.Wait()
		return err
	}
	for _, cl := range clients {
		cl.ForceMetadataRefresh() // read at once, not at the next metadata interval
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.UnknownTopicRetries(-1))
	if err != nil {
		return err
	}
	for i := range records {
		prod.Produce(lctx, &kgo.Record{Value: fmt.Appendf(nil, "%s%d|%s", prefix, i, pad)}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- fmt.Errorf("produce: %w", err):
				default:
				}
			}
		})
	}
	if err := prod.Flush(lctx); err != nil {
		prod.Close()
		return err
	}
	prod.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return deleteTopic(ctx, adm, topic)
}

// createTopic creates topic, retrying while an earlier incarnation's delete
// is still settling.
// While the old incarnation's delete is in flight, it tries again until
// ctx ends (or a minute passes).
func createTopic(ctx context.Context, adm *kadm.Client, topic string, parts int32) error {
	var err error
	testtools.Eventually(time.Minute, func() bool {
		var res kadm.CreateTopicResponse
		res, err = adm.CreateTopic(ctx, parts, -1, nil, topic)
		if err == nil {
			err = res.Err
		}
		return err == nil || !errors.Is(err, kerr.TopicAlreadyExists) || ctx.Err() != nil
	})
	return err
}

func deleteTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	res, err := adm.DeleteTopics(ctx, topic)
	if err != nil {
		return err
	}
	return res.Error()
}
