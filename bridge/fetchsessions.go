package bridge

// Fetch sessions (KIP-227, docs/design/kafka-protocol.md §7.4): what Fetch
// (01_fetch.go) does with bridge/fetchsession's cache. The request's
// session part is settled once, before the first read (fetchSessionBegin):
// a full Fetch with epoch 0 will create a session, an incremental one has
// its request rewritten into the session's partitions, so every later
// phase (reads, ACLs, topic ids, parking on all of the session's
// partitions) works on an ordinary request. The response pass notes each
// partition's outcome (fetchSessionNote) and leaves out those of an
// incremental Fetch that did not change; when the response is sent
// (fetchSessionEnd) the session is created or its sent state committed.

import (
	"time"

	"github.com/kiggy-io/kiggy/bridge/fetchsession"
	"github.com/kiggy-io/kiggy/wire"
)

// sessMode is what a Fetch does with sessions.
type sessMode uint8

const (
	sessNone        sessMode = iota // sessionless: SessionId 0, every partition
	sessCreate                      // full Fetch, epoch 0: create a session when answered
	sessIncremental                 // incremental Fetch in ticket's session
)

// fetchSessionState is a Fetch's session scratch (fetchState.sess).
type fetchSessionState struct {
	mode   sessMode
	ticket fetchsession.Ticket
	// prev[k] is what the k-th partition of the rewritten request was last
	// sent; out[k] what this pass answers it.
	prev []fetchsession.Sent
	out  []fetchsession.Outcome
	// bodyAt is where the response body starts in the buffer (its
	// SessionId is written once known).
	bodyAt int
}

// maxRetainedSessionParts bounds the per-partition session scratch a pooled
// state keeps (56 bytes a partition): a consumer of a few thousand
// partitions reuses it, a larger one allocates it per Fetch.
const maxRetainedSessionParts = 4096

// trim lets large scratch go with its state.
func (s *fetchSessionState) trim() {
	s.ticket = fetchsession.Ticket{}
	if cap(s.prev) > maxRetainedSessionParts || cap(s.out) > maxRetainedSessionParts {
		s.prev, s.out = nil, nil
	}
}

// fetchSessionBegin settles the session part of a Fetch before its first
// read, as FetchManager.newContext: a full Fetch (epoch 0 or −1) closes the
// session it names ("Any session specified in a FULL fetch request will be
// closed") and, with epoch 0, will create one; an incremental Fetch (epoch
// > 0) is checked and has its request rewritten into its session's
// partitions. It returns true when it answered the Fetch itself: a session
// error ("the top-level error responses carry no partitions":
// SessionErrorContext), or any incremental Fetch while sessions are off.
func (g *Gateway) fetchSessionBegin(c *call, fs *fetchState, v int16) bool {
	s := &fs.sess
	s.mode = sessNone
	s.ticket = fetchsession.Ticket{}
	req := &fs.req
	// FetchMetadata.isFull: "epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH".
	if req.SessionEpoch == 0 || req.SessionEpoch == -1 {
		if g.fetchSessions != nil {
			if req.SessionID != 0 {
				g.fetchSessions.Remove(req.SessionID)
			}
			if req.SessionEpoch == 0 && v >= 7 {
				s.mode = sessCreate
			}
		}
		return false
	}
	code := wire.FetchSessionIDNotFound // sessions off: no session exists
	if g.fetchSessions != nil {
		var tk fetchsession.Ticket
		// Sessions of v13+ name topics by id (FETCH_SESSION_TOPIC_ID_ERROR
		// when a request's version disagrees with its session's).
		tk, s.prev, code = g.fetchSessions.Incremental(time.Now(), req, v >= 13, s.prev[:0])
		switch code {
		case wire.NoError:
			s.mode, s.ticket = sessIncremental, tk
			return false
		case fetchsession.ErrSessionless:
			// "there are no more partitions left", or the partition cap:
			// a sessionless answer to the request as sent.
			return false
		}
	}
	g.fetchSessionError(c, v, code, 0)
	return true
}

// fetchSessionError answers a Fetch with a top-level session error and no
// topics.
func (g *Gateway) fetchSessionError(c *call, v int16, code wire.ErrorCode, id int32) {
	g.metrics.errors[wire.KeyFetch].CountError(code)
	buf := c.responseBuffer()
	buf = wire.AppendFetchResponseStart(buf, v, 0, code, id, 0)
	c.req.Respond(wire.AppendFetchResponseEnd(buf, v))
}

// fetchSessionNote records partition p's outcome in a Fetch with a session
// (n record bytes) and reports whether the response carries it: an
// incremental Fetch leaves out the partitions fetchsession.MustRespond
// does not pick. k is the partition's place in the request.
func (fs *fetchState) fetchSessionNote(k int, p *wire.FetchResponseTopicPartition, n int) bool {
	s := &fs.sess
	if s.mode == sessNone {
		return true
	}
	o := fetchsession.Outcome{
		Sent:    fetchsession.Sent{HighWatermark: p.HighWatermark, LastStableOffset: p.LastStableOffset, LogStartOffset: p.LogStartOffset},
		Records: n > 0, Err: p.ErrorCode != wire.NoError,
	}
	s.out = append(s.out, o)
	return s.mode != sessIncremental || k >= len(s.prev) || fetchsession.MustRespond(s.prev[k], o)
}

// fetchSessionCount corrects a count the response pass wrote for written
// topics or partitions ending at end to the n it kept (incremental
// Fetches), moving the splices past it with the bytes.
func (fs *fetchState) fetchSessionCount(buf []byte, v int16, end, written, n int) []byte {
	if fs.sess.mode != sessIncremental || n == written {
		return buf
	}
	buf, shift := wire.RewriteFetchArrayLen(buf, v, end, written, n)
	if shift > 0 {
		for i := range fs.splices {
			if fs.splices[i].At >= end {
				fs.splices[i].At -= shift
			}
		}
	}
	return buf
}

// fetchSessionEnd completes the session part of a Fetch about to be
// answered with fs.buf: it creates the session of a full Fetch with epoch
// 0 (FullFetchContext.updateAndGenerateResponseData; SessionId 0 when no
// slot is free) or commits what an incremental response sends
// (IncrementalFetchContext). It returns false when it answered the Fetch
// itself instead: the session moved on since the request was checked ("Possible
// duplicate request": INVALID_FETCH_SESSION_EPOCH with the session's id
// and no topics).
func (g *Gateway) fetchSessionEnd(c *call, fs *fetchState, v int16) bool {
	s := &fs.sess
	defer func() { s.ticket = fetchsession.Ticket{} }()
	switch s.mode {
	case sessCreate:
		if c.req.Conn().Closed() {
			return true
		}
		if id := g.fetchSessions.Create(time.Now(), &fs.req, v >= 13, false, s.out); id != 0 {
			wire.SetFetchResponseSession(fs.buf, s.bodyAt, v, wire.NoError, id)
		}
	case sessIncremental:
		if !s.ticket.Commit(s.out) {
			fs.dropSplices()
			fs.buf = nil
			g.fetchSessionError(c, v, wire.InvalidFetchSessionEpoch, s.ticket.S.ID())
			return false
		}
		wire.SetFetchResponseSession(fs.buf, s.bodyAt, v, wire.NoError, s.ticket.S.ID())
	}
	return true
}
