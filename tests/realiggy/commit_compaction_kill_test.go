package realiggy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// compactionStarted is what kiggy logs once it has written the switch that
// starts a compaction of its commit log.
const compactionStarted = "iggy: compacting the commit log"

// TestCommitsSurviveKill9MidCompaction: four committers commit the offsets
// of eight partitions each through a kiggy alone on a real iggy-server, as
// fast as it answers, so that its commit log crosses the compaction
// threshold (10,000 records) every few seconds and kiggy compacts it while
// it runs (docs/IGGY.md "Committed offsets"). Three times, the moment kiggy
// logs that it started a compaction, it is killed with SIGKILL — between the
// switch record and the next generation's completion, or while the old
// generation is deleted — and a new kiggy started on the same address.
// Every group's committed offset for every partition is then at least its
// last acknowledged commit and at most its last attempted one: no
// acknowledged commit was lost to a compaction cut short.
func TestCommitsSurviveKill9MidCompaction(t *testing.T) {
	iggyserver.Require(t)
	kiggyproc.Binary(t)
	const topic, partitions, committers, kills = "compactkill", 8, 4, 3
	node := iggyserver.StartT(t)
	k := startKiggy(t, "kiggy-0", iggyFlags(node.Addr, "written")...)
	createTopic(t, k.Addr, topic, partitions)
	procs := []*kiggyProc{k}
	keepLogs(t, procs, []*iggyserver.Node{node})
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// OffsetCommit v10 names topics by id.
	var topicID [16]byte
	{
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		mctx, mcancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := req.RequestWith(mctx, cl)
		mcancel()
		if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("metadata of %s: %v %+v", topic, err, resp)
		}
		topicID = resp.Topics[0].TopicID
	}

	// acked[g][p] is the last offset committed for partition p by group g
	// and acknowledged; tried[g][p] the last attempted.
	var mu sync.Mutex
	acked := make([][partitions]int64, committers)
	tried := make([][partitions]int64, committers)
	commits := 0
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for g := range committers {
		wg.Go(func() {
			group := fmt.Sprintf("compactkill-%d", g)
			for n := int64(1); ctx.Err() == nil; n++ {
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Group, req.Generation = group, -1
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.Topic, rt.TopicID = topic, topicID
				for p := range int32(partitions) {
					rp := kmsg.NewOffsetCommitRequestTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch = p, n, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
				mu.Lock()
				for p := range partitions {
					tried[g][p] = n
				}
				mu.Unlock()
				rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
				resp, err := req.RequestWith(rctx, cl)
				rcancel()
				if err != nil {
					time.Sleep(20 * time.Millisecond) // kiggy is down
					continue
				}
				mu.Lock()
				for _, rp := range resp.Topics[0].Partitions {
					if rp.ErrorCode == 0 {
						acked[g][rp.Partition] = n
						commits++
					}
				}
				mu.Unlock()
			}
		})
	}
	stopCommitters := func() {
		cancel()
		wg.Wait()
	}
	defer stopCommitters()

	for i := range kills {
		if !testtools.EventuallyEvery(3*time.Minute, time.Millisecond, func() bool {
			b, _ := os.ReadFile(k.Log)
			return bytes.Contains(b, []byte(compactionStarted))
		}) {
			mu.Lock()
			n := commits
			mu.Unlock()
			t.Fatalf("kiggy did not start compacting its commit log within 3 minutes (%d partition commits acknowledged)", n)
		}
		k.Kill()
		mu.Lock()
		n := commits
		mu.Unlock()
		t.Logf("kill %d: SIGKILLed kiggy as it started compacting its commit log (%d partition commits acknowledged)", i+1, n)
		k = startKiggy(t, fmt.Sprintf("kiggy-%d", i+1), append(iggyFlags(node.Addr, "written"), "--listen", k.Addr)...)
		procs = append(procs, k)
		keepLogs(t, []*kiggyProc{k}, nil)
	}
	// A few commits through the last kiggy, then the check.
	mu.Lock()
	atRestart := commits
	mu.Unlock()
	testtools.WaitFor(t, time.Minute, "commits after the last restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return commits >= atRestart+100
	})
	stopCommitters()

	for g := range committers {
		group := fmt.Sprintf("compactkill-%d", g)
		got := committedOffsets(t, cl, group)
		for p := range partitions {
			if o := got[int32(p)]; o < acked[g][p] || o > tried[g][p] {
				t.Errorf("group %s partition %d: committed offset %d, want between its last acknowledged commit %d and its last attempted %d",
					group, p, o, acked[g][p], tried[g][p])
			}
		}
	}
	t.Logf("%d partition commits acknowledged over %d kills", commits, kills)
}

// committedOffsets returns group's committed offsets by partition (of its
// one topic), through cl.
func committedOffsets(t *testing.T, cl *kgo.Client, group string) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("fetching the offsets of group %s: %v", group, err)
	}
	got := map[int32]int64{}
	for _, tp := range resp.Groups[0].Topics {
		for _, p := range tp.Partitions {
			got[p.Partition] = p.Offset
		}
	}
	return got
}
