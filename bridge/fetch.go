package bridge

// What Fetch (01_fetch.go) builds its response with: the partition readers
// that map messages back into batches (docs/design/record-mapping.md §3),
// the concurrent reads of readAll, the shared reads of bridge/fetchcache,
// and the parking of a Fetch that waits for records.

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/fetchcache"
	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/bridge/txn"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

// fetchState is the Fetch scratch space of a state.
type fetchState struct {
	req   wire.FetchRequest
	buf   []byte     // the response being built
	r     partReader // reads partitions straight into the response
	parts []*partReader
	// readDone receives a token from each read handed off to a reader
	// goroutine (runWave) as it ends; made on first use, with room for
	// maxFetchRoundTrips.
	readDone chan struct{}
	call     *call // the call being answered, for growResponse
	deadline time.Time
	waiter   *waiter
	// since is the notifier's mark taken before the pass that found too
	// little: park wakes at once for an append signalled after it.
	since uint64
	// codecs[i] is the codec Fetch serves req.Topics[i] in, looked up once
	// per request (fetchcompression.go).
	codecs []batch.Codec
	// topicCodes[i] is req.Topics[i]'s error before any read: a v13+ id
	// that names no topic (fetchTopicNames), else NoError.
	topicCodes []wire.ErrorCode
	// splices are the shared batches (bridge/fetchcache) the response carries
	// without copying them into buf: the engine writes them inside it
	// (engine.Splice) and unpins their entries once written.
	splices []engine.Splice
	// aborted is scratch for a partition's aborted transactions
	// (abortedFor); abortedNow, for the same list taken again after the
	// read (abortedChanged).
	aborted, abortedNow []txn.Aborted
	// sess is the Fetch's session part (fetchsessions.go).
	sess fetchSessionState
}

// dropSplices unpins the splices of a response that is not sent.
func (fs *fetchState) dropSplices() {
	for i := range fs.splices {
		fs.splices[i].Pin.Unpin()
	}
	clear(fs.splices)
	fs.splices = fs.splices[:0]
}

// partReader reads one partition's messages and maps them back into
// batches appended to buf (docs/design/record-mapping.md §3): one
// uncompressed batch, or up to maxCompressedReads compressed ones.
type partReader struct {
	builder    batch.Builder
	codec      batch.Codec // the codec of the partition's batches
	decoder    mapping.Decoder
	record     mapping.Record
	buf        []byte
	started    bool // builder holds an open batch
	base       int64
	baseTS     int64
	unmappable bool  // an unmappable message stopped the read
	mapped     int   // records added to the builder by this read
	next       int64 // the offset after the last record added
	// logAppend: the topic is message.timestamp.type=LogAppendTime, so
	// each batch holds records of one append time and says so.
	logAppend bool
	// capBytes, when ≥ 0, caps the payload and header bytes a read adds
	// (capUsed so far): a continuation read's batch must fit what the
	// first left, and a read that may not exceed its limit (not the first
	// records of the response, KIP-74) must not take one message past it.
	capBytes, capUsed int
	// capFirst: the cap does not refuse the partition read's first
	// message (KIP-74), as Read would deliver it (a read for the fetch
	// cache with minOne enforces Read's budget itself).
	capFirst  bool
	readLimit int  // the first read's limit
	oversized bool // its first message alone was over readLimit
	capped    bool // capBytes stopped a read
	// ownBudget (a networked backend): the Log is asked for a little more
	// than the limit and the cap enforces Read's budget rule here, so the
	// reader sees why a read ends (readBatch). sharing: the read is built
	// for the fetch cache (readAndShare); short is set when some Read
	// ended for a reason of the Log's own (the end of what it had at hand,
	// an error) rather than the budget or the high watermark, so another
	// read of the same key could return more.
	ownBudget, sharing, short bool
	emit                      func(*message.Message) bool
	metrics                   *metrics
	// wm is the watermarks the last read returned, as the Log gave them.
	wm store.Watermarks
	// deferCopy: a read served from the fetch cache leaves its batches in
	// shared (pinned) for fetchPass to copy into the response, instead of
	// copying them into buf first (bridge/fetchcache).
	deferCopy bool
	shared    *fetchcache.Entry

	// A concurrent read's request and outcome (fetchFanout).
	topic       string
	rp          *wire.FetchRequestTopicPartition
	limit       int // the byte limit it read with
	resp        wire.FetchResponseTopicPartition
	recordBytes int // the size of the records it appended to buf
	// skipped: readAll had no budget left for it (skipPart): resp holds
	// watermarks only.
	skipped bool
	// expect is the bytes the Log expected the read to find
	// (ReadEstimator), −1 when it could not tell; growPart sizes by it.
	expect int
	// local: the Log said the read is answered from memory (ReadEstimator)
	// and it is expected small (maxInlineRead), so readAll runs it on the
	// Fetch's goroutine.
	local bool
	// atHigh: the Log said nothing is past the read's offset and it knows
	// that from memory (ReadEstimate 0, local): the read skips the fetch
	// cache, which has nothing to share for it.
	atHigh bool
	// answered: the Log's estimate was the read from the fetch offset, at
	// the partition's high watermark answeredHigh (store.Estimate): the
	// first readBatch from there takes its answer instead of a Read.
	answered bool
	// panicked: the read panicked (logged and counted by catch).
	panicked     bool
	answeredHigh int64
	// now is the clock at the start of the read's wave (readAll), the
	// zero time before it.
	now time.Time

	// Transactions (docs/design/transactions.md §4). committed: a
	// read_committed read of a partition with transactions: it stops at
	// stopAt (the last stable offset) and never ends inside a
	// transactional batch, whose producer id the consumer needs to skip it
	// when aborted.
	committed bool
	stopAt    int64
	// stableTaken: committed and stopAt were taken for the next read
	// already (fetchPartition, before the aborted transactions it lists).
	stableTaken bool
	// isolation is the Fetch's isolation level (1: read_committed).
	isolation int8
	// txnLeft is how many messages of the open transactional batch are
	// still to come; txnBase its first offset, txnMark len(buf) before it,
	// txnMapped its records so far.
	txnLeft   int32
	txnBase   int64
	txnMark   int
	txnMapped int
	// inTxn: the open batch is a transactional batch.
	inTxn bool
	// sealTxn: the read only finishes the open transactional batch
	// (wholeTxnBatch).
	sealTxn bool
	// seedAt is the offset a read_committed read starts at inside an
	// aborted transaction's batch, seed that batch's stamp from there on
	// (seekTxnBatch); -1 when not.
	seedAt int64
	seed   mapping.Producer
}

func (r *partReader) init(m *metrics) {
	if r.emit == nil {
		r.emit = r.add
		r.metrics = m
	}
}

// maxRetainedPartBuf bounds the scratch buffer a pooled partReader keeps,
// and maxRetainedScratch all of a pooled state's concurrent-request scratch
// (read buffers here, mapped batches in produceFanout): idle pooled states
// must not pin hundreds of MiB. maxRetainedReaders bounds the partition
// readers a pooled state keeps: a Fetch of up to 1,024 partitions reuses its readers (about 0.6 KiB each
// without their buffers, which maxRetainedScratch bounds) rather than
// allocating most of them again.
const (
	maxRetainedPartBuf = 4 << 20
	maxRetainedScratch = 16 << 20
	maxRetainedReaders = 1024
)

// trim lets the garbage collector have large or surplus scratch space.
func (fs *fetchState) trim() {
	fs.dropSplices()
	if len(fs.parts) > maxRetainedReaders {
		fs.parts = fs.parts[:maxRetainedReaders]
	}
	fs.r.builder.TrimScratch(maxRetainedPartBuf)
	kept := 0
	for _, r := range fs.parts {
		r.builder.TrimScratch(maxRetainedPartBuf)
		if c := cap(r.buf); c > maxRetainedPartBuf || kept+c > maxRetainedScratch {
			r.buf = nil
		}
		kept += cap(r.buf)
		r.topic, r.rp = "", nil
	}
	fs.sess.trim()
	if cap(fs.req.Topics) > maxRetainedEntries {
		fs.req = wire.FetchRequest{}
		fs.codecs, fs.topicCodes = nil, nil
	}
}

// externalPoll is how often a parked Fetch re-reads a backend that other
// writers can append to (Iggy); appends through this gateway wake it at once.
const externalPoll = 100 * time.Millisecond

// park registers the call for appends to its partitions and a timer for its
// deadline (or the external poll interval), then returns without blocking.
func (g *Gateway) park(c *call, now time.Time) {
	fs := &c.state.fetch
	w := newWaiter()
	fs.waiter = w
	for i := range fs.req.Topics {
		t := &fs.req.Topics[i]
		for _, p := range t.Partitions {
			g.notify.watch(t.Topic, p.Partition, w, fs.since)
		}
	}
	wait := fs.deadline.Sub(now)
	var stopWaits context.CancelFunc
	if !g.caps.SoleWriter && wait > externalPoll {
		// Other writers' appends: the backend's own wait when it has one
		// (Iggy 0.10), else a re-read every externalPoll.
		if stopWaits = g.waitForAppends(fs, w, wait); stopWaits == nil {
			wait = externalPoll
		}
	}
	timer := time.AfterFunc(wait, w.wake)
	g.metrics.parkedFetches.Add(1)
	go func() {
		defer g.metrics.parkedFetches.Add(-1)
		if g.catch(c, func() {
			g.unpark(fs, w, timer)
			if stopWaits != nil {
				stopWaits()
			}
		}) {
			g.abandonParked(c)
			return
		}
		if g.ctx.Err() != nil {
			c.req.Close(engine.ReasonShutdown, "")
			g.putState(c.state)
			return
		}
		// Re-run the fetch on a worker; it parks again if still short.
		g.requeue(c)
	}()
}

// waitForAppends asks the backend (store.AppendWaiter) to wake w when one
// of the Fetch's partitions holds a record at its fetch offset, whoever
// appended it, within wait: one wait per topic. It returns the function
// that ends the waits, or nil when there is no such backend (the caller
// polls). A wait that fails falls back to waking w after externalPoll, as
// without one; ErrUnsupported (an Iggy 0.9 server) stops the gateway asking.
func (g *Gateway) waitForAppends(fs *fetchState, w *waiter, wait time.Duration) context.CancelFunc {
	if g.waiter == nil || g.noWaits.Load() || fs.req.MinBytes > 1 {
		// A Fetch that wants more bytes than it found parks with records
		// at its fetch offsets: a wait from there would answer at once,
		// again and again.
		return nil
	}
	ctx, cancel := context.WithCancel(g.ctx)
	for i := range fs.req.Topics {
		t := &fs.req.Topics[i]
		if len(t.Partitions) == 0 || t.Topic == "" {
			continue
		}
		// Copies: the request's views end with it, the wait may not.
		topic := strings.Clone(t.Topic)
		parts, offsets := make([]int32, len(t.Partitions)), make([]int64, len(t.Partitions))
		for j, p := range t.Partitions {
			parts[j], offsets[j] = p.Partition, p.FetchOffset
		}
		go func() {
			ready, err := g.waiter.WaitForAppend(ctx, topic, parts, offsets, wait)
			switch {
			case ready:
				w.wake()
			case err != nil && ctx.Err() == nil:
				if errors.Is(err, store.ErrUnsupported) {
					g.noWaits.Store(true)
				}
				t := time.AfterFunc(externalPoll, w.wake)
				<-ctx.Done()
				t.Stop()
			}
		}()
	}
	return cancel
}

// unpark waits until a parked Fetch is woken (an append, its timer) or the
// gateway drains or stops, then undoes its registrations.
func (g *Gateway) unpark(fs *fetchState, w *waiter, timer *time.Timer) {
	select {
	case <-w.ch:
	case <-g.ctx.Done():
	case <-g.draining:
	}
	timer.Stop()
	for i := range fs.req.Topics {
		t := &fs.req.Topics[i]
		for _, p := range t.Partitions {
			g.notify.unwatch(t.Topic, p.Partition, w)
		}
	}
	fs.waiter = nil
}

// readAll reads the requested partitions concurrently into fs.parts, each
// up to its own limit (PartitionMaxBytes, at most maxBytes), in waves
// within the response's budget: a wave takes the next partitions in
// request order while the bytes they are expected to return
// (ReadEstimator; a partition's whole limit when unknown) fit what the
// response has left, and the next wave starts once the reads of this one
// say how much they found. Partitions past the budget are not read; they
// are answered with the high watermark the Log knows (skipped), as Kafka
// answers partitions a full response has no room for: no partition is read
// and encoded past what the response can carry (docs/IGGY.md, "A Fetch
// reads within its budget").
func (g *Gateway) readAll(fs *fetchState, v int16, maxBytes int) {
	k := g.initPartReaders(fs, v)
	left := maxBytes
	next := 0
	// A wave's reads are capped by what is left, so the last partition the
	// budget reaches is read once, with that, not read whole and again.
	// Once less than minContinuation is left, one last wave reads all the
	// rest with that little (the response is filled as a sequential read
	// fills it, without a round trip per partition).
	for next < k && left > 0 {
		// One clock read for the wave's estimates and reads
		// (store.ClockedReads).
		now := time.Now()
		end := k
		if left >= minContinuation {
			end = g.planWave(fs, now, next, k, left, maxBytes)
		}
		for _, r := range fs.parts[next:end] {
			r.now = now
		}
		g.runWave(fs, fs.parts[next:end], left)
		for _, r := range fs.parts[next:end] {
			if r.panicked {
				panic(errPartPanicked)
			}
			if r.resp.ErrorCode == wire.NoError {
				left -= r.recordBytes
			}
		}
		next = end
	}
	for _, r := range fs.parts[next:k] {
		g.skipPart(fs, r)
	}
}

// initPartReaders readies a partReader per partition of the request, in
// request order, and returns their number.
func (g *Gateway) initPartReaders(fs *fetchState, v int16) int {
	k := 0
	for i := range fs.req.Topics {
		t := &fs.req.Topics[i]
		codec, _ := readCodec(fs.codecs[i], v)
		for j := range t.Partitions {
			for len(fs.parts) <= k {
				fs.parts = append(fs.parts, new(partReader))
			}
			r := fs.parts[k]
			r.init(&g.metrics)
			r.topic, r.rp, r.codec, r.expect, r.local, r.atHigh, r.now = t.Topic, &t.Partitions[j], codec, -1, false, false, time.Time{}
			r.answered = false
			r.isolation = fs.req.IsolationLevel
			k++
		}
	}
	return k
}

// planWave returns the end of the wave of reads that starts at next: as
// many partitions (at least one) as the Log's estimates (ReadEstimator) at
// now say fit in left, each noted with what it expects and whether the Log
// answers it from memory.
func (g *Gateway) planWave(fs *fetchState, now time.Time, next, k, left, maxBytes int) int {
	est := g.estimates
	end, want := next, 0
	for end < k {
		r := fs.parts[end]
		e := int64(min(int(r.rp.PartitionMaxBytes), maxBytes))
		r.expect, r.local = -1, false
		if est != nil {
			x := est.ReadEstimate(now, r.topic, r.rp.Partition, r.rp.FetchOffset)
			n, local := x.Bytes, x.Local
			r.atHigh = local && n == 0
			r.answered, r.answeredHigh = x.Answered, x.High
			if n >= 0 && n < e {
				e = n
			}
			// Large reads from memory still run beside each other:
			// a catch-up read's encoding (varints, CRC-32C) is CPU
			// work the other cores can share.
			r.local = local && n >= 0 && e <= maxInlineRead
			if n >= 0 {
				r.expect = int(e)
			}
		}
		if end > next && want+int(e) > left {
			break
		}
		want += int(e)
		end++
	}
	return end
}

// runWave reads a wave's partitions, each with at most left bytes, and
// waits for them all. Each read runs under catch; when one panicked,
// readAll re-raises errPartPanicked once all are done, so the call is
// abandoned by the guard its handler runs under. Reads that need a round
// trip go to pooled reader goroutines (no allocation per partition once
// they run), at most maxFetchRoundTrips at once (the one read here
// included), the next handed off as one ends; those the Log answers from
// memory run here meanwhile: a consumer at the tail, served from the tail
// window, costs no goroutine hand-off per partition. When every read
// needs a round trip, the first runs here.
func (g *Gateway) runWave(fs *fetchState, wave []*partReader, left int) {
	here := wave[0] // read here when no read of the wave is local
	for _, r := range wave {
		if r.local {
			here = nil
			break
		}
	}
	if fs.readDone == nil {
		fs.readDone = make(chan struct{}, maxFetchRoundTrips)
	}
	// The read run here when none is local counts as one of the round
	// trips.
	limit := maxFetchRoundTrips
	if here != nil {
		limit--
	}
	next, inflight := 0, 0
	for inflight < limit {
		if next = g.handOffNext(fs, wave, next, here, left); next < 0 {
			break
		}
		inflight++
	}
	for _, r := range wave {
		if r.local || r == here {
			g.readOnePart(fs, r, left)
		}
	}
	for inflight > 0 {
		<-fs.readDone
		inflight--
		if next >= 0 {
			if next = g.handOffNext(fs, wave, next, here, left); next >= 0 {
				inflight++
			}
		}
	}
}

// maxFetchRoundTrips bounds the reads of one Fetch that wait for a round
// trip to the Log at once (runWave). A Fetch of 1,000 partitions the
// gateway has not read before would otherwise send 1,000 reads together: a
// goroutine each past maxPartWorkers, and, on Iggy, the polls queued for
// the sessions ahead of every other client's requests until they all
// ended. Thirty-two is as many as the default Iggy pool has sessions: a
// catch-up consumer of 256 partitions read back 0.95-0.96x as fast as with
// no bound, against 0.87-0.88x with sixteen (docs/BENCHMARKS.md, "Steady
// clients beside a flood"; docs/IGGY.md, "Sessions").
const maxFetchRoundTrips = 32

// handOffNext hands the first read of wave at or after next that needs a
// round trip (neither local nor here) to a reader goroutine and returns
// the index after it, or -1 when none is left.
func (g *Gateway) handOffNext(fs *fetchState, wave []*partReader, next int, here *partReader, left int) int {
	for ; next < len(wave); next++ {
		if r := wave[next]; !r.local && r != here {
			g.metrics.handedOffReads.Add(1)
			g.partReads.start(partJob{fs: fs, r: r, maxBytes: left})
			return next + 1
		}
	}
	return -1
}

// skipPart answers a partition readAll had no budget left to read: no
// records, the high watermark the Log knows without a round trip, or its
// watermarks when it knows none (a partition not read since the gateway
// started).
func (g *Gateway) skipPart(fs *fetchState, r *partReader) {
	if r.shared != nil { // left pinned by a read that panicked
		g.fetchCache.Release(r.shared)
		r.shared = nil
	}
	r.resp = wire.FetchResponseTopicPartition{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
	r.recordBytes, r.limit, r.oversized = 0, 0, false
	r.skipped = true
	if code := g.leaderCode(r.topic, r.rp.Partition, r.rp.CurrentLeaderEpoch); code != wire.NoError {
		r.resp.ErrorCode = code // docs/design/cluster.md §6, as readPartition
		return
	}
	if sr := g.sharedReads; sr != nil {
		if _, high := sr.ReadGeneration(r.topic, r.rp.Partition); high >= 0 {
			wm := store.Watermarks{High: high}
			g.applyLogStart(r.topic, r.rp.Partition, &wm)
			g.setWatermarks(&r.resp, r.topic, r.rp.Partition, wm)
			return
		}
	}
	if wm, err := g.watermarks(g.ctx, r.topic, r.rp.Partition); err == nil {
		g.setWatermarks(&r.resp, r.topic, r.rp.Partition, wm)
	} else {
		r.resp.ErrorCode = fetchCode(err)
	}
}

// maxInlineRead is the most a partition read the Log answers from memory
// may be expected to return and still run on the Fetch's own goroutine
// (readAll): a tail read's few batches, not a catch-up read's megabyte.
const maxInlineRead = 128 << 10

// readOnePart reads one partition of a Fetch into r under catch.
func (g *Gateway) readOnePart(fs *fetchState, r *partReader, maxBytes int) {
	if r.shared != nil { // left pinned by a read that panicked
		g.fetchCache.Release(r.shared)
		r.shared = nil
	}
	r.panicked = g.catch(fs.call, func() {
		r.resp = wire.FetchResponseTopicPartition{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
		r.recordBytes, r.skipped = 0, false
		if !g.allowed(fs.call, acl.OpRead, acl.ResourceTopic, r.topic) {
			return // fetchPass answers it TOPIC_AUTHORIZATION_FAILED
		}
		r.limit = min(int(r.rp.PartitionMaxBytes), maxBytes)
		// The buffer grows with what the read returns (growPart), not to
		// the limit up front: most partitions of a Fetch of many return
		// little or nothing, and partitions × limit buffers would be
		// allocated afresh by every Fetch past what a pooled state keeps.
		// A grown buffer is kept for the next read.
		if r.builder.Grow == nil {
			r.builder.Grow = r.growPart
		}
		if r.expect > 0 {
			// A buffer a larger read grew has more room than the fetch
			// cache keeps for this read's batches, one a smaller read was
			// given too little: traded for one of their size, which the
			// cache then keeps instead of copying them out.
			r.buf = g.fetchCache.Resize(r.buf, r.expect)
		}
		r.deferCopy = true
		r.buf, r.recordBytes = g.readPartition(r, r.buf[:0], r.topic, r.codec, r.rp, &r.resp, r.limit, true)
	})
}

// minPartBuf is the smallest buffer a concurrent partition read grows to.
const minPartBuf = 16 << 10

// growPart is a concurrent partition read's Grow (batch.Builder). With
// the Log's estimate of what the read finds (readAll) buf grows to that at
// once, not through every power of two up to it (at many partitions the
// doubling showed in the gateway's consume profile: docs/BENCHMARKS.md,
// "Many partitions and 64 KiB records"), even under minPartBuf, and past
// it (records that arrived since) by a quarter at a time: the batches then
// fill most of the buffer, which the fetch cache keeps without a copy
// (fetchcache.StoreOwned). Without one buf doubles from minPartBuf. Either
// way it stays within a full read of the limit (record framing adds a few
// percent to the payload bytes the limit counts), and past that grows to
// just what is needed.
func (r *partReader) growPart(buf []byte, n int) []byte {
	need := len(buf) + n
	full := r.limit + r.limit/8 + 4096
	var c int
	if r.expect > 0 {
		c = max(fetchcache.Room(r.expect), need+need/4)
	} else {
		c = max(2*cap(buf), minPartBuf)
	}
	c = max(min(c, full), need)
	nb := make([]byte, len(buf), c)
	copy(nb, buf)
	return nb
}

// partJob is one partition read of a Fetch for a pooled reader.
type partJob struct {
	fs       *fetchState
	r        *partReader
	maxBytes int
}

// maxPartWorkers bounds the pooled partition readers; past it a read runs
// on a goroutine of its own.
const maxPartWorkers = 256

// runPartJob runs one pooled partition read and marks it done.
func (g *Gateway) runPartJob(j partJob) {
	g.readOnePart(j.fs, j.r, j.maxBytes)
	j.fs.readDone <- struct{}{} // never blocks: runWave keeps at most its capacity in flight
}

// setWatermarks answers p with topic/partition's watermarks and its last
// stable offset, which Kafka reports at either isolation level.
func (g *Gateway) setWatermarks(p *wire.FetchResponseTopicPartition, topic string, partition int32, wm store.Watermarks) {
	p.HighWatermark = wm.High
	p.LastStableOffset = g.lastStable(topic, partition, wm.High)
	p.LogStartOffset = wm.LogStart
}

// readCodec returns the codec a topic served in codec is read with at Fetch
// version v, and whether the partitions' records are to be refused instead:
// zstd below v10 (docs/design/kafka-protocol.md §5), read uncompressed
// only to tell whether there is anything to refuse.
func readCodec(codec batch.Codec, v int16) (batch.Codec, bool) {
	if codec == batch.Zstd && v < 10 {
		return batch.NoCompression, true
	}
	return codec, false
}

// Compressed partitions are read again while the batches sent leave room
// (docs/design/record-mapping.md §3.5: the limits count the bytes sent, as
// Kafka counts its stored, compressed batches): at most maxCompressedReads
// reads, the next only when at least minContinuation bytes of the limit are
// left.
const (
	maxCompressedReads = 4
	minContinuation    = 16 << 10
)

// maxStableReads bounds the reads of one read_committed partition read
// that a transaction opening under it makes read again (readPartition).
const maxStableReads = 3

// readPartition appends one partition's records to buf through r, as one
// uncompressed batch or as compressed batches, and returns their size.
// With minOne (the response holds no records yet, KIP-74) a first record
// larger than limit is served alone; without, nothing past limit is.
//
// A read_committed read stops at the last stable offset, taken before the
// read (and before the aborted transactions the response lists,
// fetchPartition): a transaction open then ends the read at its first
// offset, and one that has ended is listed if it aborted. A transaction
// that opens while the partition is read has its first offset at or above
// the high watermark of its AddPartitionsToTxn, and its records may be in
// the read: it is checked once the read is done, and when one opened below
// where the read ended, the read is done again, stopping there. Kafka's log
// takes its last stable offset and the records under one lock; kiggy opens
// a transaction in its index before the transaction's first append, so
// the check after the read sees every transaction whose records it holds.
// One that opened and also aborted during the read is no longer open then:
// fetchPartition lists it among the aborted transactions instead
// (abortedChanged).
func (g *Gateway) readPartition(r *partReader, buf []byte, topic string, codec batch.Codec, rp *wire.FetchRequestTopicPartition, p *wire.FetchResponseTopicPartition, limit int, minOne bool) ([]byte, int) {
	if r.stableTaken {
		r.stableTaken = false
	} else {
		g.readCommitted(r, topic, rp.Partition, r.isolation)
	}
	if r.isolation != 1 {
		return g.readPartitionAt(r, buf, topic, codec, rp, p, limit, minOne)
	}
	// Checked after the read even when no transaction was ever seen: the
	// gateway's first may open while the partition is read.
	start, p0 := len(buf), *p
	for try := 1; ; try++ {
		out, n := g.readPartitionAt(r, buf, topic, codec, rp, p, limit, minOne)
		first, touched := g.txn.Index.Touched(topic, rp.Partition)
		if n == 0 || !touched || first >= r.next || r.committed && first >= r.stopAt {
			return out, n
		}
		// A transaction opened below where the read ended.
		if r.shared != nil {
			g.fetchCache.Release(r.shared)
			r.shared = nil
		}
		buf, *p = out[:start], p0
		g.metrics.stableRereads.Add(1)
		if try == maxStableReads {
			g.setWatermarks(p, topic, rp.Partition, r.wm)
			return buf, 0 // nothing this time: the consumer asks again
		}
		r.stopAt, r.committed = min(r.stopAt, first), true // stopAt is MaxInt64 when not committed
	}
}

// readPartitionAt is readPartition past the last stable offset's
// snapshot: one read of the partition.
func (g *Gateway) readPartitionAt(r *partReader, buf []byte, topic string, codec batch.Codec, rp *wire.FetchRequestTopicPartition, p *wire.FetchResponseTopicPartition, limit int, minOne bool) ([]byte, int) {
	if code := g.leaderCode(topic, rp.Partition, rp.CurrentLeaderEpoch); code != wire.NoError {
		p.ErrorCode = code // docs/design/cluster.md §6
		return buf, 0
	}
	if r.isolation == 1 && g.transactionsServed() && (!g.txnReady.Load() || g.txnPartitionCode(topic, rp.Partition) != wire.NoError) {
		// The last stable offsets are not known until the transactions
		// are loaded (in a cluster, those of a partition that moved here):
		// a retriable error, never records past them.
		p.ErrorCode = wire.NotLeaderOrFollower
		return buf, 0
	}
	r.buf, r.codec = buf, codec
	r.unmappable, r.mapped, r.oversized, r.capped = false, 0, false, false
	ts := g.topicSettingsOf(topic)
	r.logAppend = ts != nil && ts.logAppendTime
	if limit < 1 {
		limit = 1
	}
	// Below a log start DeleteRecords set: OFFSET_OUT_OF_RANGE at once,
	// with the watermarks (docs/design/record-mapping.md §4).
	if ls := g.logStartOf(topic, rp.Partition); ls > 0 && rp.FetchOffset < ls {
		wm, err := g.watermarks(g.ctx, topic, rp.Partition)
		if err != nil {
			p.ErrorCode = fetchCode(err)
			return buf, 0
		}
		if rp.FetchOffset < wm.LogStart {
			g.setWatermarks(p, topic, rp.Partition, wm)
			p.ErrorCode = wire.OffsetOutOfRange
			return buf, 0
		}
	}
	if fc := g.fetchCache; fc != nil && !r.committed && !r.atHigh {
		// Batches another Fetch encoded for this very read (bridge/fetchcache);
		// a read_committed read of a partition with transactions ends at its
		// own place (the last stable offset, a whole transactional batch); a
		// read the Log answers "nothing past the offset" from memory has
		// nothing to share (a consumer at the tail, between appends).
		key := fetchcache.Key{Topic: topic, Partition: rp.Partition, Limit: int32(min(limit, 1<<31-1)), Offset: rp.FetchOffset,
			Codec: codec, LogAppend: r.logAppend, MinOne: minOne}
		e, gen, high, build := fc.Acquire(key)
		if e != nil {
			return g.serveShared(fc, r, buf, e, high, topic, rp, p)
		}
		if build {
			return g.readAndShare(fc, key, gen, r, buf, topic, codec, rp, p, limit, minOne)
		}
	}
	return g.readRecords(r, buf, topic, codec, rp, p, limit, minOne)
}

// initFetchCache turns the fetch cache on when the store offers it, and
// notes what the store tells about its reads without a round trip.
func (g *Gateway) initFetchCache() {
	g.estimates, _ = g.store.(store.ReadEstimator)
	g.clockedReads, _ = g.store.(store.ClockedReads)
	sr, ok := g.store.(store.SharedReads)
	if !ok {
		return
	}
	g.sharedReads = sr
	if n := sr.FetchCacheBytes(); n > 0 {
		g.fetchCache = fetchcache.New(n, sr, maxRetainedPartBuf)
	}
}

// shareable is what the fetch cache keeps of r's last read beside its
// batches.
func (r *partReader) shareable() fetchcache.Read {
	return fetchcache.Read{Watermarks: r.wm, Next: r.next, Records: r.mapped, Oversized: r.oversized}
}

// readAndShare is readRecords for a read the fetch cache is waiting for: it
// stores the batches for later Fetches, or abandons the build (an error, a
// panic, nothing to share).
func (g *Gateway) readAndShare(fc *fetchcache.Cache, key fetchcache.Key, gen uint64, r *partReader, buf []byte, topic string, codec batch.Codec,
	rp *wire.FetchRequestTopicPartition, p *wire.FetchResponseTopicPartition, limit int, minOne bool) ([]byte, int) {
	stored := false
	defer func() {
		r.sharing = false
		if !stored {
			fc.Abandon(key)
		}
	}()
	start := len(buf)
	r.sharing = true
	out, n := g.readRecords(r, buf, topic, codec, rp, p, limit, minOne)
	if n > 0 && p.ErrorCode == wire.NoError && !r.unmappable && !r.short {
		stored = true
		if r.deferCopy && start == 0 {
			// The entry takes the read's buffer (no copy) and fetchPass
			// serves the read from it, as from a hit.
			if e, spare := fc.StoreOwned(key, gen, out, r.shareable()); e != nil {
				r.shared = e
				return spare, n
			}
			return out, n
		}
		fc.Store(key, gen, out[start:], r.shareable())
	}
	return out, n
}

// serveShared answers a partition read with e's batches (pinned by
// Acquire): into buf, or, for a concurrent read that copies its batches into
// the response later (partReader.deferCopy), by handing e to fetchPass.
func (g *Gateway) serveShared(fc *fetchcache.Cache, r *partReader, buf []byte, e *fetchcache.Entry, high int64, topic string,
	rp *wire.FetchRequestTopicPartition, p *wire.FetchResponseTopicPartition) ([]byte, int) {
	r.buf, r.unmappable, r.capped = nil, false, false
	r.mapped, r.next, r.oversized = e.Records(), e.Next(), e.Oversized()
	r.metrics.recordsOut.Add(uint64(e.Records()))
	wm := store.Watermarks{High: high, LogStart: e.LogStart()}
	g.applyLogStart(topic, rp.Partition, &wm)
	g.setWatermarks(p, topic, rp.Partition, wm)
	if rp.FetchOffset < wm.LogStart || rp.FetchOffset > wm.High {
		// docs/design/kafka-protocol.md §7.1, as readRecords.
		fc.Release(e)
		p.ErrorCode = wire.OffsetOutOfRange
		return buf, 0
	}
	n := len(e.Data())
	if r.deferCopy {
		r.shared = e
		return buf, n
	}
	if r.builder.Grow != nil {
		buf = r.builder.Grow(buf, n)
	}
	buf = append(buf, e.Data()...)
	fc.Release(e)
	return buf, n
}

// readRecords reads the partition from the backend and maps its messages
// (readPartition, past its checks).
func (g *Gateway) readRecords(r *partReader, buf []byte, topic string, codec batch.Codec, rp *wire.FetchRequestTopicPartition,
	p *wire.FetchResponseTopicPartition, limit int, minOne bool) ([]byte, int) {
	start := len(buf)
	r.capBytes, r.capUsed, r.readLimit, r.capFirst, r.short = -1, 0, limit, minOne, false
	r.ownBudget = !g.caps.LocalLatency
	if !minOne || r.ownBudget {
		r.capBytes = limit
	}
	r.seedAt = -1
	if r.committed {
		g.seekTxnBatch(r, topic, rp.Partition, rp.FetchOffset)
	}
	wm, err := g.readBatch(r, topic, rp.Partition, rp.FetchOffset, limit)
	r.wm = wm
	r.noteStop(wm)
	for reads := 1; err == nil && codec != batch.NoCompression && reads < maxCompressedReads; reads++ {
		left := limit - (len(r.buf) - start)
		if r.unmappable || r.capped && !r.capFirst || r.mapped == 0 || r.next >= wm.High || left < minContinuation ||
			r.committed && r.next >= r.stopAt {
			break
		}
		r.capBytes, r.capUsed, r.capFirst, r.capped = left, 0, false, false
		cwm, cerr := g.readBatch(r, topic, rp.Partition, r.next, left)
		if cerr != nil {
			r.short = true
			break // serve what the first reads found
		}
		r.noteStop(cwm)
	}
	out := r.buf
	r.buf = nil
	if err != nil {
		p.ErrorCode = fetchCode(err)
		return out[:start], 0
	}
	g.applyLogStart(topic, rp.Partition, &wm)
	g.setWatermarks(p, topic, rp.Partition, wm)
	// docs/design/kafka-protocol.md §7.1: FetchOffset outside [logStart, HW] → OFFSET_OUT_OF_RANGE so
	// auto.offset.reset applies.
	if rp.FetchOffset < wm.LogStart || rp.FetchOffset > wm.High {
		p.ErrorCode = wire.OffsetOutOfRange
		return out[:start], 0
	}
	if r.unmappable && r.mapped == 0 {
		// docs/design/record-mapping.md §3.6: the consumer stops at an unmappable
		// message; records before it are served first.
		p.ErrorCode = wire.UnknownServerError
		return out[:start], 0
	}
	return out, len(out) - start
}

// noteStop records, for a read built for the fetch cache, whether the read
// just done ended for a reason that any read of the same key would end for
// too: a message refused by the cap (the budget), the budget spent, or the
// high watermark reached.
func (r *partReader) noteStop(wm store.Watermarks) {
	if r.sharing && !r.capped && !(r.capBytes >= 0 && r.capUsed >= r.capBytes) && r.next < wm.High {
		r.short = true
	}
}

// maxFills bounds the further Reads one batch of a networked backend takes
// to reach its budget (readBatch).
const maxFills = 4

// readBatch reads from offset and appends the records as one batch to r.buf
// (r.capUsed counts their payload and header bytes from 0). On a networked
// backend a Read may end before its budget and the high watermark, where
// the Iggy read cache had nothing more at hand: the batch then reads on
// from where it stopped (at most maxFills times), so a read returns what is
// there up to its budget whatever was in memory, and every consumer group
// reading the same offsets with the same limits gets the same answer and
// steps to the same next offset (bridge/fetchcache).
func (g *Gateway) readBatch(r *partReader, topic string, partition int32, offset int64, limit int) (store.Watermarks, error) {
	r.started, r.inTxn, r.txnLeft = false, false, 0
	r.capUsed = 0
	wm, err := g.readLog(r, topic, partition, offset, r.logLimit(limit))
	for fills := 0; err == nil && r.ownBudget && fills < maxFills && r.started &&
		!r.unmappable && !r.capped && r.capUsed < limit && r.next < wm.High; fills++ {
		next := r.next
		fwm, ferr := g.readLog(r, topic, partition, next, r.logLimit(limit-r.capUsed))
		if ferr != nil || r.next == next {
			break // serve what the first Reads found
		}
		wm.High = max(wm.High, fwm.High)
	}
	if err == nil && r.committed && r.txnLeft > 0 && !r.unmappable {
		wm = g.wholeTxnBatch(r, topic, partition, wm)
	}
	// The builder may have moved the buffer (Grow): from here on only its
	// result is valid, never the buffer r had before.
	if r.started {
		r.buf = r.builder.Finish()
	}
	return wm, err
}

// readLog is one Read of r's partition into r.emit, at the clock of r's
// wave where the Log takes it (store.ClockedReads). The first from the
// fetch offset of a read the Log's estimate answered (store.Estimate)
// takes that answer.
func (g *Gateway) readLog(r *partReader, topic string, partition int32, offset int64, maxBytes int) (store.Watermarks, error) {
	if r.answered && offset == r.rp.FetchOffset {
		r.answered = false
		return store.Watermarks{High: r.answeredHigh}, nil
	}
	if g.clockedReads != nil {
		return g.clockedReads.ReadAt(g.ctx, r.now, topic, partition, offset, maxBytes, r.emit)
	}
	return g.store.Read(g.ctx, topic, partition, offset, maxBytes, r.emit)
}

// wholeTxnBatch ends a read_committed read that stopped inside a
// transactional batch: before the batch when the read holds records before
// it, else (the read's first batch, KIP-74) past the budget, with the rest
// of the batch, so a consumer always gets the batch's producer id
// (docs/design/transactions.md §4).
func (g *Gateway) wholeTxnBatch(r *partReader, topic string, partition int32, wm store.Watermarks) store.Watermarks {
	if r.mapped > r.txnMapped {
		r.buf = r.builder.Finish()[:r.txnMark]
		r.started, r.inTxn, r.txnLeft = false, false, 0
		r.mapped -= r.txnMapped
		r.metrics.recordsOut.Add(^uint64(r.txnMapped - 1)) // counted in add, not served
		r.next = r.txnBase
		r.capped = true
		return wm
	}
	capBytes := r.capBytes
	r.capBytes, r.sealTxn = -1, true
	defer func() { r.capBytes, r.sealTxn = capBytes, false }()
	for r.txnLeft > 0 && r.next < wm.High {
		next := r.next
		fwm, err := g.store.Read(g.ctx, topic, partition, next, readSlack, r.emit)
		if err != nil || r.next == next {
			break // serve what there is: the consumer reads on from r.next
		}
		wm.High = max(wm.High, fwm.High)
	}
	return wm
}

// seekTxnBatch prepares a read_committed read from offset for a start
// inside a transactional batch of an aborted transaction (a consumer that
// seeked there; kiggy's own responses never end inside one): only the
// batch's first message carries its stamp, so the read looks for it from
// the transaction's first offset and, when offset lies inside the batch,
// serves the rest of it with its producer id, which the consumer needs to
// skip it (docs/design/transactions.md §4). Other starts cost one look at
// the aborted index.
func (g *Gateway) seekTxnBatch(r *partReader, topic string, partition int32, offset int64) {
	aborted := g.txn.Index.AbortedIn(nil, topic, partition, offset, offset+1)
	if len(aborted) == 0 {
		return
	}
	from := offset
	for _, a := range aborted {
		from = min(from, a.First)
	}
	var stamp mapping.Producer
	stampAt := int64(-1)
	for next, read := from, 0; next < offset && read < maxTxnSeek; {
		progressed := false
		_, err := g.store.Read(g.ctx, topic, partition, next, 1<<20, func(m *message.Message) bool {
			if m.Offset >= offset {
				return false
			}
			if st, ok := mapping.FindProducer(m.Headers); ok {
				stamp, stampAt = st, m.Offset
			}
			read += len(m.Payload) + len(m.Headers)
			next, progressed = m.Offset+1, true
			return true
		})
		if err != nil || !progressed {
			break
		}
	}
	if d := offset - stampAt; stampAt >= 0 && stamp.Transactional && d > 0 && d < int64(stamp.Count) {
		stamp.BaseSequence = int32((int64(stamp.BaseSequence) + d) % (1 << 31))
		stamp.Count -= int32(d)
		r.seed, r.seedAt = stamp, offset
	}
}

// maxTxnSeek bounds the bytes seekTxnBatch reads back.
const maxTxnSeek = 64 << 20

// logLimit is the byte limit a Read for a budget of n is sent with: on a
// networked backend a message of up to readSlack bytes past the limit
// reaches the cap (add), which refuses it, so the read is seen to end at
// its budget and not where the Log happened to stop, without a further
// Read to find out (a larger message takes that one more Read). The slack
// is small: the Iggy read cache sizes its polls by the limit, and a Read
// walks whole chunks (a 2× slack cost 40 % more CPU per record consumed).
func (r *partReader) logLimit(n int) int {
	if r.ownBudget {
		return n + min(n, readSlack)
	}
	return n
}

// readSlack is how far past its budget a networked backend's Read may go.
const readSlack = 64 << 10

// growResponse is the response reader's Grow: the response grows into a
// larger pooled buffer of the request being answered.
func (fs *fetchState) growResponse(buf []byte, n int) []byte {
	return fs.call.req.GrowResponse(buf, n)
}

// add is the Log.Read callback: map one message back and append it to the
// partition's batch.
func (r *partReader) add(m *message.Message) bool {
	if r.committed && m.Offset >= r.stopAt || r.sealTxn && r.txnLeft == 0 {
		return false // read_committed reads up to the last stable offset
	}
	if err := r.decoder.Decode(m, &r.record); err != nil {
		r.unmappable = true
		return false
	}
	rec := &r.record
	size := len(m.Payload) + len(m.Headers)
	if r.capBytes >= 0 {
		// Read delivers one message past its limit (KIP-74), which only
		// the response's first records may be. Read's budget rule: a
		// message joins while the bytes so far and its own stay within
		// the limit, and none once the limit is spent.
		if (r.capUsed+size > r.capBytes || r.capUsed >= r.capBytes && r.capUsed > 0) && !(r.capFirst && r.mapped == 0) {
			r.capped = true
			return false
		}
	}
	r.capUsed += size
	if r.mapped == 0 && size > r.readLimit {
		r.oversized = true
	}
	if rec.IsControl {
		return r.addControl(m, rec)
	}
	if m.Offset == r.seedAt && r.txnLeft == 0 && !rec.Stamp.Transactional {
		// The read starts inside a transactional batch: the rest of it is
		// served as that batch (seekTxnBatch).
		rec.Stamp = r.seed
	}
	r.seedAt = -1
	txnStart := r.txnLeft == 0 && rec.Stamp.Transactional
	switch {
	case r.txnLeft > 0:
		// Inside a transactional batch: its messages stay one batch.
		r.txnLeft--
	case r.started && (r.inTxn || txnStart):
		// A transactional batch ended, or one begins: batches of one
		// producer transaction are served as their own batch.
		r.buf, r.started = r.builder.Finish(), false
	case r.started && r.logAppend && rec.TimestampMs != r.baseTS:
		// A new append time starts a new batch: a LogAppendTime batch
		// gives every record its maxTimestamp (docs/design/record-mapping.md §3.5).
		r.buf, r.started = r.builder.Finish(), false
	}
	if !r.started {
		r.base, r.baseTS = m.Offset, rec.TimestampMs
		if txnStart {
			r.txnMark = len(r.buf)
		}
		r.builder.Reset(r.buf, r.base, r.baseTS, r.codec)
		attrs := int16(0)
		if r.logAppend {
			attrs |= attrLogAppendTime
		}
		r.inTxn = txnStart
		if txnStart {
			// The batch as the producer sent it: its id, epoch and first
			// sequence, flagged transactional (KIP-98), so a
			// read_committed consumer can skip it when it was aborted.
			st := &rec.Stamp
			r.builder.SetProducer(st.ID, st.Epoch, st.BaseSequence)
			attrs |= attrTransactional
			r.txnLeft, r.txnBase, r.txnMapped = st.Count-1, m.Offset, 0
		}
		r.builder.SetAttributes(attrs)
		r.started = true
	}
	if r.inTxn {
		r.txnMapped++
	}
	headersLen := 0
	for i := range rec.Headers {
		headersLen += batch.RecordHeaderLen(rec.Headers[i].Key, rec.Headers[i].Value)
	}
	r.builder.BeginRecordSized(int32(m.Offset-r.base), rec.TimestampMs-r.baseTS, rec.Key, rec.Value, int32(len(rec.Headers)), headersLen)
	for i := range rec.Headers {
		r.builder.AppendHeader(rec.Headers[i].Key, rec.Headers[i].Value)
	}
	r.builder.EndRecord()
	r.mapped++
	r.next = m.Offset + 1
	r.metrics.recordsOut.Add(1)
	return true
}

// RecordBatch attribute bits (docs/design/kafka-protocol.md §4.1).
// attrLogAppendTime is bit 3, the timestamp type: set, the batch's
// maxTimestamp is every record's log append time. attrTransactional
// (bit 4) and attrControl (bit 5) mark a transaction's batches and its
// markers.
const (
	attrLogAppendTime int16 = 0x08
	attrTransactional int16 = 0x10
	attrControl       int16 = 0x20
)

// addControl appends a transaction marker as Kafka stores one: a control
// batch of the producer's id and epoch holding one control record, key
// (version 0, type: 0 abort, 1 commit), value (version 0, coordinator
// epoch) (ControlRecordType, EndTransactionMarker). It is never compressed.
func (r *partReader) addControl(m *message.Message, rec *mapping.Record) bool {
	if r.started {
		r.buf, r.started = r.builder.Finish(), false
	}
	r.inTxn, r.txnLeft = false, 0
	c := &rec.Control
	var key [4]byte
	if c.Commit {
		key[3] = 1
	}
	var value [6]byte
	binary.BigEndian.PutUint32(value[2:], uint32(c.CoordinatorEpoch))
	r.builder.Reset(r.buf, m.Offset, rec.TimestampMs, batch.NoCompression)
	r.builder.SetProducer(c.ProducerID, c.ProducerEpoch, -1)
	r.builder.SetAttributes(attrTransactional | attrControl)
	r.builder.BeginRecord(0, 0, key[:], value[:])
	r.builder.EndRecord()
	r.buf = r.builder.Finish()
	r.mapped++
	r.next = m.Offset + 1
	r.metrics.recordsOut.Add(1)
	return true
}

// fetchCode maps a Log read error to a partition error code.
func fetchCode(err error) wire.ErrorCode {
	switch {
	case errors.Is(err, store.ErrUnknownTopic), errors.Is(err, store.ErrUnknownPartition):
		return wire.UnknownTopicOrPartition
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrUnknownOutcome):
		return wire.NotLeaderOrFollower
	default:
		return wire.UnknownServerError
	}
}
