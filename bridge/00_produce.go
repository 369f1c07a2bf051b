// Produce (API key 0): versions 3–13 served, 0–13 advertised (wire.APIs); a
// v0–2 request closes the connection, as in Kafka 4 (KAFKA-18659,
// docs/design/kafka-protocol.md §2.1). v13 names topics by id, looked up in
// the gateway's id map (topicids.go): an id it does not know after listing
// the topics is UNKNOWN_TOPIC_ID (100) on each of the topic's partitions, as
// KafkaApis.handleProduceRequest answers.
//
// Each partition entry is validated, decoded and mapped on its own, and
// appended as one message per record (docs/design/record-mapping.md §2).
// Differs from Kafka: a transactional Produce gets UNSUPPORTED_VERSION (35)
// on every partition, and a transactional or control batch is refused with
// it (docs/design/record-mapping.md §2.9, §6). The appends themselves
// (plain, idempotent, coalesced, concurrent) are append.go, idempotence.go,
// coalesce.go and fanout.go.

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
	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyProduce, (*Gateway).produce) }

// produce answers Produce v3–13 with the reference gateway's behaviour
// (docs/design/record-mapping.md §2, §2.9, §6): each partition entry is validated,
// decoded and mapped on its own, and becomes one append of one message per
// record; each partition gets its own error code and base offset.
//
// Its phases: the set-up here (decode or offload, the request's own
// refusal, its deadline and the placement's lease), produceTopic for each
// topic and producePartition for each of its partitions, then finishProduce
// (the concurrent appends, error counts and leader hints, acks).
func (g *Gateway) produce(c *call) bool {
	st := c.state
	req := &st.produceReq
	if !c.resumed { // not yet decoded: the first run, inline or on a worker
		// Produce v0–2 (advertised for old librdkafka, KAFKA-18659) and
		// malformed requests close the connection, as Kafka does.
		if !decodeOrClose(c, req) {
			return false
		}
		g.produceTopicNames(st, c.hdr.APIVersion)
		c.throttleMs = max(c.throttleMs, throttleMillis(g.chargeProduce(c)))
		if c.inline && hasCompressed(req) {
			// Decompression happens off the loop, under the decode
			// semaphore; the worker runs produce again, without decoding.
			return g.offload(c)
		}
	}

	resp := &st.produceResp
	// The quotas' throttle (quotas.go): Produce carries throttle_time_ms
	// at its end, where the generic call.putThrottle does not write.
	resp.ThrottleMillis = c.throttleMs
	resp.Topics = resp.Topics[:0]
	ps := produceScope{ctx: g.ctx, v: c.hdr.APIVersion, fixed: g.produceRequestCode(c, req), principal: g.principalOf(c)}
	if !g.caps.NonBlocking {
		ps.ctx = g.startProduceDeadline(st, req.TimeoutMillis)
		defer st.deadline.release()
	}
	ps.budget = batch.Budget{MaxBytes: g.cfg.DecodeBudgetBytes, MaxRecords: g.cfg.DecodeBudgetRecords}
	// A backend with network round trips (Iggy) gets the request's
	// partitions appended concurrently, each on its own session, once all
	// are mapped; the embedded log appends inline, one after another.
	ps.parallel = !g.caps.LocalLatency && ps.fixed == wire.NoError && distinctPartitions(req, &st.int32s) > 0
	st.fanout.jobs = st.fanout.jobs[:0]
	if pl := g.cfg.Placement; pl != nil {
		// docs/design/cluster.md §5: appends started now delay this
		// instance's hand-over of the partitions it serves, and end by
		// the lease.
		defer pl.Release(pl.Hold())
		if cancelLease := g.leaseDeadline(st, &ps, pl); cancelLease != nil {
			defer cancelLease()
		}
	}
	for i := range req.Topics {
		g.produceTopic(c, &ps, i)
	}
	return g.finishProduce(c, &ps)
}

// produceScope is what the phases of one Produce share. It lives on
// produce's stack: the phases take it by pointer and keep nothing of it.
type produceScope struct {
	ctx    context.Context // the request's deadline and the lease's
	budget batch.Budget    // what the request may still decode
	v      int16
	// fixed, when not NoError, is every partition's code: the request
	// itself is refused (produceRequestCode).
	fixed wire.ErrorCode
	// parallel: the partitions are mapped first and appended concurrently
	// by finishProduce (fanout.go); else each is appended once mapped.
	parallel bool
	// principal is who sends the request, for the per-principal cap on
	// idempotent producer states (producer.Limits).
	principal security.Principal
}

// produceRequestCode is the code of every partition of a Produce the
// request itself refuses: acks outside {-1, 0, 1}; a transactional Produce
// where transactions are not served (cluster mode), or without WRITE on
// its transactional id; NoError otherwise.
func (g *Gateway) produceRequestCode(c *call, req *wire.ProduceRequest) wire.ErrorCode {
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		return wire.InvalidRequiredAcks
	case !req.TransactionalID.Valid || req.TransactionalID.S == "":
	case !g.transactionsServed():
		// docs/design/transactions.md §6: a transactional Produce gets 35
		// on every partition; the connection stays open.
		return wire.UnsupportedVersion
	case !g.allowed(c, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID.S):
		// KafkaApis.handleProduceRequest: WRITE on the transactional id.
		return wire.TransactionalIDAuthFailed
	}
	return wire.NoError
}

// startProduceDeadline starts the state's reusable deadline (no allocation
// per request) at timeoutMs, capped by Config.ProduceTimeoutCap, and returns
// it as the request's context; the caller defers st.deadline.release.
func (g *Gateway) startProduceDeadline(st *state, timeoutMs int32) context.Context {
	timeout := time.Duration(timeoutMs) * time.Millisecond
	if timeout <= 0 || timeout > g.cfg.ProduceTimeoutCap {
		timeout = g.cfg.ProduceTimeoutCap
	}
	st.deadline.start(g.ctx, time.Now().Add(timeout))
	return &st.deadline
}

// leaseDeadline bounds ps.ctx by the placement's lease when it has one
// (store.LeaseHolder). The request's own deadline takes the lease's when
// earlier (no derived context, no allocation); another context is derived,
// and the cancel returned is the caller's to defer (nil when there is none).
func (g *Gateway) leaseDeadline(st *state, ps *produceScope, pl store.Placement) context.CancelFunc {
	lh, ok := pl.(store.LeaseHolder)
	if !ok {
		return nil
	}
	if ps.ctx == &st.deadline {
		if d := lh.LeaseDeadline(); d.Before(st.deadline.deadline) {
			st.deadline.deadline = d
		}
		return nil
	}
	var cancel context.CancelFunc
	ps.ctx, cancel = context.WithDeadline(ps.ctx, lh.LeaseDeadline())
	return cancel
}

// produceTopic answers the i-th topic of a Produce: WRITE on the topic and
// the topic's configs, then each partition (producePartition).
func (g *Gateway) produceTopic(c *call, ps *produceScope, i int) {
	st := c.state
	rt := &st.produceReq.Topics[i]
	resp := &st.produceResp
	resp.Topics = appendProduceTopic(resp.Topics, rt.Name, rt.TopicID)
	out := &resp.Topics[len(resp.Topics)-1]
	denied := wire.NoError
	if ps.fixed == wire.NoError {
		denied = st.produceIDCodes[i] // an id that names no topic
	}
	if denied == wire.NoError && ps.fixed == wire.NoError {
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
		code, base := g.producePartition(st, ps, rt.Name, rp, cmp.Or(ps.fixed, denied), ts, rules, i, j)
		out.Partitions = append(out.Partitions, wire.ProduceResponsePartition{
			Index: rp.Index, ErrorCode: code, BaseOffset: base,
			LogAppendTimeMillis: rules.appendTime, LogStartOffset: -1,
		})
	}
}

// producePartition answers one partition entry, rp at (topicAt, partAt) of
// the request, whose code so far is code: the leader check and the topic's
// max.message.bytes, then the entry validated, decoded and mapped
// (preparePartition) and appended; when ps.parallel, queued for
// finishProduce instead, with base offset -1 until then.
func (g *Gateway) producePartition(st *state, ps *produceScope, topic string, rp *wire.ProduceRequestPartition, code wire.ErrorCode,
	ts *topicSettings, rules produceRules, topicAt, partAt int) (wire.ErrorCode, int64) {
	if code == wire.NoError {
		// Produce carries no leader epoch: only the leader check.
		code = g.leaderCode(topic, rp.Index, -1)
	}
	if code == wire.NoError && ts != nil && ts.maxMessageBytes >= 0 {
		code = checkMessageSize(rp.Records, ts.maxMessageBytes)
	}
	if code != wire.NoError {
		return code, -1
	}
	fan := &st.fanout
	dst := &st.batch
	if ps.parallel {
		// The frames take about the records' bytes, plus a frame header
		// per record less Kafka's own framing.
		dst = fan.batch(len(fan.jobs), message.Headroom+len(rp.Records)+len(rp.Records)/8)
	}
	var pb producer.Batch
	if code = g.preparePartition(st, dst, rp, ps.v, &ps.budget, &pb, rules); code != wire.NoError {
		return code, -1
	}
	pb.PrincipalType, pb.PrincipalName = ps.principal.Type, ps.principal.Name
	if ps.parallel {
		fan.jobs = append(fan.jobs, appendJob{topic: topic, index: rp.Index, batch: dst, producer: pb, topicAt: topicAt, partAt: partAt})
		return wire.NoError, -1
	}
	return g.appendMapped(ps.ctx, topic, rp.Index, dst, &pb)
}

// finishProduce is Produce's tail: the concurrent appends and their
// results, the error counts and leader hints (produceErrors), the
// janitor's big-decode flag, then the answer acks asks for.
func (g *Gateway) finishProduce(c *call, ps *produceScope) bool {
	st := c.state
	req, resp, fan := &st.produceReq, &st.produceResp, &st.fanout
	if len(fan.jobs) > 0 {
		g.runAppends(ps.ctx, c, fan)
		for _, j := range fan.jobs {
			p := &resp.Topics[j.topicAt].Partitions[j.partAt]
			p.ErrorCode, p.BaseOffset = j.code, j.base
		}
	}
	failed := g.produceErrors(c, resp, ps.v)
	if g.cfg.DecodeBudgetBytes-ps.budget.MaxBytes > bigDecodeBytes {
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

// produceErrors counts the error codes of a Produce response (a
// transactional batch not admitted answered at v11+ as Kafka does) and, from v10
// on, gives each failed partition its leader hint (KIP-951,
// docs/design/cluster.md §6). It reports whether any partition failed.
func (g *Gateway) produceErrors(c *call, resp *wire.ProduceResponse, v int16) bool {
	failed := false
	resp.NodeEndpoints = resp.NodeEndpoints[:0]
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.ErrorCode != wire.NoError {
				failed = true
				if p.ErrorCode == wire.InvalidTxnState && v >= 11 {
					// A transactional batch the coordinator did not admit:
					// Produce v11+ (KIP-890) answers TRANSACTION_ABORTABLE,
					// which the client handles by aborting, as Kafka 4.4 does.
					p.ErrorCode = wire.TransactionAbortable
				}
				if p.ErrorCode == wire.UnknownProducerID {
					// The Java client retries UNKNOWN_PRODUCER_ID as is,
					// forever, while the log start offset is -1, and asks
					// for a new epoch once it is known
					// (TransactionManager.canRetry); 0 is at or below every
					// partition's log start, which is all it compares.
					p.LogStartOffset = 0
				}
				g.metrics.errors[wire.KeyProduce].CountError(p.ErrorCode)
				if v >= 10 {
					if p.CurrentLeader = g.leaderHint(t.Name, p.Index, p.ErrorCode); p.CurrentLeader.Valid {
						resp.NodeEndpoints = g.appendNodeEndpoint(c, resp.NodeEndpoints, p.CurrentLeader.LeaderID)
					}
				}
			}
		}
	}
	return failed
}

// appendProduceTopic appends a response topic, reusing the partition slice
// left in dst's spare capacity by an earlier request.
func appendProduceTopic(dst []wire.ProduceResponseTopic, name string, id [16]byte) []wire.ProduceResponseTopic {
	var parts []wire.ProduceResponsePartition
	if len(dst) < cap(dst) {
		parts = dst[:len(dst)+1][len(dst)].Partitions[:0]
	}
	return append(dst, wire.ProduceResponseTopic{Name: name, TopicID: id, Partitions: parts})
}

// produceTopicNames fills st.produceIDCodes, one per requested topic, and
// from v13 on each topic's name from its id: a topic whose id names none
// keeps the name "" and UNKNOWN_TOPIC_ID, or, when the topics could not be
// listed, NOT_LEADER_OR_FOLLOWER, which producers retry.
func (g *Gateway) produceTopicNames(st *state, v int16) {
	st.produceIDCodes = st.produceIDCodes[:0]
	listed := false // topicNameByID
	for i := range st.produceReq.Topics {
		t := &st.produceReq.Topics[i]
		code := wire.NoError
		if v >= 13 {
			code = g.nameTopicByID(&t.Name, t.TopicID, &listed, wire.NotLeaderOrFollower)
		}
		st.produceIDCodes = append(st.produceIDCodes, code)
	}
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
	// docs/design/record-mapping.md §2.9: a client's control batch →
	// UNSUPPORTED_VERSION. A transactional batch needs a transactional id
	// (KafkaApis.handleProduceRequest authorizes WRITE on the request's id
	// when it holds transactional records: without one it fails,
	// TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and a producer id
	// (INVALID_RECORD).
	if h.Control() {
		return wire.UnsupportedVersion
	}
	if h.Transactional() {
		if tid := st.produceReq.TransactionalID; !tid.Valid || tid.S == "" {
			return wire.TransactionalIDAuthFailed
		}
		if h.ProducerID < 0 {
			return wire.InvalidRecord
		}
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
			Last: producer.LastSequence(h.BaseSequence, h.LastOffsetDelta), Transactional: h.Transactional()}
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
	start, err := timeWindow(recs, h, rules, last)
	if err != nil {
		return batchCode(err)
	}

	// Pass 2: map each record to one message.
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
	return g.mapRecords(st, dst, recs, h, rules)
}

// timeWindow reads the batch's records once for the window their
// timestamps open (mapping.Window) and returns its start (µs); it sets
// *last to the largest origin timestamp (µs) the mapping will give them.
func timeWindow(recs batch.Records, h batch.Header, rules produceRules, last *uint64) (uint64, error) {
	var w mapping.Window
	var r batch.Record
	var maxMs int64
	for recs.Next(&r) {
		ms := recordTime(h, &r, rules.appendTime)
		w.Observe(ms)
		maxMs = max(maxMs, ms)
	}
	if err := recs.Err(); err != nil {
		return 0, err
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
	return start, nil
}

// mapRecords maps each record of the batch to one message appended to dst
// (docs/design/record-mapping.md); the first message of an idempotent batch
// carries the producer stamp (docs/MAPPING.md).
func (g *Gateway) mapRecords(st *state, dst *message.Batch, recs batch.Records, h batch.Header, rules produceRules) wire.ErrorCode {
	var r batch.Record
	var mr mapping.Record
	var stamp *mapping.Producer
	if h.ProducerID >= 0 {
		st.stamp = mapping.Producer{ID: h.ProducerID, Epoch: h.ProducerEpoch, BaseSequence: h.BaseSequence, Count: h.NumRecords,
			Transactional: h.Transactional()}
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
