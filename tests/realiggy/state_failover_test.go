package realiggy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestSystemStoreWriteDuringIggyFailover: kiggy in front of a real 3-node
// Iggy cluster under an acks=all produce load; the partitions' primary is
// killed with SIGKILL and, at once, a client alters a client quota, the
// first write of the system store's quota namespace (kiggy creates its
// first generation while Iggy elects a new primary, when a just-created
// topic's appends are refused until it has one), and a topic config kiggy
// keeps itself (max.message.bytes: an append to a namespace that exists),
// and creates a Kafka topic and produces to it with a stock producer.
// Each is retried until kiggy accepts it; acknowledgements flow again
// after the failover, and a fresh kiggy reads all three back, the new
// topic's records each once. (An earlier system store created a
// namespace on its first read, and a gateway's state refresher reading one
// in the middle of a failover looped creating and deleting its topic; a
// version that compacted namespaces while running stalled the producers
// there for over 40 s in 3 of 27 runs of TestIggyClusterPrimaryKilledTwice.
// docs/IGGY.md "kiggy's own state".)
func TestSystemStoreWriteDuringIggyFailover(t *testing.T) {
	iggyserver.Require(t)
	kiggyproc.Binary(t)
	const topic = "state-failover"
	c := iggyserver.StartClusterT(t, 3)
	k := startKiggy(t, "kiggy", append(iggyFlags(c.Seeds(), "written"), "--admin-addr", "127.0.0.1:0", "--log-level", "debug")...)
	keepLogs(t, []*kiggyProc{k}, c.Nodes)
	testtools.WaitFor(t, stepTimeout, "kiggy to name a primary", func() bool { return k.primary() != "" })
	createTopic(t, k.Addr, topic, clusterPartitions)
	l := startLoad(t, k.Addr, topic)
	testtools.WaitFor(t, stepTimeout, "acknowledgements before the kill", func() bool { return l.acked() >= ackedBetween })

	victim := k.confirmer(topic)
	var node *iggyserver.Node
	for _, n := range c.Nodes {
		if n.Addr == victim {
			node = n
		}
	}
	if node == nil {
		t.Fatalf("the node that confirmed the last append, %q, is none of %s", victim, c.Seeds())
	}
	killed := time.Now()
	node.Kill()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*stepTimeout)
	defer cancel()
	const want, wantRate = "2000000", 1e6
	const newTopic, newRecords = "created-after-kill", 50
	entity := kadm.ClientQuotaEntity{{Type: "client-id", Name: kadm.StringPtr("failover")}}
	// retry runs do until it succeeds, for stepTimeout at most.
	retry := func(what string, do func() error) error {
		tries := 0
		if !testtools.EventuallyEvery(stepTimeout, 200*time.Millisecond, func() bool {
			tries++
			err := do()
			if err != nil {
				t.Logf("%s at %v after the kill: %v", what, time.Since(killed).Round(time.Millisecond), err)
			}
			return err == nil
		}) {
			return fmt.Errorf("kiggy did not take the %s within %v of the kill", what, stepTimeout)
		}
		t.Logf("%s taken after %d tries, %v after the kill", what, tries, time.Since(killed).Round(time.Millisecond))
		return nil
	}
	// The changes are made while the test watches the load.
	changed := make(chan error, 1)
	go func() {
		changed <- errors.Join(retry("client quota", func() error {
			res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity,
				Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: wantRate}}}})
			if err == nil {
				err = res[0].Err
			}
			return err
		}), retry("topic config", func() error {
			res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr(want)}}, topic)
			if err == nil {
				err = res[0].Err
			}
			return err
		}), retry("new Kafka topic", func() error {
			res, err := adm.CreateTopic(ctx, 1, -1, nil, newTopic)
			if err == nil {
				err = res.Err
			}
			if errors.Is(err, kerr.TopicAlreadyExists) {
				err = nil // an earlier try's outcome was unknown, and it was made
			}
			return err
		}), produceNew(ctx, t, k.Addr, newTopic, newRecords, killed))
	}()
	testtools.WaitFor(t, stepTimeout, "kiggy to hold a primary other than the killed node", func() bool {
		p := k.primary()
		return p != "" && p != victim
	})
	atFollow := l.acked()
	testtools.WaitFor(t, stepTimeout, "acknowledgements after the failover", func() bool { return l.acked() >= atFollow+ackedBetween })
	t.Logf("acknowledgements flowing again %v after the kill", time.Since(killed).Round(time.Millisecond))
	if err := <-changed; err != nil {
		t.Fatal(err)
	}
	l.finish(t)

	reader := startKiggy(t, "kiggy-read", iggyFlags(c.Seeds(), "written")...)
	keepLogs(t, []*kiggyProc{reader}, nil)
	rcl, err := kgo.NewClient(kgo.SeedBrokers(reader.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer rcl.Close()
	got := topicConfig(t, reader.Addr, topic, "max.message.bytes")
	if got != want {
		t.Errorf("a fresh kiggy reads max.message.bytes = %q, want %q", got, want)
	}
	quotas, err := kadm.NewClient(rcl).DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{
		{Type: "client-id", MatchName: kadm.StringPtr("failover"), MatchType: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(quotas) != 1 || len(quotas[0].Values) != 1 || quotas[0].Values[0].Value != wantRate {
		t.Errorf("a fresh kiggy reads the client quotas %+v, want producer_byte_rate %v for client-id failover", quotas, wantRate)
	}
	stored := readBack(t, reader.Addr, newTopic, 1)
	for i := range newRecords {
		if v := stored[partOffset{0, int64(i)}]; v != strconv.Itoa(i) {
			t.Errorf("%s-0 offset %d holds %q, want %q", newTopic, i, v, strconv.Itoa(i))
		}
	}
	if len(stored) != newRecords {
		t.Errorf("%s holds %d records, want the %d acknowledged, each once", newTopic, len(stored), newRecords)
	}
}

// produceNew produces n records to topic, created after the kill, through
// a stock producer (idempotent, acks=all, retrying what it is told is
// retriable, as a Kafka application does) and reports when they were
// acknowledged: the topic's appends are refused until its partition has a
// primary (docs/IGGY.md "Topics created while a node is down").
func produceNew(ctx context.Context, t *testing.T, addr, topic string, n int, killed time.Time) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Partition: 0, Value: []byte(strconv.Itoa(i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("producing to %s: %w", topic, err)
	}
	t.Logf("%d records to %s acknowledged %v after the kill", n, topic, time.Since(killed).Round(time.Millisecond))
	return nil
}
