package multinode

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
