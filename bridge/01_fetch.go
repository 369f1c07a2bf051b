// Fetch (API key 1): versions 4–18 (wire.APIs); v13+ names topics by id,
// looked up in the gateway's id map (topicids.go): an id it does not know
// after listing the topics is UNKNOWN_TOPIC_ID (100) on each of the
// topic's partitions, as KafkaApis.handleFetchRequest answers.
//
// Records are mapped back from messages into v2 batches in the topic's
// compression.type (docs/design/record-mapping.md §3); a transaction's
// batches and markers as Kafka serves them, and read_committed up to the
// last stable offset with the aborted transactions
// (docs/design/transactions.md §4). Incremental fetch sessions (KIP-227)
// as Kafka 4.4 keeps them (docs/design/kafka-protocol.md §7.4): the cache
// is bridge/fetchsession, its use here fetchsessions.go. Reading
// partitions and parking a Fetch are fetch.go.

package bridge

import (
	"errors"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/fetchcache"
	"github.com/kiggy-io/kiggy/bridge/fetchsession"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyFetch, (*Gateway).fetch) }

// fetch answers Fetch v4–18 (docs/design/kafka-protocol.md §7): in a fetch
// session when the client asks (KIP-227, docs/design/kafka-protocol.md
// §7.4), records mapped back
// per docs/design/record-mapping.md §3 into v2 batches in the topic's
// compression.type (docs/design/record-mapping.md §3.5), long polling that
// parks without holding a loop or a worker.
func (g *Gateway) fetch(c *call) bool {
	st := c.state
	fs := &st.fetch
	v := c.hdr.APIVersion
	if !c.resumed { // first pass, not a wake-up
		if !decodeOrClose(c, &fs.req) {
			return false
		}
		now := time.Now()
		fs.deadline = now.Add(time.Duration(fs.req.MaxWaitMillis) * time.Millisecond)
		// KIP-227 (fetchsessions.go): an incremental Fetch becomes a
		// request for its session's partitions, or a session error.
		if g.fetchSessionBegin(c, fs, v) {
			return false
		}
		if d := g.fetchThrottle(c, fs.req.ReplicaID); d > 0 {
			g.fetchThrottled(c, fs, v, d)
			return false
		}
		g.fetchTopicNames(fs, v)
		compress := false
		fs.codecs = fs.codecs[:0]
		for i := range fs.req.Topics {
			codec := g.fetchCompressionOf(fs.req.Topics[i].Topic)
			fs.codecs = append(fs.codecs, codec)
			compress = compress || codec != batch.NoCompression
		}
		// Compressing is too slow for the event loop (call.go, Offload).
		if c.inline && compress {
			return g.offload(c)
		}
	}
	fs.since = g.notify.mark() // before reading (notify.go)
	bytes, hasErr := g.fetchPass(c)
	now := time.Now()
	minBytes := int(fs.req.MinBytes)
	// docs/design/kafka-protocol.md §7.3: answer when MinBytes is reached, MaxWait has passed, a partition
	// has an error, or nothing was asked for.
	if bytes >= minBytes || bytes > 0 && minBytes <= 0 || hasErr || !now.Before(fs.deadline) || fetchPartitions(&fs.req) == 0 || c.req.Conn().Closed() || g.isDraining() {
		if !g.fetchSessionEnd(c, fs, v) {
			return false // answered INVALID_FETCH_SESSION_EPOCH
		}
		g.chargeFetch(c, fs.req.ReplicaID, bytes)
		if len(fs.splices) > 0 {
			c.req.RespondSpliced(fs.buf, fs.splices) // the pins go with it
			clear(fs.splices)
			fs.splices = fs.splices[:0]
		} else {
			c.req.Respond(fs.buf)
		}
		fs.buf = nil
		return false
	}
	fs.buf = nil
	fs.dropSplices()
	g.park(c, now)
	return true
}

// fetchThrottled answers a consumer's Fetch over its byte rate as Kafka's
// fetch contexts' getThrottledResponse do (KIP-219): no partitions, the
// throttle in throttle_time_ms, and the connection muted for it. An
// incremental Fetch keeps its session (its epoch has moved on, what it
// sent has not changed: nothing is committed); a full one creates none.
func (g *Gateway) fetchThrottled(c *call, fs *fetchState, v int16, d time.Duration) {
	var id int32
	if fs.sess.mode == sessIncremental {
		id = fs.sess.ticket.S.ID()
	}
	fs.sess.ticket = fetchsession.Ticket{}
	c.throttleMs = max(c.throttleMs, throttleMillis(d))
	c.cs.conn.Throttle(d)
	buf := c.responseBuffer()
	buf = wire.AppendFetchResponseStart(buf, v, c.throttleMs, wire.NoError, id, 0)
	c.req.Respond(wire.AppendFetchResponseEnd(buf, v))
}

// fetchTopicNames fills fs.topicCodes, one per requested topic, and from v13
// on each topic's name from its id: a topic whose id names none keeps the
// name "" (which names no topic either) and UNKNOWN_TOPIC_ID, or, when the
// topics could not be listed, the error a failed read gets.
func (g *Gateway) fetchTopicNames(fs *fetchState, v int16) {
	fs.topicCodes = fs.topicCodes[:0]
	listed := false // topicNameByID
	for i := range fs.req.Topics {
		t := &fs.req.Topics[i]
		code := wire.NoError
		if v >= 13 {
			name, err := g.topicNameByID(t.TopicID, &listed)
			switch {
			case err == nil:
				t.Topic = name
			case errors.Is(err, store.ErrUnknownTopic):
				code = wire.UnknownTopicID
			default:
				code = fetchCode(err)
			}
		}
		fs.topicCodes = append(fs.topicCodes, code)
	}
}

// fetchPartitions counts the requested partitions.
func fetchPartitions(r *wire.FetchRequest) int {
	n := 0
	for i := range r.Topics {
		n += len(r.Topics[i].Partitions)
	}
	return n
}

// fetchPass builds the whole response into fs.buf and returns the record
// bytes it holds and whether any partition has an error. A backend with
// network round trips has every partition read at once first (readAll) and
// the buffer sized from the reads (fetchResponseSize); fetchPartition then
// answers each partition in request order.
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
	fs.r.isolation = req.IsolationLevel
	fs.dropSplices() // left by a pass that panicked
	b := fetchBuild{v: v, maxBytes: int(req.MaxBytes)}
	if v < 3 || b.maxBytes <= 0 {
		b.maxBytes = 1 << 30
	}
	hint := b.maxBytes
	if hint > 1<<20 {
		hint = 1 << 20
	}
	// A backend with network round trips (Iggy) reads every partition at
	// once, each into its own scratch batch, then the response is assembled
	// in request order; the embedded log reads straight into the response.
	b.fan = !g.caps.LocalLatency && fetchPartitions(req) > 1
	if b.fan {
		g.readAll(fs, v, b.maxBytes)
		// The reads say how large the response is: one buffer of that
		// size, not a first guess grown (copied) on the way.
		hint = max(hint, fetchResponseSize(fs, b.maxBytes))
	}
	b.buf = c.req.ResponseBufferSize(hint + 1024)
	b.buf = wire.AppendResponseHeader(b.buf, c.hdr.APIKey, v, c.hdr.CorrelationID)
	fs.sess.bodyAt = len(b.buf)
	fs.sess.out = fs.sess.out[:0]
	b.buf = wire.AppendFetchResponseStart(b.buf, v, 0, wire.NoError, 0, len(req.Topics))
	topicsEnd, topics := len(b.buf), 0
	for i := range req.Topics {
		t := &req.Topics[i]
		codec, refuse := readCodec(fs.codecs[i], v)
		topicAt := len(b.buf)
		b.buf = wire.AppendFetchTopicStart(b.buf, v, t.Topic, t.TopicID, len(t.Partitions))
		partsEnd, kept := len(b.buf), 0
		denied := fs.topicCodes[i] // an id that names no topic
		if denied == wire.NoError {
			denied = g.topicCode(c, acl.OpRead, t.Topic) // KafkaApis: READ on the topic
		}
		for j := range t.Partitions {
			if g.fetchPartition(fs, &b, t.Topic, &t.Partitions[j], codec, refuse, denied) {
				kept++
			}
		}
		if kept == 0 && len(t.Partitions) > 0 {
			b.buf = b.buf[:topicAt] // an incremental Fetch's topic with nothing to send
			continue
		}
		b.buf = fs.fetchSessionCount(b.buf, v, partsEnd, len(t.Partitions), kept)
		b.buf = wire.AppendFetchTopicEnd(b.buf, v)
		topics++
	}
	b.buf = fs.fetchSessionCount(b.buf, v, topicsEnd, len(req.Topics), topics)
	fs.buf = wire.AppendFetchResponseEnd(b.buf, v)
	fs.call = nil
	return b.total, b.hasErr
}

// fetchBuild is one fetchPass's progress through its response. It lives on
// fetchPass's stack: the phases take it by pointer and keep nothing of it.
type fetchBuild struct {
	buf      []byte // the response so far
	v        int16
	maxBytes int  // the response's record budget
	fan      bool // readAll read the partitions (fs.parts)
	k        int  // the next partition's index in fs.parts
	n        int  // the next partition's index in the request
	total    int  // the record bytes in the response
	hasErr   bool // a partition has an error
}

// fetchResponseSize is the size the response needs for what readAll read:
// the records to be copied into it (not those spliced from shared
// entries), at most maxBytes, and the framing of every topic and partition.
func fetchResponseSize(fs *fetchState, maxBytes int) int {
	records, framing, k := 0, 0, 0
	for i := range fs.req.Topics {
		framing += len(fs.req.Topics[i].Topic) + 16
		for range fs.req.Topics[i].Partitions {
			if fs.parts[k].shared == nil {
				records += fs.parts[k].recordBytes // copied into the buffer, not spliced
			}
			framing += 64
			k++
		}
	}
	return min(records, maxBytes) + framing
}

// fetchPartition appends partition rp of topic to the response: refused
// (denied, the topic's READ check), answered from readAll's read
// (fetchFanned), read now within what the response has left, or, with no
// room left, its watermarks alone. A partition with an error is answered
// without records, with its leader hint. It reports whether the response
// keeps the partition: an incremental Fetch leaves out those unchanged
// since last sent (fetchSessionNote).
func (g *Gateway) fetchPartition(fs *fetchState, b *fetchBuild, topic string, rp *wire.FetchRequestTopicPartition,
	codec batch.Codec, refuse bool, denied wire.ErrorCode) bool {
	p := wire.FetchResponseTopicPartition{
		Partition: rp.Partition, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1,
		PreferredReadReplica: -1,
	}
	limit := int(rp.PartitionMaxBytes)
	if rest := b.maxBytes - b.total; rest < limit {
		limit = rest
	}
	// KIP-74: while the response holds no records yet, a partition
	// returns at least one record even past the limits, so a large
	// record can make progress (a read returns at least one).
	// Not g.txn.Index.Active() alone: the gateway's first transaction may
	// open and abort while the partition is read.
	committedRead := fs.req.IsolationLevel == 1 && denied == wire.NoError
	fs.aborted = fs.aborted[:0]
	if committedRead && g.txn.Index.Active() {
		// The last stable offset of a read made below first, then KIP-98's
		// aborted transactions the read can meet, written before the
		// records (wire.AppendFetchPartitionBegin): a transaction that ends
		// between the two is either still open for the read, which stops
		// before it, or listed (readPartition); one that ends during the
		// read is listed after it (below).
		g.readCommitted(&fs.r, topic, rp.Partition, 1)
		fs.r.stableTaken = true
		fs.aborted = g.abortedFor(&p, fs.aborted, topic, rp.Partition, rp.FetchOffset, max(limit, 0))
	}
	var mark wire.FetchPartitionMark
	b.buf, mark = wire.AppendFetchPartitionBegin(b.buf, b.v, &p, limit)
	n := 0
	var splice *fetchcache.Entry // records written from a shared entry, not buf
	switch {
	case denied != wire.NoError:
		p.ErrorCode = denied
		if b.fan {
			b.k++
		}
	case b.fan:
		r := fs.parts[b.k]
		b.k++
		n, splice = g.fetchFanned(fs, b, r, topic, codec, rp, &p, limit, refuse)
	case limit > 0 || b.total == 0:
		b.buf, n = g.readPartition(&fs.r, b.buf, topic, codec, rp, &p, limit, b.total == 0)
	default:
		// No room left: answer the partition with its watermarks only.
		if wm, err := g.watermarks(g.ctx, topic, rp.Partition); err == nil {
			g.setWatermarks(&p, topic, rp.Partition, wm)
		} else {
			p.ErrorCode = fetchCode(err)
		}
	}
	fs.r.stableTaken = false // when no read used it
	if committedRead && n > 0 && p.ErrorCode == wire.NoError && g.abortedChanged(fs, topic, rp.Partition, rp.FetchOffset, max(limit, 0)) {
		// A transaction aborted while the partition was read (a read held
		// up long enough spans a whole transaction, opened, written and
		// aborted while it reads): its records may be in the read, and the
		// list written before them does not name it. The list is written
		// again, as it is now, before the records read.
		fs.aborted, fs.abortedNow = fs.abortedNow, fs.aborted
		listAborted(&p, fs.aborted)
		b.buf, mark = wire.RelistFetchAborted(b.buf, mark, &p)
		g.metrics.abortedRelists.Add(1)
	}
	if refuse && n > 0 && p.ErrorCode == wire.NoError {
		// docs/design/kafka-protocol.md §5: zstd batches only for Fetch ≥ v10
		// (KIP-110); Kafka answers an older Fetch UNSUPPORTED_COMPRESSION_TYPE.
		p.ErrorCode = wire.UnsupportedCompressionType
	}
	if p.ErrorCode != wire.NoError {
		b.hasErr = true
		g.metrics.errors[wire.KeyFetch].CountError(p.ErrorCode)
		b.buf = b.buf[:mark.RecordsStart()]
		n = 0
		p.CurrentLeader = g.leaderHint(topic, rp.Partition, p.ErrorCode) // KIP-951, docs/design/cluster.md §6
		if splice != nil {
			g.fetchCache.Release(splice)
			splice = nil
		}
	}
	if splice != nil {
		var at int
		b.buf, at = wire.AppendFetchPartitionEndExternal(b.buf, mark, &p, n)
		fs.splices = append(fs.splices, engine.Splice{At: at, Data: splice.Data(), Pin: splice})
	} else {
		b.buf = wire.AppendFetchPartitionEnd(b.buf, mark, &p)
	}
	b.total += n
	b.n++
	if !fs.fetchSessionNote(b.n-1, &p, n) {
		b.buf = b.buf[:mark.Start()] // carries no records, so no splice
		return false
	}
	return true
}

// fetchFanned answers partition rp from readAll's read r: r's watermarks
// and error, then r's records when they fit what the response has left
// (the shared entry to splice, when there is one and room for it; else
// copied), or a read again with what is left; a partition readAll skipped
// is read now when the response has room after all. It returns the record
// bytes and the entry to splice, if any.
func (g *Gateway) fetchFanned(fs *fetchState, b *fetchBuild, r *partReader, topic string, codec batch.Codec,
	rp *wire.FetchRequestTopicPartition, p *wire.FetchResponseTopicPartition, limit int, refuse bool) (n int, splice *fetchcache.Entry) {
	p.ErrorCode = r.resp.ErrorCode
	p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.resp.HighWatermark, r.resp.LastStableOffset, r.resp.LogStartOffset
	// Read with the partition's own limit: the records join the
	// response if a read in turn would have had that limit too;
	// if the response has less left, the partition is read
	// again with what is left (one more round trip, only when
	// the response limit is reached).
	switch {
	case r.skipped && (limit > 0 || b.total == 0):
		// readAll's budget ran out before this partition, but
		// the response has room left after all (an earlier
		// read failed or was served smaller).
		p.ErrorCode = wire.NoError
		b.buf, n = g.readPartition(&fs.r, b.buf, topic, codec, rp, p, limit, b.total == 0)
	case r.resp.ErrorCode != wire.NoError || r.recordBytes == 0:
	case b.total == 0 || limit > 0 && r.limit <= limit && !r.oversized:
		switch {
		case r.shared != nil && !refuse && len(fs.splices) < engine.MaxSplices:
			splice, r.shared = r.shared, nil
		case r.shared != nil:
			b.buf = fs.call.req.GrowResponse(b.buf, r.recordBytes)
			b.buf = append(b.buf, r.shared.Data()...)
		default:
			b.buf = fs.call.req.GrowResponse(b.buf, r.recordBytes)
			b.buf = append(b.buf, r.buf...)
		}
		n = r.recordBytes
	case limit > 0 && (r.mapped == 0 || limit >= r.recordBytes/r.mapped+batch.HeaderSize):
		// Read again with what is left, unless that is less
		// than one of this read's records takes: such a read
		// would find nothing (records of one partition are of
		// about one size) and, after a response filled up,
		// each partition would cost a read in turn.
		b.buf, n = g.readPartition(&fs.r, b.buf, topic, codec, rp, p, limit, false)
	}
	if r.shared != nil {
		g.fetchCache.Release(r.shared)
		r.shared = nil
	}
	return n, splice
}
