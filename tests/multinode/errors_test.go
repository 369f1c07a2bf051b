package multinode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
)

// TestClusterErrorCodes sends raw requests to each of two instances and
// checks the answers Kafka would give (docs/design/cluster.md §6, §7):
// Metadata lists both brokers and the same leader and epoch through each;
// Produce, Fetch and ListOffsets to the non-leader answer
// NOT_LEADER_OR_FOLLOWER (6); a Fetch or ListOffsets with an older epoch
// answers FENCED_LEADER_EPOCH (74), with a newer one UNKNOWN_LEADER_EPOCH
// (75); the leader serves the current epoch; FindCoordinator names the same
// coordinator through each and the other instance answers JoinGroup and
// OffsetFetch with NOT_COORDINATOR (16).
func TestClusterErrorCodes(t *testing.T) {
	const topic, parts = "codes", int32(8)
	n1, n2 := startPair(t, topic, parts)
	ins := []*instance{n1, n2}
	ctx := context.Background()
	var mb strings.Builder
	n1.srv.Gateway.WriteMetrics(&mb)
	for _, want := range []string{"kiggy_cluster_members 2\n", "kiggy_cluster_lease 1\n", "kiggy_cluster_fenced 0\n"} {
		if !strings.Contains(mb.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	clients := map[int32]*kgo.Client{}
	for _, in := range ins {
		cl, err := kgo.NewClient(kgo.SeedBrokers(in.addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		clients[in.id] = cl
	}
	// Metadata through each: both brokers, identical leaders and epochs.
	type place struct{ leader, epoch int32 }
	var first map[int32]place
	var topicID [16]byte // Produce v13 and Fetch v13+ name topics by id
	for id, cl := range clients {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Brokers) != 2 {
			t.Fatalf("node %d lists %d brokers", id, len(resp.Brokers))
		}
		topicID = resp.Topics[0].TopicID
		got := map[int32]place{}
		for _, p := range resp.Topics[0].Partitions {
			got[p.Partition] = place{p.Leader, p.LeaderEpoch}
			if p.LeaderEpoch < 1 || len(p.Replicas) != 1 || p.Replicas[0] != p.Leader {
				t.Errorf("node %d: partition %d leader %d epoch %d replicas %v", id, p.Partition, p.Leader, p.LeaderEpoch, p.Replicas)
			}
		}
		if first == nil {
			first = got
		} else {
			for p, pl := range got {
				if first[p] != pl {
					t.Errorf("partition %d: %+v through one instance, %+v through the other", p, first[p], pl)
				}
			}
		}
	}
	// A partition led by node 1, asked of node 2.
	p := int32(-1)
	for i := range parts {
		if first[i].leader == 1 {
			p = i
			break
		}
	}
	if p < 0 {
		t.Fatal("node 1 leads nothing")
	}
	epoch := first[p].epoch
	leader, other := clients[1].Broker(1), clients[2].Broker(2)

	produce := func(b *kgo.Broker) int16 {
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
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	fetch := func(b *kgo.Broker, ep int32) int16 {
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
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	list := func(b *kgo.Broker, ep int32) int16 {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p, ep, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	checks := []struct {
		what string
		got  int16
		want int16
	}{
		{"Produce to the leader", produce(leader), 0},
		{"Produce to the other", produce(other), 6},
		{"Fetch from the leader at its epoch", fetch(leader, epoch), 0},
		{"Fetch from the leader without an epoch", fetch(leader, -1), 0},
		{"Fetch from the other", fetch(other, epoch), 6},
		{"Fetch with an older epoch", fetch(leader, epoch-1), 74},
		{"Fetch with a newer epoch", fetch(leader, epoch+1), 75},
		{"ListOffsets from the leader", list(leader, epoch), 0},
		{"ListOffsets from the other", list(other, -1), 6},
		{"ListOffsets with an older epoch", list(leader, epoch-1), 74},
		{"ListOffsets with a newer epoch", list(other, epoch+1), 75},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: error %d, want %d", c.what, c.got, c.want)
		}
	}

	// Groups: the same coordinator through each; the other says so.
	const groupID = "codes-group"
	coord := int32(-1)
	for id, cl := range clients {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = groupID
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 || coord >= 0 && resp.NodeID != coord {
			t.Fatalf("FindCoordinator through node %d: error %d node %d (before: %d)", id, resp.ErrorCode, resp.NodeID, coord)
		}
		coord = resp.NodeID
	}
	nonCoord := clients[3-coord].Broker(int(3 - coord))
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = groupID, "consumer", 10000, 10000
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name = "range"
	join.Protocols = append(join.Protocols, jp)
	jresp, err := join.RequestWith(ctx, nonCoord)
	if err != nil {
		t.Fatal(err)
	}
	if jresp.ErrorCode != 16 {
		t.Errorf("JoinGroup at the other instance: error %d, want 16", jresp.ErrorCode)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = groupID // up to v7
	og := kmsg.NewOffsetFetchRequestGroup()
	og.Group = groupID // v8+
	of.Groups = append(of.Groups, og)
	ofresp, err := of.RequestWith(ctx, nonCoord)
	if err != nil {
		t.Fatal(err)
	}
	if ofresp.ErrorCode != 16 && (len(ofresp.Groups) == 0 || ofresp.Groups[0].ErrorCode != 16) {
		t.Errorf("OffsetFetch at the other instance: %+v, want NOT_COORDINATOR", ofresp)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{groupID}
	dgresp, err := dg.RequestWith(ctx, nonCoord)
	if err != nil {
		t.Fatal(err)
	}
	if len(dgresp.Groups) != 1 || dgresp.Groups[0].ErrorCode != 16 {
		t.Errorf("DescribeGroups at the other instance: %+v, want NOT_COORDINATOR", dgresp)
	}
	dgresp, err = dg.RequestWith(ctx, clients[coord].Broker(int(coord)))
	if err != nil || len(dgresp.Groups) != 1 || dgresp.Groups[0].ErrorCode != 0 {
		t.Errorf("DescribeGroups at the coordinator: %+v %v", dgresp, err)
	}
}

// oneBatch is one uncompressed v2 record batch of one record.
func oneBatch() []byte {
	var b batch.Builder
	b.Reset(nil, 0, time.Now().UnixMilli(), batch.NoCompression)
	b.Append(0, 0, nil, []byte("v"))
	return b.Finish()
}
