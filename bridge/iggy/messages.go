package iggy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// maxPollCount caps the message count of one PollMessages.
const maxPollCount = 10_000

// maxShrinks bounds the polls asked again with fewer messages after a reply
// over the frame limit (replyTooLargeError).
const maxShrinks = 4

// shrunkCount is the count to ask again after a poll of count messages was
// answered by a reply over the frame limit: a share of count that fits in
// half the limit, and no more than sized (the count from the message size
// the reply showed), never below floor.
func shrunkCount(count, floor int64, big *replyTooLargeError, sized int64) int64 {
	fit := count * int64(big.Limit) / int64(big.Size) / 2
	return max(min(fit, sized, count-1), floor)
}

// Append sends b's frames to one partition with SendMessages (§3.7):
// Partitioning kind 2 (explicit partition id = the Kafka partition), batch
// origin_timestamp = b.Origin. It stamps every frame checksum and the batch
// checksum (one walk over the frames; only the batch checksum when b's
// frames were stamped as they were built, message.Batch.Checksums), writes
// the metadata section, the 256-byte batch header and the VSR header into
// b's headroom, and sends b.Buf[start:] as one frame: the frames are never
// copied. It returns the confirmed base offset, or -1 when
// the server confirms without offsets.
//
// A failure before any byte was written returns store.ErrUnavailable; a lost
// connection or a timeout after sending returns store.ErrUnknownOutcome (the
// records may be stored). Steady state allocates nothing.
func (c *Client) Append(ctx context.Context, topic string, partition int32, b *message.Batch) (int64, error) {
	return c.appendBatches(ctx, topic, partition, b, nil)
}

// AppendJoined appends the batches of bs, in order, to one partition as one
// SendMessages, as Append does one batch (store.JoinedAppender): bs[0]'s
// headroom carries the prologue and the others' frames are written from
// their own buffers in the same vectored write, not copied. The batches must
// already form one: a common origin and offset deltas counting through them
// (message.Batch.Rebase), every frame stamped (message.Batch.Sums). It
// returns the base offset of bs[0]'s first message.
func (c *Client) AppendJoined(ctx context.Context, topic string, partition int32, bs []*message.Batch) (int64, error) {
	if len(bs) == 0 {
		return 0, fmt.Errorf("%w: empty batch", store.ErrInvalidConfig)
	}
	return c.appendBatches(ctx, topic, partition, bs[0], bs[1:])
}

// appendBatches is Append of b followed, in the same SendMessages, by the
// frames of rest (AppendJoined). An append that every node of a cluster
// refuses with nothing stored (58 from each: the partition has no primary)
// is sent again while the partition elects one, within the caller's
// deadline (retryRefused).
func (c *Client) appendBatches(ctx context.Context, topic string, partition int32, b *message.Batch, rest []*message.Batch) (int64, error) {
	return retryRefused(c, ctx, topic, partition, func() (int64, error) {
		return c.appendOnce(ctx, topic, partition, b, rest)
	})
}

// refusalPatience bounds how long retryRefused sends a write again, and
// refusalMargin is how long before the caller's deadline it stops: the
// client is answered the refusal (NOT_LEADER_OR_FOLLOWER, retriable) before
// its request times out.
const (
	refusalPatience = 10 * time.Second
	refusalMargin   = 500 * time.Millisecond
)

// retryRefused makes a partition write (an append, a consumer offset's
// store or deletion) with try and, in a cluster, while every node refuses
// it (58), sends it again with pauses from 50 ms to 1 s, until it is taken
// or fails otherwise, for refusalPatience and until refusalMargin before
// ctx's deadline; past that it returns the last refusal. A partition
// without a primary takes nothing until its consensus group changes view:
// an Iggy 0.9 cluster whose replica 0 is down refuses a new topic's appends
// for about 5 s after its creation (docs/IGGY.md "Topics created while a
// node is down"), and a Kafka producer told NOT_LEADER_OR_FOLLOWER retries
// at its own cadence (franz-go's every 5 s), so the records would wait
// longer. Each try stored nothing, so sending again is safe; the
// partition's queue (bridge/coalesce.go) holds the appends behind it, in
// order.
func retryRefused[T any](c *Client, ctx context.Context, topic string, partition int32, try func() (T, error)) (T, error) {
	v, err := try()
	if err == nil || codeOf(err) != proto.CodeTransientNotAccepted || !c.clustered() {
		return v, err
	}
	start := time.Now()
	limit := start.Add(refusalPatience)
	if d, ok := ctx.Deadline(); ok && d.Add(-refusalMargin).Before(limit) {
		limit = d.Add(-refusalMargin)
	}
	c.metrics.refusalWaits.Add(1)
	for pause, refused := 50*time.Millisecond, 1; time.Now().Add(pause).Before(limit); pause, refused = min(2*pause, time.Second), refused+1 {
		if sleepCtx(ctx, pause) != nil {
			break
		}
		if v, err = try(); err == nil {
			c.metrics.refusalsWaitedOut.Add(1)
			c.log.Debug("iggy: a partition write refused by every node was taken", "topic", topic, "partition", partition, "refusals", refused, "after", time.Since(start).Round(time.Millisecond))
			return v, nil
		}
		if codeOf(err) != proto.CodeTransientNotAccepted {
			return v, err
		}
	}
	var zero T
	return zero, err
}

// appendOnce is one try of appendBatches.
func (c *Client) appendOnce(ctx context.Context, topic string, partition int32, b *message.Batch, rest []*message.Batch) (int64, error) {
	size, count, err := checkJoined(b, rest)
	if err != nil {
		return 0, err
	}
	e, err := c.appendEntry(ctx, topic, partition)
	if err != nil {
		return 0, err
	}
	frame, err := c.putPrologue(b, topic, partition, size, count)
	if err != nil {
		return 0, err
	}
	gen := c.cache.generation()
	s, err := c.acquireFor(ctx, topic, partition)
	if err != nil {
		return 0, unavailable(err)
	}
	// Frame checksums and the batch checksum in one walk over the frames,
	// or, when the frames were stamped as they were built, the batch
	// checksum from their checksums alone (message.Batch.Checksums).
	hdr := b.Buf[message.Headroom-proto.BatchHeaderSize : message.Headroom]
	var tail [][]byte // rest's frames, written after frame
	switch sums := b.Sums(); {
	case len(rest) > 0:
		jp := joinPool.Get().(*joinPieces)
		defer jp.release()
		jp.sums = append(jp.sums, sums)
		for _, r := range rest {
			jp.sums, jp.tail = append(jp.sums, r.Sums()), append(jp.tail, r.Frames())
		}
		proto.SealStamped(&s.hasher, hdr, size, count, b.Origin, jp.sums...)
		tail = jp.tail
	case sums != nil:
		proto.SealStamped(&s.hasher, hdr, size, count, b.Origin, sums)
	default:
		if err := proto.StampAndSeal(&s.hasher, hdr, b.Frames(), b.Count, b.Origin); err != nil {
			c.releaseFor(s)
			return 0, fmt.Errorf("%w: %w", store.ErrInvalidConfig, err)
		}
	}
	// The partition's route or the metadata primary, following the
	// partition's own primary on a 58 (routes.go).
	s, body, sent, err := c.sendPartition(ctx, s, topic, partition, frame, tail, proto.CodeSendMessages)
	var base int64 = -1
	if err == nil {
		if base, err = decodeConfirmation(body); err != nil {
			s.close()
		} else if c.auditOn(ctx) {
			c.auditAppend(ctx, s, topic, partition, base, count)
		}
	}
	c.releaseFor(s)
	if err != nil {
		if sent {
			c.cache.unsure(topic, partition)
		}
		return 0, c.appendError(ctx, topic, partition, err, sent)
	}
	if e.durability == store.DurabilityBuffered {
		c.metrics.bufferedAppends.Add(1)
	}
	if base >= 0 {
		c.cache.appended(topic, partition, base, count, gen, hdr, b, rest)
	}
	return base, nil
}

// checkJoined checks an append's batches (rest joined after b) and returns
// their total frame bytes and messages.
func checkJoined(b *message.Batch, rest []*message.Batch) (size, count int, err error) {
	if b.Count < 1 || len(b.Buf) < message.Headroom {
		return 0, 0, fmt.Errorf("%w: empty batch", store.ErrInvalidConfig)
	}
	size, count = b.Size(), b.Count
	if len(rest) > 0 && b.Sums() == nil {
		return 0, 0, fmt.Errorf("%w: joined batches must be stamped", store.ErrInvalidConfig)
	}
	for _, r := range rest {
		if r.Count < 1 || r.Origin != b.Origin || r.Sums() == nil {
			return 0, 0, fmt.Errorf("%w: joined batches must share an origin and be stamped", store.ErrInvalidConfig)
		}
		size, count = size+r.Size(), count+r.Count
	}
	return size, count, nil
}

// appendEntry returns what the client knows of the topic an append goes
// to, learning it on first use.
func (c *Client) appendEntry(ctx context.Context, topic string, partition int32) (topicEntry, error) {
	if partition < 0 {
		return topicEntry{}, fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, partition)
	}
	if !validName(topic) {
		return topicEntry{}, fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	}
	e, ok := c.cached(topic)
	switch {
	case !ok:
		// First use in this process: learn the topic's partitions and its
		// durability (a buffered topic is reported once, docs/IGGY.md
		// "Durability"). A missing topic is left to the server's answer.
		if d, found, err := c.lookupTopic(ctx, topic); err == nil && found {
			e = d.entry()
		}
	case partition >= e.partitions:
		// The cache may be stale after CreatePartitions elsewhere: look again.
		if err := c.classify(ctx, topic, partition, nil); err != nil {
			return e, err
		}
	}
	return e, nil
}

// putPrologue writes a SendMessages prologue into the end of b's headroom,
// so that the frame is contiguous: VSR header | metadata_length u32 |
// stream id | topic id | partitioning | messages_count u32 | batch header |
// frames. It returns the frame from its header space on.
func (c *Client) putPrologue(b *message.Batch, topic string, partition int32, size, count int) ([]byte, error) {
	metaLen := 2 + len(c.cfg.Stream) + 2 + len(topic) + 6 + 4
	start := message.Headroom - proto.BatchHeaderSize - 4 - metaLen - proto.HeaderSize
	if start < 0 {
		return nil, fmt.Errorf("%w: topic name too long for the headroom", store.ErrInvalidConfig)
	}
	if total := message.Headroom - start + size; total > proto.MaxFrameSize {
		return nil, fmt.Errorf("%w: %d bytes exceed the Iggy frame limit of %d", store.ErrTooLarge, total, proto.MaxFrameSize)
	}
	m := b.Buf[start+proto.HeaderSize : start+proto.HeaderSize : message.Headroom-proto.BatchHeaderSize]
	m = proto.AppendU32(m, uint32(metaLen))
	m = proto.AppendStringID(m, c.cfg.Stream)
	m = proto.AppendStringID(m, topic)
	m = append(m, proto.PartitionID, 4)
	m = proto.AppendU32(m, uint32(partition))
	_ = proto.AppendU32(m, uint32(count))
	return b.Buf[start:], nil
}

// appendError maps a failed SendMessages to the store's outcome: nothing
// appended (unavailable, unknown topic or partition) or unknown.
func (c *Client) appendError(ctx context.Context, topic string, partition int32, err error, sent bool) error {
	switch code := codeOf(err); {
	case code == proto.CodeResourceNotFound:
		// §3.7: "stream, topic or partition not resolvable → status 20".
		return c.classify(ctx, topic, partition, err)
	case code == proto.CodeHistoryUnavailable:
		// 0.12: the partition was deleted or recreated under its id:
		// nothing was appended; the next try looks the topic up again.
		c.forget(topic)
		c.cache.invalidateTopic(topic)
		return err
	case code == proto.CodeTransientNotAccepted:
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	case code == proto.CodeTransientNotCommitted:
		return fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
	case code != 0:
		return err
	case !sent:
		return unavailable(err)
	}
	return fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
}

// joinPieces is the scratch of one joined append (AppendJoined): the later
// batches' frames and every batch's checksums, a piece a batch. Pooled, not
// a session's: a rerouted append hands its session back before it returns.
type joinPieces struct{ tail, sums [][]byte }

var joinPool = sync.Pool{New: func() any { return new(joinPieces) }}

// release drops jp's references to the batches and pools it.
func (jp *joinPieces) release() {
	clear(jp.tail)
	clear(jp.sums)
	jp.tail, jp.sums = jp.tail[:0], jp.sums[:0]
	joinPool.Put(jp)
}

// decodeConfirmation reads a SendMessages reply: [count u32] then 20-byte
// {stream u32, topic u32, partition u32, base_offset u64} entries (§3.7).
func decodeConfirmation(body []byte) (int64, error) {
	// §1.7: "A status-0 reply to SendMessages with an empty body is not a
	// success."
	if len(body) < 4 {
		return 0, errDeadSession
	}
	n := binary.LittleEndian.Uint32(body)
	if uint64(len(body)-4) != uint64(n)*20 {
		return 0, errBadConfirmation
	}
	if n == 0 {
		return -1, nil // "committed, no offsets to report"
	}
	base := binary.LittleEndian.Uint64(body[16:])
	if base > 1<<62 {
		return 0, errBadConfirmation
	}
	return int64(base), nil
}

// read polls one partition by offset (PollMessages, strategy Offset, a fixed
// single consumer kind 1 id 0, auto_commit 0) and calls fn for each message
// from offset on. See store.Log.Read. Messages alias the session's reply
// buffer and are valid only during fn. now is the caller's clock (see
// ReadAt).
func (c *Client) read(ctx context.Context, now time.Time, topic string, partition int32, offset int64, maxBytes int,
	fn func(*message.Message) bool) (store.Watermarks, error) {
	if partition < 0 {
		return store.Watermarks{}, fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, partition)
	}
	if !validName(topic) {
		return store.Watermarks{}, fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	}
	if offset < 0 {
		offset = 0
	}
	// A reply from a deleted topic's partitions (incarnation.go) is asked
	// again until the server has torn them down, within staleRetryFor.
	var give time.Time
	for {
		wm, err := c.readOnce(ctx, now, topic, partition, offset, maxBytes, fn)
		if !errors.Is(err, errStaleIncarnation) {
			return wm, err
		}
		now = time.Time{}
		if give.IsZero() {
			give = time.Now().Add(staleRetryFor)
		}
		if time.Now().After(give) || sleepCtx(ctx, staleRetryWait) != nil {
			return wm, err
		}
	}
}

// Retrying a read answered from a deleted topic's partitions: iggy-server
// 0.9 tears them down within a few hundred milliseconds on a loaded
// machine.
const (
	staleRetryFor  = 2 * time.Second
	staleRetryWait = 25 * time.Millisecond
)

// readOnce is one read (see read).
func (c *Client) readOnce(ctx context.Context, now time.Time, topic string, partition int32, offset int64, maxBytes int,
	fn func(*message.Message) bool) (store.Watermarks, error) {
	if c.cache != nil {
		return c.cache.read(ctx, now, topic, partition, offset, maxBytes, fn)
	}
	fence := c.fence(ctx, topic)
	s, err := c.acquireRead(ctx, topic, partition) // a routed partition reads from its route
	if err != nil {
		return store.Watermarks{}, unavailable(err)
	}
	// Iggy polls by message count: derive it from maxBytes and the running
	// average message size, and poll again while the reply came back full,
	// under budget and fn wants more (a bounded number of times).
	var res pollResult
	next, budget := uint64(offset), maxBytes
	for range maxPollRounds {
		avg := c.avgMsg.Load()
		count := min(max(int64(budget)/max(avg, 64), 1), maxPollCount)
		req := c.pollRequest(s, topic, partition, proto.PollOffset, next, uint32(count))
		body, _, err := s.do(ctx, proto.CodePollMessages, req)
		for shrinks := 0; ; shrinks++ {
			big, ok := err.(*replyTooLargeError) // as s.do returns it (errors.As allocates)
			if !ok || count <= 1 || shrinks >= maxShrinks {
				break
			}
			// More bytes than a frame holds: ask for fewer.
			per := int64(big.Size)/count + 1
			if per > avg {
				avg = per
				c.avgMsg.Store(avg)
			}
			count = shrunkCount(count, 1, big, max(int64(budget)/avg, 1))
			req = c.pollRequest(s, topic, partition, proto.PollOffset, next, uint32(count))
			body, _, err = s.do(ctx, proto.CodePollMessages, req)
		}
		if err != nil {
			c.releaseFor(s)
			return store.Watermarks{}, c.pollError(ctx, topic, partition, err)
		}
		round, err := s.walkPoll(body, next, budget, res.delivered == 0, fence, fn)
		if err == nil && c.staleServed(topic, partition, servedIncarnation(s.dialect, body)) {
			err = errStaleIncarnation
		}
		if err != nil {
			c.releaseFor(s)
			if err == errStaleIncarnation {
				c.metrics.staleIncarnations.Add(1)
				return store.Watermarks{}, unavailable(err)
			}
			return store.Watermarks{}, err
		}
		if round.polled > 0 {
			// EWMA (1/8) of the polled message size, to size the next count.
			per := int64(len(body)) / int64(round.polled)
			c.avgMsg.Store(avg + (per-avg)/8)
		}
		res.current = round.current
		res.polled += round.polled
		res.delivered += round.delivered
		budget -= round.bytes
		if round.stopped || budget <= 0 || int64(round.polled) < count || round.delivered == 0 {
			break
		}
		next = round.last + 1
	}
	c.releaseFor(s)
	if res.current > 0 || res.polled > 0 {
		return store.Watermarks{High: int64(res.current) + 1}, nil
	}
	// current_offset 0 is both "empty" and "one message at offset 0": ask.
	if offset == 0 {
		return store.Watermarks{}, nil // nothing at offset 0: empty (or expired)
	}
	return c.watermarks(ctx, topic, partition)
}

// maxPollRounds bounds the polls of one Read.
const maxPollRounds = 8

// pollResult sums up a walk over poll replies.
type pollResult struct {
	current   uint64 // the partition's current_offset
	polled    int    // messages in the reply, skipped ones included
	delivered int    // messages passed to fn
	bytes     int    // payload and header bytes passed to fn
	last      uint64 // offset of the last message passed to fn
	stopped   bool   // fn returned false or the byte budget ran out
}

// pollRequest builds a PollMessages request (§3.8) on s's scratch.
func (c *Client) pollRequest(s *session, topic string, partition int32, strategy uint8, value uint64, count uint32) []byte {
	b := append(s.begin(), proto.ConsumerSingle)
	b = proto.AppendNumericID(b, 0)
	b = proto.AppendStringID(b, c.cfg.Stream)
	b = proto.AppendStringID(b, topic)
	b = append(b, 1)
	b = proto.AppendU32(b, uint32(partition))
	b = append(b, strategy)
	b = proto.AppendU64(b, value)
	b = proto.AppendU32(b, count)
	return append(b, 0) // auto_commit off
}

// pollError maps a PollMessages failure.
func (c *Client) pollError(ctx context.Context, topic string, partition int32, err error) error {
	switch codeOf(err) {
	case proto.CodeStreamIDNotFound, proto.CodeTopicIDNotFound, proto.CodeStreamNameNotFound, proto.CodeTopicNameNotFound:
		c.forget(topic)
		c.cache.invalidateTopic(topic)
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	case proto.CodePartitionNotFound:
		return fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, partition)
	case proto.CodeResourceNotFound:
		return c.classify(ctx, topic, partition, err)
	case proto.CodeHistoryUnavailable:
		// 0.12: the partition was deleted or recreated under its id; what
		// is known of the topic is of another incarnation.
		c.forget(topic)
		c.cache.invalidateTopic(topic)
	}
	return readError(err)
}

// walkPoll walks a PollMessages reply (§3.8): [partition u32][current_offset
// u64][count u32] then batch records. It calls fn for messages at or above
// from until fn returns false or maxBytes of payload and headers went out;
// with first set, the first message goes out whatever its size.
func (s *session) walkPoll(body []byte, from uint64, maxBytes int, first bool, fence uint64, fn func(*message.Message) bool) (pollResult, error) {
	r := proto.NewReader(body)
	r.U32()
	current := r.U64()
	r.U32()
	if !r.Ok() || len(body) < s.dialect.PollReplyHeaderSize() {
		return pollResult{current: current}, errBadPoll
	}
	res, err := walkRecords(&s.it, &s.msg, body[s.dialect.PollReplyHeaderSize():], walkMark{}, from, maxBytes, first, true, fence, fn)
	res.current = current
	return res, err
}

// walkMark is a place in a poll reply's records where a walk may start:
// the frame of the message at offset off begins at byte frame of the
// records, inside the batch record that begins at byte rec. The zero mark
// is the start of the records.
type walkMark struct {
	off        uint64
	rec, frame int32
}

// walkRecords walks the batch records of a poll reply with it, passing each
// message at or above from to fn in msg (the Message aliases records), until
// fn returns false or maxBytes went out; with first set, the first message
// goes out whatever its size. The walk starts at at (a mark of these
// records at or below from, or the zero mark). With whole set it walks
// every message past the stop too, to count them (res.polled) and to check
// the reply's form to its end; without, it ends at the stop (the read
// cache, whose scanRecords checked the whole reply). msg is cleared after
// the walk.
func walkRecords(it *proto.RecordIter, msg *message.Message, records []byte, at walkMark, from uint64, maxBytes int, first, whole bool,
	fence uint64, fn func(*message.Message) bool) (pollResult, error) {
	var res pollResult
	if at.frame != 0 && (at.rec < 0 || int(at.frame)-int(at.rec) < proto.BatchHeaderSize || int(at.frame) > len(records)) {
		return res, errBadPoll
	}
	it.Reset(records[at.rec:])
	skip := 0
	if at.frame != 0 {
		skip = int(at.frame-at.rec) - proto.BatchHeaderSize
	}
	for it.Next() {
		h := it.Header()
		if h.BaseTimestamp < fence {
			// Appended before the topic was created: an earlier
			// incarnation's (incarnation.go).
			*msg = message.Message{}
			return res, errStaleIncarnation
		}
		fr := it.Frames()
		if skip > 0 {
			if skip > len(fr) {
				*msg = message.Message{}
				return res, errBadPoll
			}
			fr, skip = fr[skip:], 0
		}
		for len(fr) > 0 {
			if res.stopped && !whole {
				*msg = message.Message{}
				return res, nil
			}
			f, err := message.ParseFrame(fr)
			if err != nil {
				*msg = message.Message{}
				return res, errBadPoll
			}
			fr = fr[f.Size:]
			res.polled++
			// §3.8: "offset = record base_offset + frame offset_delta. A record
			// may be a server-sliced view, so its first frame's offset can be
			// greater than base_offset." It may also start before from.
			off := h.BaseOffset + uint64(f.OffsetDelta)
			if off < from || res.stopped {
				continue
			}
			size := len(f.Payload) + len(f.Headers)
			if res.bytes+size > maxBytes && !(first && res.delivered == 0) {
				res.stopped = true
				continue
			}
			msg.Offset = int64(off)
			msg.Timestamp = h.BaseTimestamp
			msg.OriginTimestamp = h.OriginTimestamp + uint64(f.TimestampDelta)
			msg.ID = f.ID
			msg.Payload = f.Payload
			msg.Headers = f.Headers
			res.delivered++
			res.bytes += size
			res.last = off
			if !fn(msg) || res.bytes >= maxBytes {
				res.stopped = true
			}
		}
	}
	*msg = message.Message{}
	if it.Err() != nil {
		return res, errBadPoll
	}
	return res, nil
}

// offsetForTime returns the first offset whose origin timestamp is ≥ ts
// (µs). Iggy's Timestamp strategy matches the broker append time
// (base_timestamp), which is never earlier than a well-clocked producer's
// origin timestamp, so it finds where to start; the origin timestamps are
// then checked message by message, reading forward a bounded number of polls.
func (c *Client) offsetForTime(ctx context.Context, topic string, partition int32, ts uint64) (int64, bool, error) {
	if partition < 0 {
		return 0, false, fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, partition)
	}
	if !validName(topic) {
		return 0, false, fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	}
	fence := c.fence(ctx, topic)
	s, err := c.acquireRead(ctx, topic, partition)
	if err != nil {
		return 0, false, unavailable(err)
	}
	defer c.releaseFor(s)
	const perPoll, polls = 256, 16
	strategy, value := uint8(proto.PollTimestamp), ts
	for range polls {
		req := c.pollRequest(s, topic, partition, strategy, value, perPoll)
		body, _, err := s.do(ctx, proto.CodePollMessages, req)
		if err != nil {
			return 0, false, c.pollError(ctx, topic, partition, err)
		}
		found, last := int64(-1), int64(-1)
		res, err := s.walkPoll(body, 0, 1<<62, true, fence, func(m *message.Message) bool {
			last = m.Offset
			if m.OriginTimestamp >= ts {
				found = m.Offset
				return false
			}
			return true
		})
		if err == errStaleIncarnation {
			c.metrics.staleIncarnations.Add(1)
			return 0, false, unavailable(err)
		}
		if err != nil {
			return 0, false, err
		}
		if found >= 0 {
			return found, true, nil
		}
		if res.polled == 0 || last < 0 {
			return 0, false, nil
		}
		strategy, value = proto.PollOffset, uint64(last)+1
	}
	return 0, false, nil
}
