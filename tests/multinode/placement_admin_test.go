package multinode

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLogDirsAcrossInstances: each instance's DescribeLogDirs lists the
// partitions it leads, as each Kafka broker lists the replicas it holds,
// so the instances together list every partition once, and franz-go's
// DescribeAllLogDirs, which asks every broker, sees each partition once.
func TestLogDirsAcrossInstances(t *testing.T) {
	const topic, parts = "logdirs", int32(8)
	n1, n2 := startPair(t, topic, parts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n1.addr, n2.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[int32]int32{} // partition → the node that listed it
	for _, node := range []int32{1, 2} {
		resp, err := cl.Broker(int(node)).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.DescribeLogDirsResponse)
		if r.ErrorCode != 0 || len(r.Dirs) != 1 || r.Dirs[0].ErrorCode != 0 {
			t.Fatalf("node %d: %+v", node, r)
		}
		for _, tp := range r.Dirs[0].Topics {
			for _, p := range tp.Partitions {
				if tp.Topic != topic {
					continue
				}
				if leader := n1.m.Leader(topic, p.Partition).Leader; leader != node {
					t.Errorf("node %d lists partition %d, which node %d leads", node, p.Partition, leader)
				}
				if other, dup := seen[p.Partition]; dup {
					t.Errorf("partition %d listed by nodes %d and %d", p.Partition, other, node)
				}
				seen[p.Partition] = node
			}
		}
	}
	if len(seen) != int(parts) {
		t.Errorf("the instances list %d of %d partitions: %v", len(seen), parts, seen)
	}
	all, err := kadm.NewClient(cl).DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	all.Each(func(d kadm.DescribedLogDir) { n += len(d.Topics[topic]) })
	if n != int(parts) {
		t.Errorf("DescribeAllLogDirs sees %d partitions of %s, want %d", n, topic, parts)
	}
}

// TestReassignAcrossInstances: in a cluster a partition's one replica is
// the instance that leads it; a reassignment to it succeeds at any
// instance, one to the other live instance is INVALID_REPLICA_ASSIGNMENT
// (kiggy places partitions itself), and a preferred election needs none.
func TestReassignAcrossInstances(t *testing.T) {
	const topic, parts = "reassign", int32(4)
	n1, n2 := startPair(t, topic, parts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n1.addr, n2.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p := range parts {
		leader := n1.m.Leader(topic, p).Leader
		other := 3 - leader
		for _, node := range []int32{1, 2} {
			req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = topic
			for _, target := range []int32{leader, other} {
				rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
				rp.Partition, rp.Replicas = p, []int32{target}
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := cl.Broker(int(node)).Request(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			got := resp.(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions
			if got[0].ErrorCode != 0 || got[1].ErrorCode != 39 {
				t.Errorf("partition %d (led by %d) at node %d: to its leader %d, to %d: %+v", p, leader, node, got[0].ErrorCode, got[1].ErrorCode, got)
			}
		}
	}
	res, err := kadm.NewClient(cl).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}, 3: {}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ps := range res {
		for p, r := range ps {
			n++
			if !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				t.Errorf("preferred election of %s-%d: %v, want ELECTION_NOT_NEEDED", topic, p, r.Err)
			}
		}
	}
	if n != int(parts) {
		t.Errorf("preferred election: %d results, want %d", n, parts)
	}
}
