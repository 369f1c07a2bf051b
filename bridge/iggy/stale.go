package iggy

// Stale connections. When iggy-server restarts (or a node of a cluster
// does), every pooled session still holds its connection from before: the
// kernel has the server's FIN or RST, but nothing reads the socket until the
// session's next request, which then fails. With a pool of 32 sessions that
// was up to 32 failed requests after one restart, some of them reads a
// caller had to retry (docs/IGGY.md, "Sessions"). Two measures:
//
//   - Before an idle session is handed out, its socket is polled without
//     waiting (ppoll with a zero timeout for POLLIN and POLLRDHUP: no round
//     trip, no byte read) when it may be stale: it has been idle for
//     staleCheckIdle, or some session lost its connection since this one
//     last looked. A peer that closed it (even behind bytes still queued),
//     reset it, or sent bytes nobody asked for (on a lockstep stream, only
//     an eviction does) gets the session closed, and ensure connects it
//     again before the request is sent. The keep-alive loop checks every
//     idle session each round, so most are connected again before anyone
//     needs them.
//   - A read (a poll, a ping, a metadata get: nothing the server changes
//     state for) whose connection a single server closed under it is sent
//     once more on a new connection (in a cluster the client looks for the
//     primary instead). A write is not: its outcome is unknown, and the
//     callers' own rules (idempotent resends, BindSession on 0.12) decide.

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// staleCheckIdle is how long a session may be idle before it is checked on
// its way out of the pool. A restarting iggy-server is down for longer
// (its start alone takes hundreds of milliseconds), so every session that
// was idle through a restart is checked; a session in steady use (every few
// milliseconds under load) costs no system call.
const staleCheckIdle = 100 * time.Millisecond

// dropIfStale closes s's connection when its peer has closed it since s was
// last used, so the caller's ensure connects it again. s is idle: taken from
// a pool, not yet used for a request.
func (c *Client) dropIfStale(s *session) {
	if s.conn == nil {
		return
	}
	losses := c.losses.Load()
	if losses == s.seenLosses && time.Since(s.lastUsed) < staleCheckIdle {
		return
	}
	s.seenLosses = losses
	if s.peerClosed() {
		c.metrics.staleSessions.Add(1)
		c.log.Debug("iggy: an idle session's connection was closed by the server; connecting it again", "addr", s.addr)
		s.close()
	}
}

// peerClosed reports whether the idle connection of s is no longer usable:
// its peer closed or reset it, or it holds bytes no request asked for. It
// reads nothing: the socket is polled.
func (s *session) peerClosed() bool {
	if s.br != nil && s.br.Buffered() > 0 {
		return true // a reply nobody waits for: the stream is out of step
	}
	if s.raw == nil {
		return false // not a TCP connection: nothing to peek
	}
	s.peek = peekEmpty
	err := s.raw.Read(s.peekFn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The deadline of the last request, long past, bounded that
		// request only, but RawConn.Read honours it and does not poll:
		// taken as a closed connection, it had every session idle past
		// its last deadline (a keep-alive ping's 5 s, a poll's shorter
		// one) reconnected and logged in again at its next use.
		_ = s.conn.SetReadDeadline(time.Time{})
		err = s.raw.Read(s.peekFn)
	}
	if err != nil {
		return true // the connection is closed on our side
	}
	switch s.peek {
	case peekEmpty:
		return false
	case peekData:
		// Plain TCP is lockstep: only an eviction frame comes unasked.
		// Under TLS the bytes may be a record of the TLS layer itself (a
		// TLS 1.3 session ticket, read with the next reply).
		return !s.tls
	}
	return true // EOF (the peer closed it) or an error (it reset it)
}

// peekResult is what a peek of an idle connection found.
type peekResult uint8

const (
	peekEmpty  peekResult = iota // nothing queued: the connection is alive
	peekData                     // bytes queued that no request asked for
	peekEOF                      // the peer closed (or hung up) the connection
	peekFailed                   // the socket reports an error (reset)
)

// retriableRead reports whether a request with this command code may be
// sent again after its connection was lost: the server changes nothing for
// it (PollMessages is sent with auto_commit off).
func retriableRead(code uint32) bool {
	switch code {
	case proto.CodePing, proto.CodeGetStats, proto.CodeGetClusterMetadata, proto.CodeGetMe,
		proto.CodePollMessages, proto.CodeGetPartitionRoute, proto.CodeGetConsumerOffset,
		proto.CodeGetStream, proto.CodeGetStreams, proto.CodeGetTopic, proto.CodeGetTopics,
		proto.CodeGetConsumerGroup, proto.CodeGetConsumerGroups:
		return true
	}
	return false
}

// peerGone reports whether err is a connection its peer closed or reset
// (not a timeout, not an eviction).
func peerGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
