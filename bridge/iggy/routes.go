package iggy

// Partition routes (docs/IGGY.md, "Iggy clusters", "A partition's own
// primary"). In Iggy 0.9 every partition is a consensus group of its own,
// with its own view and so its own primary; GetClusterMetadata names only
// the metadata plane's primary. A partition write answered 58
// TransientNotAccepted by that primary, while a resolve confirms it is still
// the metadata primary, means the partition's primary is another node: the
// client tries the other nodes of the roster (a 58 means nothing was
// stored), and the node that accepts becomes the partition's route, for its
// writes and its reads, until it answers 58, fails, or the metadata view
// changes.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/internal/metric"
)

// maxRoutedSessions bounds the sessions of one routed node's pool.
const maxRoutedSessions = 4

// route is where one partition's requests go instead of the metadata
// primary.
type route struct {
	pool *nodePool
	gen  uint64 // the metadata primary's generation when the route was set
}

// routes holds every partition route and the session pools of routed nodes.
type routes struct {
	n        atomic.Int32 // len(m), read without mu on the hot path
	mu       sync.Mutex
	m        map[partKey]route
	pools    map[string]*nodePool // by address
	reroutes uint64               // routes set (a partition moved to a node)
}

// nodePool is a small pool of sessions to one non-primary node.
type nodePool struct {
	addr     string
	idle     chan *session
	reads    chan struct{} // its read share, as Client.reads
	sessions []*session
}

// pool returns (creating it) the session pool of addr. Callers hold r.mu.
func (c *Client) poolLocked(addr string) *nodePool {
	r := &c.routes
	if p := r.pools[addr]; p != nil {
		return p
	}
	if r.pools == nil {
		r.pools = map[string]*nodePool{}
	}
	n := min(c.cfg.PoolSize, maxRoutedSessions)
	p := &nodePool{addr: addr, idle: make(chan *session, n), reads: make(chan struct{}, max(n*c.cfg.ReadSessions/c.cfg.PoolSize, 1))}
	for range n {
		s := newSession(c)
		s.node = p
		p.sessions = append(p.sessions, s)
		p.idle <- s
	}
	r.pools[addr] = p
	return p
}

// routeOf returns the pool of (topic, partition)'s route, or nil for the
// metadata primary. A route set under an older metadata view is dropped.
func (c *Client) routeOf(topic string, partition int32) *nodePool {
	if c.routes.n.Load() == 0 {
		return nil
	}
	_, gen := c.target()
	r := &c.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	k := partKey{topic, partition}
	rt, ok := r.m[k]
	if !ok {
		return nil
	}
	if rt.gen != gen {
		delete(r.m, k)
		r.n.Store(int32(len(r.m)))
		c.log.Info("iggy: the cluster's view changed; partition back on the metadata primary", "topic", topic, "partition", partition, "was", rt.pool.addr)
		return nil
	}
	return rt.pool
}

// setRoute sends (topic, partition) to addr from now on; it logs only when
// the route changed.
func (c *Client) setRoute(topic string, partition int32, addr string, gen uint64, from string) {
	r := &c.routes
	r.mu.Lock()
	k := partKey{topic, partition}
	if rt, ok := r.m[k]; ok && sameAddr(rt.pool.addr, addr) && rt.gen == gen {
		r.mu.Unlock()
		return
	}
	if r.m == nil {
		r.m = map[partKey]route{}
	}
	// topic may alias a request frame that is reused later (wire's decoded
	// strings do): a map key must own its bytes (an assignment to an
	// existing string key stores the new key too).
	k.topic = strings.Clone(topic)
	r.m[k] = route{pool: c.poolLocked(addr), gen: gen}
	r.n.Store(int32(len(r.m)))
	r.reroutes++
	r.mu.Unlock()
	c.log.Warn("iggy: partition primary is not the metadata primary; following it", "topic", topic, "partition", partition, "from", from, "to", addr)
}

// dropRoute sends (topic, partition) back to the metadata primary, if it
// was routed to addr.
func (c *Client) dropRoute(topic string, partition int32, addr string) {
	r := &c.routes
	r.mu.Lock()
	k := partKey{topic, partition}
	rt, ok := r.m[k]
	if ok && sameAddr(rt.pool.addr, addr) {
		delete(r.m, k)
		r.n.Store(int32(len(r.m)))
	}
	r.mu.Unlock()
	if ok {
		c.log.Info("iggy: routed partition refused or failed; back to the metadata primary", "topic", topic, "partition", partition, "node", addr)
	}
}

// dropNode drops every route to addr: its connection failed.
func (c *Client) dropNode(addr string) {
	r := &c.routes
	r.mu.Lock()
	dropped := 0
	for k, rt := range r.m {
		if sameAddr(rt.pool.addr, addr) {
			delete(r.m, k)
			dropped++
		}
	}
	r.n.Store(int32(len(r.m)))
	r.mu.Unlock()
	if dropped > 0 {
		c.log.Warn("iggy: routed node failed; its partitions are back on the metadata primary", "node", addr, "partitions", dropped)
	}
}

// acquireFor takes a session for a request on (topic, partition): one to
// the partition's route when it has one, else a pool session (the metadata
// primary). Without routes it is acquire.
func (c *Client) acquireFor(ctx context.Context, topic string, partition int32) (*session, error) {
	return c.acquireIn(ctx, c.routeOf(topic, partition))
}

// acquireIn takes a session of routed pool p, or of the pool when p is nil.
func (c *Client) acquireIn(ctx context.Context, p *nodePool) (*session, error) {
	if p != nil {
		return c.acquireNode(ctx, p)
	}
	return c.acquire(ctx)
}

// acquireRead is acquireFor for a read of records: it first takes a token
// of the read share of the pool it reads from (Config.ReadSessions), so
// that reads never hold the sessions kept for appends, commits and
// metadata. releaseFor gives the token back after the session. A token is
// always taken before a session and given back after it, so a read waiting
// for a token holds no session.
func (c *Client) acquireRead(ctx context.Context, topic string, partition int32) (*session, error) {
	p := c.routeOf(topic, partition)
	slots := c.reads
	if p != nil {
		slots = p.reads
	}
	select {
	case slots <- struct{}{}:
	default:
		c.metrics.readSessionWaits.Add(1)
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, ErrClosed
		}
	}
	s, err := c.acquireIn(ctx, p)
	if err != nil {
		<-slots
		return nil, err
	}
	s.readSlot = slots
	return s, nil
}

// leaveShare gives back a read token a session held (nil: none), once the
// session is back in its pool: the token is given back after the session.
func leaveShare(slot chan struct{}) {
	if slot != nil {
		<-slot
	}
}

// acquireNode takes a session of a routed node's pool and connects it.
func (c *Client) acquireNode(ctx context.Context, p *nodePool) (*session, error) {
	var s *session
	select {
	case s = <-p.idle:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, ErrClosed
	}
	if c.closed.Load() {
		p.idle <- s
		return nil, ErrClosed
	}
	c.dropIfStale(s)
	if s.conn != nil && c.cfg.PingInterval > 0 && time.Since(s.lastUsed) >= c.cfg.PingInterval {
		// The keep-alive loop pings only the primary's pool: a routed
		// session idle that long is checked before a write trusts it.
		c.ping(s)
	}
	if err := s.ensure(ctx); err != nil {
		p.idle <- s
		return nil, err
	}
	return s, nil
}

// releaseFor returns a session acquireFor (or sendPartition) gave out.
func (c *Client) releaseFor(s *session) {
	if s == nil {
		return
	}
	if s.node == nil {
		c.release(s)
		return
	}
	s.trim()
	slot := s.readSlot
	s.readSlot = nil
	s.node.idle <- s
	leaveShare(slot)
}

// ensureNode connects a routed session to its node, with the reconnect
// backoff; a failure drops the node's routes (the metadata primary is not
// suspected).
func (s *session) ensureNode(ctx context.Context) error {
	if s.conn != nil {
		return nil
	}
	if time.Now().Before(s.retryAt) && s.lastErr != nil {
		return s.lastErr
	}
	err := s.connectTo(ctx, s.node.addr)
	if err != nil {
		s.c.metrics.connectFailures.Add(1)
		s.backoff = min(max(2*s.backoff, s.c.cfg.ReconnectBackoffMin), s.c.cfg.ReconnectBackoffMax)
		s.retryAt = time.Now().Add(s.backoff)
		s.lastErr = err
		s.c.dropNode(s.node.addr)
		return err
	}
	s.backoff, s.lastErr = 0, nil
	return nil
}

// sendPartition sends a partition write (SendMessages,
// Store/DeleteConsumerOffset) held in frame on s, a session from acquireFor,
// and follows the partition's own primary when the answer is 58 (see the top
// of this file). It returns the session holding the reply, which the caller
// releases with releaseFor (nil when none is held). Without a 58 it is
// s.doFrame.
func (c *Client) sendPartition(ctx context.Context, s *session, topic string, partition int32, frame []byte, tail [][]byte, code uint32) (*session, []byte, bool, error) {
	body, sent, err := s.doFrame(ctx, frame, tail, code)
	if err == nil || codeOf(err) != proto.CodeTransientNotAccepted || !c.clustered() {
		return s, body, sent, err
	}
	return c.reroute(ctx, s, topic, partition, frame, tail, code, err)
}

// reroute tries a partition write answered 58 by s's node on the other
// nodes: the metadata primary first when s was a routed session, then every
// other node of the roster. Only 58 (nothing stored) or a failure before
// any byte was sent moves on to the next node; any other outcome, an
// unknown one included, is returned as it is.
func (c *Client) reroute(ctx context.Context, s *session, topic string, partition int32, frame []byte, tail [][]byte, code uint32, err58 error) (*session, []byte, bool, error) {
	from := s.addr
	primary, gen := c.target()
	if s.node == nil && s.gen != gen {
		// The metadata primary moved meanwhile: the caller answers a
		// retriable error and the next try goes to the new primary.
		return s, nil, true, err58
	}
	// frame may be s's scratch, and tail lives in it: keep one contiguous
	// copy of both before s goes back to a pool (a rare path).
	frame = append([]byte(nil), frame...)
	for _, t := range tail {
		frame = append(frame, t...)
	}
	routed := s.node != nil
	c.releaseFor(s)
	if routed {
		c.dropRoute(topic, partition, from)
		ps, err := c.acquire(ctx)
		if err != nil {
			return nil, nil, false, unavailable(err)
		}
		body, sent, err := ps.doFrame(ctx, frame, nil, code)
		if err == nil || codeOf(err) != proto.CodeTransientNotAccepted {
			return ps, body, sent, err
		}
		c.releaseFor(ps)
		if _, now := c.target(); now != gen {
			return nil, nil, true, err
		}
	}
	c.leader.mu.Lock()
	cands := append([]string(nil), c.leader.roster...)
	c.leader.mu.Unlock()
	if addr, ok := c.partitionPrimary(ctx, topic, partition); ok {
		// 0.12 names the partition's primary: try it first.
		cands = append([]string{addr}, cands...)
	}
	for i, addr := range cands {
		if sameAddr(addr, from) || sameAddr(addr, primary) || slices.ContainsFunc(cands[:i], func(a string) bool { return sameAddr(a, addr) }) {
			continue
		}
		c.routes.mu.Lock()
		p := c.poolLocked(addr)
		c.routes.mu.Unlock()
		ns, err := c.acquireNode(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, false, unavailable(err)
			}
			continue
		}
		body, sent, err := ns.doFrame(ctx, frame, nil, code)
		switch {
		case err == nil:
			c.setRoute(topic, partition, addr, gen, from)
			return ns, body, sent, nil
		case codeOf(err) == proto.CodeTransientNotAccepted, !sent:
			c.releaseFor(ns)
			continue
		}
		return ns, body, sent, err
	}
	return nil, nil, true, err58
}

// partitionPrimary asks the metadata primary which node is the primary of
// a partition (0.12 GetPartitionRoute, §9) and returns its address from the
// roster. On 0.11, or when the answer names no node kiggy knows, ok is
// false and reroute tries the roster in order.
func (c *Client) partitionPrimary(ctx context.Context, topic string, partition int32) (string, bool) {
	s, err := c.acquire(ctx)
	if err != nil {
		return "", false
	}
	defer c.release(s)
	if s.dialect != proto.Dialect012 {
		return "", false
	}
	b := proto.AppendStringID(s.begin(), c.cfg.Stream)
	b = proto.AppendStringID(b, topic)
	b = proto.AppendU32(b, uint32(partition))
	body, _, err := s.do(ctx, proto.CodeGetPartitionRoute, b)
	if err != nil {
		return "", false
	}
	replica, err := decodePartitionRoute(body)
	if err != nil {
		return "", false
	}
	l := &c.leader
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, id := range l.replicas {
		if id == replica && i < len(l.roster) {
			return l.roster[i], true
		}
	}
	return "", false
}

// decodePartitionRoute reads a GetPartitionRoute reply (§9): [incarnation
// u64][metadata_op u64][view u32][partitions_count u32][primary_replica u8],
// and returns the primary's replica id.
func decodePartitionRoute(body []byte) (uint8, error) {
	r := proto.NewReader(body)
	r.U64()
	r.U64()
	r.U32()
	r.U32()
	replica := r.U8()
	return replica, r.Complete()
}

// closeRoutes closes every routed session; Close calls it once requests in
// flight ended.
func (c *Client) closeRoutes(timeout <-chan time.Time) error {
	c.routes.mu.Lock()
	pools := make([]*nodePool, 0, len(c.routes.pools))
	for _, p := range c.routes.pools {
		pools = append(pools, p)
	}
	c.routes.mu.Unlock()
	for _, p := range pools {
		for range len(p.sessions) {
			select {
			case s := <-p.idle:
				s.close()
			case <-timeout:
				return fmt.Errorf("iggy: close: requests still in flight on %s", p.addr)
			}
		}
	}
	return nil
}

// writeRouteMetrics appends the partition-route series.
func (c *Client) writeRouteMetrics(w io.Writer) {
	r := &c.routes
	r.mu.Lock()
	n, reroutes := len(r.m), r.reroutes
	r.mu.Unlock()
	metric.Single(w, "kiggy_iggy_routed_partitions", "gauge", "Partitions whose requests go to their own primary, not the metadata primary.", n)
	metric.Single(w, "kiggy_iggy_partition_reroutes_total", "counter", "Times a partition's requests moved to another node after the metadata primary answered 58.", reroutes)
}
