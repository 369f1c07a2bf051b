// Package iggytest is an in-memory Apache Iggy 0.9 server speaking the binary
// TCP protocol (docs/design/iggy-protocol.md), for tests and benchmarks of kiggy's Iggy
// client. It is not a storage engine: everything lives in memory, one mutex
// guards it, and nothing is replicated.
//
// It follows the real server where a client can tell: the 256-byte VSR
// framing and header checks (a bad header or a bad batch is dropped with no
// reply), Register logins with evictions for bad credentials and protocol
// versions, session and request-number rules, result-framed replies, status
// codes with empty bodies, poll replies made of sliced batch records, the
// consumer-offset range check and the consumer-group fence. Its fidelity is
// checked against the official client (fidelity_test.go).
//
// A bare section number (§3.8) in this package's comments refers to
// docs/design/iggy-protocol.md.
package iggytest

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// ServerVersion is the version string iggytest reports at login.
const ServerVersion = "0.9.0-iggytest"

// Config configures a Server. The zero value is usable.
type Config struct {
	// Username and Password are the root credentials (default "iggy"/"iggy").
	Username, Password string
	// Tokens are the personal access tokens accepted by PAT logins.
	Tokens []string
	// Logger receives debug logs of every request and warnings for dropped
	// frames (default: discard).
	Logger *slog.Logger
	// Latency delays every reply, as a network round trip and a server's
	// persistence would (benchmarks of a remote Iggy); 0 = none.
	Latency time.Duration
	// TLS, when set, serves TLS instead of plain TCP (the server's
	// [tcp.tls] listener).
	TLS *tls.Config
	// MaxTopicsPerStream bounds a stream's topic ids (0 = 4096, Iggy's
	// namespace limit): a CreateTopic that finds no free id below it is
	// TooManyTopics (2021).
	MaxTopicsPerStream int
	// StaleIncarnationPolls is how long after a topic is deleted a poll of
	// a topic that took its recycled id is answered from the deleted
	// topic's partitions, as iggy-server 0.9 does until it has torn them
	// down (docs/IGGY.md, "Topic incarnations"). 0 = DefaultStaleIncarnationPolls,
	// negative = never.
	StaleIncarnationPolls time.Duration
	// Dialects are the protocol dialects the server takes at login (default
	// both; a real server takes one). A login in another is evicted as
	// IncompatibleProtocol with the window of the first.
	Dialects []proto.Dialect
	// Tap, when set, sees every complete request frame (header and body)
	// before it is served, and every reply frame written for it; the slices
	// are valid only during the call (differential tests hand them to Iggy's
	// own codec).
	Tap func(request, replies []byte)
	// SilentCancel leaves a WaitForMessages that the client cancelled
	// (CancelDeferredRequest) unanswered; by default the model answers it
	// once, at the cancel (wait.go).
	SilentCancel bool
}

// DialectEnv names the environment variable that, set to "0.11" or "0.12",
// makes every server whose Config.Dialects is empty take that dialect only,
// as a real server of its release would (make iggy-mode-model runs the
// suite once per dialect).
const DialectEnv = "KIGGY_IGGY_PROTOCOL"

// DefaultStaleIncarnationPolls is Config.StaleIncarnationPolls's default:
// about as long as iggy-server 0.9 served them on a loaded 2-core machine.
const DefaultStaleIncarnationPolls = 300 * time.Millisecond

// Fault is a test hook applied to the next Count requests that match Op
// (and Code, for non-replicated requests when Code ≠ 0).
type Fault struct {
	Op   uint8
	Code uint32
	// Count is how many matching requests the fault applies to (≥ 1).
	Count int
	// Status, if non-zero, answers the request with this status and an
	// empty body instead of handling it.
	Status uint32
	// Drop sends no reply. With Apply the request is handled first (the
	// write happens, the reply is lost); without it the request is ignored.
	Drop  bool
	Apply bool
	// Close, with Drop and Apply, closes the connection after the request
	// is handled: the write happened, the connection broke before the
	// reply.
	Close bool
	// Delay handles the request at once and sends its reply that much
	// later: a reply that tells the state of its handling, arriving after
	// requests of other connections changed it.
	Delay time.Duration
	// Inherit, with Drop, neither applies nor answers a partition write
	// now: it is applied just before the next partition write (operations
	// 160–162) the server handles, whichever connection sends it, and
	// reads do not show it until then. So an Iggy primary killed after
	// replicating a write leaves it to the new primary, which accepts new
	// writes at once and commits the inherited ones only when a write
	// behind them is acknowledged, while every node's reads show only what
	// it has committed (docs/IGGY.md, "Writes whose outcome was unknown").
	Inherit bool
}

// inheritedWrite is a partition write held by a Fault with Inherit.
type inheritedWrite struct {
	st   *connState
	req  proto.RequestHeader
	body []byte
}

// Server is an in-memory Iggy server, or one node of a Cluster. Its methods
// are safe for concurrent use.
type Server struct {
	cfg Config
	log *slog.Logger
	*data

	// One node's own state, guarded by data.mu.
	id    int // replica id in a Cluster
	ln    net.Listener
	conns map[*conn]struct{}
	wg    sync.WaitGroup
}

// data is what a server stores: one node's alone, or shared by every node
// of a Cluster, as VSR replicates every committed operation to them all.
type data struct {
	mu      sync.Mutex
	streams map[uint32]*stream
	byName  map[string]*stream
	commit  uint64 // monotonic commit op; sessions are commit ops
	lastTS  uint64
	clients map[proto.ClientID]*clientState
	faults  []Fault
	// inherited: partition writes held by an Inherit fault, applied
	// before the next partition write (applyInherited).
	inherited []inheritedWrite
	nextConn  uint32
	cluster   *Cluster       // nil for a single node
	appended  chan struct{}  // closed at the next append (wait.go)
	pats      map[string]pat // minted personal access tokens by name (tokens.go)

	passwordLogins, tokenLogins int
}

type clientState struct {
	watermark uint64 // highest metadata request number applied
	lastReply []byte // reply to the request at watermark
	// 0.12 (§9): the session's bind secret, and its last partition write's
	// request number and receipt ("retrying the unresolved request under
	// the same live session returns the original receipt").
	session   uint64
	secret    [proto.BindSecretSize]byte
	partReq   uint64
	partReply []byte
}

// New returns a Server that is not yet listening.
func New(cfg Config) *Server {
	if cfg.Username == "" {
		cfg.Username = "iggy"
	}
	if cfg.Password == "" {
		cfg.Password = "iggy"
	}
	if cfg.StaleIncarnationPolls == 0 {
		cfg.StaleIncarnationPolls = DefaultStaleIncarnationPolls
	}
	if len(cfg.Dialects) == 0 {
		// A test suite runs the model as one release's server.
		if d, err := proto.ParseDialect(os.Getenv(DialectEnv)); err == nil {
			cfg.Dialects = []proto.Dialect{d}
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{
		cfg:   cfg,
		log:   log,
		conns: map[*conn]struct{}{},
		data: &data{
			streams: map[uint32]*stream{},
			byName:  map[string]*stream{},
			clients: map[proto.ClientID]*clientState{},
		},
	}
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves connections in the
// background. After Stop it may be called again, with the same address, to
// serve the data kept in memory.
func (s *Server) Start(addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	s.mu.Lock()
	if s.ln != nil {
		s.mu.Unlock()
		ln.Close()
		return nil, errors.New("iggytest: already started")
	}
	s.ln = ln
	s.mu.Unlock()
	s.wg.Add(1)
	go s.accept(ln)
	return ln.Addr(), nil
}

// Addr returns the listening address, or nil when stopped.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Stop closes the listener and every connection, keeping all data: a later
// Start serves it again. Sessions end as on a disconnect. Like the server's
// graceful shutdown (flush_committed_messages) it flushes every journal.
func (s *Server) Stop() {
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eachPartition(func(p *partition) { p.flush() })
}

func (s *Server) eachPartition(fn func(*partition)) {
	for _, str := range s.streams {
		for _, t := range str.topics {
			for _, p := range t.partitions {
				fn(p)
			}
		}
	}
}

// stop closes the listener and every connection.
func (s *Server) stop() {
	s.mu.Lock()
	ln := s.ln
	s.ln = nil
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	s.wg.Wait()
}

// Close stops the server; it is Stop.
func (s *Server) Close() { s.Stop() }

// Crash stops the server as a SIGKILL of iggy-server would: every
// connection is cut and each partition loses the appends still in its
// journal (not yet flushed under its topic's messages_required_to_save /
// size_of_messages_required_to_save), so their offsets are handed out again.
// Consumer offsets survive: the server writes them to their files before it
// replies. A later Start serves what is left. It returns the number of
// messages lost.
func (s *Server) Crash() uint64 {
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	var lost uint64
	s.eachPartition(func(p *partition) { lost += p.crash() })
	return lost
}

// InjectFault queues a fault for matching requests.
func (s *Server) InjectFault(f Fault) {
	if f.Count <= 0 {
		f.Count = 1
	}
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
}

// PendingFaults returns how many injected faults are still to apply: a
// test waits for 0 to know its faulted request reached the server.
func (s *Server) PendingFaults() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.faults {
		n += f.Count
	}
	return n
}

// takeFault returns and consumes the first fault matching the request.
func (s *Server) takeFault(op uint8, code uint32) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.faults {
		f := &s.faults[i]
		if f.Op != op || (op == proto.OpNonReplicated && f.Code != 0 && f.Code != code) {
			continue
		}
		out := *f
		f.Count--
		if f.Count == 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return out, true
	}
	return Fault{}, false
}

func (s *Server) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		s.mu.Lock()
		if s.ln != ln {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.nextConn++
		c := &conn{s: s, nc: nc, id: s.nextConn, done: make(chan struct{})}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// nowMicros returns a strictly increasing microsecond timestamp (the real
// server's next_monotonic_timestamp). Callers hold s.mu.
func (s *Server) nowMicros() uint64 {
	ts := uint64(time.Now().UnixMicro())
	if ts <= s.lastTS {
		ts = s.lastTS + 1
	}
	s.lastTS = ts
	return ts
}

// nextCommit returns the next commit op. Callers hold s.mu.
func (s *Server) nextCommit() uint64 {
	s.commit++
	return s.commit
}

// conn is one client connection, owned by its serve goroutine.
type conn struct {
	s  *Server
	nc net.Conn
	id uint32

	// Owned by serve.
	st   connState
	rbuf []byte
	wbuf []byte

	wmu  sync.Mutex    // serializes writes: serve's replies and a deferred wait's (wait.go)
	done chan struct{} // closed when serve returns
}

// connState is the session state of one connection.
type connState struct {
	connID  uint32
	bound   bool
	dialect proto.Dialect // the dialect of the login, once bound
	client  proto.ClientID
	session uint64
	port    uint16
	pollBuf []byte // poll's reply scratch
	// wait is the connection's latest deferred WaitForMessages (0.12),
	// which a CancelDeferredRequest names; newWait is one serve has not
	// started yet.
	wait, newWait *pendingWait
}

func (c *conn) serve() {
	c.st.connID = c.id
	if a, ok := c.nc.LocalAddr().(*net.TCPAddr); ok {
		c.st.port = uint16(a.Port)
	}
	defer func() {
		close(c.done)
		c.nc.Close()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		if c.st.bound {
			c.s.dropMember(c.st.client)
		}
		c.s.mu.Unlock()
		c.s.wg.Done()
	}()
	c.rbuf = make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(c.nc, c.rbuf[:proto.HeaderSize]); err != nil {
			return
		}
		size := proto.FrameSize(c.rbuf)
		// §1.2: "If size < 256, size > max_message_size, or the command byte is
		// not a valid discriminant (greater than 29), the server closes the
		// connection with no reply."
		if size < proto.HeaderSize || size > proto.MaxFrameSize || c.rbuf[60] > proto.CommandMax {
			c.s.log.Warn("iggytest: closing connection on bad frame size or command", "size", size)
			return
		}
		if int(size) > len(c.rbuf) {
			nb := make([]byte, size)
			copy(nb, c.rbuf[:proto.HeaderSize])
			c.rbuf = nb
		}
		if _, err := io.ReadFull(c.nc, c.rbuf[proto.HeaderSize:size]); err != nil {
			return
		}
		out, closeConn := c.s.process(&c.st, c.rbuf[:size], c.wbuf[:0])
		if w := c.st.newWait; w != nil {
			// A deferred wait: answered later, while this connection
			// serves its next requests (a CancelDeferredRequest among them).
			c.st.newWait = nil
			c.s.wg.Add(1)
			go c.runWait(w)
		}
		if len(out) > 0 && c.s.cfg.Latency > 0 {
			time.Sleep(c.s.cfg.Latency)
		}
		if len(out) > 0 {
			c.wmu.Lock()
			_, err := c.nc.Write(out)
			c.wmu.Unlock()
			if err != nil {
				return
			}
		}
		if cap(out) <= 1<<20 {
			c.wbuf = out[:0]
		}
		if closeConn {
			return
		}
	}
}
