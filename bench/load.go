package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The franz-go load. Producers are kgo clients producing records whose
// values are windows into one shared buffer of random capital letters (like
// kafka-producer-perf-test's payloads: compressible, but not trivially), so
// lz4 and zstd have realistic work to do. Each record's Timestamp is the
// time it was due to be sent: the moment Produce was called, or in a
// rate-limited run its slot in the schedule, so that a producer falling
// behind is charged the wait (no coordinated omission). Its latency is the
// time from then to the acknowledgement callback, the same definition as
// kafka-producer-perf-test's (send to callback). Throughput counts the
// acknowledgements that arrive inside the measurement window; latency is
// recorded for every record due inside the window, however late its
// acknowledgement comes (the final flush waits for all of them).

// payloadBuf is the size of the shared buffer record values are cut from.
const payloadBuf = 4 << 20

// payload hands out record values of one size.
type payload struct {
	buf  []byte
	size int
}

func newPayload(size int) *payload {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, payloadBuf+size)
	for i := range buf {
		buf[i] = 'A' + byte(r.IntN(26))
	}
	return &payload{buf: buf, size: size}
}

// at returns the value starting at a position chosen by x. Values alias the
// shared buffer, which nobody writes after newPayload.
func (p *payload) at(x uint64) []byte {
	off := int(x % uint64(payloadBuf))
	return p.buf[off : off+p.size : off+p.size]
}

// cpuMeter reads the CPU time of the server processes and of this process.
type cpuMeter struct {
	pids []int
}

// cpuSample is one reading of a cpuMeter.
type cpuSample struct {
	server time.Duration
	// gateway is the first server process's share of server: the gateway
	// (or broker) without the storage process behind it.
	gateway time.Duration
	client  time.Duration
	ok      bool
	// machineBusy and machineTotal are the whole machine's (MachineCPU).
	machineBusy, machineTotal time.Duration
}

// otherShare returns the fraction of the machine's CPU time between s0 and
// s1 that neither the servers nor this process used: other work on the
// machine competing with the benchmark. NaN when unknown.
func otherShare(s0, s1 cpuSample) float64 {
	total := s1.machineTotal - s0.machineTotal
	if total <= 0 || !s0.ok || !s1.ok {
		return math.NaN()
	}
	other := (s1.machineBusy - s0.machineBusy) - (s1.server - s0.server) - (s1.client - s0.client)
	return max(0, float64(other)/float64(total))
}

func (m cpuMeter) read() cpuSample {
	s := cpuSample{ok: len(m.pids) > 0}
	for i, pid := range m.pids {
		d, err := ProcCPU(pid)
		if err != nil {
			s.ok = false
		}
		s.server += d
		if i == 0 {
			s.gateway = d
		}
	}
	if d, err := ProcCPU(selfPID); err == nil {
		s.client = d
	}
	s.machineBusy, s.machineTotal, _ = MachineCPU()
	return s
}

// windowHooks are called when a measurement window begins and ends (to
// start and stop a CPU profile of the gateway); nil functions are skipped.
type windowHooks struct {
	onBegin, onEnd func()
}

func (h windowHooks) begin() {
	if h.onBegin != nil {
		h.onBegin()
	}
}

func (h windowHooks) end() {
	if h.onEnd != nil {
		h.onEnd()
	}
}

// produceResult is what one franz-go produce phase measured.
type produceResult struct {
	window time.Duration
	// records and bytes were acknowledged during the measurement window.
	records, bytes int64
	hist           *Histogram
	// acked counts every acknowledged record by partition, warm-up included.
	acked []int64
	// serverCPU and clientCPU were used during the window; cpuOK is false
	// when the server's could not be read.
	serverCPU, clientCPU time.Duration
	gatewayCPU           time.Duration // serverCPU's first process
	cpuOK                bool
	// otherCPU is the share of the machine other processes used.
	otherCPU float64
	// sockets is the first server process's open sockets at the window's
	// end (0 = unknown).
	sockets int
}

// producer is the shared state of one produce phase's clients.
type producer struct {
	load    Load
	payload *payload
	pool    sync.Pool
	// winStart and winEnd bound the measurement window in Unix ns: a
	// record acknowledged in it counts toward throughput, and a record due
	// in it has its latency recorded whenever it is acknowledged, during
	// the final flush included, so that a stall at the end of the window
	// is not left out of the percentiles.
	winStart, winEnd atomic.Int64
	hist             Histogram
	inWin            atomic.Int64
	acked            []atomic.Int64
	failed           atomic.Int64
	errOnce          sync.Once
	err              error
	errc             chan struct{} // closed on the first failure
	// txn is set for transactional producers, whose records count toward
	// the window when their transaction commits, not when acknowledged.
	txn *txnState
	// stamp writes each record's due time, in Unix nanoseconds, into the
	// first bytes of a copy of its value (stampValue), for the end-to-end
	// latency a consumer reads back (e2e.go).
	stamp bool
}

func (p *producer) fail(err error) {
	p.errOnce.Do(func() {
		p.err = err
		close(p.errc)
	})
}

// done is every record's promise. It must stay cheap: franz-go calls it on
// its own goroutines, in order per partition.
func (p *producer) done(r *kgo.Record, err error) {
	if err != nil {
		p.failed.Add(1)
		p.fail(fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err))
	} else {
		now := time.Now()
		if t := now.UnixNano(); p.txn == nil && t >= p.winStart.Load() && t < p.winEnd.Load() {
			p.inWin.Add(1)
		}
		if due := r.Timestamp.UnixNano(); due >= p.winStart.Load() && due < p.winEnd.Load() {
			p.hist.Record(now.Sub(r.Timestamp))
		}
		if int(r.Partition) < len(p.acked) {
			p.acked[r.Partition].Add(1)
		}
	}
	*r = kgo.Record{}
	p.pool.Put(r)
}

func (p *producer) record(value []byte, due time.Time) *kgo.Record {
	r := p.pool.Get().(*kgo.Record)
	if p.stamp {
		value = stampValue(value, due)
	}
	r.Value = value
	r.Timestamp = due
	return r
}

// producerOpts are the kgo options for l. Idempotence follows the Java
// client's rules: it needs acks=all and at most 5 requests in flight, so it
// is on exactly when acks=all and the in-flight depth is 5 (the default of
// both clients); otherwise it is off and the depth is set explicitly.
func producerOpts(addr, topic string, l Load) ([]kgo.Opt, error) {
	codec, err := compressionCodec(l.Compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(l.Linger),
		kgo.MaxBufferedBytes(l.BufferBytes),
		kgo.MaxBufferedRecords(1 << 30), // bytes bound the buffer, not records
		kgo.ProduceRequestTimeout(30 * time.Second),
		kgo.UnknownTopicRetries(-1), // a fresh topic's leader may take a moment
		kgo.RecordDeliveryTimeout(2 * time.Minute),
	}
	if l.BatchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(l.BatchBytes)))
	}
	if l.idempotent() {
		return opts, nil
	}
	acks := kgo.AllISRAcks()
	if l.Acks == 1 {
		acks = kgo.LeaderAck()
	}
	return append(opts, kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite(),
		kgo.MaxProduceRequestsInflightPerBroker(l.InFlight)), nil
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("bench: unknown compression %q (want none, gzip, snappy, lz4 or zstd)", name)
}

// runProduce drives l against addr: warm-up, then the measurement window,
// then a flush of everything still buffered. rate, if positive, is the
// records/s target of all producers together.
func runProduce(ctx context.Context, addr, topic string, l Load, warmup, window time.Duration, rate float64, meter cpuMeter, hooks windowHooks) (*produceResult, error) {
	return newProducer(l).run(ctx, addr, topic, warmup, window, rate, meter, hooks)
}

// run is runProduce with p's producers (e2e.go's stamp their records, and
// its consumers read p's window).
func (p *producer) run(ctx context.Context, addr, topic string, warmup, window time.Duration, rate float64, meter cpuMeter, hooks windowHooks) (*produceResult, error) {
	l := p.load
	opts, err := producerOpts(addr, topic, l)
	if err != nil {
		return nil, err
	}
	clients := make([]*kgo.Client, 0, l.Producers)
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for range l.Producers {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, fmt.Errorf("bench: producer: %w", err)
		}
		clients = append(clients, cl)
	}

	// pctx bounds the producers: it is cancelled by ctx (Ctrl-C), or when
	// the final flush takes too long (a stalled target).
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	var wg sync.WaitGroup
	perProducer := rate / float64(l.Producers)
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.loop(pctx, cl, uint64(i), perProducer, &stop)
		}()
	}

	w, err := p.measure(ctx, warmup, window, meter, hooks)
	stop.Store(true)
	if err != nil {
		cancel()
		wg.Wait()
		return nil, err
	}
	if err := flushProducers(ctx, pctx, cancel, clients, &wg); err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.result(w), nil
}

// newProducer is the shared state of l's producers, its window not yet
// open.
func newProducer(l Load) *producer {
	p := &producer{
		load:    l,
		payload: newPayload(l.RecordSize),
		acked:   make([]atomic.Int64, l.Partitions),
		errc:    make(chan struct{}),
	}
	p.pool.New = func() any { return new(kgo.Record) }
	p.winStart.Store(math.MaxInt64)
	p.winEnd.Store(math.MaxInt64)
	return p
}

// produceWindow is what was read over a produce measurement window: its
// length, the CPU at each end, and the sockets open in the first server
// process.
type produceWindow struct {
	elapsed time.Duration
	c0, c1  cpuSample
	sockets int
}

// measure waits out the warm-up, then the window, marking its bounds for
// the producers and reading the CPU meter and the hooks at each end. It
// stops early with the producers' first error or when ctx ends.
func (p *producer) measure(ctx context.Context, warmup, window time.Duration, meter cpuMeter, hooks windowHooks) (produceWindow, error) {
	var w produceWindow
	wait := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-p.errc:
			return p.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := wait(warmup); err != nil {
		return w, err
	}
	hooks.begin()
	w.c0 = meter.read()
	t0 := time.Now()
	p.winStart.Store(t0.UnixNano())
	if err := wait(window); err != nil {
		hooks.end()
		return w, err
	}
	t1 := time.Now()
	p.winEnd.Store(t1.UnixNano())
	w.elapsed = t1.Sub(t0)
	w.c1 = meter.read()
	hooks.end()
	if len(meter.pids) > 0 {
		w.sockets, _ = ProcSockets(meter.pids[0])
	}
	return w, nil
}

// flushProducers waits for the producers' loops (wg) to end, then flushes
// what the clients buffer, so that every record is either acknowledged or
// failed before the consumers count them. It gives up, cancelling pctx,
// after 2 minutes (a stalled target) or when ctx ends.
func flushProducers(ctx, pctx context.Context, cancel context.CancelFunc, clients []*kgo.Client, wg *sync.WaitGroup) error {
	flushed := make(chan error, 1)
	go func() {
		wg.Wait()
		var ferr error
		for _, cl := range clients {
			if err := cl.Flush(pctx); err != nil && ferr == nil {
				ferr = err
			}
		}
		flushed <- ferr
	}()
	select {
	case err := <-flushed:
		if err != nil {
			return fmt.Errorf("bench: flushing producers: %w", err)
		}
		return nil
	case <-time.After(2 * time.Minute):
		cancel()
		<-flushed
		return errors.New("bench: producers could not flush within 2 minutes: the target stalled")
	case <-ctx.Done():
		cancel()
		<-flushed
		return ctx.Err()
	}
}

// result is the run's figures over window w.
func (p *producer) result(w produceWindow) *produceResult {
	res := &produceResult{
		window:     w.elapsed,
		records:    p.inWin.Load(),
		hist:       &p.hist,
		acked:      make([]int64, p.load.Partitions),
		serverCPU:  w.c1.server - w.c0.server,
		gatewayCPU: w.c1.gateway - w.c0.gateway,
		clientCPU:  w.c1.client - w.c0.client,
		cpuOK:      w.c0.ok && w.c1.ok,
		otherCPU:   otherShare(w.c0, w.c1),
		sockets:    w.sockets,
	}
	res.bytes = res.records * int64(p.load.RecordSize)
	for i := range p.acked {
		res.acked[i] = p.acked[i].Load()
	}
	return res
}

// loop is one producer's send loop. rate ≤ 0 sends as fast as the client
// accepts records (Produce blocks while its buffer is full).
func (p *producer) loop(ctx context.Context, cl *kgo.Client, seed uint64, rate float64, stop *atomic.Bool) {
	rnd := rand.New(rand.NewPCG(seed, 0x6b6267))
	if rate <= 0 {
		for !stop.Load() && ctx.Err() == nil {
			cl.Produce(ctx, p.record(p.payload.at(rnd.Uint64()), time.Now()), p.done)
		}
		return
	}
	interval := float64(time.Second) / rate
	start := time.Now()
	for i := int64(0); !stop.Load() && ctx.Err() == nil; {
		// Send every record whose slot has come, each stamped with its
		// slot, then sleep until the next one.
		due := slotsDue(time.Since(start), interval)
		for ; i < due && !stop.Load(); i++ {
			slot := slotAt(start, i, interval)
			cl.Produce(ctx, p.record(p.payload.at(rnd.Uint64()), slot), p.done)
		}
		if d := time.Until(slotAt(start, i, interval)); d > 0 {
			time.Sleep(d)
		}
	}
}

// slotsDue is how many records a producer sending one every interval ns,
// the first at its start, owes elapsed after it started: the pacing of a
// rate-limited producer (a token bucket of depth one, refilled every
// interval, whose missed slots are still owed so that a producer falling
// behind catches up rather than lowering the rate).
func slotsDue(elapsed time.Duration, interval float64) int64 {
	if elapsed < 0 {
		return 0
	}
	return int64(float64(elapsed)/interval) + 1
}

// slotAt is record i's slot, its due time, for a producer started at start
// sending one record every interval ns.
func slotAt(start time.Time, i int64, interval float64) time.Time {
	return start.Add(time.Duration(float64(i) * interval))
}

// createTopic creates topic with the given partitions (replication factor
// 1) and compression.type (when not ""), and waits until Metadata shows a
// leader for every partition.
func createTopic(ctx context.Context, addr, topic string, partitions int32, compression string) error {
	var configs map[string]*string
	if compression != "" {
		configs = map[string]*string{"compression.type": &compression}
	}
	return createTopicWith(ctx, addr, topic, partitions, configs)
}

// createTopicWith is createTopic with any topic configs (nil = none).
func createTopicWith(ctx context.Context, addr, topic string, partitions int32, configs map[string]*string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// Iggy creates at most maxCreatePartitions per request
	// (docs/LIMITS.md), so a larger topic is created with that many and
	// grown to its count by CreatePartitions, the same way on every target.
	first := min(partitions, maxCreatePartitions)
	resp, err := adm.CreateTopic(ctx, first, 1, configs, topic)
	// Topic names are unique per run: "already exists" means the client
	// resent a CreateTopics the broker was still processing (seen with
	// Kafka on a loaded machine), and the topic is ours.
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("bench: creating topic %s: %w (%s)", topic, err, resp.ErrMessage)
	}
	if err == nil && resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("bench: creating topic %s: %w (%s)", topic, resp.Err, resp.ErrMessage)
	}
	if partitions > first {
		if err := growTopic(ctx, adm, topic, partitions); err != nil {
			return err
		}
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if t, ok := md.Topics[topic]; ok && t.Err == nil && len(t.Partitions) == int(partitions) {
				ready := true
				for _, p := range t.Partitions {
					if p.Err != nil || p.Leader < 0 {
						ready = false
					}
				}
				if ready {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: topic %s has no leader for every partition: %w", topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// maxCreatePartitions is the most partitions one CreateTopics creates on
// every target: Iggy's limit per request (docs/LIMITS.md).
const maxCreatePartitions = 1000

// growTopic adds partitions to topic until it has want, retrying while the
// broker has not seen the topic yet.
func growTopic(ctx context.Context, adm *kadm.Client, topic string, want int32) error {
	for {
		resps, err := adm.UpdatePartitions(ctx, int(want), topic)
		if err == nil {
			var r kadm.CreatePartitionsResponse
			if r, err = resps.On(topic, nil); err == nil {
				err = r.Err
			}
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("bench: growing topic %s to %d partitions: %w", topic, want, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: growing topic %s to %d partitions: %w", topic, want, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deleteTopic deletes topic, so that a target holding its data in memory
// can free it before the next phase.
func deleteTopic(ctx context.Context, addr, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("bench: deleting topic %s: %w", topic, err)
	}
	return nil
}

// endOffsets returns each partition's high watermark.
func endOffsets(ctx context.Context, addr, topic string, partitions int32) ([]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("bench: listing end offsets of %s: %w", topic, err)
	}
	ends := make([]int64, partitions)
	for p := range ends {
		o, ok := offs.Lookup(topic, int32(p))
		if !ok {
			return nil, fmt.Errorf("bench: no end offset for %s/%d", topic, p)
		}
		if o.Err != nil {
			return nil, fmt.Errorf("bench: end offset of %s/%d: %w", topic, p, o.Err)
		}
		ends[p] = o.Offset
	}
	return ends, nil
}

// consumeResult is what one consume phase measured.
type consumeResult struct {
	elapsed        time.Duration
	records, bytes int64
	// byPartition counts the records read from each partition.
	byPartition []int64
	// badValues counts records whose value did not have the load's size.
	badValues            int64
	serverCPU, clientCPU time.Duration
	gatewayCPU           time.Duration // serverCPU's first process
	cpuOK                bool
}

// consumeStall is how long a consumer may go without a record before the
// phase fails.
const consumeStall = 30 * time.Second

// runConsume reads every partition from its start up to ends with
// `consumers` franz-go clients (partitions assigned round-robin, no group)
// at isolation level iso, counting records and checking each value's size.
// Control records (transaction markers) are not counted, but their offsets
// count toward reaching the end.
func runConsume(ctx context.Context, addr, topic string, ends []int64, consumers, recordSize int, iso kgo.IsolationLevel, meter cpuMeter, hooks windowHooks) (*consumeResult, error) {
	if consumers < 1 {
		consumers = 1
	}
	res := &consumeResult{byPartition: make([]int64, len(ends))}
	assign := make([]map[int32]kgo.Offset, consumers)
	for p, end := range ends {
		if end <= 0 {
			continue
		}
		i := p % consumers
		if assign[i] == nil {
			assign[i] = map[int32]kgo.Offset{}
		}
		assign[i][int32(p)] = kgo.NewOffset().AtStart()
	}

	hooks.begin()
	c0 := meter.read()
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, consumers)
	counts := make([]struct{ records, bytes, bad int64 }, consumers)
	byPart := make([]atomic.Int64, len(ends))
	for i := range consumers {
		if assign[i] == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = consumeOne(ctx, addr, topic, assign[i], ends, recordSize, iso, &counts[i], byPart)
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(t0)
	c1 := meter.read()
	hooks.end()
	res.serverCPU, res.clientCPU, res.cpuOK = c1.server-c0.server, c1.client-c0.client, c0.ok && c1.ok
	res.gatewayCPU = c1.gateway - c0.gateway
	for i := range counts {
		res.records += counts[i].records
		res.bytes += counts[i].bytes
		res.badValues += counts[i].bad
	}
	for p := range byPart {
		res.byPartition[p] = byPart[p].Load()
	}
	return res, errors.Join(errs...)
}

// fanout runs groups independent read-backs of the whole topic at once and
// returns their aggregate records/s; each must read want records.
func fanout(ctx context.Context, addr, topic string, ends []int64, groups, consumers, recordSize int, want int64,
	meter cpuMeter, hooks windowHooks) (float64, cpuSample, error) {
	results := make([]*consumeResult, groups)
	errs := make([]error, groups)
	var wg sync.WaitGroup
	hooks.begin()
	c0 := meter.read()
	t0 := time.Now()
	for i := range groups {
		wg.Go(func() {
			results[i], errs[i] = runConsume(ctx, addr, topic, ends, consumers, recordSize, kgo.ReadUncommitted(), cpuMeter{}, windowHooks{})
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	c1 := meter.read()
	hooks.end()
	cpu := cpuSample{server: c1.server - c0.server, gateway: c1.gateway - c0.gateway, client: c1.client - c0.client, ok: c0.ok && c1.ok}
	if err := errors.Join(errs...); err != nil {
		return 0, cpu, err
	}
	var records int64
	for i, r := range results {
		if r.records != want {
			return 0, cpu, fmt.Errorf("bench: fan-out group %d read %d records, want %d", i, r.records, want)
		}
		records += r.records
	}
	return float64(records) / elapsed.Seconds(), cpu, nil
}

func consumeOne(ctx context.Context, addr, topic string, parts map[int32]kgo.Offset, ends []int64, recordSize int, iso kgo.IsolationLevel,
	count *struct{ records, bytes, bad int64 }, byPart []atomic.Int64) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchIsolationLevel(iso),
		// A partition's last offset may be a transaction marker: kept, so
		// that the read-back sees it reach the end offset.
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	next := map[int32]int64{}
	for p := range parts {
		next[p] = 0
	}
	remaining := len(parts)
	last := time.Now()
	for remaining > 0 {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			return fmt.Errorf("bench: consuming %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if !r.Attrs.IsControl() {
				countRecord(r, recordSize, count, byPart)
			}
			before := next[r.Partition]
			next[r.Partition] = r.Offset + 1
			if before < ends[r.Partition] && r.Offset+1 >= ends[r.Partition] {
				remaining--
			}
		})
		if n > 0 {
			last = time.Now()
		} else if time.Since(last) > consumeStall {
			for p, o := range next {
				if o < ends[p] {
					return fmt.Errorf("bench: consumer stalled on %s/%d at offset %d of %d for %v", topic, p, o, ends[p], consumeStall)
				}
			}
		}
	}
	return nil
}

// countRecord counts one data record read back.
func countRecord(r *kgo.Record, recordSize int, count *struct{ records, bytes, bad int64 }, byPart []atomic.Int64) {
	count.records++
	count.bytes += int64(len(r.Value))
	if len(r.Value) != recordSize {
		count.bad++
	}
	byPart[r.Partition].Add(1)
}

// ping returns nil once addr answers a Metadata request listing a broker.
func ping(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Brokers) == 0 {
		return errors.New("metadata lists no broker")
	}
	return nil
}
