package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bench"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
)

// result is one run: N instances, one repetition.
type result struct {
	Instances int `json:"instances"`
	Rep       int `json:"rep"`

	ProduceRecordsPerSec float64 `json:"produce_records_per_sec"`
	ProduceWindowSec     float64 `json:"produce_window_sec"`
	Acked                int64   `json:"acked"`
	ProduceErrors        int64   `json:"produce_errors"`
	ConsumeRecordsPerSec float64 `json:"consume_records_per_sec"`
	ConsumeSec           float64 `json:"consume_sec"`
	Consumed             int64   `json:"consumed"`

	// ProduceCPU and ConsumeCPU are CPU seconds per process over the
	// produce window and the consume phase: kiggy-1 … kiggy-N, iggy-server,
	// and "clients" (this process: every producer and consumer).
	ProduceCPU map[string]float64 `json:"produce_cpu_sec"`
	ConsumeCPU map[string]float64 `json:"consume_cpu_sec"`
	// OtherShare is the fraction of the machine's CPU over the produce
	// window used by none of the measured processes (other work).
	OtherShare float64 `json:"other_share"`
	// Leaders is how many of the topic's partitions each instance leads.
	Leaders map[string]int `json:"leaders"`
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute figures.
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end"`
}

// cluster is one run's processes.
type cluster struct {
	iggy  *iggyserver.Node
	kiggy []*proc
	addrs []string
}

func (c *cluster) stop() error {
	var errs []error
	for _, p := range c.kiggy {
		errs = append(errs, p.stop(30*time.Second))
	}
	if c.iggy != nil {
		errs = append(errs, c.iggy.StopWithin(30*time.Second))
	}
	return errors.Join(errs...)
}

// cpu reads every measured process's CPU time so far.
func (c *cluster) cpu() (map[string]time.Duration, time.Duration) {
	m := map[string]time.Duration{}
	var total time.Duration
	add := func(name string, pid int) {
		d, err := bench.ProcCPU(pid)
		if err == nil {
			m[name] = d
			total += d
		}
	}
	for _, p := range c.kiggy {
		add(p.name, p.pid())
	}
	add("iggy-server", c.iggy.Pid())
	add("clients", os.Getpid())
	return m, total
}

func cpuDelta(a, b map[string]time.Duration) map[string]float64 {
	out := map[string]float64{}
	for k, v := range b {
		out[k] = (v - a[k]).Seconds()
	}
	return out
}

func measure(ctx context.Context, cfg config, n, rep int) (res *result, err error) {
	tag := fmt.Sprintf("n%d-r%d", n, rep+1)
	res = &result{Instances: n, Rep: rep + 1, LoadStart: loadAvg()}
	c := &cluster{}
	defer func() {
		if serr := c.stop(); serr != nil && err == nil {
			err = serr
		}
		// The logs stay (with -keep); the records go: a run writes GBs.
		if c.iggy != nil {
			_ = os.RemoveAll(c.iggy.DataDir())
		}
	}()
	// A fresh iggy-server: a new data directory, TCP only on a free
	// loopback port, root iggy/iggy, one shard.
	ig, err := iggyserver.StartContext(ctx, cfg.iggyServer, iggyserver.Options{Dir: cfg.work, Name: "iggy-server-" + tag})
	if err != nil {
		return nil, err
	}
	c.iggy = ig
	iaddr := ig.Addr
	for i := 1; i <= n; i++ {
		p, addr, err := startKiggy(ctx, cfg.kiggy, cfg.work, "kiggy-"+strconv.Itoa(i)+"-"+tag, i, iaddr)
		if err != nil {
			return nil, err
		}
		p.name = "kiggy-" + strconv.Itoa(i)
		c.kiggy, c.addrs = append(c.kiggy, p), append(c.addrs, addr)
	}
	if err := waitBrokers(ctx, c.addrs, n); err != nil {
		return nil, err
	}
	topic := "kscale-" + tag
	leaders, err := createTopic(ctx, c.addrs, topic, int32(cfg.partitions))
	if err != nil {
		return nil, err
	}
	res.Leaders = leaders
	logf("%d instance(s) ready; partition leaders %v", n, leaders)

	acked, err := produce(ctx, cfg, c, topic, res)
	if err != nil {
		return nil, err
	}
	if err := consume(ctx, cfg, c, topic, acked, res); err != nil {
		return nil, err
	}
	res.LoadEnd = loadAvg()
	return res, nil
}

// waitBrokers waits until Metadata through every instance lists n brokers.
func waitBrokers(ctx context.Context, addrs []string, n int) error {
	deadline := time.Now().Add(time.Minute)
	for _, a := range addrs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(a))
		if err != nil {
			return err
		}
		for {
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if err == nil && len(resp.Brokers) == n {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				return fmt.Errorf("the instance at %s does not list %d brokers after a minute (%v)", a, n, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		cl.Close()
	}
	return nil
}

// createTopic creates topic and waits until Metadata through every instance
// gives every partition the same live leader; it returns how many
// partitions each node leads.
func createTopic(ctx context.Context, addrs []string, topic string, partitions int32) (map[string]int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return nil, fmt.Errorf("create topic %s: %w", topic, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		leaders, err := agreedLeaders(ctx, addrs, topic, partitions)
		if err == nil {
			return leaders, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func agreedLeaders(ctx context.Context, addrs []string, topic string, partitions int32) (map[string]int, error) {
	var first []int32
	for _, a := range addrs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(a))
		if err != nil {
			return nil, err
		}
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		cl.Close()
		if err != nil {
			return nil, err
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != int(partitions) {
			return nil, fmt.Errorf("%s: topic %s not ready", a, topic)
		}
		got := make([]int32, partitions)
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 || p.Partition < 0 || p.Partition >= partitions {
				return nil, fmt.Errorf("%s: partition %d has no leader", a, p.Partition)
			}
			got[p.Partition] = p.Leader
		}
		if first == nil {
			first = got
		} else if !slices.Equal(first, got) {
			return nil, errors.New("instances disagree on the leaders")
		}
	}
	out := map[string]int{}
	for _, l := range first {
		out["kiggy-"+strconv.Itoa(int(l))]++
	}
	return out, nil
}

// produce drives cfg.producers idempotent franz-go producers as fast as they
// go for warm-up plus the window, and returns the records acknowledged per
// partition over the whole run.
func produce(ctx context.Context, cfg config, c *cluster, topic string, res *result) ([]int64, error) {
	value := make([]byte, cfg.recordSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	t := newTally(cfg.partitions)
	clients, err := newProducers(cfg, c.addrs, topic)
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	var wg sync.WaitGroup
	done := t.done
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && pctx.Err() == nil {
				cl.Produce(pctx, &kgo.Record{Value: value}, done)
			}
		}()
	}
	w, err := measureWindow(ctx, cfg, c, t)
	if err != nil {
		return nil, err
	}
	stop.Store(true)
	fctx, fcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer fcancel()
	for _, cl := range clients {
		if err := cl.Flush(fctx); err != nil {
			return nil, fmt.Errorf("flush: %w", err)
		}
	}
	wg.Wait()
	return t.record(w, res), nil
}

// newProducers creates cfg.producers producers of topic bootstrapped from
// every instance; on an error it returns those it created.
func newProducers(cfg config, addrs []string, topic string) ([]*kgo.Client, error) {
	var clients []*kgo.Client
	for range cfg.producers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(cfg.linger),
			kgo.MaxBufferedBytes(32<<20), kgo.MaxBufferedRecords(1<<30), kgo.RecordDeliveryTimeout(2*time.Minute))
		if err != nil {
			return clients, err
		}
		clients = append(clients, cl)
	}
	return clients, nil
}

// tally counts a produce run's acknowledgements: per partition over the
// whole run, and those inside the measurement window.
type tally struct {
	acked            []atomic.Int64
	inWindow, failed atomic.Int64
	firstErr         atomic.Value
	winStart, winEnd atomic.Int64 // unix nanos; far future until set
}

func newTally(partitions int) *tally {
	t := &tally{acked: make([]atomic.Int64, partitions)}
	t.winStart.Store(1<<62 - 1)
	t.winEnd.Store(1<<62 - 1)
	return t
}

// done is the producers' promise: it counts one record's outcome.
func (t *tally) done(r *kgo.Record, err error) {
	if err != nil {
		if t.failed.Add(1) == 1 {
			t.firstErr.Store(err)
		}
		return
	}
	t.acked[r.Partition].Add(1)
	if now := time.Now().UnixNano(); now >= t.winStart.Load() && now < t.winEnd.Load() {
		t.inWindow.Add(1)
	}
}

// window is a produce measurement window: its bounds, and the processes'
// and the machine's CPU time at each end.
type window struct {
	t0, t1                           time.Time
	cpu0, cpu1                       map[string]time.Duration
	m0busy, m0total, m1busy, m1total time.Duration
}

// measureWindow waits out the warm-up, then measures the window, marking
// its bounds in t.
func measureWindow(ctx context.Context, cfg config, c *cluster, t *tally) (window, error) {
	var w window
	sleep := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := sleep(cfg.warmup); err != nil {
		return w, err
	}
	w.cpu0, _ = c.cpu()
	w.m0busy, w.m0total, _ = bench.MachineCPU()
	w.t0 = time.Now()
	t.winStart.Store(w.t0.UnixNano())
	if err := sleep(cfg.duration); err != nil {
		return w, err
	}
	w.t1 = time.Now()
	t.winEnd.Store(w.t1.UnixNano())
	w.cpu1, _ = c.cpu()
	w.m1busy, w.m1total, _ = bench.MachineCPU()
	return w, nil
}

// record writes the run's figures into res and returns the records
// acknowledged per partition.
func (t *tally) record(w window, res *result) []int64 {
	res.ProduceWindowSec = w.t1.Sub(w.t0).Seconds()
	res.ProduceRecordsPerSec = float64(t.inWindow.Load()) / res.ProduceWindowSec
	res.ProduceCPU = cpuDelta(w.cpu0, w.cpu1)
	res.ProduceErrors = t.failed.Load()
	measured := 0.0
	for _, v := range res.ProduceCPU {
		measured += v
	}
	if tot := (w.m1total - w.m0total).Seconds(); tot > 0 {
		res.OtherShare = max(0, ((w.m1busy-w.m0busy).Seconds()-measured)/tot)
	}
	out := make([]int64, len(t.acked))
	for p := range out {
		out[p] = t.acked[p].Load()
		res.Acked += out[p]
	}
	if e := t.firstErr.Load(); e != nil {
		logf("%d produce errors, the first: %v", t.failed.Load(), e)
	}
	return out
}

// consume reads the whole topic back with cfg.consumers group-less
// consumers (partitions dealt round-robin) and checks it against acked.
func consume(ctx context.Context, cfg config, c *cluster, topic string, acked []int64, res *result) error {
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...))
	if err != nil {
		return err
	}
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	adm.Close()
	if err != nil {
		return fmt.Errorf("end offsets: %w", err)
	}
	end := make([]int64, cfg.partitions)
	ends.Each(func(o kadm.ListedOffset) {
		if o.Partition >= 0 && int(o.Partition) < len(end) {
			end[o.Partition] = o.Offset
		}
	})
	var total atomic.Int64
	byPart := make([]atomic.Int64, cfg.partitions)
	cpu0, _ := c.cpu()
	t0 := time.Now()
	errc := make(chan error, cfg.consumers)
	for i := range cfg.consumers {
		parts := map[int32]kgo.Offset{}
		for p := i; p < cfg.partitions; p += cfg.consumers {
			if end[p] > 0 {
				parts[int32(p)] = kgo.NewOffset().AtStart()
			}
		}
		go func() { errc <- consumeOne(ctx, c.addrs, topic, parts, end, &total, byPart) }()
	}
	var errs []error
	for range cfg.consumers {
		errs = append(errs, <-errc)
	}
	elapsed := time.Since(t0)
	cpu1, _ := c.cpu()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	res.Consumed = total.Load()
	res.ConsumeSec = elapsed.Seconds()
	res.ConsumeRecordsPerSec = float64(res.Consumed) / elapsed.Seconds()
	res.ConsumeCPU = cpuDelta(cpu0, cpu1)
	for p := range end {
		if got := byPart[p].Load(); got != end[p] || acked[p] > end[p] {
			return fmt.Errorf("%w: partition %d: read %d, end offset %d, acknowledged %d", errMismatch, p, got, end[p], acked[p])
		}
	}
	return nil
}

func consumeOne(ctx context.Context, seeds []string, topic string, parts map[int32]kgo.Offset, end []int64, total *atomic.Int64, byPart []atomic.Int64) error {
	if len(parts) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	remaining := len(parts)
	idle := time.Now()
	for remaining > 0 {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return fmt.Errorf("consume %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			total.Add(1)
			if byPart[r.Partition].Add(1) == end[r.Partition] {
				remaining--
			}
		})
		if n > 0 {
			idle = time.Now()
		} else if time.Since(idle) > 30*time.Second {
			return fmt.Errorf("consume: nothing for 30 s with %d partitions unfinished", remaining)
		}
	}
	return nil
}
