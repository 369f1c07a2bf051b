package bridge

import (
	"errors"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/wire"
)

// fetchState is the Fetch scratch space of a state.
type fetchState struct {
	req      wire.FetchRequest
	builder  batch.Builder
	decoder  mapping.Decoder
	record   mapping.Record
	buf      []byte // the response being built
	started  bool   // builder holds an open batch
	base     int64
	baseTS   int64
	bad      bool // an unmappable message stopped the read
	got      int
	emit     func(*message.Message) bool
	call     *call // the call being answered, for growResponse
	deadline time.Time
	waiter   *waiter
	metrics  *metrics
}

// externalPoll is how often a parked Fetch re-reads a backend that other
// writers can append to (Iggy); appends through this gateway wake it at once.
const externalPoll = 100 * time.Millisecond

// fetch answers Fetch v4–12 (KAFKA_PROTOCOL.md §7): sessionless (KIP-227:
// SessionId 0, every requested partition answered), records mapped back
// per RECORD_MAPPING.md §3 into one uncompressed v2 batch per partition,
// long polling that parks without holding a loop or a worker.
func (g *Gateway) fetch(c *call) bool {
	st := c.state
	fs := &st.more.fetch
	v := c.hdr.APIVersion
	if !c.resumed { // first pass, not a wake-up
		if err := fs.req.Decode(c.body, v); err != nil {
			c.req.Close("protocol_error")
			return false
		}
		fs.deadline = time.Now().Add(time.Duration(fs.req.MaxWaitMillis) * time.Millisecond)
	}
	// §7.4: an incremental fetch for a session we never created.
	if fs.req.SessionID != 0 {
		buf := c.responseBuffer()
		buf = wire.AppendFetchResponseStart(buf, v, 0, wire.FetchSessionIDNotFound, 0, 0)
		c.req.Respond(wire.AppendFetchResponseEnd(buf, v))
		return false
	}

	bytes, hasErr := g.fetchPass(c)
	now := time.Now()
	minBytes := int(fs.req.MinBytes)
	// §7.3: answer when MinBytes is reached, MaxWait has passed, a partition
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
	fs := &c.state.more.fetch
	w := newWaiter()
	fs.waiter = w
	for i := range fs.req.Topics {
		t := &fs.req.Topics[i]
		for _, p := range t.Partitions {
			g.notify.watch(t.Topic, p.Partition, w)
		}
	}
	wait := fs.deadline.Sub(now)
	if !g.cfg.InlineLog && wait > externalPoll {
		wait = externalPoll
	}
	timer := time.AfterFunc(wait, w.wake)
	g.metrics.parkedFetches.Add(1)
	go func() {
		defer g.metrics.parkedFetches.Add(-1)
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
		if g.ctx.Err() != nil {
			c.req.Close("shutdown")
			g.putState(c.state)
			return
		}
		// Re-run the fetch on a worker; it parks again if still short.
		c.inline, c.resumed = false, true
		select {
		case g.work <- task{c: c}:
		default:
			go g.runOffloaded(c)
		}
	}()
}

// fetchPass builds the whole response into fs.buf and returns the record
// bytes it holds and whether any partition has an error.
func (g *Gateway) fetchPass(c *call) (int, bool) {
	st := c.state
	fs := &st.more.fetch
	req := &fs.req
	v := c.hdr.APIVersion
	if fs.emit == nil {
		fs.emit = fs.add
		fs.builder.Grow = fs.growResponse
		fs.metrics = &g.metrics
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
	buf := c.req.ResponseBufferSize(hint + 1024)
	buf = wire.AppendResponseHeader(buf, c.hdr.APIKey, v, c.hdr.CorrelationID)
	buf = wire.AppendFetchResponseStart(buf, v, 0, wire.None, 0, len(req.Topics))
	total, hasErr := 0, false
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
			// record can make progress (readPartition reads at least one).
			var mark wire.FetchPartitionMark
			buf, mark = wire.AppendFetchPartitionBegin(buf, v, &p, limit)
			n := 0
			if limit > 0 || total == 0 {
				buf, n = g.readPartition(c, buf, t.Topic, rp, &p, limit)
			} else {
				// No room left: answer the partition with its watermarks only.
				if wm, err := g.log.Watermarks(g.ctx, t.Topic, rp.Partition); err == nil {
					setWatermarks(&p, wm)
				} else {
					p.ErrorCode = fetchCode(err)
				}
			}
			if p.ErrorCode != wire.None {
				hasErr = true
				g.metrics.fetchError(p.ErrorCode)
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

func setWatermarks(p *wire.FetchResponseTopicPartition, wm Watermarks) {
	p.HighWatermark = wm.High
	// Without transactions LSO = HW (KAFKA_PROTOCOL.md §7.1); read_committed
	// consumers read up to it too.
	p.LastStableOffset = wm.High
	p.LogStartOffset = wm.LogStart
}

// readPartition appends one partition's records (one uncompressed batch)
// to buf and returns the records' size.
func (g *Gateway) readPartition(c *call, buf []byte, topic string, rp *wire.FetchRequestTopicPartition, p *wire.FetchResponseTopicPartition, limit int) ([]byte, int) {
	fs := &c.state.more.fetch
	fs.buf = buf
	fs.started, fs.bad, fs.got = false, false, 0
	start := len(buf)
	if limit < 1 {
		limit = 1
	}
	wm, err := g.log.Read(g.ctx, topic, rp.Partition, rp.FetchOffset, limit, fs.emit)
	// The builder may have moved the response to a larger buffer: from here
	// on only its result is valid, never the buf passed in.
	out := fs.buf
	if fs.started {
		out = fs.builder.Finish()
	}
	fs.buf = nil
	if err != nil {
		p.ErrorCode = fetchCode(err)
		return out[:start], 0
	}
	setWatermarks(p, wm)
	// §7.1: FetchOffset outside [logStart, HW] → OFFSET_OUT_OF_RANGE so
	// auto.offset.reset applies.
	if rp.FetchOffset < wm.LogStart || rp.FetchOffset > wm.High {
		p.ErrorCode = wire.OffsetOutOfRange
		return out[:start], 0
	}
	if fs.bad && fs.got == 0 {
		// RECORD_MAPPING.md §3.6: the consumer stops at an unmappable
		// message; records before it are served first.
		p.ErrorCode = wire.UnknownServerError
		return out[:start], 0
	}
	return out, len(out) - start
}

// growResponse is the builder's Grow: the response grows into a larger
// pooled buffer of the request being answered.
func (fs *fetchState) growResponse(buf []byte, n int) []byte {
	return fs.call.req.GrowResponse(buf, n)
}

// add is the Log.Read callback: map one message back and append it to the
// partition's batch.
func (fs *fetchState) add(m *message.Message) bool {
	if err := fs.decoder.Decode(m, &fs.record); err != nil {
		fs.bad = true
		return false
	}
	r := &fs.record
	if !fs.started {
		fs.base, fs.baseTS = m.Offset, r.TimestampMs
		fs.builder.Reset(fs.buf, fs.base, fs.baseTS, batch.None)
		fs.started = true
	}
	fs.builder.BeginRecord(int32(m.Offset-fs.base), r.TimestampMs-fs.baseTS, r.Key, r.Value)
	for i := range r.Headers {
		fs.builder.AppendHeader(r.Headers[i].Key, r.Headers[i].Value)
	}
	fs.builder.EndRecord()
	fs.got++
	fs.metrics.recordsOut.Add(1)
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
