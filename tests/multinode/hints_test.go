package multinode

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestLeaderHints: Produce v10+ and Fetch v12+ sent to an instance that does
// not lead the partition carry the KIP-951 hint (docs/design/cluster.md §6):
// the partition's CurrentLeader (its leader and leader epoch, as Metadata
// gives them) and, in Produce, the leader's endpoint in NodeEndpoints; a
// Fetch with an older epoch (FENCED_LEADER_EPOCH) carries it too. Older
// versions and answers without those errors carry none.
func TestLeaderHints(t *testing.T) {
	const topic, parts = "hints", int32(8)
	n1, n2 := startPair(t, topic, parts)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n1.addr, n2.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The topic's id: Produce v13 and Fetch v13+ name topics by it.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 || mresp.Topics[0].TopicID == ([16]byte{}) {
		t.Fatalf("metadata: %v %+v", err, mresp)
	}
	topicID := mresp.Topics[0].TopicID
	p := int32(-1)
	for i := range parts {
		if n1.m.Leader(topic, i).Leader == 1 {
			p = i
			break
		}
	}
	if p < 0 {
		t.Fatal("node 1 leads nothing")
	}
	epoch := n1.m.Leader(topic, p).Epoch
	host, portStr, _ := net.SplitHostPort(n1.addr)
	port, _ := strconv.Atoi(portStr)
	leader, other := cl.Broker(1), cl.Broker(2)
	// kgo sends the highest version both sides support: a client capped
	// at each version asks the older ones.
	capped := func(key, v int16) *kgo.Broker {
		t.Helper()
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(key, v)
		c, err := kgo.NewClient(kgo.SeedBrokers(n2.addr), kgo.MaxVersions(vs))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.Broker(2)
	}

	produce := func(b *kgo.Broker, v int16) *kmsg.ProduceResponse {
		t.Helper()
		if b == other {
			b = capped(0, v)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = oneBatch()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, v := range []int16{10, 11, 12, 13} {
		resp := produce(other, v)
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 6 || rp.CurrentLeader.LeaderID != 1 || rp.CurrentLeader.LeaderEpoch != epoch {
			t.Errorf("Produce v%d to the other: error %d, CurrentLeader %+v, want 6 and {1 %d}", v, rp.ErrorCode, rp.CurrentLeader, epoch)
		}
		if resp.Version != v {
			t.Fatalf("Produce went out at v%d, want v%d", resp.Version, v)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != host || resp.Brokers[0].Port != int32(port) || resp.Brokers[0].Rack != nil {
			t.Errorf("Produce v%d to the other: NodeEndpoints %+v, want node 1 at %s", v, resp.Brokers, n1.addr)
		}
	}
	if resp := produce(other, 9); resp.Topics[0].Partitions[0].CurrentLeader.LeaderID != -1 || len(resp.Brokers) != 0 {
		t.Errorf("Produce v9 carries a hint: %+v", resp)
	}
	if resp := produce(leader, 13); resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].Partitions[0].CurrentLeader.LeaderID != -1 || len(resp.Brokers) != 0 {
		t.Errorf("Produce to the leader: %+v", resp)
	}

	fetch := func(b *kgo.Broker, v int16, ep int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		if v < 18 {
			if b != other {
				t.Fatalf("Fetch v%d: only node 2 is asked below v18", v)
			}
			b = capped(1, v) // node 2
		}
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = p, ep, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	checks := []struct {
		what   string
		got    kmsg.FetchResponseTopicPartition
		code   int16
		hinted bool
	}{
		{"Fetch v18 from the other", fetch(other, 18, epoch), 6, true},
		{"Fetch v18 with an older epoch", fetch(leader, 18, epoch-1), 74, true},
		{"Fetch v18 from the leader", fetch(leader, 18, epoch), 0, false},
		{"Fetch v18 with a newer epoch", fetch(leader, 18, epoch+1), 75, false},
		{"Fetch v13 from the other", fetch(other, 13, epoch), 6, true},
		{"Fetch v12 from the other", fetch(other, 12, epoch), 6, true},
		{"Fetch v11 from the other", fetch(other, 11, epoch), 6, false},
	}
	for _, c := range checks {
		want := kmsg.FetchResponseTopicPartitionCurrentLeader{LeaderID: -1, LeaderEpoch: -1}
		if c.hinted {
			want.LeaderID, want.LeaderEpoch = 1, epoch
		}
		if c.got.ErrorCode != c.code || c.got.CurrentLeader.LeaderID != want.LeaderID || c.got.CurrentLeader.LeaderEpoch != want.LeaderEpoch {
			t.Errorf("%s: error %d, CurrentLeader %+v; want %d, %+v", c.what, c.got.ErrorCode, c.got.CurrentLeader, c.code, want)
		}
	}
}
