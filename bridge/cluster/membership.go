package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/metric"
)

// Defaults (§8). Kafka's KRaft brokers heartbeat every 2 s with a 9 s
// session; kiggy's failover time is about the timeout.
const (
	DefaultHeartbeat = time.Second
	DefaultTimeout   = 6 * time.Second
	// DefaultTopic is the membership log's topic in the system stream.
	DefaultTopic = "members"
)

// DefaultCompactRecords is the default Config.CompactRecords (§2
// "Generations"): with three instances heartbeating every second, about an
// hour of log, which an instance that starts reads in well under a second.
const DefaultCompactRecords = 10_000

// Config configures a Membership.
type Config struct {
	// NodeID is this instance's broker id, unique in the cluster.
	NodeID int32
	// Endpoints are this instance's advertised addresses, one per listener
	// name ("" for the single default listener).
	Endpoints []store.Endpoint
	// Log holds the membership log: the backend's system stream (the Iggy
	// client's SystemLog). Every instance of one cluster must use the same.
	Log store.Log
	// Topic is the membership log's topic in Log; "" = "members". Instances
	// of different Kafka clusters over one Iggy (different Kafka streams)
	// use different topics.
	Topic string
	// Heartbeat is how often the instance writes its heartbeat; 0 = 1 s.
	Heartbeat time.Duration
	// Timeout is how long a member may go without a heartbeat in the log
	// before every instance takes it for dead; 0 = 6 s. At least 4 ×
	// Heartbeat.
	Timeout time.Duration
	// CompactRecords is how many records a generation of the membership
	// log holds before the lowest live node switches to the next (§2
	// "Generations"); 0 = 10,000.
	CompactRecords int
	// Logger receives membership changes; nil = discard.
	Logger *slog.Logger
}

func (c *Config) normalize() error {
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.Log == nil:
		return errors.New("cluster: no membership log")
	case c.NodeID < 0:
		return errors.New("cluster: negative node id")
	case c.Timeout < 4*c.Heartbeat:
		return fmt.Errorf("cluster: membership timeout %v must be at least 4 × the heartbeat %v", c.Timeout, c.Heartbeat)
	case len(c.Endpoints) == 0 || len(c.Endpoints) > maxEndpoints:
		return fmt.Errorf("cluster: 1..%d advertised endpoints needed", maxEndpoints)
	}
	for _, e := range c.Endpoints {
		if e.Host == "" || e.Port <= 0 || e.Port > 65535 || len(e.Host) > 255 || len(e.Listener) > 255 {
			return fmt.Errorf("cluster: advertised endpoint %q %s:%d: need a host (≤ 255 bytes) and a port", e.Listener, e.Host, e.Port)
		}
	}
	return nil
}

// snapshot is one published view of the cluster; immutable.
type snapshot struct {
	view    uint64
	base    uint64 // the oldest view the epochs are computed from
	gen     uint32 // the membership log generation read
	live    []int32
	brokers []store.Broker
	self    bool   // this instance is in the live set
	acked   uint64 // the lowest view every live member acknowledged
	epochs  *epochCache
}

// epochCache memoizes epochOf for one view.
type epochCache struct {
	views [][]int32 // the views base..view, shared, never modified
	base  uint64
	mu    sync.RWMutex
	m     map[partKey]int32
}

type partKey struct {
	topic     string
	partition int32
}

func (e *epochCache) epoch(view uint64, topic string, partition int32, key uint64) int32 {
	k := partKey{topic, partition}
	e.mu.RLock()
	ep, ok := e.m[k]
	e.mu.RUnlock()
	if ok {
		return ep
	}
	ep = epochOf(e.views, e.base, view, key)
	e.mu.Lock()
	if len(e.m) < 1<<20 {
		e.m[partKey{string([]byte(topic)), partition}] = ep
	}
	e.mu.Unlock()
	return ep
}

// Membership is this instance's membership in the cluster: it tails the
// membership log, heartbeats into it, and answers store.Placement from
// what it read. Start it with Start, stop it with Close (graceful: a leave
// record) or Abandon (as if the process died).
type Membership struct {
	cfg   Config
	inc   uint64
	start time.Time // the monotonic base of the lease clock

	snap atomic.Pointer[snapshot]

	// Owned by the tail loop.
	st        *state
	next      int64
	firstSelf int64 // log offset of this incarnation's first record, -1 before
	// The generation read and written (§2 "Generations"): its number, the
	// records read from it, the offset of its switch once read (-1 before)
	// and whether this instance wrote a switch into it.
	gen        uint32
	genRecords int
	switchAt   int64
	switchSent bool
	readTotal  int // records read since Start (the snapshot included)
	// replayed is the records Start read before announcing this instance.
	replayed int
	// topic is the current generation's topic, which heartbeats go to.
	topic atomic.Pointer[string]
	// fenced: another process announced this node id (§3).
	fenced atomic.Bool

	// Hold bookkeeping (§5).
	holdMu  sync.Mutex
	applied uint64         // the view the tail loop published last
	held    map[uint64]int // appends in flight by the view they started in

	leaseUntil atomic.Int64 // lease clock ns: serving stops after it
	tailFresh  atomic.Int64 // lease clock ns: last time the tail reached the end
	beat       chan struct{}

	// Shared state notices (§10 "Notices"): notify asks the notice loop to
	// write one; notices receives the others' as the tail reads them,
	// from the first tail after Start's (running).
	notify, notices          chan struct{}
	running                  bool // owned by the tail loop
	noticesSent, noticesRead atomic.Uint64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	leave  atomic.Bool
}

var _ store.Placement = (*Membership)(nil)

// Start creates the membership log's topic if needed, reads it to the end,
// announces this instance and starts the heartbeat and tail loops.
func Start(ctx context.Context, cfg Config) (*Membership, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	m := &Membership{
		cfg:       cfg,
		inc:       binary.LittleEndian.Uint64(b[:]) | 1,
		start:     time.Now(),
		st:        newState(uint64(cfg.Timeout / time.Microsecond)),
		firstSelf: -1,
		switchAt:  -1,
		held:      map[uint64]int{},
		beat:      make(chan struct{}, 1),
		notify:    make(chan struct{}, 1),
		notices:   make(chan struct{}, 1),
	}
	if err := m.discover(ctx); err != nil {
		return nil, fmt.Errorf("cluster: membership log %q: %w", cfg.Topic, err)
	}
	if err := m.tail(ctx); err != nil {
		return nil, fmt.Errorf("cluster: reading the membership log: %w", err)
	}
	m.replayed = m.readTotal
	if err := m.heartbeat(ctx); err != nil {
		return nil, fmt.Errorf("cluster: announcing node %d: %w", cfg.NodeID, err)
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.running = true
	m.wg.Add(3)
	go m.tailLoop()
	go m.heartbeatLoop()
	go m.noticeLoop()
	cfg.Logger.Info("cluster: joined", "node", cfg.NodeID, "topic", *m.topic.Load(), "records read", m.replayed, "heartbeat", cfg.Heartbeat, "timeout", cfg.Timeout)
	return m, nil
}

// Close leaves the cluster gracefully: this instance stops serving, writes
// a leave record so the others take over at once, and stops its loops.
func (m *Membership) Close() error {
	m.leave.Store(true)
	lease := m.leaseUntil.Swap(0) // serve nothing from now on
	m.stop()
	// The others take over as soon as they read the leave record: first
	// let the appends in flight end (§5). They end by the lease at the
	// latest (store.LeaseHolder).
	for m.clock() < lease {
		m.holdMu.Lock()
		n := len(m.held)
		m.holdMu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Heartbeat*2)
	defer cancel()
	gen := m.gen
	leave := record{kind: kindLeave, node: m.cfg.NodeID, incarnation: m.inc}
	if _, err := m.write(ctx, *m.topic.Load(), leave); err != nil {
		return err
	}
	// A leave that landed after a switch is ignored (§2 "Generations"):
	// read on, and write it again in the next generation if there is one.
	if err := m.tail(ctx); err != nil || m.gen == gen {
		return err
	}
	_, err := m.write(ctx, *m.topic.Load(), leave)
	return err
}

// Abandon stops the loops without a word, as a crash would: the others
// take over once the timeout passes in the log (tests of failover).
func (m *Membership) Abandon() {
	m.leave.Store(true)
	m.leaseUntil.Store(0)
	m.stop()
}

func (m *Membership) stop() {
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
}

func (m *Membership) clock() int64 { return int64(time.Since(m.start)) }

// tailLoop reads new records every quarter heartbeat.
func (m *Membership) tailLoop() {
	defer m.wg.Done()
	t := time.NewTicker(max(m.cfg.Heartbeat/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(m.ctx, m.cfg.Timeout/2)
		err := m.tail(ctx)
		cancel()
		if err != nil && m.ctx.Err() == nil {
			m.cfg.Logger.Warn("cluster: reading the membership log", "err", err)
		}
	}
}

// tail applies every record after m.next and publishes the result. It
// follows a switch into the next generation (§2 "Generations") and, on the
// compactor, writes the switch when the generation grew large.
func (m *Membership) tail(ctx context.Context) error {
	startedAt := m.clock()
	prevView := m.st.view()
	dirty := m.snap.Load() == nil
	for {
		if m.switchAt >= 0 {
			if err := m.moveOn(ctx); err != nil {
				return err
			}
			dirty = true
		}
		n := 0
		wm, err := m.cfg.Log.Read(ctx, *m.topic.Load(), 0, m.next, 1<<20, func(msg *message.Message) bool {
			n++
			m.readTotal++
			m.next = msg.Offset + 1
			r, err := decodeRecord(msg.Payload)
			if err != nil {
				m.cfg.Logger.Warn("cluster: skipping a malformed membership record", "offset", msg.Offset, "err", err)
				return true
			}
			m.genRecords++
			switch r.kind {
			case kindSwitch:
				// The first switch ends the generation: what follows it
				// here is ignored.
				m.switchAt = msg.Offset
				return false
			case kindSnapshot:
				return true // a second copy of the generation's snapshot
			case kindNotice:
				// Not applied: a notice changes no membership state, and
				// advancing the log time by it could expire members an
				// outage's credit would have kept (§3 "Outages").
				if m.running && (r.node != m.cfg.NodeID || r.incarnation != m.inc) {
					m.noticesRead.Add(1)
					select {
					case m.notices <- struct{}{}:
					default:
					}
				}
				return true
			}
			if r.node == m.cfg.NodeID && r.kind == kindHeartbeat {
				if r.incarnation == m.inc && m.firstSelf < 0 {
					m.firstSelf = msg.Offset
				} else if r.incarnation != m.inc && m.firstSelf >= 0 && !m.fenced.Load() {
					// §3: two processes with one node id: both stop serving.
					m.fenced.Store(true)
					m.cfg.Logger.Error("cluster: another instance announced this node id; this instance stops serving", "node", r.node)
				}
			}
			_, ch := m.st.apply(msg.Timestamp, r)
			dirty = dirty || ch
			return true
		})
		if errors.Is(err, store.ErrUnknownTopic) && m.snap.Load() != nil {
			// This instance fell more than a generation behind and its
			// generation was deleted: start again from the newest.
			m.cfg.Logger.Warn("cluster: the membership log generation read was deleted; reading the newest", "generation", m.gen)
			if err = m.discover(ctx); err == nil {
				dirty = true
				continue
			}
		}
		if err != nil {
			return err
		}
		if m.switchAt >= 0 {
			continue
		}
		if n == 0 || m.next >= wm.High {
			break
		}
	}
	m.tailFresh.Store(startedAt)
	if dirty {
		m.publish()
	}
	if m.st.view() != prevView {
		m.cfg.Logger.Info("cluster: view changed", "view", m.st.view(), "live", m.st.live())
		select { // acknowledge the new view at once (§5)
		case m.beat <- struct{}{}:
		default:
		}
	}
	if m.genRecords >= m.compactAt() && !m.switchSent && !m.leave.Load() && m.snap.Load().self && len(m.st.views[len(m.st.views)-1]) > 0 && m.st.views[len(m.st.views)-1][0] == m.cfg.NodeID {
		// §2 "Generations": the lowest live node compacts.
		if err := m.compact(ctx); err != nil {
			return fmt.Errorf("cluster: switching the membership log to a new generation: %w", err)
		}
	}
	return nil
}

// compactAt is the generation size that makes the compactor switch.
func (m *Membership) compactAt() int {
	if m.cfg.CompactRecords > 0 {
		return m.cfg.CompactRecords
	}
	return DefaultCompactRecords
}

// genTopic names generation g of the membership log: the configured topic
// for generation 0 (the log before any compaction), topic~g after.
func (m *Membership) genTopic(g uint32) string {
	if g == 0 {
		return m.cfg.Topic
	}
	return m.cfg.Topic + "~" + strconv.FormatUint(uint64(g), 10)
}

// generations lists the generations of the membership log that exist,
// newest first.
func (m *Membership) generations(ctx context.Context) ([]uint32, error) {
	topics, err := m.cfg.Log.Topics(ctx)
	if err != nil {
		return nil, err
	}
	var gens []uint32
	for _, t := range topics {
		if t.Name == m.cfg.Topic {
			gens = append(gens, 0)
		} else if rest, ok := strings.CutPrefix(t.Name, m.cfg.Topic+"~"); ok {
			if g, err := strconv.ParseUint(rest, 10, 32); err == nil && g > 0 && m.genTopic(uint32(g)) == t.Name {
				gens = append(gens, uint32(g))
			}
		}
	}
	slices.Sort(gens)
	slices.Reverse(gens)
	return gens, nil
}

// discover starts reading at the newest generation that begins with its
// snapshot (generation 0 begins empty), creating generation 0 when there
// is none. A newer generation without its snapshot is a switch cut short:
// reading the one before reaches the switch, and moveOn finishes it.
func (m *Membership) discover(ctx context.Context) error {
	gens, err := m.generations(ctx)
	if err != nil {
		return err
	}
	for _, g := range gens {
		if g == 0 {
			break
		}
		ss, err := m.readSnapshot(ctx, g)
		if err != nil {
			return err
		}
		if ss != nil {
			m.adopt(g, ss)
			return nil
		}
	}
	if len(gens) == 0 || gens[len(gens)-1] != 0 {
		if len(gens) > 0 {
			return fmt.Errorf("no generation of the membership log starts with a snapshot (generations %v)", gens)
		}
		if _, err := m.cfg.Log.CreateTopic(ctx, m.cfg.Topic, 1, store.TopicConfig{}); err != nil && !errors.Is(err, store.ErrTopicExists) {
			return err
		}
	}
	m.st = newState(uint64(m.cfg.Timeout / time.Microsecond))
	m.gen, m.next, m.genRecords, m.switchAt, m.switchSent = 0, 0, 0, -1, false
	m.topic.Store(&m.cfg.Topic)
	return nil
}

// readSnapshot returns the snapshot at offset 0 of generation g, nil when
// the generation is empty, ErrUnknownTopic when it does not exist.
func (m *Membership) readSnapshot(ctx context.Context, g uint32) (*snapState, error) {
	var ss *snapState
	var bad error
	_, err := m.cfg.Log.Read(ctx, m.genTopic(g), 0, 0, 1<<20, func(msg *message.Message) bool {
		r, err := decodeRecord(msg.Payload)
		switch {
		case msg.Offset != 0:
		case err != nil || r.kind != kindSnapshot || r.snap.gen != g:
			bad = fmt.Errorf("generation %d of the membership log does not start with its snapshot", g)
		default:
			ss = r.snap
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	return ss, bad
}

// adopt makes snapshot ss of generation g the state and reads on after it.
func (m *Membership) adopt(g uint32, ss *snapState) {
	m.readTotal++
	m.st = stateFrom(uint64(m.cfg.Timeout/time.Microsecond), ss)
	m.gen, m.next, m.genRecords, m.switchAt, m.switchSent = g, 1, 1, -1, false
	name := m.genTopic(g)
	m.topic.Store(&name)
}

// moveOn follows the switch read at m.switchAt into the next generation:
// it writes the snapshot of the state read so far as the next generation's
// first record unless one is there (another instance wrote it first; the
// two are the same), adopts the record at offset 0 — so that every
// instance, whoever wrote it, goes on from the same state — and
// heartbeats at once, since a heartbeat written after the switch is
// ignored. The instance that wrote the snapshot deletes the generations
// before the one just ended.
func (m *Membership) moveOn(ctx context.Context) error {
	next := m.gen + 1
	name := m.genTopic(next)
	ss, err := m.readSnapshot(ctx, next)
	if errors.Is(err, store.ErrUnknownTopic) {
		if _, err = m.cfg.Log.CreateTopic(ctx, name, 1, store.TopicConfig{}); errors.Is(err, store.ErrTopicExists) {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	wrote := false
	if ss == nil {
		var b message.Batch
		b.Reset(uint64(time.Now().UnixMicro()))
		b.Begin(b.Origin)
		b.Buf = appendRecord(b.Buf, record{kind: kindSnapshot, snap: m.st.snapshot(next, uint64(m.switchAt))})
		b.MarkHeaders()
		b.End()
		if _, err := m.cfg.Log.Append(ctx, name, 0, &b); err != nil {
			return err
		}
		wrote = true
		if ss, err = m.readSnapshot(ctx, next); err != nil {
			return err
		}
		if ss == nil {
			return fmt.Errorf("generation %d of the membership log is empty after its snapshot was written", next)
		}
	}
	ended := m.gen
	m.adopt(next, ss)
	m.cfg.Logger.Info("cluster: membership log switched to a new generation", "generation", next, "topic", name, "views kept", len(ss.views), "snapshot written", wrote)
	select {
	case m.beat <- struct{}{}:
	default:
	}
	if wrote {
		m.deleteBefore(ctx, ended)
	}
	return nil
}

// deleteBefore deletes the generations older than g. Generation g itself is
// kept for the instances that have not read its switch yet.
func (m *Membership) deleteBefore(ctx context.Context, g uint32) {
	gens, err := m.generations(ctx)
	if err != nil {
		return
	}
	for _, old := range gens {
		if old < g {
			if err := m.cfg.Log.DeleteTopic(ctx, m.genTopic(old)); err != nil && !errors.Is(err, store.ErrUnknownTopic) {
				m.cfg.Logger.Warn("cluster: could not delete an old membership log generation", "generation", old, "err", err)
			}
		}
	}
}

// compact writes a switch into the current generation; the tail follows
// it (moveOn). Two instances may switch at once: the first switch in the
// log wins and the second, after it, is ignored.
func (m *Membership) compact(ctx context.Context) error {
	m.switchSent = true
	_, err := m.write(ctx, *m.topic.Load(), record{kind: kindSwitch, node: m.cfg.NodeID, incarnation: m.inc, applied: uint64(m.gen)})
	if err != nil {
		m.switchSent = false
	}
	return err
}

// publish makes the state read so far the one Placement answers from.
func (m *Membership) publish() {
	st := m.st
	s := &snapshot{view: st.view(), live: st.views[len(st.views)-1], acked: st.minApplied()}
	for _, id := range s.live {
		mb := st.members[id]
		s.brokers = append(s.brokers, store.Broker{NodeID: id, Endpoints: mb.endpoints})
		if id == m.cfg.NodeID && mb.incarnation == m.inc {
			s.self = true
		}
	}
	s.base, s.gen = st.base, m.gen
	if old := m.snap.Load(); old != nil && old.view == s.view && old.base == s.base {
		s.epochs = old.epochs
	} else {
		s.epochs = &epochCache{views: st.views[:len(st.views):len(st.views)], base: st.base, m: map[partKey]int32{}}
	}
	// The snapshot first, then the view Hold hands out (§5).
	m.snap.Store(s)
	m.holdMu.Lock()
	m.applied = s.view
	m.holdMu.Unlock()
}

// heartbeatLoop writes a heartbeat every Heartbeat, and at once after a
// view change.
func (m *Membership) heartbeatLoop() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		case <-m.beat:
		}
		if m.clock()-m.tailFresh.Load() > int64(m.cfg.Timeout/2) {
			// §5: an instance that cannot read the log must not claim to be
			// live; it lets its lease run out.
			continue
		}
		ctx, cancel := context.WithTimeout(m.ctx, m.cfg.Timeout/2)
		if err := m.heartbeat(ctx); err != nil && m.ctx.Err() == nil {
			m.cfg.Logger.Warn("cluster: heartbeat", "err", err)
		}
		cancel()
	}
}

// heartbeat writes one heartbeat and, once it is stored, extends the lease
// to half the timeout from when it was sent (§5).
func (m *Membership) heartbeat(ctx context.Context) error {
	sent := m.clock()
	m.holdMu.Lock()
	applied := m.applied
	for v, n := range m.held {
		if n > 0 && v < applied {
			applied = v
		}
	}
	m.holdMu.Unlock()
	topic := m.topic.Load()
	_, err := m.write(ctx, *topic, record{kind: kindHeartbeat, node: m.cfg.NodeID, incarnation: m.inc, applied: applied, endpoints: m.cfg.Endpoints})
	// A heartbeat that went to a generation already switched away from is
	// ignored by everyone: it extends nothing (§2 "Generations").
	if err == nil && !m.leave.Load() && m.topic.Load() == topic {
		m.leaseUntil.Store(sent + int64(m.cfg.Timeout/2))
	}
	return err
}

// NoticeStateChange implements store.StateNotifier: the notice loop writes
// a notice soon; changes made while one is being written share the next.
func (m *Membership) NoticeStateChange() {
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

// StateNotices implements store.StateNotifier: a value arrives after the
// tail read another instance's notice (several read at once are one).
func (m *Membership) StateNotices() <-chan struct{} { return m.notices }

var _ store.StateNotifier = (*Membership)(nil)

// noticeLoop writes a notice each time NoticeStateChange asked for one. A
// notice that cannot be written is dropped: the others still see the
// change at their next refresh (§10).
func (m *Membership) noticeLoop() {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.notify:
		}
		ctx, cancel := context.WithTimeout(m.ctx, m.cfg.Timeout/2)
		_, err := m.write(ctx, *m.topic.Load(), record{kind: kindNotice, node: m.cfg.NodeID, incarnation: m.inc})
		cancel()
		switch {
		case err == nil:
			m.noticesSent.Add(1)
		case m.ctx.Err() == nil:
			m.cfg.Logger.Warn("cluster: writing a shared state notice; the others see the change at their next refresh", "err", err)
		}
	}
}

func (m *Membership) write(ctx context.Context, topic string, r record) (int64, error) {
	var b message.Batch
	b.Reset(uint64(time.Now().UnixMicro()))
	b.Begin(b.Origin)
	b.Buf = appendRecord(b.Buf, r)
	b.MarkHeaders()
	b.End()
	return m.cfg.Log.Append(ctx, topic, 0, &b)
}

// leased reports whether this instance may serve: its lease is fresh, it
// reads the log, it is live and no other process holds its node id.
func (m *Membership) leased(s *snapshot) bool {
	now := m.clock()
	return s.self && !m.fenced.Load() && now < m.leaseUntil.Load() && now-m.tailFresh.Load() < int64(m.cfg.Timeout/2)
}

// LeaseDeadline implements store.LeaseHolder: when this instance stops
// serving unless a heartbeat is stored first (§5).
func (m *Membership) LeaseDeadline() time.Time {
	return m.start.Add(time.Duration(m.leaseUntil.Load()))
}

var _ store.LeaseHolder = (*Membership)(nil)

// Brokers implements store.Placement.
func (m *Membership) Brokers() []store.Broker { return m.snap.Load().brokers }

// Leader implements store.Placement (§4, §5).
func (m *Membership) Leader(topic string, partition int32) store.Route {
	s := m.snap.Load()
	key := partitionKey(topic, partition)
	leader := pick(s.live, key)
	if leader < 0 {
		return store.Route{Leader: -1, Epoch: -1}
	}
	epoch := s.epochs.epoch(s.view, topic, partition, key)
	return store.Route{Leader: leader, Epoch: epoch,
		Serving: leader == m.cfg.NodeID && uint64(epoch) <= s.acked && m.leased(s)}
}

// Coordinator implements store.Placement (§7).
func (m *Membership) Coordinator(group string) (int32, bool) {
	s := m.snap.Load()
	node := pick(s.live, groupKey(group))
	return node, node >= 0 && node == m.cfg.NodeID && m.leased(s)
}

// AckedView implements store.ViewAcker (§5).
func (m *Membership) AckedView() uint64 { return m.snap.Load().acked }

var _ store.ViewAcker = (*Membership)(nil)

// Hold implements store.Placement (§5).
func (m *Membership) Hold() uint64 {
	m.holdMu.Lock()
	v := m.applied
	m.held[v]++
	m.holdMu.Unlock()
	return v
}

// Release implements store.Placement.
func (m *Membership) Release(v uint64) {
	m.holdMu.Lock()
	if m.held[v]--; m.held[v] <= 0 {
		delete(m.held, v)
	}
	m.holdMu.Unlock()
}

// Generation returns the membership log generation this instance reads (§2
// "Generations"; tests, metrics).
func (m *Membership) Generation() uint32 { return m.snap.Load().gen }

// View returns the current view number and live node ids (tests, metrics).
func (m *Membership) View() (uint64, []int32) {
	s := m.snap.Load()
	return s.view, s.live
}

// WriteMetrics implements store.MetricsWriter (docs/METRICS.md "Cluster").
func (m *Membership) WriteMetrics(w io.Writer) {
	s := m.snap.Load()
	serving := 0
	if m.leased(s) {
		serving = 1
	}
	metric.Single(w, "kiggy_cluster_view", "gauge", "Number of the membership view this instance has applied; it rises with every change of the live set.", s.view)
	metric.Single(w, "kiggy_cluster_members", "gauge", "Live instances in the applied view.", len(s.live))
	metric.Single(w, "kiggy_cluster_lease", "gauge", "1 while this instance is live in the view and its lease is fresh (it may serve), else 0.", serving)
	metric.Single(w, "kiggy_cluster_log_generation", "gauge", "Generation of the membership log this instance reads; it rises with every compaction of the log.", s.gen)
	metric.Single(w, "kiggy_cluster_fenced", "gauge", "1 when another process announced this node id and this one stopped serving for good.", boolInt(m.fenced.Load()))
	metric.Single(w, "kiggy_cluster_state_notices_sent_total", "counter", "Shared state notices this instance wrote to the membership log after changing ACLs, SCRAM credentials, client quotas, topic configs, log starts or topics.", m.noticesSent.Load())
	metric.Single(w, "kiggy_cluster_state_notices_read_total", "counter", "Other instances' shared state notices this instance read; each brings its shared state views up to date at once.", m.noticesRead.Load())
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
