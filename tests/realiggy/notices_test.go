package realiggy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestStateNoticesOnIggy: two kiggy processes as one cluster
// (--cluster-membership iggy) over a real iggy-server, each with an hour's
// --state-refresh. A topic's max.message.bytes set through node 1 is
// enforced by node 2's Produce at once, and its deletion too: only node 1's
// notices in the membership log can have told node 2 (docs/design/cluster.md
// §10 "Notices"), and node 2's kiggy_cluster_state_notices_read_total counts
// them.
func TestStateNoticesOnIggy(t *testing.T) {
	const topic, parts = "notices", 4
	iggy := iggyserver.StartT(t)
	var addrs [2]string
	var nodes [2]*kiggyProc
	for i := range nodes {
		addrs[i] = freeAddr(t)
	}
	for i := range nodes {
		nodes[i] = startKiggy(t, fmt.Sprintf("kiggy-%d", i+1), append(iggyFlags(iggy.Addr, "written"),
			"--listen", addrs[i], "--admin-addr", "127.0.0.1:0",
			"--cluster-membership", "iggy", "--node-id", fmt.Sprint(i+1),
			"--membership-heartbeat", "200ms", "--membership-timeout", "2s", "--state-refresh", "1h")...)
	}
	keepLogs(t, nodes[:], []*iggyserver.Node{iggy})
	createTopic(t, addrs[0], topic, parts)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The client retries what is retriable (a leader that moved, on a
	// loaded machine): MESSAGE_TOO_LARGE is not, and fails the produce at
	// once. Each produce has 10 s.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs[:]...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// A partition node 2 leads, once both instances are in the view.
	p := int32(-1)
	testtools.WaitFor(t, 30*time.Second, "a partition led by node 2", func() bool {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Brokers) != 2 || len(resp.Topics) != 1 {
			return false
		}
		for _, mp := range resp.Topics[0].Partitions {
			if mp.ErrorCode == 0 && mp.Leader == 2 {
				p = mp.Partition
				return true
			}
		}
		return false
	})
	value := make([]byte, 1024)
	_, _ = rand.Read(value)
	produce := func() error {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Partition: p, Value: value}).FirstErr()
	}
	var last error
	if !testtools.Eventually(30*time.Second, func() bool { last = produce(); return last == nil }) {
		m, _ := nodes[1].Metrics()
		t.Fatalf("no produce to node 2's partition %d succeeded within 30 s; the last: %v; node 2's lease %v, view %v, members %v",
			p, last, m["kiggy_cluster_lease"], m["kiggy_cluster_view"], m["kiggy_cluster_members"])
	}
	alter := func(op kmsg.IncrementalAlterConfigOp, v string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "max.message.bytes", op, kmsg.StringPtr(v)
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("IncrementalAlterConfigs at node 1: %v %+v", err, resp)
		}
	}
	waitFor := func(what string, want func(error) bool) {
		t.Helper()
		start := time.Now()
		var last error
		if !testtools.Eventually(10*time.Second, func() bool { last = produce(); return want(last) }) {
			t.Fatalf("timed out after 10 s waiting for %s; the last produce: %v", what, last)
		}
		t.Logf("%s after %v (%v)", what, time.Since(start).Round(time.Millisecond), last)
	}
	alter(kmsg.IncrementalAlterConfigOpSet, "200")
	waitFor("node 2 refuses a 1 KiB record over node 1's max.message.bytes 200", func(err error) bool {
		return errors.Is(err, kerr.MessageTooLarge)
	})
	alter(kmsg.IncrementalAlterConfigOpDelete, "")
	waitFor("node 2 accepts it again once node 1 deleted the setting", func(err error) bool { return err == nil })
	m, err := nodes[1].Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if got := m["kiggy_cluster_state_notices_read_total"]; got < 2 {
		t.Errorf("node 2's kiggy_cluster_state_notices_read_total = %v, want at least 2", got)
	}
}

// freeAddr returns a loopback address with a port free a moment ago: a
// cluster instance announces the address it is given.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
