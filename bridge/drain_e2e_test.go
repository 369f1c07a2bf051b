package bridge_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestDrainAnswersParked: a gateway told to shut down answers what it holds
// parked at once (Gateway.Draining) instead of the drain waiting for it: a
// Fetch parked for a minute gets its (empty) answer, a JoinGroup parked
// for a rebalance that waits for another member gets NOT_COORDINATOR (as
// Kafka's coordinator answers a parked JoinGroup when it unloads the group),
// and Shutdown returns within its deadline,
// which is shorter than either wait. Before, the drain ran into its
// deadline and the connections were cut unanswered.
func TestDrainAnswersParked(t *testing.T) {
	for _, kind := range []string{"epoll", "net"} {
		t.Run(kind, func(t *testing.T) { drainAnswersParked(t, kind) })
	}
}

func drainAnswersParked(t *testing.T, kind string) {
	log := memlog.New(memlog.Config{})
	defer log.Close()
	s, err := bridge.NewServer(kind, engine.Config{}, bridge.Config{}, log)
	if err != nil {
		t.Skipf("engine %s: %v", kind, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := log.CreateTopic(ctx, "drain", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.RequestTimeoutOverhead(2*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	// A Fetch at the end of an empty partition, waiting a minute.
	fetcher := newClient()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, fetcher)
	if err != nil || len(meta.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	fetched := make(chan *kmsg.FetchResponse, 1)
	go func() {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 60_000, 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "drain", meta.Topics[0].TopicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, fetcher.SeedBrokers()[0])
		if err != nil {
			t.Errorf("the parked Fetch was not answered: %v", err)
		}
		fetched <- resp
	}()

	// A group of two: the second member rejoins, the first does not, so
	// the rebalance waits the first's rebalance timeout (a minute).
	join := func(cl *kgo.Client, member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "drain", member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 60_000, 60_000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte("m")
		req.Protocols = append(req.Protocols, p)
		// To the broker itself: the client would retry the coordinator's
		// errors elsewhere.
		to := cl.SeedBrokers()[0]
		resp, err := req.RequestWith(ctx, to)
		if err != nil {
			t.Errorf("JoinGroup %q not answered: %v", member, err)
			return nil
		}
		if resp.ErrorCode == 79 { // MEMBER_ID_REQUIRED
			req.MemberID = resp.MemberID
			if resp, err = req.RequestWith(ctx, to); err != nil {
				t.Errorf("JoinGroup %q not answered: %v", member, err)
				return nil
			}
		}
		return resp
	}
	first := join(newClient(), "")
	if first == nil || first.ErrorCode != 0 {
		t.Fatalf("first member: %+v", first)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "drain", first.Generation, first.MemberID
	if _, err := sync.RequestWith(ctx, newClient()); err != nil {
		t.Fatal(err)
	}
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { joined <- join(newClient(), "") }()

	testtools.WaitFor(t, 30*time.Second, "the Fetch to park", func() bool {
		var m strings.Builder
		s.Gateway.WriteMetrics(&m)
		return metricValue(t, m.String(), "kiggy_fetches_parked") == 1
	})
	testtools.WaitFor(t, 30*time.Second, "the rebalance to start", func() bool {
		d, err := (&kmsg.DescribeGroupsRequest{Groups: []string{"drain"}}).RequestWith(ctx, fetcher)
		return err == nil && len(d.Groups) == 1 && d.Groups[0].State == "PreparingRebalance"
	})

	sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer scancel()
	if err := s.Shutdown(sctx); err != nil {
		t.Fatalf("the drain waited for what was parked: %v", err)
	}
	if r := <-fetched; r != nil && (len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 || len(r.Topics[0].Partitions[0].RecordBatches) != 0) {
		t.Fatalf("the parked Fetch's answer: %+v", r.Topics)
	}
	if r := <-joined; r != nil && r.ErrorCode != 16 {
		t.Fatalf("the parked JoinGroup's answer: error %d, want NOT_COORDINATOR (16)", r.ErrorCode)
	}
	<-served
}
