// Package kclient sends Kafka requests from one kiggy instance to another,
// as Kafka brokers do to each other: the transaction coordinator of a kiggy
// cluster sends WriteTxnMarkers to the instance that leads each partition.
//
// A Pool keeps one TCP connection per node, dialed on first use, and
// pipelines concurrent Calls on it with correlation ids (Kafka answers in
// order on a connection). The caller encodes the request body and decodes
// the response body with wire's codecs; kclient frames them with the request
// header (v1, or v2 when flexible) and strips the response header (v0, or v1
// when flexible; ApiVersions answers always use v0, KIP-511).
//
// Limits: no TLS; SASL PLAIN only (no SCRAM yet, and no re-authentication,
// KIP-368); no ApiVersions negotiation (the caller picks versions both sides
// know); a Call whose context ends closes its connection, failing the other
// Calls on it, rather than keep a connection whose late answer would have
// to be discarded; no retries: a failed Call is retried by its caller (the
// next Call redials).
package kclient

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/wire"
)

// MaxResponseBytes caps the size of a response frame: a larger size prefix
// fails the connection (the peer is not speaking Kafka, or is broken).
const MaxResponseBytes = 100 << 20

// DefaultDialTimeout is the dial (and SASL) timeout when Config.DialTimeout
// is zero.
const DefaultDialTimeout = 10 * time.Second

// ErrClosed is returned by the Calls of a closed Pool, and by the Calls
// still waiting when it is closed.
var ErrClosed = errors.New("kclient: pool closed")

// Config configures a Pool.
type Config struct {
	// ClientID is the request header's client id, e.g. "kiggy-1".
	ClientID string
	// Resolve returns where node listens (host:port). It is asked at each
	// Call; an answer other than the current connection's address replaces
	// that connection.
	Resolve func(node int32) (addr string, ok bool)
	// DialTimeout bounds dialing and SASL authentication of a connection;
	// zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// SASL authenticates each connection; nil means none (PLAINTEXT
	// listener).
	SASL *SASL
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
}

// SASL is the authentication a Pool performs on each new connection:
// SaslHandshake v1, then SaslAuthenticate v2.
type SASL struct {
	// Mechanism is the SASL mechanism; only "PLAIN" is implemented.
	Mechanism string
	// Username and Password are the credentials.
	Username, Password string
}

// AuthError is a SASL handshake or authentication that the peer refused.
type AuthError struct {
	// Node is the node that refused.
	Node int32
	// API is wire.KeySaslHandshake or wire.KeySaslAuthenticate.
	API wire.APIKey
	// Code is the peer's error code, e.g. SASL_AUTHENTICATION_FAILED.
	Code wire.ErrorCode
	// Message is the peer's error message, if any.
	Message string
}

// Error names the API and the Kafka error, e.g. "kclient: node 2:
// SaslAuthenticate: SASL_AUTHENTICATION_FAILED: bad password".
func (e *AuthError) Error() string {
	s := fmt.Sprintf("kclient: node %d: %v: %v", e.Node, e.API, e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Pool holds one connection per node. Its methods are safe for concurrent
// use.
type Pool struct {
	cfg    Config
	log    *slog.Logger
	ctx    context.Context // ended by Close: stops dials in progress
	cancel context.CancelFunc
	wg     sync.WaitGroup // connection goroutines

	mu     sync.Mutex
	conns  map[int32]*conn
	closed bool
}

// New returns a Pool; it dials nothing until the first Call to a node.
func New(cfg Config) *Pool {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{cfg: cfg, log: log, ctx: ctx, cancel: cancel, conns: map[int32]*conn{}}
}

// Call sends one request (apiKey, version, the already-encoded request body)
// to node and returns the response body (after the response header; the
// caller decodes it). flexible says whether version is a flexible version
// of apiKey: the request header is then v2 and the response header v1
// (except ApiVersions, whose response header is always v0).
//
// If ctx ends first Call returns ctx.Err() and closes the connection,
// failing the other Calls on it; the next Call redials. Any I/O or framing
// error fails every Call on the connection and drops it.
func (p *Pool) Call(ctx context.Context, node int32, apiKey, version int16, flexible bool, body []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := p.conn(node)
	if err != nil {
		return nil, err
	}
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	w := &waiter{
		apiKey:   apiKey,
		flexible: flexible && wire.APIKey(apiKey) != wire.KeyAPIVersions,
		done:     make(chan result, 1),
	}
	// A ctx that ends while the request is written or awaited closes the
	// connection, which unblocks the write and fails w.
	stop := context.AfterFunc(ctx, func() {
		c.fail(fmt.Errorf("kclient: node %d: a call was abandoned: %w", node, context.Cause(ctx)))
	})
	defer stop()
	if err := c.send(w, apiKey, version, flexible, p.cfg.ClientID, body); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	r := <-w.done
	if r.err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, r.err
	}
	return r.body, nil
}

// Close closes every connection, failing their waiting Calls with
// ErrClosed, and waits for the connections' goroutines. Later Calls fail
// with ErrClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.cancel()
	for _, c := range conns {
		c.fail(ErrClosed)
	}
	p.wg.Wait()
	return nil
}

// conn returns node's live connection at its current address, starting a
// new one if there is none.
func (p *Pool) conn(node int32) (*conn, error) {
	if p.cfg.Resolve == nil {
		return nil, errors.New("kclient: Config.Resolve is nil")
	}
	addr, ok := p.cfg.Resolve(node)
	if !ok {
		return nil, fmt.Errorf("kclient: node %d: no known address", node)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	old := p.conns[node]
	if old != nil && old.addr == addr && old.alive() {
		p.mu.Unlock()
		return old, nil
	}
	c := &conn{pool: p, node: node, addr: addr, ready: make(chan struct{})}
	p.conns[node] = c
	p.wg.Add(1)
	p.mu.Unlock()
	if old != nil && old.addr != addr {
		p.log.Info("kclient: node address changed", "node", node, "from", old.addr, "to", addr)
		old.fail(fmt.Errorf("kclient: node %d moved from %s to %s", node, old.addr, addr))
	}
	go c.run()
	return c, nil
}

// drop forgets c if it is still node's connection.
func (p *Pool) drop(c *conn) {
	p.mu.Lock()
	if p.conns[c.node] == c {
		delete(p.conns, c.node)
	}
	p.mu.Unlock()
}

// conn is one connection to a node. run dials it (and authenticates), then
// reads responses; send writes requests. The waiters queue in write order,
// which is the order of the answers.
type conn struct {
	pool  *Pool
	node  int32
	addr  string
	ready chan struct{} // closed once dialed (nc set) or failed (err set)

	wmu sync.Mutex // serialises writes, so the queue is in write order

	mu      sync.Mutex
	nc      net.Conn
	err     error // set once: the connection is dead
	pending []*waiter
	nextID  int32
}

// waiter is one Call awaiting its response.
type waiter struct {
	id       int32
	apiKey   int16
	flexible bool // the response header is v1
	done     chan result
}

type result struct {
	body []byte
	err  error
}

func (c *conn) alive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil
}

// fail kills the connection with err (the first error wins), fails every
// waiter and forgets the connection in the pool.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	nc, pending := c.nc, c.pending
	c.pending = nil
	c.mu.Unlock()
	if nc != nil {
		nc.Close()
	}
	for _, w := range pending {
		w.done <- result{err: err}
	}
	c.pool.drop(c)
	if !errors.Is(err, ErrClosed) {
		c.pool.log.Debug("kclient: connection dropped", "node", c.node, "addr", c.addr, "err", err)
	}
}

// run dials and authenticates the connection, then reads its responses
// until it fails.
func (c *conn) run() {
	defer c.pool.wg.Done()
	nc, br, err := c.dial()
	c.mu.Lock()
	if err == nil && c.err != nil {
		err = c.err // failed (closed, moved) while dialing
	}
	if err == nil {
		c.nc = nc
	}
	c.mu.Unlock()
	if err != nil {
		if nc != nil {
			nc.Close()
		}
		c.fail(err)
		close(c.ready)
		return
	}
	close(c.ready)
	c.pool.log.Debug("kclient: connected", "node", c.node, "addr", c.addr)
	c.fail(c.read(br))
}

// dial connects to c.addr and authenticates, within the dial timeout.
func (c *conn) dial() (net.Conn, *bufio.Reader, error) {
	cfg := &c.pool.cfg
	ctx, cancel := context.WithTimeout(c.pool.ctx, cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("kclient: node %d: dial %s: %w", c.node, c.addr, err)
	}
	br := bufio.NewReader(nc)
	if cfg.SASL != nil {
		deadline, _ := ctx.Deadline()
		nc.SetDeadline(deadline)
		stop := context.AfterFunc(ctx, func() { nc.Close() })
		err := c.authenticate(nc, br, cfg.SASL)
		if !stop() {
			// The timeout or Close closed nc under authenticate.
			err = fmt.Errorf("kclient: node %d: SASL: %w (%v)", c.node, ctx.Err(), err)
		}
		if err != nil {
			return nc, nil, err
		}
		nc.SetDeadline(time.Time{})
	}
	return nc, br, nil
}

// authenticate runs SaslHandshake v1 and SaslAuthenticate v2 on a fresh
// connection, before any other request (correlation ids 0 and 1).
func (c *conn) authenticate(nc net.Conn, br *bufio.Reader, s *SASL) error {
	if s.Mechanism != "PLAIN" {
		return fmt.Errorf("kclient: SASL mechanism %q not implemented (only PLAIN)", s.Mechanism)
	}
	clientID := c.pool.cfg.ClientID
	hsReq := wire.SaslHandshakeRequest{Mechanism: s.Mechanism}
	body, err := roundTrip(nc, br, int16(wire.KeySaslHandshake), 1, false, 0, clientID, hsReq.AppendTo(nil, 1))
	if err != nil {
		return fmt.Errorf("kclient: node %d: SaslHandshake: %w", c.node, err)
	}
	var hs wire.SaslHandshakeResponse
	if err := hs.Decode(body, 1); err != nil {
		return fmt.Errorf("kclient: node %d: SaslHandshake response: %w", c.node, err)
	}
	if hs.ErrorCode != wire.NoError {
		return &AuthError{Node: c.node, API: wire.KeySaslHandshake, Code: hs.ErrorCode,
			Message: fmt.Sprintf("server mechanisms %v", hs.Mechanisms)}
	}
	// PLAIN (RFC 4616): authzid NUL authcid NUL passwd, authzid empty.
	token := make([]byte, 0, 2+len(s.Username)+len(s.Password))
	token = append(append(append(append(token, 0), s.Username...), 0), s.Password...)
	auReq := wire.SaslAuthenticateRequest{AuthBytes: token}
	body, err = roundTrip(nc, br, int16(wire.KeySaslAuthenticate), 2, true, 1, clientID, auReq.AppendTo(nil, 2))
	if err != nil {
		return fmt.Errorf("kclient: node %d: SaslAuthenticate: %w", c.node, err)
	}
	var au wire.SaslAuthenticateResponse
	if err := au.Decode(body, 2); err != nil {
		return fmt.Errorf("kclient: node %d: SaslAuthenticate response: %w", c.node, err)
	}
	if au.ErrorCode != wire.NoError {
		return &AuthError{Node: c.node, API: wire.KeySaslAuthenticate, Code: au.ErrorCode, Message: au.ErrorMessage.S}
	}
	return nil
}

// roundTrip writes one request and reads its response on a connection
// that nothing else uses yet (authentication).
func roundTrip(nc net.Conn, br *bufio.Reader, apiKey, version int16, flexible bool, id int32, clientID string, body []byte) ([]byte, error) {
	if _, err := nc.Write(appendFrame(nil, apiKey, version, flexible, id, clientID, body)); err != nil {
		return nil, err
	}
	frame, err := readFrame(br)
	if err != nil {
		return nil, err
	}
	return parseResponseHeader(frame, id, flexible)
}

// send queues w and writes its request.
func (c *conn) send(w *waiter, apiKey, version int16, flexible bool, clientID string, body []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	w.id = c.nextID
	c.nextID++
	c.pending = append(c.pending, w)
	nc := c.nc
	c.mu.Unlock()
	if _, err := nc.Write(appendFrame(nil, apiKey, version, flexible, w.id, clientID, body)); err != nil {
		c.fail(fmt.Errorf("kclient: node %d: write: %w", c.node, err))
		// w was failed with the others (or by an earlier failure).
	}
	return nil
}

// read delivers each response to the oldest waiter until the connection
// fails; it returns why.
func (c *conn) read(br *bufio.Reader) error {
	for {
		frame, err := readFrame(br)
		if err != nil {
			return fmt.Errorf("kclient: node %d: read: %w", c.node, err)
		}
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.mu.Unlock()
			return fmt.Errorf("kclient: node %d: a response nobody waits for", c.node)
		}
		w := c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
		c.mu.Unlock()
		body, err := parseResponseHeader(frame, w.id, w.flexible)
		if err != nil {
			err = fmt.Errorf("kclient: node %d: %v response: %w", c.node, wire.APIKey(w.apiKey), err)
			w.done <- result{err: err}
			return err
		}
		w.done <- result{body: body}
	}
}

// appendFrame appends a request frame: the size, the request header (v1:
// api key, version, correlation id, client id; v2 adds an empty tagged
// field section) and the body.
func appendFrame(dst []byte, apiKey, version int16, flexible bool, id int32, clientID string, body []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = wire.AppendInt16(dst, apiKey)
	dst = wire.AppendInt16(dst, version)
	dst = wire.AppendInt32(dst, id)
	dst = wire.AppendNullableString(dst, clientID, true)
	dst = wire.AppendEmptyTags(dst, flexible)
	dst = append(dst, body...)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// errFrameSize is a response size prefix that cannot be a Kafka response.
var errFrameSize = errors.New("bad response size")

// readFrame reads one size-prefixed frame into a new buffer.
func readFrame(br *bufio.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > MaxResponseBytes {
		return nil, fmt.Errorf("%w %d (want 4 to %d)", errFrameSize, n, MaxResponseBytes)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(br, frame); err != nil {
		return nil, err
	}
	return frame, nil
}

// parseResponseHeader checks the response header of frame (v0: the
// correlation id; v1 when flexible: plus tagged fields, skipped) and returns
// the body.
func parseResponseHeader(frame []byte, id int32, flexible bool) ([]byte, error) {
	rd := wire.NewReader(frame)
	got := rd.Int32()
	if flexible {
		rd.SkipTags()
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("response header: %w", err)
	}
	if got != id {
		return nil, fmt.Errorf("correlation id %d, want %d", got, id)
	}
	return rd.Rest(), nil
}
