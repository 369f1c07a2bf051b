package iggytest

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// 0.12's readiness wait (§9, WaitForMessages 107, CancelDeferredRequest
// 108), read from iggy_binary_protocol 0.11.1-edge.4
// requests/messages/wait_for_messages.rs and codes.rs. A 0.11 session
// sending either code gets status 3 InvalidCommand, as Iggy 0.9 answers an
// unknown code (§1.4).
//
// What the crate does not say and the model chooses: the status for a
// request the crate's decoder or validate refuses, or for a strategy other
// than offset and next ("The server accepts the offset and next strategies
// only"), is 3 InvalidCommand, as the model answers every undecodable read
// (§5: "3 InvalidCommand: status: undecodable body"); a missing stream,
// topic or partition is 1009, 2010 or 3007, as a poll's (§3.8); a cancelled
// wait is answered once, at the cancel, with the partitions ready then
// (Config.SilentCancel: never answered).

// pendingWait is a WaitForMessages the model answers later: when one of its
// partitions holds a message at its start point, when its wait has passed,
// or when it is cancelled.
type pendingWait struct {
	req      proto.RequestHeader
	session  uint64
	frame    []byte // the request, for Config.Tap
	targets  []waitTarget
	deadline time.Time
	cancel   chan struct{} // buffered 1: the client sent CancelDeferredRequest
}

// waitTarget is one partition of a wait and the offset a message must be
// at or past.
type waitTarget struct {
	id    uint32
	p     *partition
	start uint64
}

// waitForMessages serves WaitForMessages on a 0.12 session: a reply now
// (appended to out), or none, the wait left in st.newWait for the
// connection to run.
func (s *Server) waitForMessages(st *connState, req *proto.RequestHeader, body, out []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.countPartitionRead(req.Code, body) // a cluster node counts the reads it serves
	w, status := s.parseWait(st, body)
	if status != 0 {
		return reply(out, req, st.session, status, nil)
	}
	if ready := appendReady(nil, w.targets); len(ready) > 4 || w.deadline.IsZero() {
		// "Waits until at least one partition holds a message at its start
		// point": already there, or a zero wait ("A zero wait answers at
		// once").
		return reply(out, req, st.session, 0, ready)
	}
	w.req, w.session = *req, st.session
	w.cancel = make(chan struct{}, 1)
	st.newWait, st.wait = w, w
	return out
}

// parseWait decodes and checks a WaitForMessages body as the crate's
// decoder and validate do, then resolves its targets. Callers hold s.mu.
func (s *Server) parseWait(st *connState, body []byte) (*pendingWait, uint32) {
	bad := uint32(proto.CodeInvalidCommand)
	r := proto.NewReader(body)
	kind := r.U8()
	cid := r.Identifier()
	sid, tid := r.Identifier(), r.Identifier()
	waitUS, timeoutUS := r.U64(), r.U64()
	count := r.U32()
	// wait_for_messages.rs decode: "Bound the allocation before `validate`
	// sees the partitions": count > MAX_PARTITIONS_PER_REQUEST or
	// "buf.len() - pos != count as usize * TARGET_SIZE" is refused.
	if !r.Ok() || count > proto.MaxPartitionsPerRequest || r.Len() != int(count)*proto.WaitTargetSize {
		return nil, bad
	}
	if kind != proto.ConsumerSingle && kind != proto.ConsumerGroup {
		return nil, bad
	}
	w := &pendingWait{targets: make([]waitTarget, 0, count)}
	ids := make([]uint32, 0, count)
	type strat struct {
		kind  uint8
		value uint64
	}
	strats := make([]strat, 0, count)
	for range count {
		id, k, v := r.U32(), r.U8(), r.U64()
		// WirePollingStrategy::decode takes kinds 1 (offset) to 5 (next).
		if k < proto.PollOffset || k > proto.PollNext {
			return nil, bad
		}
		ids = append(ids, id)
		strats = append(strats, strat{k, v})
	}
	// validate: "a wait or request timeout out of range, no partitions, too
	// many partitions or a duplicate partition".
	if waitUS > proto.MaxDeferredWaitMicros || timeoutUS == 0 || !proto.DeferredTimeoutCoversWait(waitUS, timeoutUS) ||
		timeoutUS > proto.MaxDeferredTimeoutMicros || count == 0 {
		return nil, bad
	}
	seen := make(map[uint32]bool, count)
	for _, id := range ids {
		if seen[id] {
			return nil, bad
		}
		seen[id] = true
	}
	str := s.resolveStream(sid)
	if str == nil {
		return nil, uint32(proto.CodeStreamIDNotFound)
	}
	t := str.resolveTopic(tid)
	if t == nil {
		return nil, uint32(proto.CodeTopicIDNotFound)
	}
	var g *group
	if kind == proto.ConsumerGroup {
		g = t.resolveGroup(cid)
	}
	for i, id := range ids {
		if int(id) >= len(t.partitions) {
			return nil, uint32(proto.CodePartitionNotFound)
		}
		p := t.partitions[id]
		var start uint64
		switch strats[i].kind {
		case proto.PollOffset:
			start = strats[i].value
		case proto.PollNext:
			// The consumer's next message: its stored offset + 1, or the
			// first.
			v, ok := p.offsets[consumerKey(cid)]
			if g != nil {
				v, ok = p.groupOffsets[g.id]
			}
			if ok {
				start = v + 1
			}
		default:
			return nil, bad // "The server accepts the offset and next strategies only."
		}
		w.targets = append(w.targets, waitTarget{id: id, p: p, start: start})
	}
	if waitUS > 0 {
		w.deadline = time.Now().Add(time.Duration(waitUS) * time.Microsecond)
	}
	return w, 0
}

// appendReady appends a WaitForMessages reply body naming the targets whose
// partition holds a message at or past their start, in request order
// (responses/messages/wait_for_messages.rs: "[partitions_count:4 LE]
// partitions_count x [partition_id:4 LE]"). Callers hold s.mu.
func appendReady(dst []byte, targets []waitTarget) []byte {
	at := len(dst)
	dst = proto.AppendU32(dst, 0)
	n := uint32(0)
	for _, t := range targets {
		if t.p.next > t.start {
			dst = proto.AppendU32(dst, t.id)
			n++
		}
	}
	binary.LittleEndian.PutUint32(dst[at:], n)
	return dst
}

// cancelWait serves CancelDeferredRequest: the wait sent as request req on
// this connection, if it still waits, is answered now (codes.rs: "The body
// is empty, `request` identifies the original request, and no reply is
// sent").
func (st *connState) cancelWait(req uint64) {
	if w := st.wait; w != nil && w.req.Request == req {
		select {
		case w.cancel <- struct{}{}:
		default:
		}
	}
}

// runWait answers w on c when it is ready, passed, cancelled, or never
// when the connection ends first. It runs on a goroutine of its own while
// the connection serves its next requests.
func (c *conn) runWait(w *pendingWait) {
	defer c.s.wg.Done()
	s := c.s
	timer := time.NewTimer(time.Until(w.deadline))
	defer timer.Stop()
	for {
		s.mu.Lock()
		body := appendReady(nil, w.targets)
		sig := s.appendSignal()
		s.mu.Unlock()
		cancelled := false
		if len(body) == 4 {
			select {
			case <-sig:
				continue
			case <-timer.C:
			case <-w.cancel:
				cancelled = true
			case <-c.done:
				return
			}
			s.mu.Lock()
			body = appendReady(body[:0], w.targets)
			s.mu.Unlock()
		}
		if cancelled && s.cfg.SilentCancel {
			return
		}
		out := reply(nil, &w.req, w.session, 0, body)
		if s.cfg.Latency > 0 {
			time.Sleep(s.cfg.Latency)
		}
		c.wmu.Lock()
		_, err := c.nc.Write(out)
		c.wmu.Unlock()
		if err == nil && s.cfg.Tap != nil {
			s.cfg.Tap(w.frame, out)
		}
		return
	}
}

// appendSignal returns a channel closed at the next append. Callers hold
// s.mu.
func (s *Server) appendSignal() <-chan struct{} {
	if s.appended == nil {
		s.appended = make(chan struct{})
	}
	return s.appended
}

// notifyAppend wakes the waits parked on appendSignal. Callers hold s.mu.
func (s *Server) notifyAppend() {
	if s.appended != nil {
		close(s.appended)
		s.appended = nil
	}
}

// cloneFrame keeps a deferred request's frame for the tap.
func cloneFrame(b []byte) []byte { return bytes.Clone(b) }
