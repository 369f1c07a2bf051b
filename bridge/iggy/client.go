// Package iggy is kiggy's Apache Iggy binary-protocol client (protocol 0.11,
// Iggy 0.9, and 0.12, Iggy 0.10): a pool of
// logged-in sessions speaking the 256-byte VSR framing (docs/design/iggy-protocol.md),
// implementing store.Log on one Iggy stream. Kafka topic T is Iggy topic T in
// Config.Stream, Kafka partition p is Iggy partition p, Kafka offsets are Iggy
// offsets (docs/design/record-mapping.md §4). docs/IGGY.md describes the design.
//
// Streams and topics are addressed by name (string identifiers) on the wire,
// never by cached numeric id: Iggy reuses the numeric slots of deleted topics,
// so a cached id could silently point at another topic after someone else
// deletes and creates topics. The client caches each topic's partition count
// to answer store.ErrUnknownPartition without a round trip.
//
// A bare section number (§1.8) in this package's comments refers to
// docs/design/iggy-protocol.md.
package iggy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// Client is an Iggy client implementing store.Log. It is safe for
// concurrent use.
type Client struct {
	// Immutable after Open.
	cfg  Config
	log  *slog.Logger
	done chan struct{}
	wg   sync.WaitGroup

	idle      chan *session // sessions not in use
	reads     chan struct{} // a token per session a read holds (Config.ReadSessions; acquireRead)
	loginTurn chan struct{} // held by the primary pool's one login in progress (logins.go)
	handoff   chan *session // connected sessions released to requests waiting for loginTurn

	lastLoginFailure atomic.Pointer[loginFailure]
	sessions         []*session
	closed           atomic.Bool
	losses           atomic.Uint64 // connections lost under a request, ever (stale.go)
	lastLogin        atomic.Int64  // when a session last logged in, Unix ns
	avgMsg           atomic.Int64  // EWMA of polled message size, bytes
	maxReply         uint32        // largest reply frame read; 0 = proto.MaxFrameSize (tests lower it)

	mu       sync.RWMutex
	topics   map[string]topicEntry
	buffered map[string]struct{} // topics seen buffered (warned once each)

	offMu   sync.Mutex
	offsets map[offsetKey]memOffset
	commits *commitLog  // nil for the system-stream client itself
	state   systemState // the system store (system.go)
	// compactKick wakes the compactor (compactor.go); nil when none runs.
	compactKick chan struct{}
	// stateRewrites counts system store writes appended again because
	// they landed after a switch or in a deleted generation.
	stateRewrites atomic.Uint64
	// commitLogShared: the compactor found another instance's records in
	// the commit log (compactCommitsAlone); only the compactor uses it.
	commitLogShared bool

	// dialect is the protocol dialect the server took at the last login
	// (a proto.Dialect; 0 before the first): new sessions log in with it.
	dialect atomic.Uint32

	tokens  *sessionTokens // nil: every login uses the configured credentials (tokens.go)
	leader  leader
	routes  routes // partitions whose primary is not the metadata primary (routes.go)
	metrics clientMetrics
	cache   *readCache // nil when Config.ReadCacheBytes < 0
	waits   waits      // readiness-wait sessions (waits.go)
}

var (
	_ store.Log            = (*Client)(nil)
	_ store.PartitionSizer = (*Client)(nil)
	_ store.SystemVersions = (*Client)(nil)
)

// Open connects to Iggy, logs in and makes sure Config.Stream exists. Its
// errors tell start-up failures apart: errors.Is(err, ErrUnreachable),
// ErrAuth (wrong credentials) or ErrProtocol (incompatible server).
func Open(ctx context.Context, cfg Config) (*Client, error) {
	cfg.normalize()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{
		cfg:       cfg,
		log:       cfg.Logger,
		done:      make(chan struct{}),
		idle:      make(chan *session, cfg.PoolSize),
		reads:     make(chan struct{}, cfg.ReadSessions),
		loginTurn: make(chan struct{}, 1),
		handoff:   make(chan *session),
		topics:    map[string]topicEntry{},
		buffered:  map[string]struct{}{},
		offsets:   map[offsetKey]memOffset{},
	}
	c.avgMsg.Store(1024)
	switch {
	case cfg.sharedTokens != nil:
		c.tokens = cfg.sharedTokens
	case cfg.Token == "" && !cfg.PasswordLogins && !cfg.system:
		c.tokens = &sessionTokens{}
	}
	c.leader.seeds = splitSeeds(cfg.Addr)
	c.leader.noteNodes()
	for range cfg.PoolSize {
		s := newSession(c)
		c.sessions = append(c.sessions, s)
		c.idle <- s
	}
	s, err := c.start(ctx)
	if err != nil {
		c.Close()
		return nil, err
	}
	err = c.ensureStream(ctx, s)
	if err == nil {
		c.maybeMintToken(ctx, s)
	}
	c.release(s)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.markStarted()
	if cfg.ReadCacheBytes > 0 && !cfg.system {
		c.cache = newReadCache(c, cfg.ReadCacheBytes, cfg.TailWindowBytes, cfg.SoleWriter)
		c.cache.start(readAheadWorkers(cfg.PoolSize))
	}
	if !cfg.system && !cfg.noCommitLog {
		if err := c.openCommitLog(ctx); err != nil {
			c.Close()
			return nil, err
		}
	}
	if !cfg.system {
		c.startWaits()
	}
	if cfg.PingInterval > 0 {
		c.wg.Add(1)
		go c.keepAlive()
	}
	primary, _ := c.target()
	c.log.Info("iggy: connected", "addr", primary, "seeds", cfg.Addr, "stream", cfg.Stream, "server", s.server, "protocol", s.dialect.String(), "sessions", cfg.PoolSize, "durability", cfg.Durability.String())
	return c, nil
}

// start connects the first session to the primary: it tries the seeds in
// order, reads the cluster metadata of the first that answers and moves to
// the primary it names (docs/IGGY.md, "Iggy clusters"), waiting through a
// leaderless window of up to DialTimeout × 4. A server without cluster
// metadata is taken as a single node.
func (c *Client) start(ctx context.Context) (*session, error) {
	var lastErr error
	deadline := time.Now().Add(4 * c.cfg.DialTimeout)
	for round := 0; ; round++ {
		for _, seed := range c.leader.seeds {
			c.setPrimary(seed, nil)
			s, err := c.acquire(ctx)
			if err != nil {
				lastErr = err
				if errors.Is(err, ErrAuth) || errors.Is(err, ErrProtocol) && !errors.Is(err, ErrUnreachable) || ctx.Err() != nil {
					return nil, err
				}
				continue
			}
			ok, err := c.checkPrimary(ctx, s)
			switch {
			case err != nil && s.conn != nil && len(c.leader.seeds) == 1:
				// No cluster metadata: an older single server.
				c.log.Debug("iggy: no cluster metadata; taking the server as a single node", "addr", seed, "err", err)
				return s, nil
			case err != nil:
				lastErr = err
				s.close()
				c.release(s)
				continue
			case !ok:
				// The seed named another primary: s is moved on ensure.
				c.release(s)
				if s, err = c.acquire(ctx); err != nil {
					lastErr = err
					continue
				}
			}
			return s, nil
		}
		if round == 0 && len(c.leader.seeds) == 1 || time.Now().After(deadline) || ctx.Err() != nil {
			if lastErr == nil {
				lastErr = errNoPrimary
			}
			return nil, lastErr
		}
		select {
		case <-ctx.Done():
			return nil, lastErr
		case <-time.After(resolvePause):
		}
	}
}

// ensureStream creates Config.Stream unless it exists.
func (c *Client) ensureStream(ctx context.Context, s *session) error {
	body, _, err := s.do(ctx, proto.CodeGetStream, proto.AppendStringID(s.begin(), c.cfg.Stream))
	if err != nil {
		return err
	}
	if len(body) > 0 {
		return nil // §3.4 GetStream: found
	}
	_, _, err = s.do(ctx, proto.CodeCreateStream, proto.AppendName(s.begin(), c.cfg.Stream))
	if codeOf(err) == proto.CodeStreamNameAlreadyExists {
		return nil // created concurrently by another gateway
	}
	return err
}

// acquire takes an idle session and connects it if needed.
func (c *Client) acquire(ctx context.Context) (*session, error) {
	var s *session
	select {
	case s = <-c.idle:
	default:
		c.metrics.sessionWaits.Add(1)
		select {
		case s = <-c.idle:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, ErrClosed
		}
	}
	if c.closed.Load() {
		c.idle <- s
		return nil, ErrClosed
	}
	c.metrics.inUse.Add(1)
	c.dropIfStale(s)
	turn := false
	if s.conn == nil {
		o, held, err := c.awaitLogin(ctx, s)
		if err != nil {
			c.release(s)
			return nil, err
		}
		s, turn = o, held
	}
	err := s.ensure(ctx)
	if turn {
		c.endLogin()
	}
	if err != nil {
		c.release(s)
		return nil, err
	}
	return s, nil
}

// release returns a session acquire gave to the pool.
func (c *Client) release(s *session) {
	c.metrics.inUse.Add(-1)
	s.trim()
	slot := s.readSlot
	s.readSlot = nil
	c.putIdle(s)
	leaveShare(slot)
}

// keepAlive pings sessions idle for PingInterval and reconnects broken ones
// in the background (§1.8: "The SDKs send Ping every 5 s").
func (c *Client) keepAlive() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.PingInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		checked, minted := !c.clustered(), false
		for range len(c.sessions) {
			// A round connects idle sessions one by one (a login each): Close
			// must not wait for all of them.
			select {
			case <-c.done:
				return
			default:
			}
			var s *session
			select {
			case s = <-c.idle:
			default:
			}
			if s == nil {
				break
			}
			if !checked && s.conn != nil {
				// One session a round asks whether its node is still the
				// primary: a view change may leave the old one up.
				checked = true
				ctx, cancel := context.WithTimeout(context.Background(), c.cfg.DialTimeout)
				if _, err := c.checkPrimary(ctx, s); err != nil {
					c.log.Debug("iggy: cluster metadata check failed", "addr", s.addr, "err", err)
				}
				cancel()
			}
			c.dropIfStale(s) // peeked now, connected again by ping
			c.ping(s)
			if !minted && s.conn != nil {
				minted = true // at most one mint a round, when one is due
				ctx, cancel := context.WithTimeout(context.Background(), c.cfg.DialTimeout)
				c.maybeMintToken(ctx, s)
				cancel()
			}
			c.putIdle(s)
		}
	}
}

// ping keeps one idle session alive; failures only close it.
func (c *Client) ping(s *session) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.DialTimeout)
	defer cancel()
	if s.conn == nil {
		if !time.Now().After(s.retryAt) {
			return
		}
		select {
		case c.loginTurn <- struct{}{}: // in the background: only when no request logs in
		default:
			return
		}
		defer c.endLogin()
		// Longer than the dial's and the login's own timeouts, so that a
		// server that does not answer fails the login by those, and the
		// requests waiting for the turn learn of it (logins.go).
		lctx, lcancel := context.WithTimeout(context.Background(), 2*c.cfg.DialTimeout)
		defer lcancel()
		if err := s.ensure(lctx); err != nil {
			addr, _ := c.target()
			c.log.Warn("iggy: reconnect failed", "addr", addr, "err", err)
		}
		return
	}
	if time.Since(s.lastUsed) < c.cfg.PingInterval {
		return
	}
	if _, _, err := s.do(ctx, proto.CodePing, s.begin()); err != nil {
		c.log.Warn("iggy: keep-alive ping failed", "err", err)
		s.close()
	}
}

// Ready pings Iggy on a pooled session; it fails at once while the client
// is looking for a cluster's primary.
func (c *Client) Ready(ctx context.Context) error {
	if err := c.primaryUnknown(); err != nil {
		return unavailable(err)
	}
	s, err := c.acquire(ctx)
	if err != nil {
		return unavailable(err)
	}
	defer c.release(s)
	if _, _, err := s.do(ctx, proto.CodePing, s.begin()); err != nil {
		return unavailable(err)
	}
	return nil
}

// Close closes every session, waiting for requests in flight to finish.
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	if c.commits != nil {
		c.commits.sys.Close()
	}
	c.leader.mu.Lock()
	c.leader.closing = true
	c.leader.mu.Unlock()
	c.cache.close()
	close(c.done)
	c.wg.Wait()
	c.deleteSessionToken()
	timeout := time.NewTimer(c.cfg.RequestTimeout + time.Second)
	defer timeout.Stop()
	for range len(c.sessions) {
		select {
		case s := <-c.idle:
			s.close()
		case <-timeout.C:
			return errors.New("iggy: close: requests still in flight")
		}
	}
	return c.closeRoutes(timeout.C)
}

// replyLimit is the largest reply frame the client reads.
func (c *Client) replyLimit() uint32 {
	if c.maxReply == 0 {
		return proto.MaxFrameSize
	}
	return c.maxReply
}

// unavailable wraps a failure before anything reached the server.
func unavailable(err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}
