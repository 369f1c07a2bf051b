package iggy

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/zeebo/xxh3"
)

// topicEntry is the cached view of one topic.
type topicEntry struct {
	id         uint32
	partitions int32
	durability store.Durability
	// created is the incarnation's created_at (µs, the server's clock):
	// the fence its reads are checked against (incarnation.go).
	created uint64
	// incarnations are 0.12's partition incarnations (GetTopic's partition
	// contexts), by partition: a poll reply names the one it was served
	// from (incarnation.go). Nil in 0.11.
	incarnations []uint64
}

func (e *topicEntry) equal(o *topicEntry) bool {
	return e.id == o.id && e.partitions == o.partitions && e.durability == o.durability && e.created == o.created &&
		slices.Equal(e.incarnations, o.incarnations)
}

// partitionInfo is one PartitionResponse (§3.5).
type partitionInfo struct {
	id            uint32
	currentOffset uint64
	size          uint64 // size_bytes
	messages      uint64
	context       proto.PartitionContext // 0.12 only
}

// topicDetails is a decoded TopicHeader plus its partitions.
type topicDetails struct {
	id         uint32
	created    uint64 // created_at, µs
	info       store.TopicInfo
	partitions []partitionInfo
}

// decodeTopicHeader reads a TopicHeader (§3.5 layout table) of a topic of
// stream in dialect d. 0.12 (§9) reports the message expiry and size cap in
// the option blocks only.
func decodeTopicHeader(r *proto.Reader, d proto.Dialect, stream string) (uint32, uint64, store.TopicInfo) {
	id := r.U32()
	created := r.U64()
	parts := r.U32()
	var expiry, maxSize uint64
	if d != proto.Dialect012 {
		expiry = r.U64()
		r.U8() // compression
		maxSize = r.U64()
	}
	r.U64() // size_bytes
	r.U64() // messages_count
	name := r.Name()
	explicit := r.LongString()
	derived := r.LongString()
	if !r.Ok() || parts > math.MaxInt32 {
		r.Fail(proto.ErrMalformed)
		return 0, 0, store.TopicInfo{}
	}
	info := store.TopicInfo{Name: string(name), ID: topicID(stream, id, created, name), Partitions: int32(parts)}
	info.Config.Durability = topicDurability(explicit, derived)
	if d == proto.Dialect012 {
		expiry, maxSize = topicLimits(explicit, derived)
	}
	// 0 = server default, u64::MAX = never / unlimited: both mean "none" to
	// Kafka (retention.ms -1, retention.bytes -1).
	if expiry != 0 && expiry != math.MaxUint64 && expiry/1000 < math.MaxInt64/uint64(time.Millisecond) {
		info.Config.MessageExpiry = time.Duration(expiry) * time.Microsecond
	}
	if maxSize != 0 && maxSize != math.MaxUint64 {
		info.Config.MaxBytes = maxSize
	}
	return id, created, info
}

// topicID derives a topic's Kafka topic id from what Iggy keeps about it
// (docs/design/record-mapping.md §8): the stream, the topic's numeric id, its
// created_at and its name, hashed with XXH3-128 and shaped by store.TopicID.
// Iggy reuses a deleted topic's numeric id but stamps every topic with a
// strictly increasing created_at that a restart keeps, so the id is the same
// for the topic's whole life and on every gateway, and another one after a
// delete and re-create; nothing is written, so no two gateways can disagree.
func topicID(stream string, id uint32, created uint64, name []byte) [16]byte {
	var buf [2*(2+maxNameLen) + 12]byte
	b := binary.BigEndian.AppendUint16(buf[:0], uint16(len(stream)))
	b = append(b, stream...)
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint64(b, created)
	b = binary.BigEndian.AppendUint16(b, uint16(len(name)))
	b = append(b, name...)
	return store.TopicID(xxh3.Hash128(b).Bytes())
}

// Iggy's defaults for a topic created without flush options (server
// core/common/src/types/options/mod.rs, DEFAULT_MESSAGES_REQUIRED_TO_SAVE and
// DEFAULT_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE); docs/IGGY.md, "Durability".
const (
	defaultMessagesRequiredToSave = 1024
	defaultSizeRequiredToSave     = 1 << 20
	// minMessageSize is the smallest message on disk (its 64-byte header):
	// a size threshold at or below it trips on every commit.
	minMessageSize = 64
)

// topicDurability tells from a topic's options when the server confirms a
// write: it flushes a partition's journal to the segment file before it
// replies only when a threshold trips on every commit. Derived options are
// the server's resolved defaults; explicit ones win over them.
func topicDurability(explicit, derived []byte) store.Durability {
	msgs, size, fsync := uint64(defaultMessagesRequiredToSave), uint64(defaultSizeRequiredToSave), false
	apply := func(o proto.Option) {
		switch string(o.Key) {
		case optMessagesRequiredToSave:
			if v, ok := o.Uint(); ok && v > 0 {
				msgs = v
			}
		case optSizeRequiredToSave:
			if v, ok := o.Uint(); ok && v > 0 {
				size = v
			}
		case optEnforceFsync:
			if v, ok := o.Bool(); ok {
				fsync = v
			}
		case optDurability:
			// 0.12 (§9): "replicated" or "persisted", the fsync of 0.11.
			fsync = string(o.Value) == durabilityPersisted
		}
	}
	// A block that does not tile keeps what was read before the fault; the
	// answer then errs towards "buffered", the weaker promise.
	_ = proto.EachOption(derived, apply)
	_ = proto.EachOption(explicit, apply)
	switch {
	case msgs > 1 && size > minMessageSize:
		return store.DurabilityBuffered
	case fsync:
		return store.DurabilityFsync
	}
	return store.DurabilityWritten
}

// Topic option keys (server topic_option_keys).
const (
	optMessageExpiry          = "message_expiry"
	optMaxTopicSize           = "max_topic_size"
	optEnforceFsync           = "enforce_fsync"
	optDurability             = "durability" // 0.12
	optSegmentSize            = "segment_size"
	optMessagesRequiredToSave = "messages_required_to_save"
	optSizeRequiredToSave     = "size_of_messages_required_to_save"
)

// durabilityPersisted is 0.12's durability value for writes backed by
// stable storage (iggy_common options/durability.rs: "Quorum commit backed
// by recoverable stable-storage copies"); the other is "replicated".
const durabilityPersisted = "persisted"

// appendDurabilityOptions appends the options that make the server confirm
// writes at level d (docs/IGGY.md, "Durability") in dialect dl: a flush of
// the journal on every commit, before the reply, and an fsync of it for
// DurabilityFsync (0.11's enforce_fsync; 0.12's durability=persisted).
// DurabilityBuffered sends nothing: Iggy's defaults.
func appendDurabilityOptions(b []byte, dl proto.Dialect, d store.Durability) []byte {
	switch d {
	case store.DurabilityWritten, store.DurabilityFsync:
		b = proto.AppendOptionU32(b, optMessagesRequiredToSave, 1)
		if dl == proto.Dialect012 {
			if d == store.DurabilityFsync {
				b = proto.AppendOptionString(b, optDurability, durabilityPersisted)
			}
			return b
		}
		return proto.AppendOptionBool(b, optEnforceFsync, d == store.DurabilityFsync)
	}
	return b
}

// topicLimits reads a 0.12 topic's message expiry and size cap from its
// option blocks (explicit ones win over derived ones); 0 = none.
func topicLimits(explicit, derived []byte) (expiry, maxSize uint64) {
	apply := func(o proto.Option) {
		switch string(o.Key) {
		case optMessageExpiry:
			if v, ok := o.Uint(); ok {
				expiry = v
			}
		case optMaxTopicSize:
			if v, ok := o.Uint(); ok {
				maxSize = v
			}
		}
	}
	_ = proto.EachOption(derived, apply)
	_ = proto.EachOption(explicit, apply)
	return expiry, maxSize
}

// decodeTopic decodes a GetTopic / CreateTopic payload of a topic of stream
// in dialect dl:
// TopicHeader then partitions_count PartitionResponses of 40 bytes, 64 in
// 0.12 (§9: each with its partition context).
func decodeTopic(body []byte, dl proto.Dialect, stream string) (topicDetails, error) {
	r := proto.NewReader(body)
	var d topicDetails
	d.id, d.created, d.info = decodeTopicHeader(&r, dl, stream)
	if !r.Ok() {
		return d, fmt.Errorf("%w: topic header", proto.ErrMalformed)
	}
	if int64(d.info.Partitions)*int64(dl.PartitionRecordSize()) != int64(r.Len()) {
		return d, fmt.Errorf("%w: partition list", proto.ErrMalformed)
	}
	d.partitions = make([]partitionInfo, d.info.Partitions)
	for i := range d.partitions {
		p := &d.partitions[i]
		p.id = r.U32()
		r.U64() // created_at
		r.U32() // segments_count
		p.currentOffset = r.U64()
		p.size = r.U64()
		p.messages = r.U64()
		if dl == proto.Dialect012 {
			p.context = r.ReadPartitionContext()
		}
	}
	return d, r.Complete()
}

// decodeTopics decodes a GetTopics reply of stream in dialect d: [count
// u32][TopicHeader × count].
func decodeTopics(body []byte, d proto.Dialect, stream string) ([]store.TopicInfo, error) {
	r := proto.NewReader(body)
	n := r.U32()
	// Reject counts of TopicHeaders that cannot fit.
	if !r.Ok() || uint64(n)*uint64(d.TopicHeaderMin()) > uint64(r.Len()) {
		return nil, fmt.Errorf("%w: topic list", proto.ErrMalformed)
	}
	out := make([]store.TopicInfo, 0, n)
	for range n {
		_, _, info := decodeTopicHeader(&r, d, stream)
		out = append(out, info)
	}
	if err := r.Complete(); err != nil {
		return nil, err
	}
	return out, nil
}

// topicRequest builds a body [stream id][topic id] on s's scratch.
func (c *Client) topicRequest(s *session, name string) []byte {
	b := proto.AppendStringID(s.begin(), c.cfg.Stream)
	return proto.AppendStringID(b, name)
}

// validName reports whether a topic name fits an Iggy name (1..255 bytes).
func validName(name string) bool { return len(name) >= 1 && len(name) <= maxNameLen }

// lookupTopic fetches a topic's details, updating the cache; ok=false when
// the topic (or the stream) does not exist.
func (c *Client) lookupTopic(ctx context.Context, name string) (topicDetails, bool, error) {
	return c.lookupTopicVia(ctx, name, -1)
}

// lookupTopicVia is lookupTopic asked of partition's route when it has one
// (routes.go): that node leads the partition, so its offsets are current.
func (c *Client) lookupTopicVia(ctx context.Context, name string, partition int32) (topicDetails, bool, error) {
	if !validName(name) {
		return topicDetails{}, false, nil
	}
	s, err := c.acquireFor(ctx, name, partition)
	if err != nil {
		return topicDetails{}, false, unavailable(err)
	}
	defer c.releaseFor(s)
	body, _, err := s.do(ctx, proto.CodeGetTopic, c.topicRequest(s, name))
	if err != nil {
		if code := codeOf(err); code == proto.CodeStreamIDNotFound || code == proto.CodeTopicIDNotFound {
			c.forget(name)
			return topicDetails{}, false, nil
		}
		return topicDetails{}, false, readError(err)
	}
	if len(body) == 0 {
		c.forget(name) // §3.5: "Not found → status 0, empty body."
		return topicDetails{}, false, nil
	}
	d, err := decodeTopic(body, s.dialect, c.cfg.Stream)
	if err != nil {
		return d, false, err
	}
	c.remember(name, d.entry())
	return d, true, nil
}

// entry is the cache entry of a decoded topic.
func (d *topicDetails) entry() topicEntry {
	e := topicEntry{id: d.id, partitions: d.info.Partitions, durability: d.info.Config.Durability, created: d.created}
	for i, p := range d.partitions {
		if p.context.Incarnation != 0 {
			if e.incarnations == nil {
				e.incarnations = make([]uint64, len(d.partitions))
			}
			e.incarnations[i] = p.context.Incarnation
		}
	}
	return e
}

// topicLevel is the durability a new topic is created with: the gateway's
// level, or a stronger one the topic asks for (Kafka flush.messages /
// flush.ms map to fsync, docs/IGGY.md "Durability").
func (c *Client) topicLevel(asked store.Durability) store.Durability {
	if asked == store.DurabilityFsync {
		return asked
	}
	return c.cfg.Durability
}

// remember caches a topic; the first time a topic is seen buffered while
// the gateway promises more, it says so once in the log and in /metrics.
//
// name may alias a Kafka request frame (the bridge decodes without copying):
// it is cloned before it becomes a map key that outlives the request.
func (c *Client) remember(name string, e topicEntry) {
	c.mu.Lock()
	if old, ok := c.topics[name]; !ok || !old.equal(&e) {
		c.topics[strings.Clone(name)] = e
	}
	warn := false
	if e.durability == store.DurabilityBuffered && c.cfg.Durability != store.DurabilityBuffered {
		if _, seen := c.buffered[name]; !seen {
			c.buffered[strings.Clone(name)] = struct{}{}
			c.metrics.bufferedTopics.Store(int64(len(c.buffered)))
			warn = true
		}
	}
	c.mu.Unlock()
	if warn {
		c.cfg.Logger.Warn("iggy: topic confirms writes before they are written: an acknowledged record can be lost if iggy-server crashes",
			"topic", name, "stream", c.cfg.Stream, "durability", c.cfg.Durability.String(),
			"fix", "recreate the topic through kiggy, or create it with messages_required_to_save=1")
	}
}

func (c *Client) forget(name string) {
	c.mu.Lock()
	delete(c.topics, name)
	c.mu.Unlock()
}

func (c *Client) cached(name string) (topicEntry, bool) {
	c.mu.RLock()
	e, ok := c.topics[name]
	c.mu.RUnlock()
	return e, ok
}

// readError wraps a failed read-only request: server codes keep their Error;
// connection failures become store.ErrUnavailable (a read is always safe to
// retry).
func readError(err error) error {
	if codeOf(err) != 0 {
		return err
	}
	return unavailable(err)
}

// listTopics lists every topic of the stream.
func (c *Client) listTopics(ctx context.Context) ([]store.TopicInfo, error) {
	s, err := c.acquire(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	defer c.release(s)
	body, _, err := s.do(ctx, proto.CodeGetTopics, proto.AppendStringID(s.begin(), c.cfg.Stream))
	if err != nil {
		return nil, readError(err)
	}
	return decodeTopics(body, s.dialect, c.cfg.Stream)
}

// topic describes one topic, or fails with store.ErrUnknownTopic.
func (c *Client) topic(ctx context.Context, name string) (store.TopicInfo, error) {
	d, ok, err := c.lookupTopic(ctx, name)
	if err != nil {
		return store.TopicInfo{}, err
	}
	if !ok {
		return store.TopicInfo{}, fmt.Errorf("%w: %q", store.ErrUnknownTopic, name)
	}
	return d.info, nil
}

// maxPartitionsPerRequest is how many partitions one CreateTopic or
// CreatePartitions request may create (docs/design/iggy-protocol.md §3.5,
// §3.6: more → 2015 TooManyPartitions); maxTopicPartitions is the most
// kiggy creates in one topic in steps of that many (Iggy's partition id
// space, docs/LIMITS.md).
const (
	maxPartitionsPerRequest = 1000
	maxTopicPartitions      = 1_000_000
)

// CreateTopic creates a topic with 1..maxTopicPartitions partitions: past
// maxPartitionsPerRequest, the topic is created with that many and grown
// with CreatePartitions in steps before CreateTopic returns; if a step
// fails the topic is deleted again and the error returned, so no half
// topic is left reported created (docs/IGGY.md Topics). TopicConfig maps to
// the message_expiry (µs), max_topic_size (which Iggy refuses below the
// segment size: store.ErrInvalidConfig) and segment_size options; zero
// values leave the server defaults (no expiry, unlimited, 1 GiB segments).
func (c *Client) CreateTopic(ctx context.Context, name string, partitions int32, cfg store.TopicConfig) (store.TopicInfo, error) {
	// A Kafka topic needs ≥ 1 partition.
	if partitions < 1 || partitions > maxTopicPartitions {
		return store.TopicInfo{}, fmt.Errorf("%w: %d (kiggy on Iggy allows 1..%d)", store.ErrInvalidPartitions, partitions, maxTopicPartitions)
	}
	if partitions <= maxPartitionsPerRequest {
		return c.createTopic(ctx, name, partitions, cfg)
	}
	info, err := c.createTopic(ctx, name, maxPartitionsPerRequest, cfg)
	if err != nil {
		return info, err
	}
	if err := c.growTopic(ctx, name, maxPartitionsPerRequest, int64(partitions)-maxPartitionsPerRequest); err != nil {
		if derr := c.DeleteTopic(ctx, name); derr != nil {
			return store.TopicInfo{}, fmt.Errorf("%w (creating %d partitions; deleting the partial topic %q failed too: %v)", err, partitions, name, derr)
		}
		return store.TopicInfo{}, fmt.Errorf("%w (creating %d partitions; the partial topic %q was deleted)", err, partitions, name)
	}
	return c.topic(ctx, name)
}

// Iggy's bounds on a topic's segment_size (iggy_common options:
// MIN_TOPIC_SEGMENT_SIZE, MAX_TOPIC_SEGMENT_SIZE; "a 512-byte multiple").
const (
	minSegmentSize   = 1 << 20
	maxSegmentSize   = 1 << 30
	segmentSizeAlign = 512
)

// segmentSize maps Kafka's segment.bytes (at least 1 MiB, at most 2 GiB − 1)
// to an Iggy segment_size: rounded up to a multiple of 512, within Iggy's
// 1 MiB..1 GiB (a larger Kafka segment gets Iggy's largest); 0 for 0.
func segmentSize(kafka int64) uint64 {
	if kafka <= 0 {
		return 0
	}
	n := (uint64(kafka) + segmentSizeAlign - 1) / segmentSizeAlign * segmentSizeAlign
	return min(max(n, minSegmentSize), maxSegmentSize)
}

// createTopic is one CreateTopic request (1..maxPartitionsPerRequest partitions).
func (c *Client) createTopic(ctx context.Context, name string, partitions int32, cfg store.TopicConfig) (store.TopicInfo, error) {
	if !validName(name) {
		return store.TopicInfo{}, fmt.Errorf("%w: topic name must be 1..255 bytes", store.ErrInvalidConfig)
	}
	if cfg.MessageExpiry < 0 {
		return store.TopicInfo{}, fmt.Errorf("%w: negative message expiry", store.ErrInvalidConfig)
	}
	durability := c.topicLevel(cfg.Durability)
	s, err := c.acquire(ctx)
	if err != nil {
		return store.TopicInfo{}, unavailable(err)
	}
	defer c.release(s)
	for attempt := 0; ; attempt++ {
		_, gen := c.target()
		b := proto.AppendStringID(s.begin(), c.cfg.Stream)
		b = proto.AppendU32(b, uint32(partitions))
		b = proto.AppendName(b, name)
		if cfg.MessageExpiry > 0 {
			b = proto.AppendOptionU64(b, optMessageExpiry, uint64(cfg.MessageExpiry/time.Microsecond))
		}
		if cfg.MaxBytes > 0 {
			b = proto.AppendOptionU64(b, optMaxTopicSize, cfg.MaxBytes)
		}
		if cfg.SegmentBytes > 0 {
			b = proto.AppendOptionU64(b, optSegmentSize, segmentSize(cfg.SegmentBytes))
		}
		b = appendDurabilityOptions(b, s.dialect, durability)
		body, sent, err := s.do(ctx, proto.CodeCreateTopic, b)
		switch code := codeOf(err); {
		case err == nil:
			d, derr := decodeTopic(body, s.dialect, c.cfg.Stream)
			if derr != nil {
				return store.TopicInfo{}, derr
			}
			c.remember(name, d.entry())
			c.cache.invalidateTopic(name)
			c.cache.created(name, partitions)
			return d.info, nil
		case code == proto.CodeTopicNameAlreadyExists:
			return store.TopicInfo{}, fmt.Errorf("%w: %q", store.ErrTopicExists, name)
		case attempt < metadataAttempts && c.primaryMoved(ctx, s, err, gen):
			continue // a backup stored nothing; the new primary is asked
		case code == proto.CodeStreamIDNotFound && attempt == 0:
			// Someone deleted the stream; recreate it and retry once.
			if err := c.ensureStream(ctx, s); err != nil {
				return store.TopicInfo{}, err
			}
			continue
		case code == proto.CodeTooManyPartitions || code == proto.CodeInvalidPartitionsCount:
			return store.TopicInfo{}, fmt.Errorf("%w: %w", store.ErrInvalidPartitions, err)
		case code == proto.CodeTooManyTopics:
			return store.TopicInfo{}, fmt.Errorf("%w: Iggy holds at most 4,096 topics in a stream (%w)", store.ErrTooManyTopics, err)
		case code == proto.CodeInvalidTopicSize || code == proto.CodeUnsupportedOptionKey || code == proto.CodeInvalidOptionValue ||
			code == proto.CodeInvalidTopicName:
			return store.TopicInfo{}, fmt.Errorf("%w: %w", store.ErrInvalidConfig, err)
		case code != 0:
			return store.TopicInfo{}, err
		case sent:
			return store.TopicInfo{}, fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
		default:
			return store.TopicInfo{}, unavailable(err)
		}
	}
}

// metadataAttempts bounds how often a metadata write answered 58 is sent
// again after the primary moved.
const metadataAttempts = 3

// primaryMoved reports whether a metadata write answered err while gen was
// the client's primary generation is worth sending again: err is a 58
// (TransientNotAccepted: a backup, nothing stored, docs/design/iggy-protocol.md
// §1.8), the client is on a cluster, and it has found another primary since
// (the session replays a 58 on the same node until the primary moves, then
// gives it back). Without this a CreateTopics that met a view change was
// answered UNKNOWN_SERVER_ERROR (docs/IGGY.md "Iggy clusters").
// s, the caller's session, is connected to the new primary on the way.
func (c *Client) primaryMoved(ctx context.Context, s *session, err error, gen uint64) bool {
	if codeOf(err) != proto.CodeTransientNotAccepted || !c.clustered() || ctx.Err() != nil {
		return false
	}
	if c.awaitPrimary(ctx) != nil {
		return false
	}
	if _, now := c.target(); now == gen {
		return false
	}
	return s.ensure(ctx) == nil
}

// DeleteTopic deletes a topic and its data.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	if !validName(name) {
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, name)
	}
	s, err := c.acquire(ctx)
	if err != nil {
		return unavailable(err)
	}
	defer c.release(s)
	var sent bool
	for attempt := 0; ; attempt++ {
		_, gen := c.target()
		_, sent, err = s.do(ctx, proto.CodeDeleteTopic, c.topicRequest(s, name))
		if attempt >= metadataAttempts || !c.primaryMoved(ctx, s, err, gen) {
			break
		}
	}
	c.forget(name)
	c.cache.invalidateTopic(name)
	switch code := codeOf(err); {
	case err == nil:
		return nil
	case code == proto.CodeTopicIDNotFound || code == proto.CodeStreamIDNotFound || code == proto.CodeTopicNameNotFound:
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, name)
	case code != 0:
		return err
	case sent:
		return fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
	}
	return unavailable(err)
}

// UpdateTopic implements store.TopicUpdater: UpdateTopic (304 → 133,
// docs/design/iggy-protocol.md §3.5) with the topic's own name and the
// message_expiry and max_topic_size options, which the server patches in
// place (u64::MAX = never / unlimited); the other options keep their values.
func (c *Client) UpdateTopic(ctx context.Context, name string, cfg store.TopicConfig) error {
	if !validName(name) {
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, name)
	}
	if cfg.MessageExpiry < 0 {
		return fmt.Errorf("%w: negative message expiry", store.ErrInvalidConfig)
	}
	expiry, size := uint64(math.MaxUint64), uint64(math.MaxUint64)
	if cfg.MessageExpiry > 0 {
		expiry = uint64(cfg.MessageExpiry / time.Microsecond)
	}
	if cfg.MaxBytes > 0 {
		size = cfg.MaxBytes
	}
	s, err := c.acquire(ctx)
	if err != nil {
		return unavailable(err)
	}
	defer c.release(s)
	code := proto.CodeUpdateTopic
	var b []byte
	if s.dialect == proto.Dialect012 {
		code, b = proto.CodeUpdateResource, c.updateResourceRequest(s, name, cfg)
	} else {
		b = c.topicRequest(s, name)
		b = proto.AppendName(b, name)
		b = proto.AppendOptionU64(b, optMessageExpiry, expiry)
		b = proto.AppendOptionU64(b, optMaxTopicSize, size)
	}
	_, sent, err := s.do(ctx, code, b)
	switch code := codeOf(err); {
	case err == nil:
		return nil
	case code == proto.CodeTopicIDNotFound || code == proto.CodeStreamIDNotFound || code == proto.CodeTopicNameNotFound:
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, name)
	case code == proto.CodeInvalidTopicSize || code == proto.CodeUnsupportedOptionKey || code == proto.CodeInvalidOptionValue:
		return fmt.Errorf("%w: %w", store.ErrInvalidConfig, err)
	case code != 0:
		return err
	case sent:
		return fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
	}
	return unavailable(err)
}

// updateResourceRequest builds a 0.12 UpdateResource of topic name (§9):
// [scope 1 = topic][stream id][topic id][reset count u8][reset names]
// [options]. A limit Kafka leaves unset is reset to the server's default
// (never / unlimited) rather than set to u64::MAX.
func (c *Client) updateResourceRequest(s *session, name string, cfg store.TopicConfig) []byte {
	b := append(s.begin(), resourceScopeTopic)
	b = proto.AppendStringID(b, c.cfg.Stream)
	b = proto.AppendStringID(b, name)
	at := len(b)
	b = append(b, 0)
	if cfg.MessageExpiry <= 0 {
		b[at]++
		b = proto.AppendName(b, optMessageExpiry)
	}
	if cfg.MaxBytes == 0 {
		b[at]++
		b = proto.AppendName(b, optMaxTopicSize)
	}
	if cfg.MessageExpiry > 0 {
		b = proto.AppendOptionU64(b, optMessageExpiry, uint64(cfg.MessageExpiry/time.Microsecond))
	}
	if cfg.MaxBytes > 0 {
		b = proto.AppendOptionU64(b, optMaxTopicSize, cfg.MaxBytes)
	}
	return b
}

// resourceScopeTopic is UpdateResource's scope byte for a topic
// (describe_options.rs: "OPTIONS_SCOPE_TOPIC: u8 = 1").
const resourceScopeTopic = 1

// CreatePartitions grows a topic to total partitions. Iggy's
// CreatePartitions takes the number to add (§3.6), so the current count is
// read first; two concurrent growers may both add. Past
// maxPartitionsPerRequest the partitions are added in steps; if a step
// fails, the error says how many partitions the topic has then (the ones
// added stay: Kafka has no way to remove partitions).
func (c *Client) CreatePartitions(ctx context.Context, name string, total int32) error {
	d, ok, err := c.lookupTopic(ctx, name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, name)
	}
	add := int64(total) - int64(d.info.Partitions)
	if add <= 0 || total > maxTopicPartitions {
		return fmt.Errorf("%w: topic %q has %d partitions, asked for %d (kiggy on Iggy allows up to %d)",
			store.ErrInvalidPartitions, name, d.info.Partitions, total, maxTopicPartitions)
	}
	return c.growTopic(ctx, name, d.info.Partitions, add)
}

// growTopic adds add partitions to a topic of has partitions, in
// CreatePartitions requests of at most maxPartitionsPerRequest.
func (c *Client) growTopic(ctx context.Context, name string, has int32, add int64) error {
	s, err := c.acquire(ctx)
	if err != nil {
		return unavailable(err)
	}
	defer c.release(s)
	for done := int64(0); done < add; {
		step := min(add-done, maxPartitionsPerRequest)
		if err := c.addPartitions(ctx, s, name, uint32(step)); err != nil {
			if done > 0 {
				return fmt.Errorf("%w (topic %q has %d partitions: %d of the %d to add were added)", err, name, int64(has)+done, done, add)
			}
			return err
		}
		done += step
	}
	return nil
}

// addPartitions is one CreatePartitions request adding n (1..1000) partitions.
func (c *Client) addPartitions(ctx context.Context, s *session, name string, n uint32) error {
	var sent bool
	var err error
	for attempt := 0; ; attempt++ {
		_, gen := c.target()
		req := proto.AppendU32(c.topicRequest(s, name), n)
		_, sent, err = s.do(ctx, proto.CodeCreatePartitions, req)
		if attempt >= metadataAttempts || !c.primaryMoved(ctx, s, err, gen) {
			break
		}
	}
	c.forget(name)
	switch code := codeOf(err); {
	case err == nil:
		return nil
	case code == proto.CodeTopicIDNotFound || code == proto.CodeStreamIDNotFound:
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, name)
	case code == proto.CodeTooManyPartitions || code == proto.CodeInvalidPartitionsCount || code == proto.CodePartitionIDSpaceExhausted:
		return fmt.Errorf("%w: %w", store.ErrInvalidPartitions, err)
	case code != 0:
		return err
	case sent:
		return fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
	}
	return unavailable(err)
}

// watermarksOf derives Kafka watermarks from a PartitionResponse. Iggy's
// current_offset is the last assigned offset and is 0 both for an empty
// partition and for one holding only offset 0, so messages_count breaks the
// tie: High = current_offset+1 when the partition has ever held a message.
// LogStart = High − messages_count (messages_count counts what is kept).
func watermarksOf(p partitionInfo) store.Watermarks {
	if p.messages == 0 && p.currentOffset == 0 {
		return store.Watermarks{}
	}
	high := int64(p.currentOffset + 1)
	start := high - int64(p.messages)
	if start < 0 || p.messages > uint64(high) {
		start = 0
	}
	return store.Watermarks{LogStart: start, High: high}
}

// PartitionSizes implements store.PartitionSizer: each partition's
// size_bytes in GetTopic's partition list (what Iggy holds of it, its
// message headers included).
func (c *Client) PartitionSizes(ctx context.Context, topic string) ([]int64, error) {
	d, ok, err := c.lookupTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	}
	out := make([]int64, d.info.Partitions)
	for _, p := range d.partitions {
		if int64(p.id) < int64(len(out)) {
			out[p.id] = int64(min(p.size, math.MaxInt64))
		}
	}
	return out, nil
}

// LogDir implements store.PartitionSizer: "iggy://<addresses>/<stream>".
func (c *Client) LogDir() string { return "iggy://" + c.cfg.Addr + "/" + c.cfg.Stream }

// watermarks returns a partition's log start and high watermark from
// GetTopic's partition list.
func (c *Client) watermarks(ctx context.Context, topic string, partition int32) (store.Watermarks, error) {
	sent := c.cache.generation()
	d, ok, err := c.lookupTopicVia(ctx, topic, partition)
	if err != nil {
		return store.Watermarks{}, err
	}
	if !ok {
		return store.Watermarks{}, fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	}
	c.cache.learnHighs(topic, d.partitions, sent)
	for _, p := range d.partitions {
		if int64(p.id) == int64(partition) {
			return watermarksOf(p), nil
		}
	}
	return store.Watermarks{}, fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, partition)
}

// classify turns an unresolvable-target reply (status 20 on the partition
// plane, which does not say what was missing) into ErrUnknownTopic or
// ErrUnknownPartition by looking the topic up.
func (c *Client) classify(ctx context.Context, topic string, partition int32, cause error) error {
	d, ok, err := c.lookupTopic(ctx, topic)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", cause, err)
	case !ok:
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	case partition < 0 || partition >= d.info.Partitions:
		return fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, partition)
	}
	return cause
}
