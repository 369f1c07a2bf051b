package iggy

// Leader awareness (docs/IGGY.md, "Iggy clusters"). An Iggy 0.9 cluster has
// one primary that takes every write (Viewstamped Replication); backups
// answer writes with 58 TransientNotAccepted. The client keeps the address of
// the primary every session dials, learns it from GetClusterMetadata (as the
// official SDK does in core/sdk/src/leader_aware.rs), and finds it again from
// any reachable node when it goes away.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/internal/metric"
)

// Cluster metadata roles and statuses (core/common types/cluster role.rs,
// status.rs: the enum order).
const (
	roleLeader    = 0
	statusHealthy = 0
)

// maxRedirects bounds how many times a resolve follows one node's word that
// another is the primary (the SDK's MAX_LEADER_REDIRECTS).
const maxRedirects = 3

// resolvePause is the wait between rounds of a resolve that found no
// primary: the cluster is between views (the SDK polls every 250 ms).
const resolvePause = 250 * time.Millisecond

// errNoPrimary is a resolve that reached no node naming a reachable primary.
var errNoPrimary = errors.New("iggy: no reachable node knows a reachable primary")

// clusterNode is one node of a GetClusterMetadata reply.
type clusterNode struct {
	name    string
	addr    string // ip:tcp_port
	leader  bool   // role Leader and status Healthy
	replica uint8  // 0.12 only: the node's replica id
}

// decodeClusterMetadata reads a GetClusterMetadata reply (server
// binary_protocol responses/system/get_cluster_metadata.rs): [name
// LongString][count u32] then per node [name LongString][ip LongString][tcp
// u16][quic u16][http u16][websocket u16][role u8][status u8].
// An empty body (a server without cluster metadata) is no nodes.
func decodeClusterMetadata(body []byte, d proto.Dialect) ([]clusterNode, error) {
	if len(body) == 0 {
		return nil, nil
	}
	r := proto.NewReader(body)
	r.LongString()
	n := r.U32()
	// A node is at least 18 bytes; refuse counts that cannot fit.
	if !r.Ok() || uint64(n)*18 > uint64(r.Len()) {
		return nil, fmt.Errorf("%w: cluster metadata", proto.ErrMalformed)
	}
	nodes := make([]clusterNode, 0, n)
	for range n {
		var replica uint8
		if d == proto.Dialect012 {
			replica = r.U8() // §9: replica id
		}
		name := r.LongString()
		ip := r.LongString()
		tcp := r.U16()
		r.U16() // quic
		r.U16() // http
		r.U16() // websocket
		role, status := r.U8(), r.U8()
		if !r.Ok() {
			return nil, fmt.Errorf("%w: cluster node", proto.ErrMalformed)
		}
		nodes = append(nodes, clusterNode{
			name:    string(name),
			addr:    net.JoinHostPort(string(ip), strconv.Itoa(int(tcp))),
			leader:  role == roleLeader && status == statusHealthy,
			replica: replica,
		})
	}
	return nodes, r.Complete()
}

// splitSeeds reads Config.Addr: one address or several separated by commas.
func splitSeeds(addr string) []string {
	var out []string
	for _, a := range strings.Split(addr, ",") {
		if a = strings.TrimSpace(a); a != "" && !containsAddr(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// sameAddr compares two host:port addresses, with localhost as 127.0.0.1
// (the SDK's is_same_address).
func sameAddr(a, b string) bool {
	norm := func(s string) string {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return strings.ToLower(s)
		}
		h = strings.ToLower(h)
		if h == "localhost" {
			h = "127.0.0.1"
		}
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		return net.JoinHostPort(h, p)
	}
	return norm(a) == norm(b)
}

func containsAddr(list []string, a string) bool {
	for _, x := range list {
		if sameAddr(x, a) {
			return true
		}
	}
	return false
}

// leader is where the client sends its sessions. Guarded by mu.
type leader struct {
	mu        sync.Mutex
	addr      string   // the primary's address: every session dials it
	gen       uint64   // bumps whenever addr changes
	seeds     []string // Config.Addr, split
	roster    []string // every node of the last cluster metadata
	replicas  []uint8  // 0.12: roster[i]'s replica id
	resolving chan struct{}
	lastErr   error     // why the last resolve failed; nil when addr is current
	downSince time.Time // when the current primary was first suspected
	closing   bool      // Close has begun: no new resolve may start
	started   bool      // Open found the first primary; later moves are failovers
	startGen  uint64    // gen when Open returned
	// multi is whether seeds or roster name more than one node (what
	// clustered reports), kept beside them so that every Read can ask
	// without taking mu.
	multi atomic.Bool

	// metrics
	failovers    uint64 // primary changes after start-up
	failoverTime metric.Histogram
}

// target returns the address sessions dial and its generation.
func (c *Client) target() (string, uint64) {
	l := &c.leader
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addr, l.gen
}

// clustered reports whether the client knows more than one node, from its
// seeds or the last cluster metadata: only then is a lost primary looked
// for elsewhere (a single server keeps today's reconnect behaviour).
func (c *Client) clustered() bool { return c.leader.multi.Load() }

// noteNodes sets multi from seeds and roster; the caller holds mu, or
// owns l alone (Open).
func (l *leader) noteNodes() { l.multi.Store(len(l.seeds) > 1 || len(l.roster) > 1) }

// setPrimary moves the sessions to addr; nodes, when non-nil, is the roster
// the primary was found in.
func (c *Client) setPrimary(addr string, nodes []clusterNode) {
	l := &c.leader
	l.mu.Lock()
	if nodes != nil {
		l.roster, l.replicas = l.roster[:0], l.replicas[:0]
		for _, n := range nodes {
			l.roster = append(l.roster, n.addr)
			l.replicas = append(l.replicas, n.replica)
		}
		l.noteNodes()
	}
	moved := !sameAddr(addr, l.addr)
	old := l.addr
	if moved {
		l.addr = addr
		l.gen++
	}
	var took time.Duration
	if !l.downSince.IsZero() {
		took = time.Since(l.downSince)
		l.downSince = time.Time{}
		if moved {
			l.failovers++
			l.failoverTime.Observe(took)
		}
	}
	l.lastErr = nil
	started := l.started
	l.mu.Unlock()
	if moved && started {
		c.log.Warn("iggy: following the cluster's new primary", "from", old, "to", addr, "after", took.Round(time.Millisecond))
	}
}

// suspect reports that the primary at addr failed a session (refused,
// reset, evicted, or answered "not accepted"). In a cluster it starts one
// background resolve; requests wait for it in awaitPrimary.
func (c *Client) suspect(addr string, why error) {
	if !c.clustered() {
		return
	}
	l := &c.leader
	l.mu.Lock()
	defer l.mu.Unlock()
	// closing is read under mu, so a resolve's wg.Add happens before Close's
	// wg.Wait or not at all.
	if l.closing || !sameAddr(addr, l.addr) || l.resolving != nil {
		return
	}
	if l.downSince.IsZero() {
		l.downSince = time.Now()
	}
	done := make(chan struct{})
	l.resolving = done
	// A 58 is routine in a cluster (a partition led by another node, a
	// partition mid view change): not worth a warning each time; a real
	// move is logged by setPrimary, a partition's by setRoute.
	level := slog.LevelWarn
	if codeOf(why) == proto.CodeTransientNotAccepted {
		level = slog.LevelDebug
	}
	c.log.Log(context.Background(), level, "iggy: primary unreachable, looking for the cluster's primary", "addr", addr, "err", why)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.resolveLoop(done)
	}()
}

// resolveLoop looks for the primary until it finds one or the client closes.
func (c *Client) resolveLoop(done chan struct{}) {
	defer func() {
		l := &c.leader
		l.mu.Lock()
		l.resolving = nil
		l.mu.Unlock()
		close(done)
	}()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*c.cfg.DialTimeout)
		addr, nodes, err := c.resolveOnce(ctx)
		cancel()
		if err == nil {
			c.setPrimary(addr, nodes)
			return
		}
		c.leader.mu.Lock()
		c.leader.lastErr = err
		c.leader.mu.Unlock()
		select {
		case <-c.done:
			return
		case <-time.After(resolvePause):
		}
	}
}

// awaitPrimary waits, within ctx, for a resolve under way to end. It fails
// fast with the resolve's last error when ctx ends first.
func (c *Client) awaitPrimary(ctx context.Context) error {
	l := &c.leader
	l.mu.Lock()
	ch, lastErr := l.resolving, l.lastErr
	l.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		if lastErr == nil {
			lastErr = errNoPrimary
		}
		return fmt.Errorf("%w: %w", ErrUnreachable, lastErr)
	case <-c.done:
		return ErrClosed
	}
}

// resolveOnce asks every node it knows (the current address, the roster,
// the seeds) for the cluster metadata and returns the first primary a node
// names and that confirms it itself (following at most maxRedirects hops).
// A single-node server is its own primary.
func (c *Client) resolveOnce(ctx context.Context) (string, []clusterNode, error) {
	l := &c.leader
	l.mu.Lock()
	cands := append([]string{l.addr}, l.roster...)
	cands = append(cands, l.seeds...)
	l.mu.Unlock()
	var tried []string
	lastErr := errNoPrimary
	for _, cand := range cands {
		if cand == "" || containsAddr(tried, cand) {
			continue
		}
		tried = append(tried, cand)
		addr, nodes, err := c.follow(ctx, cand)
		if err == nil {
			return addr, nodes, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return "", nil, lastErr
}

// follow asks addr who the primary is and follows the answer until a node
// names itself.
func (c *Client) follow(ctx context.Context, addr string) (string, []clusterNode, error) {
	for hop := 0; hop <= maxRedirects; hop++ {
		nodes, err := c.probe(ctx, addr)
		if err != nil {
			return "", nil, err
		}
		if len(nodes) <= 1 {
			return addr, nodes, nil // single node: it takes writes itself
		}
		next := ""
		for _, n := range nodes {
			if n.leader {
				next = n.addr
				break
			}
		}
		switch {
		case next == "":
			return "", nil, fmt.Errorf("%w: %s names no primary", errNoPrimary, addr)
		case sameAddr(next, addr):
			return addr, nodes, nil
		}
		addr = next
	}
	return "", nil, fmt.Errorf("%w: more than %d redirects", errNoPrimary, maxRedirects)
}

// probe logs in to addr on a session of its own and reads the cluster
// metadata.
func (c *Client) probe(ctx context.Context, addr string) ([]clusterNode, error) {
	s := newSession(c)
	s.probe = true
	defer s.close()
	if err := s.connectTo(ctx, addr); err != nil {
		return nil, err
	}
	return s.clusterMetadata(ctx)
}

// clusterMetadata sends GetClusterMetadata on a connected session.
func (s *session) clusterMetadata(ctx context.Context) ([]clusterNode, error) {
	body, _, err := s.do(ctx, proto.CodeGetClusterMetadata, s.begin())
	if err != nil {
		return nil, err
	}
	return decodeClusterMetadata(body, s.dialect)
}

// checkPrimary reads the cluster metadata on a connected session and
// reports whether the node it is connected to is (still) the primary; when
// it is not, it moves the client to the primary the node names and returns
// false. Open uses it on its first session; the keep-alive loop on one idle
// session, so a view change is seen even when the old primary stays up.
func (c *Client) checkPrimary(ctx context.Context, s *session) (bool, error) {
	nodes, err := s.clusterMetadata(ctx)
	if err != nil {
		return false, err
	}
	if len(nodes) <= 1 {
		c.setPrimary(s.addr, nodes)
		return true, nil
	}
	for _, n := range nodes {
		if !n.leader {
			continue
		}
		if sameAddr(n.addr, s.addr) {
			c.setPrimary(s.addr, nodes)
			return true, nil
		}
		addr, nodes, err := c.follow(ctx, n.addr)
		if err != nil {
			return false, err
		}
		c.setPrimary(addr, nodes)
		return false, nil
	}
	return false, fmt.Errorf("%w: %s names no primary", errNoPrimary, s.addr)
}

// samePrimary waits, until deadline, for a resolve under way to end and
// reports whether it kept the primary of generation gen. Only a cluster
// resolves: a single server answers false (its 58s are replayed as before).
func (c *Client) samePrimary(ctx context.Context, deadline time.Time, gen uint64) bool {
	if !c.clustered() {
		return false
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if c.awaitPrimary(wctx) != nil {
		return false
	}
	_, now := c.target()
	return now == gen
}

// markStarted ends Open's search: from now on a move is a failover.
func (c *Client) markStarted() {
	l := &c.leader
	l.mu.Lock()
	l.started, l.startGen = true, l.gen
	l.mu.Unlock()
}

// primaryUnknown reports why no primary is known while a resolve runs.
func (c *Client) primaryUnknown() error {
	l := &c.leader
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.resolving == nil {
		return nil
	}
	if l.lastErr != nil {
		return l.lastErr
	}
	return errNoPrimary
}

// writeClusterMetrics appends the leader-awareness series.
func (c *Client) writeClusterMetrics(w io.Writer) {
	l := &c.leader
	l.mu.Lock()
	addr, changes, failovers, nodes := l.addr, l.gen-l.startGen, l.failovers, len(l.roster)
	resolving := l.resolving != nil
	l.mu.Unlock()
	metric.Header(w, "kiggy_iggy_primary", "gauge", "The Iggy node the sessions send to (1 for the current primary's address).")
	fmt.Fprintf(w, "kiggy_iggy_primary{addr=%q} 1\n", addr)
	metric.Single(w, "kiggy_iggy_cluster_nodes", "gauge", "Nodes in the last Iggy cluster metadata (1 for a single server).", nodes)
	metric.Single(w, "kiggy_iggy_primary_changes_total", "counter", "Times the client moved its sessions to another primary (view changes seen).", changes)
	metric.Single(w, "kiggy_iggy_failovers_total", "counter", "Primary changes after the primary became unreachable.", failovers)
	metric.Header(w, "kiggy_iggy_failover_duration_seconds", "histogram", "Time from the primary's first failure to the sessions' move to the new primary.")
	l.failoverTime.Write(w, "kiggy_iggy_failover_duration_seconds", "", "")
	b := 0
	if resolving {
		b = 1
	}
	metric.Single(w, "kiggy_iggy_primary_unknown", "gauge", "1 while the client is looking for a primary (no writes are accepted).", b)
	c.writeRouteMetrics(w)
}
