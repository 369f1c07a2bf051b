package bridge

import (
	"errors"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/wire"
)

// fetchState is the Fetch scratch space of a state.
type fetchState struct {
	req      wire.FetchRequest
	buf      []byte     // the response being built
	r        partReader // reads partitions straight into the response
	parts    []*partReader
	wg       sync.WaitGroup
	call     *call // the call being answered, for growResponse
	deadline time.Time
	waiter   *waiter
}

// partReader reads one partition's messages and maps them back into one
// uncompressed batch appended to buf (docs/design/record-mapping.md §3).
type partReader struct {
	builder    batch.Builder
	decoder    mapping.Decoder
	record     mapping.Record
	buf        []byte
	started    bool // builder holds an open batch
	base       int64
	baseTS     int64
	unmappable bool // an unmappable message stopped the read
	mapped     int  // records added to the builder by this read
	emit       func(*message.Message) bool
	metrics    *metrics

	// A concurrent read's request and outcome (fetchFanout).
	topic       string
	rp          *wire.FetchRequestTopicPartition
	limit       int // the byte limit it read with
	resp        wire.FetchResponseTopicPartition
	recordBytes int // the size of the records it appended to buf
	// panicked: the read panicked (logged and counted by catch).
	panicked bool
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
// must not pin hundreds of MiB.
const (
	maxRetainedPartBuf = 4 << 20
	maxRetainedScratch = 16 << 20
)

// trim lets the garbage collector have large or surplus scratch space.
func (fs *fetchState) trim() {
	if len(fs.parts) > maxRetainedFanout {
		fs.parts = fs.parts[:maxRetainedFanout]
	}
	kept := 0
	for _, r := range fs.parts {
		if c := cap(r.buf); c > maxRetainedPartBuf || kept+c > maxRetainedScratch {
			r.buf = nil
		}
		kept += cap(r.buf)
		r.topic, r.rp = "", nil
	}
	if cap(fs.req.Topics) > maxRetainedEntries {
		fs.req = wire.FetchRequest{}
	}
}

// externalPoll is how often a parked Fetch re-reads a backend that other
// writers can append to (Iggy); appends through this gateway wake it at once.
const externalPoll = 100 * time.Millisecond

// fetch answers Fetch v4–12 (docs/design/kafka-protocol.md §7): sessionless (KIP-227:
// SessionId 0, every requested partition answered), records mapped back
// per docs/design/record-mapping.md §3 into one uncompressed v2 batch per partition,
// long polling that parks without holding a loop or a worker.
func (g *Gateway) fetch(c *call) bool {
	st := c.state
	fs := &st.fetch
	v := c.hdr.APIVersion
	if !c.resumed { // first pass, not a wake-up
		if !decodeOrClose(c, &fs.req) {
			return false
		}
		fs.deadline = time.Now().Add(time.Duration(fs.req.MaxWaitMillis) * time.Millisecond)
	}
	// docs/design/kafka-protocol.md §7.4: an incremental fetch for a session we never created.
	if fs.req.SessionID != 0 {
		buf := c.responseBuffer()
		buf = wire.AppendFetchResponseStart(buf, v, 0, wire.FetchSessionIDNotFound, 0, 0)
		c.req.Respond(wire.AppendFetchResponseEnd(buf, v))
		return false
	}

	bytes, hasErr := g.fetchPass(c)
	now := time.Now()
	minBytes := int(fs.req.MinBytes)
	// docs/design/kafka-protocol.md §7.3: answer when MinBytes is reached, MaxWait has passed, a partition
	// has an error, or nothing was asked for.
	if bytes >= minBytes || bytes > 0 && minBytes <= 0 || hasErr || !now.Before(fs.deadline) || fetchPartitions(&fs.req) == 0 || c.req.Conn().Closed() {
		c.req.Respond(fs.buf)
		fs.buf = nil
		return false
	}
	fs.buf = nil
	g.park(c, now)
	return true
}

// fetchPartitions counts the requested partitions.
func fetchPartitions(r *wire.FetchRequest) int {
	n := 0
	for i := range r.Topics {
		n += len(r.Topics[i].Partitions)
	}
	return n
}

// park registers the call for appends to its partitions and a timer for its
// deadline (or the external poll interval), then returns without blocking.
func (g *Gateway) park(c *call, now time.Time) {
	fs := &c.state.fetch
	w := newWaiter()
	fs.waiter = w
	for i := range fs.req.Topics {
		t := &fs.req.Topics[i]
		for _, p := range t.Partitions {
			g.notify.watch(t.Topic, p.Partition, w)
		}
	}
	wait := fs.deadline.Sub(now)
	if !g.caps.SoleWriter && wait > externalPoll {
		wait = externalPoll
	}
	timer := time.AfterFunc(wait, w.wake)
	g.metrics.parkedFetches.Add(1)
	go func() {
		defer g.metrics.parkedFetches.Add(-1)
		if g.catch(c, func() { g.unpark(fs, w, timer) }) {
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

// unpark waits until a parked Fetch is woken (an append, its timer) or the
// gateway stops, then undoes its registrations.
func (g *Gateway) unpark(fs *fetchState, w *waiter, timer *time.Timer) {
	select {
	case <-w.ch:
	case <-g.ctx.Done():
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

// fetchPass builds the whole response into fs.buf and returns the record
// bytes it holds and whether any partition has an error.
func (g *Gateway) fetchPass(c *call) (int, bool) {
	st := c.state
	fs := &st.fetch
	req := &fs.req
	v := c.hdr.APIVersion
	if fs.r.emit == nil {
		fs.r.init(&g.metrics)
		fs.r.builder.Grow = fs.growResponse
	}
	fs.call = c
	maxBytes := int(req.MaxBytes)
	if v < 3 || maxBytes <= 0 {
		maxBytes = 1 << 30
	}
	hint := maxBytes
	if hint > 1<<20 {
		hint = 1 << 20
	}
	// A backend with network round trips (Iggy) reads every partition at
	// once, each into its own scratch batch, then the response is assembled
	// in request order; the embedded log reads straight into the response.
	fan := !g.caps.LocalLatency && fetchPartitions(req) > 1
	if fan {
		g.readAll(fs, maxBytes)
	}
	buf := c.req.ResponseBufferSize(hint + 1024)
	buf = wire.AppendResponseHeader(buf, c.hdr.APIKey, v, c.hdr.CorrelationID)
	buf = wire.AppendFetchResponseStart(buf, v, 0, wire.NoError, 0, len(req.Topics))
	total, hasErr, k := 0, false, 0
	for i := range req.Topics {
		t := &req.Topics[i]
		buf = wire.AppendFetchTopicStart(buf, v, t.Topic, len(t.Partitions))
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			p := wire.FetchResponseTopicPartition{
				Partition: rp.Partition, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1,
				PreferredReadReplica: -1,
			}
			limit := int(rp.PartitionMaxBytes)
			if rest := maxBytes - total; rest < limit {
				limit = rest
			}
			// KIP-74: while the response holds no records yet, a partition
			// returns at least one record even past the limits, so a large
			// record can make progress (a read returns at least one).
			var mark wire.FetchPartitionMark
			buf, mark = wire.AppendFetchPartitionBegin(buf, v, &p, limit)
			n := 0
			switch {
			case fan:
				r := fs.parts[k]
				k++
				p.ErrorCode = r.resp.ErrorCode
				p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.resp.HighWatermark, r.resp.LastStableOffset, r.resp.LogStartOffset
				// Read with the partition's own limit: the records join the
				// response if a read in turn would have had that limit too;
				// if the response has less left, the partition is read
				// again with what is left (one more round trip, only when
				// the response limit is reached).
				switch {
				case r.resp.ErrorCode != wire.NoError || r.recordBytes == 0:
				case total == 0 || limit > 0 && r.limit <= limit:
					buf = fs.call.req.GrowResponse(buf, r.recordBytes)
					buf = append(buf, r.buf...)
					n = r.recordBytes
				case limit > 0:
					buf, n = g.readPartition(&fs.r, buf, t.Topic, rp, &p, limit)
				}
			case limit > 0 || total == 0:
				buf, n = g.readPartition(&fs.r, buf, t.Topic, rp, &p, limit)
			default:
				// No room left: answer the partition with its watermarks only.
				if wm, err := g.store.Watermarks(g.ctx, t.Topic, rp.Partition); err == nil {
					setWatermarks(&p, wm)
				} else {
					p.ErrorCode = fetchCode(err)
				}
			}
			if p.ErrorCode != wire.NoError {
				hasErr = true
				g.metrics.errors[wire.KeyFetch].CountError(p.ErrorCode)
				buf = buf[:mark.RecordsStart()]
				n = 0
			}
			buf = wire.AppendFetchPartitionEnd(buf, mark, &p)
			total += n
		}
		buf = wire.AppendFetchTopicEnd(buf, v)
	}
	fs.buf = wire.AppendFetchResponseEnd(buf, v)
	fs.call = nil
	return total, hasErr
}

// readAll reads every requested partition concurrently into fs.parts, each
// up to its own limit (PartitionMaxBytes, at most maxBytes); the first read
// runs on the calling goroutine.
func (g *Gateway) readAll(fs *fetchState, maxBytes int) {
	k := 0
	for i := range fs.req.Topics {
		t := &fs.req.Topics[i]
		for j := range t.Partitions {
			for len(fs.parts) <= k {
				fs.parts = append(fs.parts, new(partReader))
			}
			r := fs.parts[k]
			r.init(&g.metrics)
			r.topic, r.rp = t.Topic, &t.Partitions[j]
			k++
		}
	}
	// Each read runs under catch; when one panicked, readAll re-raises
	// errPartPanicked once all are done, so the call is abandoned by the
	// guard its handler runs under. The reads after the first go to pooled
	// reader goroutines (no allocation per partition once they run).
	for _, r := range fs.parts[1:k] {
		fs.wg.Add(1)
		g.startPartRead(partJob{fs: fs, r: r, maxBytes: maxBytes})
	}
	g.readOnePart(fs, fs.parts[0], maxBytes)
	fs.wg.Wait()
	for _, r := range fs.parts[:k] {
		if r.panicked {
			panic(errPartPanicked)
		}
	}
}

// readOnePart reads one partition of a Fetch into r under catch.
func (g *Gateway) readOnePart(fs *fetchState, r *partReader, maxBytes int) {
	r.panicked = g.catch(fs.call, func() {
		r.resp = wire.FetchResponseTopicPartition{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
		r.limit = min(int(r.rp.PartitionMaxBytes), maxBytes)
		if want := min(r.limit+r.limit/8+4096, maxRetainedPartBuf); cap(r.buf) < want {
			// Room for a full read (record framing adds a few percent to
			// the payload bytes the limit counts) without append's
			// doubling copies; kept by the pooled state for the next.
			r.buf = make([]byte, 0, want)
		}
		r.buf, r.recordBytes = g.readPartition(r, r.buf[:0], r.topic, r.rp, &r.resp, r.limit)
	})
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

// startPartRead hands j to an idle pooled reader, or starts one.
func (g *Gateway) startPartRead(j partJob) {
	select {
	case g.partJobs <- j:
		return
	default:
	}
	if g.partWorkers.Add(1) > maxPartWorkers {
		g.partWorkers.Add(-1)
		go func() {
			g.readOnePart(j.fs, j.r, j.maxBytes)
			j.fs.wg.Done()
		}()
		return
	}
	go g.partWorker(j)
}

// partWorker runs partition reads until the gateway closes.
func (g *Gateway) partWorker(j partJob) {
	defer g.partWorkers.Add(-1)
	for {
		g.readOnePart(j.fs, j.r, j.maxBytes)
		j.fs.wg.Done()
		select {
		case j = <-g.partJobs:
		case <-g.ctx.Done():
			return
		}
	}
}

func setWatermarks(p *wire.FetchResponseTopicPartition, wm Watermarks) {
	p.HighWatermark = wm.High
	// Without transactions LSO = HW (docs/design/kafka-protocol.md §7.1); read_committed
	// consumers read up to it too.
	p.LastStableOffset = wm.High
	p.LogStartOffset = wm.LogStart
}

// readPartition appends one partition's records (one uncompressed batch)
// to buf through r and returns the records' size.
func (g *Gateway) readPartition(r *partReader, buf []byte, topic string, rp *wire.FetchRequestTopicPartition, p *wire.FetchResponseTopicPartition, limit int) ([]byte, int) {
	r.buf = buf
	r.started, r.unmappable, r.mapped = false, false, 0
	start := len(buf)
	if limit < 1 {
		limit = 1
	}
	wm, err := g.store.Read(g.ctx, topic, rp.Partition, rp.FetchOffset, limit, r.emit)
	// The builder may have moved the buffer (Grow): from here on only its
	// result is valid, never the buf passed in.
	out := r.buf
	if r.started {
		out = r.builder.Finish()
	}
	r.buf = nil
	if err != nil {
		p.ErrorCode = fetchCode(err)
		return out[:start], 0
	}
	setWatermarks(p, wm)
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

// growResponse is the response reader's Grow: the response grows into a
// larger pooled buffer of the request being answered.
func (fs *fetchState) growResponse(buf []byte, n int) []byte {
	return fs.call.req.GrowResponse(buf, n)
}

// add is the Log.Read callback: map one message back and append it to the
// partition's batch.
func (r *partReader) add(m *message.Message) bool {
	if err := r.decoder.Decode(m, &r.record); err != nil {
		r.unmappable = true
		return false
	}
	rec := &r.record
	if !r.started {
		r.base, r.baseTS = m.Offset, rec.TimestampMs
		r.builder.Reset(r.buf, r.base, r.baseTS, batch.NoCompression)
		r.started = true
	}
	r.builder.BeginRecord(int32(m.Offset-r.base), rec.TimestampMs-r.baseTS, rec.Key, rec.Value)
	for i := range rec.Headers {
		r.builder.AppendHeader(rec.Headers[i].Key, rec.Headers[i].Value)
	}
	r.builder.EndRecord()
	r.mapped++
	r.metrics.recordsOut.Add(1)
	return true
}

// fetchCode maps a Log read error to a partition error code.
func fetchCode(err error) wire.ErrorCode {
	switch {
	case errors.Is(err, ErrUnknownTopic), errors.Is(err, ErrUnknownPartition):
		return wire.UnknownTopicOrPartition
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrUnknownOutcome):
		return wire.NotLeaderOrFollower
	default:
		return wire.UnknownServerError
	}
}
