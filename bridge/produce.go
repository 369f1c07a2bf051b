package bridge

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/producer"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

// produce answers Produce v3–12 with the reference gateway's behaviour
// (docs/design/record-mapping.md §2, §2.9, §6): each partition entry is validated,
// decoded and mapped on its own, and becomes one append of one message per
// record; each partition gets its own error code and base offset.
func (g *Gateway) produce(c *call) bool {
	st := c.state
	req := &st.produceReq
	v := c.hdr.APIVersion
	if !c.resumed { // not yet decoded: the first run, inline or on a worker
		// Produce v0–2 (advertised for old librdkafka, KAFKA-18659) and
		// malformed requests close the connection, as Kafka does.
		if !decodeOrClose(c, req) {
			return false
		}
		if c.inline && hasCompressed(req) {
			// Decompression happens off the loop, under the decode
			// semaphore; the worker runs produce again, without decoding.
			return g.offload(c)
		}
	}

	resp := &st.produceResp
	resp.ThrottleMillis = 0
	resp.Topics = resp.Topics[:0]
	var fixed wire.ErrorCode
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		fixed = wire.InvalidRequiredAcks
	case req.TransactionalID.Valid && req.TransactionalID.S != "":
		// docs/design/record-mapping.md §6: a transactional Produce gets 35 on every
		// partition; the connection stays open.
		fixed = wire.UnsupportedVersion
	}

	ctx := g.ctx
	if !g.caps.NonBlocking {
		timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
		if timeout <= 0 || timeout > g.cfg.ProduceTimeoutCap {
			timeout = g.cfg.ProduceTimeoutCap
		}
		// The state's reusable deadline: no allocation per request.
		st.deadline.start(g.ctx, time.Now().Add(timeout))
		defer st.deadline.release()
		ctx = &st.deadline
	}
	budget := batch.Budget{MaxBytes: g.cfg.DecodeBudgetBytes, MaxRecords: g.cfg.DecodeBudgetRecords}
	// A backend with network round trips (Iggy) gets the request's
	// partitions appended concurrently, each on its own session, once all
	// are mapped; the embedded log appends inline, one after another.
	fan := &st.fanout
	parallel := !g.caps.LocalLatency && fixed == wire.NoError && distinctPartitions(req, &st.int32s) > 1
	fan.jobs = fan.jobs[:0]
	if pl := g.cfg.Placement; pl != nil {
		// docs/design/cluster.md §5: appends started now delay this
		// instance's hand-over of the partitions it serves, and end by
		// the lease.
		defer pl.Release(pl.Hold())
		if lh, ok := pl.(store.LeaseHolder); ok {
			if ctx == &st.deadline {
				// The request's own deadline takes the lease's when earlier
				// (no derived context, no allocation).
				if d := lh.LeaseDeadline(); d.Before(st.deadline.deadline) {
					st.deadline.deadline = d
				}
			} else {
				var cancelLease context.CancelFunc
				ctx, cancelLease = context.WithDeadline(ctx, lh.LeaseDeadline())
				defer cancelLease()
			}
		}
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		resp.Topics = appendProduceTopic(resp.Topics, rt.Name)
		out := &resp.Topics[len(resp.Topics)-1]
		denied := wire.NoError
		if fixed == wire.NoError {
			denied = g.topicCode(c, acl.OpWrite, rt.Name) // KafkaApis: WRITE on the topic
		}
		// The topic's configs: max.message.bytes and message.timestamp.type
		// (docs/design/record-mapping.md §2.5).
		ts := g.topicSettingsOf(rt.Name)
		rules := produceRules{appendTime: -1}
		if ts != nil {
			rules.needKey = ts.compact
			if ts.logAppendTime {
				rules.appendTime = time.Now().UnixMilli()
			}
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			code, base := cmp.Or(fixed, denied), int64(-1)
			if code == wire.NoError {
				// Produce carries no leader epoch: only the leader check.
				code = g.leaderCode(rt.Name, rp.Index, -1)
			}
			if code == wire.NoError && ts != nil && ts.maxMessageBytes >= 0 {
				code = checkMessageSize(rp.Records, ts.maxMessageBytes)
			}
			if code == wire.NoError {
				dst := &st.batch
				if parallel {
					// The frames take about the records' bytes, plus a
					// frame header per record less Kafka's own framing.
					dst = fan.batch(len(fan.jobs), message.Headroom+len(rp.Records)+len(rp.Records)/8)
				}
				var pb producer.Batch
				code = g.preparePartition(st, dst, rp, v, &budget, &pb, rules)
				if code == wire.NoError {
					if parallel {
						fan.jobs = append(fan.jobs, appendJob{topic: rt.Name, index: rp.Index, batch: dst, producer: pb, topicAt: i, partAt: j})
					} else {
						code, base = g.appendMapped(ctx, rt.Name, rp.Index, dst, &pb)
					}
				}
			}
			out.Partitions = append(out.Partitions, wire.ProduceResponsePartition{
				Index: rp.Index, ErrorCode: code, BaseOffset: base,
				LogAppendTimeMillis: rules.appendTime, LogStartOffset: -1,
			})
		}
	}
	if len(fan.jobs) > 0 {
		g.runAppends(ctx, c, fan)
		for _, j := range fan.jobs {
			p := &resp.Topics[j.topicAt].Partitions[j.partAt]
			p.ErrorCode, p.BaseOffset = j.code, j.base
		}
	}
	failed := false
	resp.NodeEndpoints = resp.NodeEndpoints[:0]
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.ErrorCode != wire.NoError {
				failed = true
				g.metrics.errors[wire.KeyProduce].CountError(p.ErrorCode)
				if v >= 10 {
					// KIP-951 (docs/design/cluster.md §6): where the leader is.
					if p.CurrentLeader = g.leaderHint(t.Name, p.Index, p.ErrorCode); p.CurrentLeader.Valid {
						resp.NodeEndpoints = g.appendNodeEndpoint(c, resp.NodeEndpoints, p.CurrentLeader.LeaderID)
					}
				}
			}
		}
	}
	if g.cfg.DecodeBudgetBytes-budget.MaxBytes > bigDecodeBytes {
		g.bigDecode.Store(true)
	}
	if req.Acks == 0 {
		if failed {
			// KafkaApis.handleProduceRequest: an acks=0 request that failed
			// closes the connection so the client notices and refreshes.
			c.req.Close(engine.ReasonProtocolError, "acks=0 Produce failed")
		} else {
			c.req.NoResponse()
		}
		return false
	}
	respond(c, resp)
	return false
}

// appendProduceTopic appends a response topic, reusing the partition slice
// left in dst's spare capacity by an earlier request.
func appendProduceTopic(dst []wire.ProduceResponseTopic, name string) []wire.ProduceResponseTopic {
	var parts []wire.ProduceResponsePartition
	if len(dst) < cap(dst) {
		parts = dst[:len(dst)+1][len(dst)].Partitions[:0]
	}
	return append(dst, wire.ProduceResponseTopic{Name: name, Partitions: parts})
}

// hasCompressed reports whether any partition carries a compressed batch
// (batch.PeekCodec; docs/design/kafka-protocol.md §4.1).
func hasCompressed(req *wire.ProduceRequest) bool {
	for i := range req.Topics {
		for _, p := range req.Topics[i].Partitions {
			if c, ok := batch.PeekCodec(p.Records); ok && c != batch.NoCompression {
				return true
			}
		}
	}
	return false
}

// preparePartition validates, decodes and maps one partition entry into dst,
// and fills pb from an idempotent batch's header (pb.ID -1 otherwise).
// rules are the topic's configs that change how records are stored.
func (g *Gateway) preparePartition(st *state, dst *message.Batch, p *wire.ProduceRequestPartition, v int16, budget *batch.Budget, pb *producer.Batch, rules produceRules) wire.ErrorCode {
	pb.ID = -1
	// docs/design/record-mapping.md §4: a negative index is answered 3.
	if p.Index < 0 {
		return wire.UnknownTopicOrPartition
	}
	// docs/design/kafka-protocol.md §4.6: records missing or zero batches → INVALID_RECORD.
	if len(p.Records) == 0 {
		return wire.InvalidRecord
	}
	h, err := batch.Validate(p.Records)
	if errors.Is(err, batch.ErrControl) {
		return wire.UnsupportedVersion
	}
	if err != nil {
		return batchCode(err)
	}
	// docs/design/record-mapping.md §2.9: a stored message cannot carry transactional or
	// control flags → UNSUPPORTED_VERSION.
	if h.Transactional() || h.Control() {
		return wire.UnsupportedVersion
	}
	// Kafka's client-only batch rules (UnifiedLog/LogValidator): baseOffset
	// 0, a sequence when idempotent, CreateTime.
	if err := h.CheckProduce(); err != nil {
		return batchCode(err)
	}
	// ProduceRequest.validateRecords: zstd needs Produce v7+.
	if h.Codec() == batch.Zstd && v < 7 {
		return wire.UnsupportedCompressionType
	}

	if h.ProducerID >= 0 {
		*pb = producer.Batch{ID: h.ProducerID, Epoch: h.ProducerEpoch, First: h.BaseSequence,
			Last: producer.LastSequence(h.BaseSequence, h.LastOffsetDelta)}
	}

	code := g.mapPartition(st, dst, p.Records, h, budget, rules, &pb.LastTS)
	if code == wire.MessageTooLarge && (budget.MaxBytes < g.cfg.DecodeBudgetBytes || budget.MaxRecords < g.cfg.DecodeBudgetRecords) {
		// Over what this request has left: does it fit a budget of its own?
		// If so the client retries it (NOT_LEADER_OR_FOLLOWER is retriable);
		// if not, it is simply too large.
		alone := batch.Budget{MaxBytes: g.cfg.DecodeBudgetBytes, MaxRecords: g.cfg.DecodeBudgetRecords}
		if g.mapPartition(st, dst, p.Records, h, &alone, rules, &pb.LastTS) == wire.NoError {
			code = wire.NotLeaderOrFollower
		}
	}
	if code == wire.MessageTooLarge || code == wire.NotLeaderOrFollower {
		g.metrics.budgetRejects.Add(1)
		g.bigDecode.Store(true)
	}
	return code
}

// appendMapped appends one mapped partition entry: through duplicate
// detection when its batch is idempotent. A backend with network round trips
// gets it through the partition's queue, coalesced with the appends of other
// requests to the partition (coalesce.go).
func (g *Gateway) appendMapped(ctx context.Context, topic string, index int32, b *message.Batch, pb *producer.Batch) (wire.ErrorCode, int64) {
	if !g.caps.LocalLatency {
		return g.appendCoalesced(ctx, topic, index, b, pb)
	}
	if pb.ID >= 0 {
		return g.appendIdempotent(ctx, topic, index, b, pb)
	}
	return g.appendPartition(ctx, topic, index, b)
}

// appendPartition appends one mapped partition entry to the log.
func (g *Gateway) appendPartition(ctx context.Context, topic string, index int32, b *message.Batch) (wire.ErrorCode, int64) {
	base, err := g.store.Append(ctx, topic, index, b)
	return g.appended(topic, index, b.Count, base, err)
}

// appended is the outcome of an append of count messages to a partition
// (appendPartition, and a coalesced round sent by a JoinedAppender): the
// partition's error code and base offset, the records counted and parked
// Fetches woken when it succeeded.
func (g *Gateway) appended(topic string, index int32, count int, base int64, err error) (wire.ErrorCode, int64) {
	if err != nil {
		return logCode(err), -1
	}
	g.metrics.recordsIn.Add(uint64(count))
	g.notify.signal(topic, index)
	return wire.NoError, base
}

// mapPartition decodes one validated batch and maps its records into dst,
// and sets *last to the largest origin timestamp (µs) of its messages.
func (g *Gateway) mapPartition(st *state, dst *message.Batch, records []byte, h batch.Header, budget *batch.Budget, rules produceRules, last *uint64) wire.ErrorCode {
	compressed := h.Codec() != batch.NoCompression
	if compressed {
		select {
		case g.decode <- struct{}{}:
		default:
			g.metrics.decodeWaits.Add(1) // --max-concurrent-decodes reached
			g.decode <- struct{}{}
		}
		defer func() { <-g.decode }()
	}
	dec := batch.AcquireDecoder()
	defer batch.ReleaseDecoder(dec)
	recs, err := dec.Records(records, h, budget)
	if err != nil {
		return batchCode(err)
	}

	// Pass 1: the timestamp window (docs/design/record-mapping.md §2.5, rule 1).
	var w mapping.Window
	var r batch.Record
	var maxMs int64
	first := recs
	for first.Next(&r) {
		ms := recordTime(h, &r, rules.appendTime)
		w.Observe(ms)
		maxMs = max(maxMs, ms)
	}
	if err := first.Err(); err != nil {
		return batchCode(err)
	}
	// The mapping clamps each message's origin into [start, start +
	// MaxTimestampSpan] (mapping.Encoder.Append), so the largest is the
	// largest record time clamped alike. (A time too large for µs fails
	// the mapping below.)
	start := w.Start()
	*last = start
	if maxMs > 0 && maxMs <= math.MaxInt64/1000 {
		*last = min(max(uint64(maxMs)*1000, start), start+message.MaxTimestampSpan)
	}

	// Pass 2: map each record to one message. The first message of an
	// idempotent batch carries the producer stamp (docs/MAPPING.md).
	dst.Checksums = !g.caps.NoFrameChecksums
	dst.Reset(start)
	if !compressed {
		// The frames take about the records' bytes plus a frame header
		// each: grow the batch once, not by doubling and copying as it
		// fills (the count is bounded by what the bytes can hold, 7 bytes
		// being the smallest record), and with room to spare, so the
		// pooled batch fits the next, slightly larger one too.
		n := max(0, min(int(h.NumRecords), len(records)/7))
		if need := len(records) + n*(message.FrameHeaderSize+16); cap(dst.Buf)-len(dst.Buf) < need {
			dst.Buf = slices.Grow(dst.Buf, need+need/2)
		}
	}
	var mr mapping.Record
	var stamp *mapping.Producer
	if h.ProducerID >= 0 {
		st.stamp = mapping.Producer{ID: h.ProducerID, Epoch: h.ProducerEpoch, BaseSequence: h.BaseSequence, Count: h.NumRecords}
		stamp = &st.stamp
	}
	for recs.Next(&r) {
		st.headers = st.headers[:0]
		for it := r.Headers; ; {
			k, val, ok := it.Next()
			if !ok {
				break
			}
			st.headers = append(st.headers, mapping.Header{Key: k, Value: val})
		}
		if rules.needKey && r.Key == nil {
			// "Compacted topic cannot accept message without key"
			// (LogValidator.validateKey).
			return wire.InvalidRecord
		}
		mr = mapping.Record{Key: r.Key, Value: r.Value, TimestampMs: recordTime(h, &r, rules.appendTime), Headers: st.headers, Producer: stamp}
		stamp = nil
		if err := st.encoder.Append(dst, &mr); err != nil {
			if errors.Is(err, mapping.ErrTooLarge) {
				return wire.MessageTooLarge
			}
			return wire.InvalidRecord
		}
	}
	if err := recs.Err(); err != nil {
		return batchCode(err)
	}
	return wire.NoError
}

// produceRules are a topic's configs that change how Produce stores its
// records.
type produceRules struct {
	// appendTime ≥ 0 is the log append time (ms) every record is stamped
	// with (message.timestamp.type=LogAppendTime); −1 keeps the producer's.
	appendTime int64
	// needKey: the topic is compacted, so a record needs a key.
	needKey bool
}

// recordTime is the timestamp a record is stored with: the producer's, or
// the log append time when the topic asks for it.
func recordTime(h batch.Header, r *batch.Record, appendTime int64) int64 {
	if appendTime >= 0 {
		return appendTime
	}
	return h.BaseTimestamp + r.TimestampDelta
}

// checkMessageSize applies a topic's max.message.bytes as Kafka's
// UnifiedLog.analyzeAndValidateRecords does: the batch's full size (header
// included) must fit, else MESSAGE_TOO_LARGE. A Produce partition entry is
// exactly one batch (batch.Validate), so its size is the entry's.
func checkMessageSize(records []byte, max int64) wire.ErrorCode {
	if int64(len(records)) > max {
		return wire.MessageTooLarge
	}
	return wire.NoError
}

// batchCode maps a batch error to the Kafka code a broker returns.
func batchCode(err error) wire.ErrorCode {
	var be *batch.Error
	if errors.As(err, &be) {
		return wire.ErrorCode(be.Code)
	}
	return wire.InvalidRecord
}

// logCode maps a Log error to a Kafka code.
func logCode(err error) wire.ErrorCode {
	switch {
	case errors.Is(err, store.ErrUnknownTopic), errors.Is(err, store.ErrUnknownPartition):
		return wire.UnknownTopicOrPartition
	case errors.Is(err, store.ErrUnknownOutcome), errors.Is(err, context.DeadlineExceeded):
		// The records may be stored: never NOT_LEADER (which promises they
		// were not).
		return wire.RequestTimedOut
	case errors.Is(err, store.ErrUnavailable):
		return wire.NotLeaderOrFollower
	case errors.Is(err, store.ErrTooLarge):
		return wire.MessageTooLarge
	default:
		return wire.UnknownServerError
	}
}
