package realiggy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partOffset is where a record was acknowledged or found.
type partOffset struct {
	p   int32
	off int64
}

// ack is one acknowledged record.
type ack struct {
	at    partOffset
	value string
	when  time.Time
}

// load is a bounded acks=all produce load through kiggy: one idempotent
// and one non-idempotent franz-go producer (both retry what fails; the
// first has kiggy deduplicate a resent batch, the second stores it again at
// a new offset), each producing records of unique values at up to about
// 1,000 a second until stopped, or for at most loadFor or perProducer
// records. Every acknowledgement is recorded with its partition and offset.
type load struct {
	topic   string
	ctx     context.Context
	cancel  context.CancelFunc
	stopped chan struct{}
	paused  atomic.Bool
	parked  atomic.Int32 // producers waiting out a pause, or done
	wg      sync.WaitGroup
	clients []*kgo.Client

	mu   sync.Mutex
	acks []ack
	errs map[string]int // failed records by error
}

const (
	perProducer = 150_000
	loadFor     = 150 * time.Second
	// burst records are produced, then the producer sleeps burstPause:
	// about 1,000 records a second each, so two producers leave most of
	// the two cores to iggy-server and kiggy.
	burst      = 10
	burstPause = 10 * time.Millisecond
	valuePad   = 80 // bytes of padding per value
)

func startLoad(t *testing.T, addr, topic string) *load {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{topic: topic, ctx: ctx, cancel: cancel, stopped: make(chan struct{}), errs: map[string]int{}}
	pad := strings.Repeat("x", valuePad)
	for i, idempotent := range []bool{true, false} {
		opts := []kgo.Opt{
			kgo.SeedBrokers(addr),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(2 * time.Millisecond),
			kgo.ProduceRequestTimeout(10 * time.Second),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.MaxBufferedRecords(2_000),
			kgo.RetryTimeout(60 * time.Second),
		}
		kind := "i"
		if !idempotent {
			kind = "n"
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		l.clients = append(l.clients, cl)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer l.parked.Add(1) // a producer that is done is as good as paused
			end := time.Now().Add(loadFor)
			for n := range perProducer {
				if n%burst == 0 && n > 0 && !l.wait(end) {
					return
				}
				v := fmt.Sprintf("%s%d-%08d-%s", kind, i, n, pad)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
					l.mu.Lock()
					defer l.mu.Unlock()
					if err != nil {
						l.errs[errText(err)]++
						return
					}
					l.acks = append(l.acks, ack{partOffset{r.Partition, r.Offset}, v, time.Now()})
				})
			}
		}()
	}
	t.Cleanup(func() { l.stop(t, 0) }) // a test that ended early: what is in flight fails now
	return l
}

// wait sleeps burstPause, and on for as long as the load is paused
// (counted in parked meanwhile); false when the load is stopped or its
// time is up.
func (l *load) wait(end time.Time) bool {
	parked := false
	defer func() {
		if parked {
			l.parked.Add(-1)
		}
	}()
	for {
		select {
		case <-l.stopped:
			return false
		case <-time.After(burstPause):
		}
		if time.Now().After(end) {
			return false
		}
		if !l.paused.Load() {
			return true
		}
		if !parked {
			parked = true
			l.parked.Add(1)
		}
	}
}

// pause stops producing new records: it returns once every producer waits
// and the records they produced were acknowledged or failed (up to 30 s).
// resume goes on.
func (l *load) pause(t *testing.T) {
	l.paused.Store(true)
	testtools.WaitFor(t, 30*time.Second, "the producers to pause", func() bool { return int(l.parked.Load()) == len(l.clients) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, cl := range l.clients {
		if err := cl.Flush(ctx); err != nil {
			t.Fatalf("pause: records still in flight after 30s: %v", err)
		}
	}
}

func (l *load) resume() { l.paused.Store(false) }

// errText shortens a produce error to its kind for the error counts.
func errText(err error) string {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke.Message
	case errors.Is(err, context.Canceled):
		return "canceled at the end"
	}
	return err.Error()
}

// acked is how many records were acknowledged so far.
func (l *load) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// longestPause is the longest time without an acknowledgement from the
// fault at on to the first acknowledgement after until (both included).
func longestPause(acks []ack, at, until time.Time) time.Duration {
	var longest time.Duration
	prev := at
	for _, a := range acks {
		if !a.when.After(at) {
			continue
		}
		longest = max(longest, a.when.Sub(prev))
		prev = a.when
		if a.when.After(until) {
			break
		}
	}
	return longest
}

// finish stops producing, waits up to 30 s for the records in flight to be
// acknowledged or fail, and closes the producers. It returns every
// acknowledgement. A second call returns them again.
func (l *load) finish(t *testing.T) []ack {
	l.stop(t, 30*time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acks)
}

// stop is finish's first part, waiting up to wait for the records in
// flight; a second call does nothing.
func (l *load) stop(t *testing.T, wait time.Duration) {
	select {
	case <-l.stopped:
	default:
		close(l.stopped)
		// A producer blocked on a full buffer returns when its records
		// drain, or when the load's context ends.
		produced := make(chan struct{})
		go func() { l.wg.Wait(); close(produced) }()
		select {
		case <-produced:
		case <-time.After(wait):
			l.cancel()
			<-produced
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		for _, cl := range l.clients {
			if err := cl.Flush(ctx); err != nil && wait > 0 {
				t.Logf("flush: %v (the records still in flight fail)", err)
			}
		}
		cancel()
		l.cancel()
		for _, cl := range l.clients {
			cl.Close()
		}
	}
}

// errors describes the failed records.
func (l *load) errors() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l.errs)) {
		parts = append(parts, fmt.Sprintf("%d × %q", l.errs[k], k))
	}
	return strings.Join(parts, ", ")
}

// createTopic creates topic with n partitions through kiggy, retrying
// errors a view change of an Iggy cluster can cause (kiggy answers a
// metadata write whose outcome is unknown REQUEST_TIMED_OUT; "already
// exists" after such a retry is success), and checks the partition count.
func createTopic(t *testing.T, addr, topic string, n int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if !testtools.EventuallyEvery(60*time.Second, 500*time.Millisecond, func() bool {
		var res kadm.CreateTopicResponse
		res, err = adm.CreateTopic(ctx, n, -1, nil, topic)
		if err == nil {
			err = res.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return true
		}
		t.Logf("create topic %s: %v; retrying", topic, err)
		return false
	}) {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(td[topic].Partitions); got != int(n) {
		t.Fatalf("topic %s has %d partitions, want %d", topic, got, n)
	}
}

// topicConfig is the topic's config key as kiggy at addr describes it
// ("" when it has none).
func topicConfig(t *testing.T, addr, topic, key string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfgs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cfgs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue()
		}
	}
	return ""
}

// readBack reads every record of topic's partitions through kiggy at addr,
// from the log start to the high watermark as of the call.
func readBack(t *testing.T, addr, topic string, partitions int32) map[partOffset]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	want := map[int32]int64{}
	from := map[int32]kgo.Offset{}
	for p := range partitions {
		lo, ok := ends.Lookup(topic, p)
		if !ok || lo.Err != nil {
			t.Fatalf("end offset of %s-%d: %+v", topic, p, lo)
		}
		if lo.Offset > 0 {
			want[p] = lo.Offset
			from[p] = kgo.NewOffset().AtStart()
		}
	}
	stored := map[partOffset]string{}
	if len(want) == 0 {
		return stored
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	next := map[int32]int64{}
	for {
		done := true
		for p, end := range want {
			done = done && next[p] >= end
		}
		if done {
			return stored
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %s: timed out at %v of %v", topic, next, want)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("read back %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			stored[partOffset{r.Partition, r.Offset}] = string(r.Value)
			next[r.Partition] = r.Offset + 1
		})
	}
}

// verdict compares the acknowledgements with what was read back.
type verdict struct {
	acked int
	// lost: acknowledged records not stored at their acknowledged offset
	// (moved: of those, stored at another offset).
	lost, moved int
	// reused: offsets acknowledged for two different records.
	reused int
	// storedTwice: acknowledged values stored at more than one offset. A
	// non-idempotent producer's resend of a batch whose outcome was unknown
	// is stored again (at-least-once, allowed); an idempotent producer's
	// (idempotentTwice) must not be (docs/LIMITS.md "Delivery guarantees").
	storedTwice, idempotentTwice int
	// stored: records read back; beyond: acknowledged offsets at or past
	// the read-back end of their partition.
	stored, beyond int
	examples       []string
}

func check(acks []ack, stored map[partOffset]string) verdict {
	v := verdict{acked: len(acks), stored: len(stored)}
	end := map[int32]int64{}
	where := map[string][]partOffset{}
	for at, val := range stored {
		where[val] = append(where[val], at)
		end[at.p] = max(end[at.p], at.off+1)
	}
	first := map[partOffset]string{}
	reused := map[partOffset]bool{}
	for _, a := range acks {
		if prev, ok := first[a.at]; ok && prev != a.value && !reused[a.at] {
			reused[a.at] = true
			v.reused++
			if len(v.examples) < 8 {
				v.examples = append(v.examples, fmt.Sprintf("offset %d/%d acknowledged for %.12s and %.12s", a.at.p, a.at.off, prev, a.value))
			}
		}
		first[a.at] = a.value
		if a.at.off >= end[a.at.p] {
			v.beyond++
		}
		switch got, ok := stored[a.at]; {
		case ok && got == a.value:
		default:
			v.lost++
			if len(where[a.value]) > 0 {
				v.moved++
			}
			if len(v.examples) < 8 {
				v.examples = append(v.examples, fmt.Sprintf("%.12s acknowledged at %d/%d, found there %.12q, stored at %v", a.value, a.at.p, a.at.off, got, where[a.value]))
			}
		}
		if len(where[a.value]) > 1 {
			v.storedTwice++
			if strings.HasPrefix(a.value, "i") {
				v.idempotentTwice++
				if len(v.examples) < 8 {
					v.examples = append(v.examples, fmt.Sprintf("%.12s (idempotent) acknowledged at %d/%d, stored at %v", a.value, a.at.p, a.at.off, where[a.value]))
				}
			}
		}
	}
	return v
}

func (v verdict) String() string {
	return fmt.Sprintf("%d acknowledged, %d stored; %d acknowledged lost (%d of them stored at another offset, %d at or past their partition's end), %d offsets acknowledged twice, %d acknowledged values stored more than once (%d of them idempotent)",
		v.acked, v.stored, v.lost, v.moved, v.beyond, v.reused, v.storedTwice, v.idempotentTwice)
}
