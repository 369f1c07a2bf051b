package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestIggyCrashKeepsAcknowledged crashes the Iggy server (iggytest's model
// of a SIGKILL: each partition loses the appends its journal had not yet
// flushed) under a steady franz-go produce load (acks=all) and a committing
// consumer group, restarts it on the same data, and checks what Kafka users
// take an acknowledgement to mean (docs/IGGY.md, "Durability"): every
// acknowledged record is stored at its acknowledged offset, no offset is
// acknowledged for two records, and every acknowledged commit is still there.
// With --iggy-durability buffered (Iggy's defaults, kiggy's options before
// it had durability levels) the same checks must find the loss.
func TestIggyCrashKeepsAcknowledged(t *testing.T) {
	for _, d := range []store.Durability{store.DurabilityWritten, store.DurabilityFsync, store.DurabilityBuffered} {
		t.Run(d.String(), func(t *testing.T) {
			r := crashUnderLoad(t, d)
			t.Logf("%v: acknowledged %d, lost %d, offsets reused %d, commits acknowledged %d, commits lost %d, iggytest dropped %d",
				d, r.acked, r.lost, r.reused, r.commits, r.commitsLost, r.dropped)
			if d == store.DurabilityBuffered {
				// The test can fail: with Iggy's defaults it sees the loss.
				if r.lost == 0 || r.reused == 0 {
					t.Fatalf("buffered: expected lost and reused offsets, got lost %d, reused %d", r.lost, r.reused)
				}
				return
			}
			if r.lost != 0 || r.reused != 0 || r.commitsLost != 0 || r.dropped != 0 {
				t.Fatalf("%v: %d acknowledged records lost, %d offsets acknowledged twice, %d acknowledged commits lost (iggytest dropped %d messages)",
					d, r.lost, r.reused, r.commitsLost, r.dropped)
			}
		})
	}
}

type crashResult struct {
	acked, lost, reused, commits, commitsLost int
	dropped                                   uint64
	pause                                     time.Duration // from the fault to the next acknowledgement
}

type ackedRecord struct {
	at    partOffset
	value string
}

type partOffset struct {
	p   int32
	off int64
}

func crashUnderLoad(t *testing.T, d store.Durability) crashResult {
	opts := fastGroups
	// The model: Crash drops what it had not written and says how much
	// (tests/realiggy kills a real iggy-server the same way).
	opts.Iggy, opts.IggyModel, opts.IggyDurability = true, true, d
	gw := kiggytest.Start(t, opts)
	var res crashResult
	faultUnderLoad(t, gw, &res, func() {
		addr := gw.Iggy.Addr().String()
		res.dropped = gw.Iggy.Crash()
		time.Sleep(300 * time.Millisecond) // the outage lasts 300 ms under the load
		if _, err := gw.Iggy.Start(addr); err != nil {
			t.Fatalf("restart iggytest: %v", err)
		}
	})
	return res
}

// faultUnderLoad runs a steady franz-go produce load (acks=all, values
// unique) and a consumer group committing after every poll on a 3-partition
// topic, injects fault once both are going, lets the load go on until 300
// more records were acknowledged, and fills res from the topic and the
// group's committed offsets read back.
func faultUnderLoad(t *testing.T, gw *kiggytest.Gateway, res *crashResult, fault func()) {
	t.Helper()
	const topic, group, partitions = "crash", "crash-g", 3
	gw.CreateTopic(t, topic, partitions)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var mu sync.Mutex
	acked := map[partOffset]string{} // offset → the value last acknowledged there
	var acks []ackedRecord           // every acknowledgement
	ackCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acks) }

	prod, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ProduceRequestTimeout(3*time.Second),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	stopProduce := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stopProduce:
				return
			default:
			}
			v := fmt.Sprintf("v%07d", i)
			prod.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
				if err != nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				k := partOffset{r.Partition, r.Offset}
				if prev, ok := acked[k]; ok && prev != v {
					res.reused++
				}
				acked[k] = v
				acks = append(acks, ackedRecord{k, v})
			})
			time.Sleep(time.Millisecond) // paces the load: a record every millisecond
		}
	}()

	// The group commits what it has read after every poll; commitMu keeps
	// the crash out of a commit so "acknowledged before the crash" is exact.
	var commitMu sync.Mutex
	committed := map[int32]int64{} // last acknowledged commit per partition
	cons, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.RequestTimeoutOverhead(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	consCtx, stopConsume := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for consCtx.Err() == nil {
			fs := cons.PollFetches(consCtx)
			next := map[int32]kgo.EpochOffset{}
			fs.EachRecord(func(r *kgo.Record) {
				next[r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: r.Offset + 1}
			})
			if len(next) == 0 {
				continue
			}
			commitMu.Lock()
			cons.CommitOffsetsSync(consCtx, map[string]map[int32]kgo.EpochOffset{topic: next},
				func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
					if err != nil {
						return
					}
					for _, rt := range resp.Topics {
						for _, rp := range rt.Partitions {
							if rp.ErrorCode == 0 {
								committed[rp.Partition] = next[rp.Partition].Offset
							}
						}
					}
				})
			commitMu.Unlock()
		}
	}()

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		if !testtools.Eventually(30*time.Second, ok) {
			t.Fatalf("%s: timed out (%d acknowledged)", what, ackCount())
		}
	}
	waitFor("acks before the crash", func() bool { return ackCount() >= 300 })
	waitFor("commits before the crash", func() bool { commitMu.Lock(); defer commitMu.Unlock(); return len(committed) == partitions })

	commitMu.Lock()
	before := map[int32]int64{}
	for p, o := range committed {
		before[p] = o
	}
	atFault, faultAt := ackCount(), time.Now()
	fault()
	commitMu.Unlock()
	waitFor("the first ack after the fault", func() bool { return ackCount() > atFault })
	res.pause = time.Since(faultAt)
	atRestart := ackCount()
	waitFor("acks after the fault", func() bool { return ackCount() >= atRestart+300 })
	close(stopProduce)
	stopConsume()
	wg.Wait()
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	stored := map[partOffset]string{}
	for p := int32(0); p < partitions; p++ {
		for _, r := range gw.Records(t, topic, p) {
			stored[partOffset{p, r.Offset}] = string(r.Value)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	res.acked = len(acks)
	lostBy := map[int32][]string{} // the first few losses per partition, for the log
	for _, a := range acks {
		if stored[a.at] != a.value {
			res.lost++
			if l := lostBy[a.at.p]; len(l) < 3 {
				lostBy[a.at.p] = append(l, fmt.Sprintf("offset %d acknowledged %q, stored %q", a.at.off, a.value, stored[a.at]))
			}
		}
	}
	for p, l := range lostBy {
		recs := gw.Records(t, topic, p)
		var offs []string
		for i, r := range recs {
			if i == 0 || r.Offset != recs[i-1].Offset+1 {
				offs = append(offs, fmt.Sprintf("from %d", r.Offset))
			}
		}
		t.Logf("partition %d (%d records stored, %s): %s", p, len(recs), strings.Join(offs, ", "), strings.Join(l, "; "))
	}

	// Every commit acknowledged before the crash is still there (the group
	// only moves forward, so a later commit may have replaced it).
	adm := kadm.NewClient(prod)
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	res.commits = len(before)
	for p, o := range before {
		got, ok := offs.Lookup(topic, p)
		if !ok || got.Err != nil || got.At < o {
			res.commitsLost++
			t.Logf("partition %d: commit %d acknowledged before the fault, now %+v", p, o, got)
		}
	}
}

// TestDurabilityConfigs: a topic's durability is visible through
// DescribeConfigs (kiggy.durability, flush.messages, flush.ms), Kafka's
// flush.messages / flush.ms ask for an fsync per write, and a topic created
// outside kiggy with Iggy's buffered defaults is reported as buffered.
func TestDurabilityConfigs(t *testing.T) {
	opts := kiggytest.Options{Iggy: true}
	gw := kiggytest.Start(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// "foreign" is created as the Iggy CLI would: no flush options.
	opts = gw.SameIggy(opts)
	opts.Iggy, opts.IggyDurability = false, store.DurabilityBuffered
	other := kiggytest.Start(t, opts)
	other.CreateTopic(t, "foreign", 1)

	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	str := func(s string) *string { return &s }
	for name, cfg := range map[string]map[string]*string{
		"plain":      nil,
		"flush-msgs": {"flush.messages": str("1")},
		"flush-ms":   {"flush.ms": str("1000")},
		"flush-off":  {"flush.messages": str("9223372036854775807")},
	} {
		if res, err := adm.CreateTopic(ctx, 1, -1, cfg, name); err != nil || res.Err != nil {
			t.Fatalf("create %s: %v %v", name, err, res.Err)
		}
	}
	if res, _ := adm.CreateTopic(ctx, 1, -1, map[string]*string{"flush.messages": str("0")}, "bad"); res.Err == nil {
		t.Fatal("flush.messages=0 accepted; Kafka requires at least 1")
	}
	for name, want := range map[string][3]string{
		"plain":      {"written", "9223372036854775807", "9223372036854775807"},
		"flush-msgs": {"fsync", "1", "0"},
		"flush-ms":   {"fsync", "1", "1000"}, // the override as set; flush.messages as the backend does
		"flush-off":  {"written", "9223372036854775807", "9223372036854775807"},
		"foreign":    {"buffered", "9223372036854775807", "9223372036854775807"},
	} {
		cfgs, err := adm.DescribeTopicConfigs(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := cfgs.On(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]string{}
		for _, c := range rc.Configs {
			found[c.Key] = c.MaybeValue()
		}
		if got := [3]string{found["kiggy.durability"], found["flush.messages"], found["flush.ms"]}; got != want {
			t.Errorf("%s: kiggy.durability, flush.messages, flush.ms = %q, want %q", name, got, want)
		}
	}
}
