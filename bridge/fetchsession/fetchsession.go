// Package fetchsession is the gateway's cache of incremental Fetch sessions
// (KIP-227; docs/design/kafka-protocol.md §7.4), as Kafka 4.4's
// FetchSessionCache, FetchSession and FetchManager keep them.
//
// Design note. A full Fetch with SessionEpoch 0 asks for a session: once its
// response is built, Create stores every answered partition with what the
// client asked (fetch offset, max bytes, epochs) and what it was sent (high
// watermark, last stable offset, log start), and the response carries the
// new id. An incremental Fetch (epoch > 0) names only the partitions whose
// request changed and those to forget; Incremental checks the id, the
// epoch and the topic-id mode, applies the changes, advances the epoch and
// rewrites the request into the session's whole partition list, so the
// gateway reads (and parks on) every partition of the session. The
// response then carries only the partitions MustRespond picks, and Commit
// records what was sent. Sessions are not tied to a connection, as in
// Kafka: the gateway checks authorization on every Fetch, incremental or
// not.
//
// Eviction follows FetchSessionCacheShard.tryEvict: when every slot is
// taken, a new session replaces the least recently used session if that
// one is stale (unused for longer than the minimum eviction time), else
// the smallest evictable session (by privileged, then partition count,
// then id) if the new one is larger; a session is evictable by all once it
// is older than the minimum eviction time, at the time it was last used.
// Consumers' sessions are never privileged (Kafka privileges followers,
// which kiggy has none of). Finding the victim scans the sessions: only a
// new session that finds every slot taken does it, and slots are a few
// thousand at most.
package fetchsession

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/internal/metric"
	"github.com/kiggy-io/kiggy/wire"
)

// DefaultSlots is Kafka's max.incremental.fetch.session.cache.slots default.
const DefaultSlots = 1000

// DefaultMinEviction is Kafka's min.incremental.fetch.session.eviction.ms
// default.
const DefaultMinEviction = 120 * time.Second

// DefaultMaxPartitions caps the partitions all sessions hold (about 200
// bytes each with their index entry): 1,000 sessions of 1,000 partitions.
// Kafka has no such cap; kiggy bounds every state a client can make it
// hold (docs/LIMITS.md).
const DefaultMaxPartitions = 1_000_000

// NextEpoch is Kafka's FetchMetadata.nextEpoch: after the final epoch (-1)
// comes the final epoch, after MaxInt32 comes 1.
func NextEpoch(prev int32) int32 {
	switch {
	case prev < 0:
		return -1
	case prev == 1<<31-1:
		return 1
	}
	return prev + 1
}

// Key identifies a partition in a session: by topic id in a session of
// topic ids (Fetch v13+), by topic name otherwise.
type Key struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// Sent is what the client was last sent for a partition: the fields whose
// change puts an unchanged partition back into an incremental response.
type Sent struct {
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
}

// Outcome is what a Fetch pass answers for one partition.
type Outcome struct {
	Sent
	// Records: the partition carries records.
	Records bool
	// Err: the partition carries an error code.
	Err bool
}

// MustRespond reports whether an incremental response carries a partition
// last sent prev and answered o now. CachedPartition.maybeUpdateResponseData:
// "Partitions with new data are always included in the response", as are
// a changed high watermark or log start offset, and "Partitions with errors
// are always included in the response". kiggy adds the last stable
// offset, which read_committed consumers follow. PreferredReadReplica and
// DivergingEpoch, the other reasons, are never set by kiggy.
func MustRespond(prev Sent, o Outcome) bool {
	return o.Records || o.Err || o.HighWatermark != prev.HighWatermark ||
		o.LogStartOffset != prev.LogStartOffset || o.LastStableOffset != prev.LastStableOffset
}

// partition is one cached partition: the request's parameters and what was
// last sent.
type partition struct {
	key         Key
	topic       string // the name; in a session of ids the gateway resolves it per Fetch
	fetchOffset int64
	logStart    int64 // the fetcher's (-1 for consumers)
	maxBytes    int32
	leaderEpoch int32
	lastEpoch   int32
	sent        Sent
	dead        bool // forgotten, until update compacts the session
}

// Session is one fetch session. Its own lock guards its partitions and
// epoch; the cache's lock guards its place in the cache (lock order: the
// cache, then a session, as in Kafka).
type Session struct {
	id         int32
	usesIDs    bool
	privileged bool
	created    int64 // unix nanoseconds

	// Guarded by Cache.mu.
	lastUsed     int64
	cachedSize   int // partitions at the last touch; -1 once removed
	evictableAll bool
	evictablePri bool

	mu      sync.Mutex
	epoch   int32 // the epoch the next incremental Fetch must carry
	parts   []partition
	index   map[Key]int32
	scratch []partition // Commit's reordering
}

// ID is the session's id.
func (s *Session) ID() int32 { return s.id }

// Cache holds the sessions of one gateway. Its methods are safe for
// concurrent use.
type Cache struct {
	slots      int
	maxParts   int64
	minEvict   int64 // nanoseconds
	mu         sync.Mutex
	sessions   map[int32]*Session
	partitions atomic.Int64
	count      atomic.Int64
	evictions  atomic.Uint64
	created    atomic.Uint64
	served     atomic.Uint64
	refused    atomic.Uint64
}

// New returns a cache of at most slots sessions (Kafka
// max.incremental.fetch.session.cache.slots) holding at most maxPartitions
// partitions in all, that evicts a session unused for minEviction
// (min.incremental.fetch.session.eviction.ms). slots ≤ 0 creates no
// session.
func New(slots, maxPartitions int, minEviction time.Duration) *Cache {
	return &Cache{slots: slots, maxParts: int64(maxPartitions), minEvict: int64(minEviction), sessions: make(map[int32]*Session)}
}

// Stats are a cache's gauges and counters.
type Stats struct {
	Sessions   int64  // sessions held
	Partitions int64  // partitions of all sessions
	Created    uint64 // sessions created
	Evictions  uint64 // sessions evicted to make room
	Served     uint64 // incremental Fetches served in a session
	Refused    uint64 // sessions not created or closed for want of room
}

// Stats returns the cache's gauges and counters.
func (c *Cache) Stats() Stats {
	return Stats{Sessions: c.count.Load(), Partitions: c.partitions.Load(),
		Created: c.created.Load(), Evictions: c.evictions.Load(), Served: c.served.Load(), Refused: c.refused.Load()}
}

// WriteMetrics writes the cache's metrics in Prometheus text format
// (docs/METRICS.md); a nil cache (sessions off) writes zeros.
func (c *Cache) WriteMetrics(w io.Writer) {
	var st Stats
	if c != nil {
		st = c.Stats()
	}
	metric.Single(w, "kiggy_fetch_sessions", "gauge", "Incremental Fetch sessions held (KIP-227; --fetch-session-cache-slots).", st.Sessions)
	metric.Single(w, "kiggy_fetch_session_partitions", "gauge", "Partitions held by all incremental Fetch sessions.", st.Partitions)
	metric.Single(w, "kiggy_fetch_sessions_created_total", "counter", "Incremental Fetch sessions created.", st.Created)
	metric.Single(w, "kiggy_fetch_session_incremental_total", "counter", "Incremental Fetches served in a session (those refused a session error are counted as Fetch errors).", st.Served)
	metric.Single(w, "kiggy_fetch_sessions_refused_total", "counter", "Fetch sessions not created (every slot taken by sessions it may not evict, or the partition cap reached) or closed (an incremental Fetch would pass the partition cap); those Fetches are answered sessionless.", st.Refused)
	metric.Single(w, "kiggy_fetch_session_evictions_total", "counter", "Incremental Fetch sessions evicted to make room for a new one (stale, or smaller than it).", st.Evictions)
}

// Remove drops session id; it reports whether there was one. A full Fetch
// that names a session closes it (FetchManager.newContext: "Any session
// specified in a FULL fetch request will be closed").
func (c *Cache) Remove(id int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s == nil {
		return false
	}
	c.remove(s)
	return true
}

// remove drops s; c.mu is held.
func (c *Cache) remove(s *Session) {
	delete(c.sessions, s.id)
	c.count.Add(-1)
	c.partitions.Add(-int64(s.cachedSize))
	s.cachedSize = -1
}

// touch records that s was used at now, and its size; c.mu is held, s.mu
// may be (FetchSessionCacheShard.touch).
func (c *Cache) touch(s *Session, now int64) {
	s.lastUsed = now
	size := len(s.parts)
	if s.cachedSize >= 0 {
		c.partitions.Add(int64(size - s.cachedSize))
	}
	s.cachedSize = size
	old := now-s.created > c.minEvict
	s.evictablePri = !s.privileged || old
	s.evictableAll = old
}

// Create stores a session for the full Fetch req, answered with out (one
// Outcome per partition, in request order), and returns its id, or 0 when
// every slot is taken by sessions it may not evict
// (FetchSessionCacheShard.maybeCreateSession). usesIDs: the Fetch named
// topics by id (v13+). A partition named twice is kept once, at its first
// place, with the later request's parameters (Kafka's fetch data is a map).
// Names and ids are copied: req may alias a frame.
func (c *Cache) Create(now time.Time, req *wire.FetchRequest, usesIDs, privileged bool, out []Outcome) int32 {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	if n != len(out) {
		return 0
	}
	ns := now.UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.partitions.Load()+int64(n) > c.maxParts || len(c.sessions) >= c.slots && !c.tryEvict(privileged, n, ns) {
		c.refused.Add(1)
		return 0
	}
	s := &Session{usesIDs: usesIDs, privileged: privileged, created: ns, cachedSize: 0,
		epoch: NextEpoch(0), index: make(map[Key]int32, n), parts: make([]partition, 0, n)}
	k := 0
	for i := range req.Topics {
		t := &req.Topics[i]
		topic := strings.Clone(t.Topic)
		for j := range t.Partitions {
			p := partitionOf(topic, t.TopicID, usesIDs, &t.Partitions[j])
			p.sent = out[k].Sent
			if out[k].Err {
				p.sent.HighWatermark = -1 // resent once the error goes away
			}
			k++
			if at, ok := s.index[p.key]; ok {
				s.parts[at].setRequest(&t.Partitions[j])
				continue
			}
			s.index[p.key] = int32(len(s.parts))
			s.parts = append(s.parts, p)
		}
	}
	for {
		s.id = rand.Int32N(1<<31-1) + 1 // positive, never 0 (INVALID_SESSION_ID)
		if c.sessions[s.id] == nil {
			break
		}
	}
	c.sessions[s.id] = s
	c.count.Add(1)
	c.created.Add(1)
	c.touch(s, ns)
	return s.id
}

// tryEvict makes room for a new session of size partitions, as
// FetchSessionCacheShard.tryEvict: the least recently used session if it is
// stale, else the smallest evictable one if the new session outranks it.
// c.mu is held.
func (c *Cache) tryEvict(privileged bool, size int, now int64) bool {
	var lru, small *Session
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed < lru.lastUsed || s.lastUsed == lru.lastUsed && s.id < lru.id {
			lru = s
		}
		if privileged && !s.evictablePri || !privileged && !s.evictableAll {
			continue
		}
		if small == nil || less(s, small) {
			small = s
		}
	}
	switch {
	case lru == nil:
		return false
	case now-lru.lastUsed > c.minEvict:
		c.remove(lru)
	case small == nil:
		return false
	case keyLess(privileged, size, 0, small.privileged, small.cachedSize, small.id):
		return false // "Can't evict" a more valuable session
	default:
		c.remove(small)
	}
	c.evictions.Add(1)
	return true
}

// less orders sessions by Kafka's EvictableKey.
func less(a, b *Session) bool {
	return keyLess(a.privileged, a.cachedSize, a.id, b.privileged, b.cachedSize, b.id)
}

// keyLess is EvictableKey.compareTo < 0: privileged, then size, then id.
func keyLess(ap bool, as int, aid int32, bp bool, bs int, bid int32) bool {
	if ap != bp {
		return !ap
	}
	if as != bs {
		return as < bs
	}
	return aid < bid
}

func partitionOf(topic string, id [16]byte, usesIDs bool, rp *wire.FetchRequestTopicPartition) partition {
	p := partition{topic: topic, key: Key{Partition: rp.Partition}}
	if usesIDs {
		p.key.TopicID = id
	} else {
		p.key.Topic = topic
	}
	p.setRequest(rp)
	return p
}

// setRequest is CachedPartition.updateRequestParams.
func (p *partition) setRequest(rp *wire.FetchRequestTopicPartition) {
	p.fetchOffset = rp.FetchOffset
	p.logStart = rp.LogStartOffset
	p.maxBytes = rp.PartitionMaxBytes
	p.leaderEpoch = rp.CurrentLeaderEpoch
	p.lastEpoch = rp.LastFetchedEpoch
}

// Ticket is an incremental Fetch's hold on its session: what Commit needs to
// find the session as Incremental left it.
type Ticket struct {
	S *Session
	// Epoch is the session's epoch after the request: a response whose
	// session has moved on is INVALID_FETCH_SESSION_EPOCH (a duplicate
	// request).
	Epoch int32
}

// ErrSessionless is not an error code: Incremental returns it in place of a
// Ticket when it closed the session, and the Fetch is to be answered
// sessionless (SessionId 0, the partitions it names), which sends the
// client back to a full Fetch: when the request forgot the session's last
// partition (FetchManager.newContext: "there are no more partitions
// left"), or when the partitions it adds would take all sessions past
// their partition cap (kiggy's; Kafka has none).
const ErrSessionless wire.ErrorCode = -2

// Incremental serves the session part of an incremental Fetch (SessionID ≠
// 0, SessionEpoch > 0), as FetchManager.newContext does:
//
//   - no such session: FETCH_SESSION_ID_NOT_FOUND (70);
//   - "session.epoch() != reqMetadata.epoch()": INVALID_FETCH_SESSION_EPOCH (71);
//   - "session.usesTopicIds() && reqVersion < 13 || !session.usesTopicIds()
//     && reqVersion >= 13": FETCH_SESSION_TOPIC_ID_ERROR (106);
//   - else the request's partitions are added or updated, ForgottenTopicsData
//     removed, the epoch advanced, and req.Topics rewritten (its slices
//     reused) into the session's partitions in session order, a topic per
//     run of partitions of one topic, with prev (reused) holding what each
//     was last sent.
//
// Topic names written into req are the session's own copies; in a session
// of ids they are "" for the gateway to resolve from the ids.
func (c *Cache) Incremental(now time.Time, req *wire.FetchRequest, usesIDs bool, prev []Sent) (Ticket, []Sent, wire.ErrorCode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[req.SessionID]
	if s == nil {
		return Ticket{}, prev, wire.FetchSessionIDNotFound
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.epoch != req.SessionEpoch:
		return Ticket{}, prev, wire.InvalidFetchSessionEpoch
	case s.usesIDs != usesIDs:
		return Ticket{}, prev, wire.FetchSessionTopicIDError
	}
	if c.partitions.Load()+int64(s.added(req)) > c.maxParts {
		c.remove(s)
		c.refused.Add(1)
		return Ticket{}, prev, ErrSessionless
	}
	s.update(req)
	if len(s.parts) == 0 {
		c.remove(s)
		return Ticket{}, prev, ErrSessionless
	}
	c.touch(s, now.UnixNano())
	c.served.Add(1)
	s.epoch = NextEpoch(s.epoch)
	return Ticket{S: s, Epoch: s.epoch}, s.fill(req, prev[:0]), wire.NoError
}

// added counts the partitions req names that s does not hold (a partition
// named twice counts twice). s.mu is held.
func (s *Session) added(req *wire.FetchRequest) int {
	n := 0
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			k := Key{Partition: t.Partitions[j].Partition}
			if s.usesIDs {
				k.TopicID = t.TopicID
			} else {
				k.Topic = t.Topic
			}
			if _, ok := s.index[k]; !ok {
				n++
			}
		}
	}
	return n
}

// update is FetchSession.update: add or update the request's partitions,
// then remove the forgotten ones. s.mu is held.
func (s *Session) update(req *wire.FetchRequest) {
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			k := Key{Partition: rp.Partition}
			if s.usesIDs {
				k.TopicID = t.TopicID
			} else {
				k.Topic = t.Topic // a view of the frame: only looked up with
			}
			if at, ok := s.index[k]; ok {
				s.parts[at].setRequest(rp)
				continue
			}
			topic := ""
			if !s.usesIDs {
				topic = strings.Clone(t.Topic)
				k.Topic = topic
			}
			p := partitionOf(topic, t.TopicID, s.usesIDs, rp)
			p.sent = Sent{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			s.index[p.key] = int32(len(s.parts))
			s.parts = append(s.parts, p)
		}
	}
	removed := false
	for i := range req.ForgottenTopics {
		t := &req.ForgottenTopics[i]
		for _, part := range t.Partitions {
			k := Key{Partition: part}
			if s.usesIDs {
				k.TopicID = t.TopicID
			} else {
				k.Topic = t.Topic
			}
			if at, ok := s.index[k]; ok {
				delete(s.index, k)
				s.parts[at].dead = true
				removed = true
			}
		}
	}
	if removed {
		kept := s.parts[:0]
		for _, p := range s.parts {
			if !p.dead {
				kept = append(kept, p)
			}
		}
		clear(s.parts[len(kept):])
		s.parts = kept
		s.reindex()
	}
}

// reindex rebuilds the index from the partitions' order.
func (s *Session) reindex() {
	for i := range s.parts {
		s.index[s.parts[i].key] = int32(i)
	}
}

// fill rewrites req.Topics into s's partitions and appends what each was
// last sent to prev. s.mu is held.
func (s *Session) fill(req *wire.FetchRequest, prev []Sent) []Sent {
	nt := 0
	for i := range s.parts {
		p := &s.parts[i]
		if i == 0 || !sameTopic(&s.parts[i-1], p) {
			nt++
			if nt > len(req.Topics) {
				if nt <= cap(req.Topics) {
					req.Topics = req.Topics[:nt]
				} else {
					req.Topics = append(req.Topics, wire.FetchRequestTopic{})
				}
			}
			t := &req.Topics[nt-1]
			t.Topic, t.TopicID = p.topic, p.key.TopicID
			t.Partitions = t.Partitions[:0]
		}
		t := &req.Topics[nt-1]
		t.Partitions = append(t.Partitions, wire.FetchRequestTopicPartition{
			Partition: p.key.Partition, CurrentLeaderEpoch: p.leaderEpoch, FetchOffset: p.fetchOffset,
			LastFetchedEpoch: p.lastEpoch, LogStartOffset: p.logStart, PartitionMaxBytes: p.maxBytes,
		})
		prev = append(prev, p.sent)
	}
	req.Topics = req.Topics[:nt]
	req.ForgottenTopics = req.ForgottenTopics[:0]
	return prev
}

func sameTopic(a, b *partition) bool {
	return a.key.TopicID == b.key.TopicID && a.key.Topic == b.key.Topic
}

// Commit records what the response to an incremental Fetch sends, one
// Outcome per partition in the order Incremental wrote them, as
// IncrementalFetchContext.updateAndGenerateResponseData does. It returns
// false, changing nothing, when the session has moved past t.Epoch since
// ("Possible duplicate request"): the response is then
// INVALID_FETCH_SESSION_EPOCH. Partitions that carry records move to the
// end of the session, so the next response starts with the others.
func (t Ticket) Commit(out []Outcome) bool {
	s := t.S
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != t.Epoch || len(out) != len(s.parts) {
		return false
	}
	moved := false
	for i := range s.parts {
		o := &out[i]
		p := &s.parts[i]
		p.sent = o.Sent
		if o.Err {
			p.sent.HighWatermark = -1
		}
		moved = moved || o.Records
	}
	if !moved {
		return true
	}
	// A stable partition: the partitions without records, then those with.
	s.scratch = s.scratch[:0]
	k := 0
	for i := range s.parts {
		if out[i].Records {
			s.scratch = append(s.scratch, s.parts[i])
		} else {
			s.parts[k] = s.parts[i]
			k++
		}
	}
	copy(s.parts[k:], s.scratch)
	clear(s.scratch)
	s.reindex()
	return true
}

// Len is the session's partition count.
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.parts)
}

// Epoch is the epoch the session's next incremental Fetch must carry.
func (s *Session) Epoch() int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// Get returns session id, or nil.
func (c *Cache) Get(id int32) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// String describes the session for logs and test failures.
func (s *Session) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("fetch session %d (epoch %d, %d partitions, ids %v)", s.id, s.epoch, len(s.parts), s.usesIDs)
}
