package iggy

// A session is one TCP connection logged in to Iggy. The protocol allows one
// request in flight per connection (§1.8 "Lockstep"), so a session is owned
// by exactly one goroutine at a time: whoever took it from Client.idle. All
// its fields are owned by that holder; nothing here is locked.
//
// Request numbers: the counter starts at 1 after login and every request
// consumes one (§1.4: "Jumps are allowed, so a simpler client can increment
// the counter for every request. That is legal"), so a metadata request
// number is never reused for a different operation.

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/zeebo/xxh3"
)

// SDK name and version kiggy announces at login (§3.3 ClientVersionInfo).
const (
	sdkName    = "kiggy"
	sdkVersion = "0.1.0"
)

// transientRetry is how often a 57/58 reply is replayed (§1.8: "The SDKs
// retry about every 50 ms until the deadline").
const transientRetry = 50 * time.Millisecond

// replyReadBuf is the size of a session's read buffer: a small reply (a
// SendMessages confirmation: 280 bytes) comes in with its header in one
// read call instead of two; a large one is read past it, into the reply
// buffer directly.
const replyReadBuf = 16 << 10

// keepReplyBuf is the largest reply buffer a session keeps between requests.
const keepReplyBuf = 4 << 20

type session struct {
	c *Client

	conn      net.Conn        // nil when disconnected
	raw       syscall.RawConn // conn's socket (under TLS too), for peerClosed; nil if not TCP
	tls       bool            // conn runs TLS
	addr      string          // the node conn is connected to
	gen       uint64          // the primary generation addr was dialled under
	probe     bool            // a resolve's own session, outside the pool
	node      *nodePool       // a routed node's session (routes.go), nil for the pool's
	readSlot  chan struct{}   // the read share it holds a token of (acquireRead), nil for other requests
	clientID  proto.ClientID
	dialect   proto.Dialect // the dialect of the current login
	bind      [proto.BindSecretSize]byte
	sessionID uint64
	next      uint64 // next request number
	server    string // server version from the login reply

	lastUsed time.Time
	wasUp    bool      // the session has been connected before (a reconnect is counted)
	retryAt  time.Time // earliest next connection attempt: the last failed one + backoff
	backoff  time.Duration
	lastErr  error

	// seenLosses is the client's losses when this session last checked
	// its idle connection (stale.go); peekFn is s.peekFD, bound once so a
	// peek allocates nothing; the peek's result lands in peek.
	seenLosses  uint64
	peekFn      func(fd uintptr) bool
	peek        peekResult
	peekScratch peekScratch

	buf    []byte        // request scratch: VSR header + body
	rbuf   []byte        // reply frame
	br     *bufio.Reader // reads conn: a reply's header and body in one read
	hasher xxh3.Hasher
	msg    message.Message
	it     proto.RecordIter
	marks  []walkMark  // scratch of the read cache's scanRecords
	iovs   [][]byte    // scratch: the pieces of a vectored write
	iov    net.Buffers // the pieces a vectored write has left to write
}

func newSession(c *Client) *session {
	s := &session{c: c, buf: make([]byte, proto.HeaderSize, 4096), rbuf: make([]byte, 64<<10)}
	s.peekFn = s.peekFD
	return s
}

// close drops the connection; the next request reconnects.
func (s *session) close() {
	if s.conn != nil {
		s.conn.Close()
		s.conn, s.raw = nil, nil
		if s.sessionID != 0 {
			s.c.metrics.connected.Add(-1)
			s.sessionID = 0
		}
	}
}

// ensure connects and logs in if the session is disconnected, honouring the
// reconnect backoff. Errors wrap ErrUnreachable, ErrAuth or ErrProtocol.
func (s *session) ensure(ctx context.Context) error {
	if s.node != nil {
		return s.ensureNode(ctx)
	}
	if s.conn != nil {
		if _, gen := s.c.target(); gen == s.gen {
			return nil
		}
		s.close() // the cluster's primary moved: follow it
	}
	if err := s.c.awaitPrimary(ctx); err != nil {
		return err
	}
	addr, gen := s.c.target()
	if gen != s.gen {
		// A new primary: the backoff earned against the old one is void.
		s.retryAt, s.backoff, s.lastErr = time.Time{}, 0, nil
	}
	now := time.Now()
	if now.Before(s.retryAt) && s.lastErr != nil && s.c.lastLogin.Load() < s.retryAt.Add(-s.backoff).UnixNano() {
		// Backing off, unless another session has logged in since this one
		// failed: the server is back, and the backoff earned while it was
		// down is void.
		return s.lastErr
	}
	s.gen = gen
	err := s.connectTo(ctx, addr)
	if err != nil {
		s.c.loginFailed(ctx, err)
		s.c.suspect(addr, err)
		s.c.metrics.connectFailures.Add(1)
		if s.backoff == 0 {
			s.backoff = s.c.cfg.ReconnectBackoffMin
		} else {
			s.backoff = min(2*s.backoff, s.c.cfg.ReconnectBackoffMax)
		}
		s.retryAt = time.Now().Add(s.backoff)
		s.lastErr = err
		return err
	}
	s.backoff = 0
	s.lastErr = nil
	return nil
}

// connectTo dials addr, then logs in with a fresh random client id (§1.8:
// "A reconnect must log in again; the SDKs use a fresh client id"), in the
// dialect the client last learned, or with Config.Protocol auto the newest.
// A server that evicts the login as IncompatibleProtocol names the window it
// accepts; auto then logs in again in the dialect inside it, once.
func (s *session) connectTo(ctx context.Context, addr string) error {
	d := s.c.loginDialect()
	err := s.dialLogin(ctx, addr, d)
	var ev *EvictionError
	if err == nil || s.c.cfg.Protocol != 0 || !errors.As(err, &ev) || ev.Reason != proto.EvictIncompatibleProtocol {
		return err
	}
	next, ok := proto.DialectIn(ev.ServerProtocolMin, ev.ServerProtocol)
	if !ok || next == d {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	s.c.log.Info("iggy: the server takes another protocol", "addr", addr, "tried", d.String(), "server_accepts",
		proto.FormatVersion(ev.ServerProtocolMin)+".."+proto.FormatVersion(ev.ServerProtocol), "speaking", next.String())
	if err := s.dialLogin(ctx, addr, next); err != nil {
		if errors.As(err, &ev) && ev.Reason == proto.EvictIncompatibleProtocol {
			return fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		return err
	}
	return nil
}

// dial connects s to addr (TCP, then TLS when configured); the session is
// not logged in yet.
func (s *session) dial(ctx context.Context, addr string) error {
	cfg := &s.c.cfg
	dl := net.Dialer{Timeout: cfg.DialTimeout}
	conn, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	s.addr = addr
	s.raw, s.tls = nil, cfg.TLS != nil
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true) // §1.1: lockstep stalls behind Nagle
		s.raw, _ = tc.SyscallConn()
	}
	if cfg.TLS != nil {
		if conn, err = handshake(ctx, conn, addr, cfg); err != nil {
			return err
		}
	}
	s.conn = conn
	if s.br == nil {
		s.br = bufio.NewReaderSize(conn, replyReadBuf)
	} else {
		s.br.Reset(conn)
	}
	return nil
}

// dialLogin dials addr and logs in in dialect d: with the configured token,
// else with the client's session token if it has one (tokens.go), else
// with the password. A session token the server refuses is dropped and the
// login made again with the password.
func (s *session) dialLogin(ctx context.Context, addr string, d proto.Dialect) error {
	tok := (*sessionToken)(nil)
	if s.c.cfg.Token == "" {
		tok = s.c.loginToken()
	}
	err := s.dialLoginWith(ctx, addr, d, tok)
	if tok != nil && tokenRefusal(err) {
		s.c.tokenRefused(tok)
		err = s.dialLoginWith(ctx, addr, d, nil)
	}
	return err
}

// dialLoginWith dials addr and logs in in dialect d with tok, or with the
// configured credentials when tok is nil.
func (s *session) dialLoginWith(ctx context.Context, addr string, d proto.Dialect, tok *sessionToken) error {
	cfg := &s.c.cfg
	if err := s.dial(ctx, addr); err != nil {
		return err
	}
	var id [16]byte
	for {
		// §1.3: client must be random and non-zero.
		_, _ = rand.Read(id[:])
		s.clientID = proto.ClientID{Lo: binary.LittleEndian.Uint64(id[:8]), Hi: binary.LittleEndian.Uint64(id[8:])}
		if !s.clientID.IsZero() {
			break
		}
	}
	s.sessionID, s.next, s.dialect = 0, 0, d
	if d == proto.Dialect012 {
		_, _ = rand.Read(s.bind[:]) // §9: the session-binding secret
	}

	b := s.begin()
	code := proto.CodeLoginRegister
	switch {
	case cfg.Token != "":
		code = proto.CodeLoginRegisterWithPAT
		b = proto.AppendPATLoginBody(b, d, &s.bind, sdkName, sdkVersion, cfg.Token)
	case tok != nil:
		code = proto.CodeLoginRegisterWithPAT
		b = proto.AppendPATLoginBody(b, d, &s.bind, sdkName, sdkVersion, tok.secret)
	default:
		b = proto.AppendLoginBody(b, d, &s.bind, sdkName, sdkVersion, cfg.Username, cfg.Password)
	}
	lctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	body, _, err := s.do(lctx, code, b)
	if err != nil {
		s.close()
		return loginError(err, d, cfg.DialTimeout)
	}
	sess, ver, err := decodeLoginReply(body)
	if err != nil {
		s.close()
		return err
	}
	s.sessionID, s.next = sess, 1
	s.c.learnDialect(d)
	m := &s.c.metrics
	m.connects.Add(1)
	m.connected.Add(1)
	if s.wasUp {
		m.reconnects.Add(1)
		// The server may have restarted and lost what it had not written:
		// cached reads are no longer known to be stored.
		s.c.cache.invalidateAll()
	}
	s.wasUp = true
	s.server = string(ver)
	s.lastUsed = time.Now()
	s.seenLosses = s.c.losses.Load()
	s.c.lastLogin.Store(s.lastUsed.UnixNano())
	s.c.log.Debug("iggy: session connected", "addr", addr, "server", s.server, "protocol", d.String(), "session", sess)
	return nil
}

// decodeLoginReply reads a login's success reply (§3.3, after the result
// section): user_id u32, session u64, protocol u32, server version.
func decodeLoginReply(body []byte) (session uint64, server []byte, err error) {
	r := proto.NewReader(body)
	r.U32()
	session = r.U64()
	r.U32()
	server = r.Name()
	if !r.Ok() || session == 0 {
		return 0, nil, fmt.Errorf("%w: %s", ErrProtocol, "iggy: malformed login reply")
	}
	return session, server, nil
}

// loginError classifies a failed login in dialect d: ErrAuth for refused
// credentials, ErrUnreachable for a node not ready or a silent peer,
// ErrProtocol otherwise; an eviction is returned as it is.
func loginError(err error, d proto.Dialect, dialTimeout time.Duration) error {
	var ev *EvictionError
	if errors.As(err, &ev) {
		return err
	}
	switch code := codeOf(err); {
	case code == proto.CodeInvalidCredentials, code == proto.CodeInvalidPAT, code == proto.CodeUnauthenticated, code == proto.CodeUnauthorized:
		return fmt.Errorf("%w: %w", ErrAuth, err)
	case code.Transient():
		// A cluster node with no primary to forward the login to (its
		// first view change, or an election) answers 57 or 58: an Iggy
		// server, not ready yet (docs/IGGY.md "Iggy clusters").
		return fmt.Errorf("%w: the node cannot take a login yet (no primary): %w", ErrUnreachable, err)
	}
	if errors.Is(err, errTimeout) {
		// No answer at all: a server still starting or overloaded (seen
		// with a real iggy-server during boot), or a peer that is not an
		// Iggy server. Retrying is the right reaction. It wraps both
		// ErrUnreachable and ErrProtocol: a timeout cannot tell them apart.
		return fmt.Errorf("%w: no reply to the login (protocol %s) within %v: the server is starting or overloaded, or it is not an Iggy server (%w): %w",
			ErrUnreachable, d, dialTimeout, ErrProtocol, err)
	}
	return fmt.Errorf("%w: %w", ErrProtocol, err)
}

// handshake runs the TLS client handshake on a new connection to addr
// (docs/IGGY.md, "TLS"). The server name defaults to addr's host, so every
// node of a cluster is verified under its own name.
func handshake(ctx context.Context, raw net.Conn, addr string, cfg *Config) (net.Conn, error) {
	tc := cfg.TLS.Clone()
	if tc.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			tc.ServerName = host
		}
	}
	hctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	conn := tls.Client(raw, tc)
	if err := conn.HandshakeContext(hctx); err != nil {
		raw.Close()
		var cv *tls.CertificateVerificationError
		if errors.As(err, &cv) {
			return nil, fmt.Errorf("%w: TLS: the server's certificate is not trusted: %w", ErrAuth, err)
		}
		return nil, fmt.Errorf("%w: TLS handshake with %s: %w", ErrUnreachable, addr, err)
	}
	return conn, nil
}

// begin returns the session's request scratch holding only the header
// space, for the caller to append a request body to and pass to do.
func (s *session) begin() []byte { return s.buf[:proto.HeaderSize] }

// do sends req (HeaderSize bytes of header space, then the body; usually
// built on begin) with the given command code and returns the reply body
// (after the result section for result-framed operations), valid until the
// session's next request. sent reports whether any request byte may have
// reached the server. A scratch that grew while the body was appended is
// kept for the next request.
func (s *session) do(ctx context.Context, code uint32, req []byte) (body []byte, sent bool, err error) {
	if cap(req) > cap(s.buf) {
		s.buf = req[:proto.HeaderSize]
	}
	return s.doFrame(ctx, req, nil, code)
}

// doFrame is do for a caller-owned frame whose first HeaderSize bytes are
// free for the VSR header (Append writes into the batch's headroom),
// followed on the wire by the bytes of tail (nil for most requests; the
// later batches of a joined append), written with frame in one vectored
// write. It records the request's latency and outcome in the client's
// metrics.
func (s *session) doFrame(ctx context.Context, frame []byte, tail [][]byte, code uint32) (body []byte, sent bool, err error) {
	start := time.Now()
	body, sent, err = s.exchange(ctx, frame, tail, code)
	s.c.metrics.observe(code, time.Since(start), err)
	if err != nil && s.node == nil && !s.probe && !s.c.clustered() && retriableRead(code) && peerGone(err) && ctx.Err() == nil {
		return s.resend(ctx, frame, code, err)
	}
	return body, sent, err
}

// resend sends a read whose connection its peer closed under it once more,
// on a new connection to the same server (stale.go). In a cluster a lost
// connection sends the client looking for the primary instead, and reads
// follow it (cluster.go). The login that connects it builds its
// request in the session's scratch, which may hold frame: frame is copied
// first (a rare path). If the session cannot connect, the read's own error
// is returned.
func (s *session) resend(ctx context.Context, frame []byte, code uint32, lost error) ([]byte, bool, error) {
	frame = append([]byte(nil), frame...)
	if err := s.ensure(ctx); err != nil {
		return nil, true, lost
	}
	s.c.metrics.readRetries.Add(1)
	start := time.Now()
	body, sent, err := s.exchange(ctx, frame, nil, code)
	s.c.metrics.observe(code, time.Since(start), err)
	return body, sent, err
}

// exchange writes the request (frame, then tail) and reads its reply,
// replaying transient statuses until the deadline. Its phases: header,
// then rounds of write and read (after a lost connection, one rebind on
// 0.12), then the reply's status.
func (s *session) exchange(ctx context.Context, frame []byte, tail [][]byte, code uint32) (body []byte, sent bool, err error) {
	if s.conn == nil {
		return nil, false, ErrUnreachable
	}
	op := proto.OperationFor(code)
	if len(tail) > 0 && !proto.IsPartition(op) {
		// The request checksum covers frame only.
		return nil, false, fmt.Errorf("iggy: a split request for a non-partition operation (%s)", commandName(code))
	}
	req := s.putHeader(frame, tail, op, code)
	deadline := s.requestDeadline(ctx)
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	_ = s.conn.SetDeadline(deadline)
	rebound := false
	for {
		n, werr := s.write(frame, tail)
		if n > 0 {
			sent = true
		}
		var h proto.ReplyHeader
		var rb []byte
		lost := werr
		if lost == nil {
			h, rb, lost = s.readReply()
			if lost != nil && s.readPast(lost, h, req, op) {
				// Read past, in step: the caller asks for less.
				return nil, true, lost
			}
		}
		if lost != nil {
			id, sid := s.clientID, s.sessionID
			s.lost(lost)
			if werr != nil {
				lost = s.ioError(werr)
			}
			if sent && !rebound && s.mayRebind(op) {
				if deadline, err = s.rebind(ctx, id, sid, lost); err == nil {
					rebound = true
					continue
				}
			}
			return nil, sent, lost
		}
		if h.Request != req || !proto.ReplyMatches(op, h.Operation) {
			// §1.4: a reply for another request desynchronises the stream.
			s.close()
			return nil, true, fmt.Errorf("%w: the reply does not echo the request (request %d op %d, reply request %d op %d)", errDesync, req, op, h.Request, h.Operation)
		}
		rb, status, perr := resultSection(op, proto.Code(h.Status), rb)
		if perr != nil {
			s.close()
			return nil, true, perr
		}
		if status == proto.CodeNotPrimary {
			// 0.12's "not accepted by a backup replica; retry on the
			// primary of its group" is 0.11's 58: nothing was applied.
			status = proto.CodeTransientNotAccepted
		}
		if status.Transient() {
			if err := s.transient(ctx, deadline, op, code, status); err != nil {
				return nil, true, err
			}
			continue
		}
		s.lastUsed = time.Now()
		if status != 0 {
			return nil, true, &Error{Code: status, Command: commandName(code)}
		}
		return rb, true, nil
	}
}

// readPast reports whether a read error is a reply too large to keep that
// answers this request: the stream is still in step.
func (s *session) readPast(err error, h proto.ReplyHeader, req uint64, op uint8) bool {
	var big *replyTooLargeError
	return errors.As(err, &big) && h.Request == req && proto.ReplyMatches(op, h.Operation)
}

// putHeader writes the request header into frame for a body of frame's
// rest and tail, and returns its request number: every request but a login
// takes the session's next one.
func (s *session) putHeader(frame []byte, tail [][]byte, op uint8, code uint32) uint64 {
	var req, sess uint64
	if op != proto.OpRegister {
		req, sess = s.next, s.sessionID
		s.next++
	}
	size := len(frame) - proto.HeaderSize
	for _, t := range tail {
		size += len(t)
	}
	proto.PutRequestHeader(frame, size, s.clientID, req, op, sess, code)
	if op != proto.OpNonReplicated && !proto.IsPartition(op) {
		// As the SDKs: stamp the ops the server deduplicates (login, logout,
		// metadata), so it can tell a replay from a reused request number.
		// 0.11: XXH3 of the body; 0.12 (§9): a random non-zero identifier.
		// A 0.12 login is stamped with XXH3 of its body too: that is as
		// random as the identifier needs (the body holds the random bind
		// secret), and it gets the login of auto past an Iggy 0.9 server's
		// checksum check to its version gate, whose eviction names the
		// protocol it takes (a random stamp is answered InvalidFormat).
		if s.dialect == proto.Dialect012 && op != proto.OpRegister {
			lo, hi := requestIdentifier()
			proto.SetRequestChecksum(frame, lo, hi)
		} else {
			proto.SetRequestChecksum(frame, xxh3.Hash(frame[proto.HeaderSize:]), 0)
		}
	}
	return req
}

// transient decides what a 57 or 58 reply leads to: nil to replay the same
// bytes on the same connection after a pause (§1.8: 57 → replay; 58 → safe
// to retry), or the error to return. Replays go on until the deadline, or
// until the client has found that another node is the primary (docs/IGGY.md,
// "Iggy clusters": a backup answers 58).
func (s *session) transient(ctx context.Context, deadline time.Time, op uint8, code uint32, status proto.Code) error {
	switch {
	case s.node != nil && status == proto.CodeTransientNotAccepted:
		// A routed node that no longer takes this partition: nothing was
		// stored; the caller drops the route (routes.go).
		return &Error{Code: status, Command: commandName(code)}
	case s.node != nil:
		// 57 on a routed node: replayed below; the metadata primary is not
		// suspected.
	case !s.probe:
		s.c.suspect(s.addr, &Error{Code: status, Command: commandName(code)})
		if status == proto.CodeTransientNotAccepted && proto.IsPartition(op) && s.c.samePrimary(ctx, deadline, s.gen) {
			// The metadata primary is confirmed and still refuses: this
			// partition's primary is another node (routes.go).
			return &Error{Code: status, Command: commandName(code)}
		}
	}
	_, gen := s.c.target()
	// A login a backup cannot forward is not replayed: the caller tries
	// another node or backs off.
	if time.Until(deadline) < transientRetry || (gen != s.gen && !s.probe && s.node == nil) || op == proto.OpRegister {
		s.close()
		return &Error{Code: status, Command: commandName(code)}
	}
	s.c.metrics.retries.Add(1)
	if err := sleepCtx(ctx, transientRetry); err != nil {
		s.close() // the request may be replayed later: not on this stream
		return err
	}
	return nil
}

// write writes frame and then tail to the connection: one write call, or
// one vectored write (writev on TCP) when there is a tail.
func (s *session) write(frame []byte, tail [][]byte) (int64, error) {
	if len(tail) == 0 {
		n, err := s.conn.Write(frame)
		return int64(n), err
	}
	bufs := append(append(s.iovs[:0], frame), tail...)
	s.iovs = bufs[:0]
	s.iov = bufs // WriteTo consumes s.iov, not bufs
	n, err := s.iov.WriteTo(s.conn)
	clear(bufs) // the batches' buffers go back to their pools
	return n, err
}

// mayRebind reports whether a partition write whose connection was lost
// after it was sent may be sent again on a rebound session: in 0.12, where
// "retrying the unresolved request under the same live session returns the
// original receipt" (send_messages.rs), so a write of unknown outcome
// learns its outcome instead of failing as unknown.
func (s *session) mayRebind(op uint8) bool {
	return s.dialect == proto.Dialect012 && proto.IsPartition(op)
}

// rebind reconnects to the node a partition write was lost on and binds the
// session the write was sent in (client id, session, bind secret) to the new
// connection with BindSession (§9), keeping its request numbers, so that
// the caller sends the write again with the same number. It returns the
// write's new deadline, or cause when the session cannot be bound again
// (the node is down, or no longer knows the session): the outcome stays
// unknown.
func (s *session) rebind(ctx context.Context, client proto.ClientID, sess uint64, cause error) (time.Time, error) {
	if sess == 0 || ctx.Err() != nil {
		return time.Time{}, cause
	}
	next := s.next
	cfg := &s.c.cfg
	dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if err := s.dial(dctx, s.addr); err != nil {
		return time.Time{}, cause
	}
	// BindSession is non-replicated and sent unbound: request and session
	// 0 in the header, the identity in the body.
	b := s.begin()
	b = proto.AppendBindSessionBody(b, s.dialect, client, sess, 0, &s.bind, sdkName, sdkVersion)
	proto.PutRequestHeader(b, len(b)-proto.HeaderSize, client, 0, proto.OpNonReplicated, 0, proto.CodeBindSession)
	if d, ok := dctx.Deadline(); ok {
		_ = s.conn.SetDeadline(d)
	}
	if _, err := s.conn.Write(b); err != nil {
		s.close()
		return time.Time{}, cause
	}
	h, body, err := s.readReply()
	if err == nil && (h.Status != 0 || h.Operation != proto.OpNonReplicated) {
		err = &Error{Code: proto.Code(h.Status), Command: "BindSession"}
	}
	var bound uint64
	if err == nil {
		bound, _, err = decodeLoginReply(body)
	}
	if err != nil || bound != sess {
		s.c.log.Warn("iggy: could not bind the session again after losing a write's reply", "addr", s.addr, "err", err)
		s.close()
		return time.Time{}, cause
	}
	s.clientID, s.sessionID, s.next = client, sess, next
	s.c.metrics.rebinds.Add(1)
	s.c.metrics.connected.Add(1)
	deadline := s.requestDeadline(ctx)
	_ = s.conn.SetDeadline(deadline)
	return deadline, nil
}

// requestDeadline is when a request sent now must have its reply:
// RequestTimeout from now, or ctx's deadline when sooner.
func (s *session) requestDeadline(ctx context.Context) time.Time {
	deadline := time.Now().Add(s.c.cfg.RequestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline
}

// resultSection strips the result section of a status-0 reply to a
// result-framed operation (§1.7 step 3: [count u32] then {index u32, result
// u32} entries; count 0 = success and the payload follows, count ≥ 1 = the
// first entry's result is the error code).
func resultSection(op uint8, status proto.Code, rb []byte) ([]byte, proto.Code, error) {
	if status != 0 || !proto.ResultFramed(op) || (op == proto.OpRegister && len(rb) == 0) {
		return rb, status, nil
	}
	if len(rb) < 4 {
		// §1.7: a status-0 empty body on Store/DeleteConsumerOffset "has no
		// result section, so the decode fails".
		return nil, 0, errNoResult
	}
	if binary.LittleEndian.Uint32(rb) == 0 {
		return rb[4:], 0, nil
	}
	if len(rb) < 12 {
		return nil, 0, errNoResult
	}
	status = proto.Code(binary.LittleEndian.Uint32(rb[8:]))
	if status == 0 {
		status = proto.CodeError
	}
	return nil, status, nil
}

// sleepCtx waits d, or less when ctx ends first (its error then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lost closes a session whose connection failed (reset, closed, evicted,
// or no reply in time: a backup drops some requests silently) and tells the
// client the primary may be gone.
func (s *session) lost(err error) {
	addr := s.addr
	s.close()
	s.c.losses.Add(1) // the other idle sessions peek theirs before use (stale.go)
	if s.node != nil {
		s.c.dropNode(addr)
		return
	}
	if !s.probe {
		s.c.suspect(addr, err)
	}
}

// ioError classifies a connection error.
func (s *session) ioError(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errTimeout
	}
	return fmt.Errorf("iggy: connection lost: %w", err)
}

// readReply reads one reply frame into s.rbuf and returns its header and body.
func (s *session) readReply() (proto.ReplyHeader, []byte, error) {
	if _, err := io.ReadFull(s.br, s.rbuf[:proto.HeaderSize]); err != nil {
		return proto.ReplyHeader{}, nil, s.ioError(err)
	}
	if h := proto.ParseReplyHeader(s.rbuf[:proto.HeaderSize]); h.Command == proto.CommandReply && h.Size > s.c.replyLimit() {
		// A well-formed reply too large to keep (a poll of many large
		// messages): skip its body so the stream stays in step.
		if _, err := io.CopyN(io.Discard, s.br, int64(h.Size-proto.HeaderSize)); err != nil {
			return h, nil, s.ioError(err)
		}
		return h, nil, &replyTooLargeError{Size: h.Size, Limit: s.c.replyLimit()}
	}
	h, err := checkReplyHeader(s.rbuf[:proto.HeaderSize])
	if err != nil {
		var ev *EvictionError
		if errors.As(err, &ev) {
			ev.Sent = s.dialect.Version()
		}
		return h, nil, err
	}
	if int(h.Size) > cap(s.rbuf) {
		// Room for a little more: the next replies of a reader are about
		// this size, each a few messages more or less.
		nb := make([]byte, min(int(h.Size)+int(h.Size)/8, proto.MaxFrameSize))
		copy(nb, s.rbuf[:proto.HeaderSize])
		s.rbuf = nb
	}
	s.rbuf = s.rbuf[:cap(s.rbuf)]
	if _, err := io.ReadFull(s.br, s.rbuf[proto.HeaderSize:h.Size]); err != nil {
		return h, nil, s.ioError(err)
	}
	return h, s.rbuf[proto.HeaderSize:h.Size:h.Size], nil
}

// checkReplyHeader validates a reply or eviction header (§1.7 steps 1–2).
func checkReplyHeader(hb []byte) (proto.ReplyHeader, error) {
	h := proto.ParseReplyHeader(hb)
	if h.Size < proto.HeaderSize || h.Size > proto.MaxFrameSize {
		return h, fmt.Errorf("%w: %s", errDesync, "reply frame size out of range")
	}
	switch h.Command {
	case proto.CommandReply:
		return h, nil
	case proto.CommandEviction:
		return h, &EvictionError{Reason: h.Reason, ServerProtocol: h.ServerProtocol, ServerProtocolMin: h.ServerProtocolMin}
	}
	return h, fmt.Errorf("%w: %s", errDesync, "unexpected frame command")
}

// trim drops an oversized reply buffer so an idle session does not pin a
// 64 MiB read.
func (s *session) trim() {
	if cap(s.rbuf) > keepReplyBuf {
		s.rbuf = make([]byte, 64<<10)
	}
	if cap(s.buf) > keepReplyBuf {
		s.buf = make([]byte, proto.HeaderSize, 4096)
	}
}
