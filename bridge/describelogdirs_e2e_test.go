package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestDescribeLogDirsAllTopics: a DescribeLogDirs of every topic (a null
// list) lists each topic once, in name order, with each of its partitions
// and the bytes it holds: more topics than the gateway looks up at once.
func TestDescribeLogDirsAllTopics(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	const topics = 20
	var names []string
	for i := range topics {
		name := fmt.Sprintf("dirs-%02d", i)
		gw.CreateTopic(t, name, int32(1+i%3))
		names = append(names, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Topic i gets i records of 100 bytes in its last partition.
	for i, name := range names {
		for range i {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: name, Partition: int32(i % 3), Value: make([]byte, 100)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	resp, err := cl.Broker(1).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.DescribeLogDirsResponse)
	if r.ErrorCode != 0 || len(r.Dirs) != 1 || r.Dirs[0].ErrorCode != 0 || r.Dirs[0].TotalBytes != -1 || r.Dirs[0].UsableBytes != -1 {
		t.Fatalf("DescribeLogDirs: %+v", r)
	}
	var listed []string
	for _, tp := range r.Dirs[0].Topics {
		listed = append(listed, tp.Topic)
		var i int
		if _, err := fmt.Sscanf(tp.Topic, "dirs-%d", &i); err != nil {
			continue // another test's topic
		}
		if len(tp.Partitions) != 1+i%3 {
			t.Errorf("%s: %d partitions listed, want %d", tp.Topic, len(tp.Partitions), 1+i%3)
		}
		for j, p := range tp.Partitions {
			want := p.Partition == int32(i%3) && i > 0
			if p.Partition != int32(j) || want && p.Size < int64(i)*100 || !want && p.Size != 0 {
				t.Errorf("%s partition %d (listed %d-th): size %d after %d records of 100 bytes in partition %d", tp.Topic, p.Partition, j, p.Size, i, i%3)
			}
		}
	}
	if !slices.IsSorted(listed) {
		t.Errorf("topics not in name order: %v", listed)
	}
	for _, name := range names {
		if !slices.Contains(listed, name) {
			t.Errorf("%s not listed: %v", name, listed)
		}
	}
}
