package iggytest

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/zeebo/xxh3"
)

// resyncPartition is the partition id of an empty poll that asks a group
// member to re-sync (§3.8, RESYNC_REQUIRED_PARTITION_SENTINEL).
const resyncPartition = 0xFFFFFFFF

// process serves one complete frame (header and body) for a connection and
// appends the bytes to send back to out. close asks the caller to drop the
// connection after writing out. It never panics on any input.
func (s *Server) process(st *connState, frame []byte, out []byte) ([]byte, bool) {
	if s.cfg.Tap != nil {
		at := len(out)
		out, closing := s.serve(st, frame, out)
		if st.newWait != nil {
			// Tapped with its reply, when it is answered (wait.go).
			st.newWait.frame = cloneFrame(frame)
			return out, closing
		}
		s.cfg.Tap(frame, out[at:])
		return out, closing
	}
	return s.serve(st, frame, out)
}

// serve is process without the tap.
func (s *Server) serve(st *connState, frame []byte, out []byte) ([]byte, bool) {
	if len(frame) < proto.HeaderSize || int(proto.FrameSize(frame)) != len(frame) {
		return out, true
	}
	req := proto.ParseRequestHeader(frame)
	body := frame[proto.HeaderSize:]
	valid := req.Validate(proto.Dialect012) || req.Validate(proto.Dialect011)
	if st.bound {
		valid = req.Validate(st.dialect)
	}
	if !valid {
		// §1.3: "A request that fails any of them is silently dropped."
		s.log.Warn("iggytest: dropping client request with invalid header", "op", req.Operation, "client", req.Client)
		return out, false
	}
	// §1.3 request_checksum: 0 is unstamped; otherwise XXH3-64(body)
	// zero-extended, or status 4 InvalidFormat. 0.12 (§9): a random
	// identifier, which a metadata request must carry (the official SDK
	// always stamps one).
	if requestDialect(st, &req, body) == proto.Dialect012 {
		if (proto.IsMetadata(req.Operation) || req.Operation == proto.OpRegister) && req.RequestChecksum == 0 && req.RequestChecksumHi == 0 {
			return reply(out, &req, 0, uint32(proto.CodeInvalidFormat), nil), false
		}
	} else if req.RequestChecksum != 0 || req.RequestChecksumHi != 0 {
		if req.RequestChecksumHi != 0 || req.RequestChecksum != xxh3.Hash(body) {
			return reply(out, &req, 0, uint32(proto.CodeInvalidFormat), nil), false
		}
	}
	code := req.Code
	if req.Operation != proto.OpNonReplicated {
		code = 0
	}
	if s.log.Enabled(context.Background(), slog.LevelDebug) { // its arguments allocate
		s.log.Debug("iggytest: request", "conn", st.connID, "op", req.Operation, "code", code, "request", req.Request, "body", len(body))
	}
	if proto.IsPartition(req.Operation) {
		s.applyInherited()
	}
	if f, ok := s.takeFault(req.Operation, code); ok {
		switch {
		case f.Status != 0:
			return reply(out, &req, st.session, f.Status, nil), false
		case f.Drop && f.Inherit:
			s.mu.Lock()
			s.inherited = append(s.inherited, inheritedWrite{st: st, req: req, body: bytes.Clone(body)})
			s.mu.Unlock()
			return out, f.Close
		case f.Drop && !f.Apply:
			return out, false
		case f.Drop:
			s.dispatch(st, &req, body, nil)
			return out, f.Close
		case f.Delay > 0:
			out, closeConn := s.dispatch(st, &req, body, out)
			time.Sleep(f.Delay)
			return out, closeConn
		}
	}
	return s.dispatch(st, &req, body, out)
}

// applyInherited applies the partition writes Inherit faults held, in the
// order they arrived, their replies going nowhere (Fault.Inherit).
func (s *Server) applyInherited() {
	s.mu.Lock()
	held := s.inherited
	s.inherited = nil
	s.mu.Unlock()
	for i := range held {
		s.dispatch(held[i].st, &held[i].req, held[i].body, nil)
	}
}

// requestDialect is the dialect a request is in: the login's once bound, the
// version a login announces, else 0.11.
func requestDialect(st *connState, req *proto.RequestHeader, body []byte) proto.Dialect {
	if st.bound {
		return st.dialect
	}
	if req.Operation == proto.OpRegister && len(body) >= 4 {
		if d, ok := proto.DialectOfLogin(binary.LittleEndian.Uint32(body)); ok {
			return d
		}
	}
	return proto.Dialect011
}

// reply appends a Reply frame. A non-zero status always has an empty body
// (§1.5).
func reply(out []byte, req *proto.RequestHeader, op uint64, status uint32, body []byte) []byte {
	if status != 0 {
		body = nil
	}
	at := len(out)
	out = append(out, make([]byte, proto.HeaderSize)...)
	out = append(out, body...)
	proto.PutReplyHeader(out[at:], len(body), req, op, op, status)
	return out
}

func (s *Server) evict(out []byte, client proto.ClientID, reason uint8) []byte {
	at := len(out)
	out = append(out, make([]byte, proto.HeaderSize)...)
	lo, hi := s.dialects()[0].Window()
	proto.PutEvictionHeader(out[at:], client, reason, hi, lo)
	return out
}

// dialects returns Config.Dialects, or both.
func (s *Server) dialects() []proto.Dialect {
	if len(s.cfg.Dialects) > 0 {
		return s.cfg.Dialects
	}
	return proto.Dialects[:]
}

func (s *Server) dispatch(st *connState, req *proto.RequestHeader, body, out []byte) ([]byte, bool) {
	switch req.Operation {
	case proto.OpRegister:
		return s.login(st, req, body, out)
	case proto.OpNonReplicated:
		if req.Code == proto.CodeLoginUser || req.Code == proto.CodeLoginWithPAT {
			// §3.3: legacy login codes get Eviction reason 15 MalformedLogin.
			return s.evict(out, req.Client, proto.EvictMalformedLogin), true
		}
		if req.Code == proto.CodeBindSession {
			return s.bindSession(st, req, body, out)
		}
		if !st.bound && req.Code != proto.CodePing {
			// §3.1: "Any other read before login → status 40 Unauthenticated."
			return reply(out, req, 0, uint32(proto.CodeUnauthenticated), nil), false
		}
		if st.dialect == proto.Dialect012 {
			// §9: the readiness wait (wait.go); a 0.11 session gets the
			// unknown code's status 3 below.
			switch req.Code {
			case proto.CodeWaitForMessages:
				return s.waitForMessages(st, req, body, out), false
			case proto.CodeCancelDeferredRequest:
				// codes.rs: "The body is empty [...] and no reply is sent."
				if len(body) == 0 {
					st.cancelWait(req.Request)
				}
				return out, false
			}
		}
		s.mu.Lock()
		s.countPartitionRead(req.Code, body)
		body, status := s.read(st, req, body)
		s.mu.Unlock()
		return reply(out, req, st.session, status, body), false
	case proto.OpLogout:
		if !st.bound {
			return s.evict(out, req.Client, proto.EvictNoSession), true
		}
		s.mu.Lock()
		s.dropMember(st.client)
		s.mu.Unlock()
		st.bound = false
		return reply(out, req, st.session, 0, nil), false
	}
	if !st.bound {
		// §1.6 reason 1: "Sent for a replicated request on a connection that
		// is not logged in."
		return s.evict(out, req.Client, proto.EvictNoSession), true
	}
	if req.Session != st.session || req.Client != st.client {
		return s.evict(out, req.Client, proto.EvictSessionTooLow), true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.acceptsWrite(req.Operation, body) {
		// A backup: "not accepted", safe to retry on the primary (server
		// iggy_partition.rs "non-primary transient reply").
		if c := s.cluster; c != nil {
			c.refusals[s.id]++
		}
		return reply(out, req, st.session, uint32(proto.CodeTransientNotAccepted), nil), false
	}
	if proto.IsMetadata(req.Operation) {
		cs := s.clientState(st.client)
		// §1.4: a request number at or below the watermark is answered from
		// the reply cache if still cached, otherwise with 59.
		if req.Request <= cs.watermark {
			if req.Request == cs.watermark && cs.lastReply != nil {
				at := len(out)
				out = reply(out, req, st.session, 0, cs.lastReply)
				proto.SetReplyOperation(out[at:], proto.CommittedOperation(req.Operation))
				if st.dialect == proto.Dialect012 {
					// The cached reply is the committed one, header included.
					proto.SetReplyCommitted(out[at:])
				}
				return out, false
			}
			return reply(out, req, st.session, uint32(proto.CodeRequestAlreadyApplied), nil), false
		}
		rb, status := s.metadata(st, req, body)
		if status == 0 {
			cs.watermark = req.Request
			cs.lastReply = rb
		}
		at := len(out)
		out = reply(out, req, st.session, status, rb)
		if status == 0 {
			// A committed reply echoes the committed operation, which for
			// CreateTopic / CreatePartitions is the internal *WithAssignments
			// op (seen on a real server: CreateTopic 132 is answered with 64).
			proto.SetReplyOperation(out[at:], proto.CommittedOperation(req.Operation))
			if st.dialect == proto.Dialect012 {
				proto.SetReplyCommitted(out[at:])
			}
		}
		return out, false
	}
	var cs *clientState
	if st.dialect == proto.Dialect012 {
		// A write sent again under its request number after the session
		// was bound to a new connection gets the first one's receipt.
		cs = s.clientState(st.client)
		if req.Request == cs.partReq && cs.partReply != nil {
			return reply(out, req, st.session, 0, cs.partReply), false
		}
	}
	rb, status, drop := s.partitionOp(st, req, body)
	if drop {
		return out, false
	}
	if cs != nil && status == 0 {
		cs.partReq, cs.partReply = req.Request, append(cs.partReply[:0], rb...)
	}
	return reply(out, req, st.session, status, rb), false
}

// clientState returns a client's deduplication state, creating it. Callers
// hold s.mu.
func (s *Server) clientState(client proto.ClientID) *clientState {
	cs := s.clients[client]
	if cs == nil {
		cs = &clientState{}
		s.clients[client] = cs
	}
	return cs
}

// bindSession serves 0.12's BindSession (§9): a new connection takes over a
// registered session (its client id, session and bind secret), keeping its
// request numbers. The reply is a login reply without a result section.
func (s *Server) bindSession(st *connState, req *proto.RequestHeader, body, out []byte) ([]byte, bool) {
	r := proto.NewReader(body)
	version := r.U32()
	r.Name()
	r.Name()
	client := proto.ClientID{Lo: r.U64(), Hi: r.U64()}
	session := r.U64()
	r.U64() // metadata watermark
	secret := r.Bytes(proto.BindSecretSize)
	if r.Complete() != nil || version != proto.Dialect012.Version() || !slices.Contains(s.dialects(), proto.Dialect012) {
		return s.evict(out, req.Client, proto.EvictMalformedLogin), true
	}
	s.mu.Lock()
	cs := s.clients[client]
	ok := cs != nil && cs.session == session && session != 0 && bytes.Equal(cs.secret[:], secret)
	s.mu.Unlock()
	if !ok {
		return s.evict(out, req.Client, proto.EvictNoSession), true
	}
	st.bound, st.client, st.session, st.dialect = true, client, session, proto.Dialect012
	b := proto.AppendU32(nil, 0) // root user id
	b = proto.AppendU64(b, session)
	b = proto.AppendU32(b, proto.Dialect012.Version())
	b = proto.AppendName(b, ServerVersion)
	return reply(out, req, session, 0, b), false
}

// login serves Register (§3.3).
func (s *Server) login(st *connState, req *proto.RequestHeader, body, out []byte) ([]byte, bool) {
	r := proto.NewReader(body)
	version := r.U32()
	r.Name() // sdk name
	r.Name() // sdk version
	if !r.Ok() {
		return s.evict(out, req.Client, proto.EvictMalformedLogin), true
	}
	// §3.3: the gate takes the versions of the dialects served.
	d, ok := proto.DialectOfLogin(version)
	if ok && !slices.Contains(s.dialects(), d) {
		ok = false
	}
	if !ok {
		return s.evict(out, req.Client, proto.EvictIncompatibleProtocol), true
	}
	var secret []byte
	if d == proto.Dialect012 {
		secret = r.Bytes(proto.BindSecretSize) // §9: the session-binding secret
		if !r.Ok() {
			return s.evict(out, req.Client, proto.EvictMalformedLogin), true
		}
	}
	rest := body[r.Offset():]
	pwShape, tokShape, ok := false, false, false
	{
		pr := proto.NewReader(rest)
		user := pr.Secret()
		pass := pr.Secret()
		pr.LongString()
		if pr.Complete() == nil {
			pwShape = true
			ok = string(user) == s.cfg.Username && string(pass) == s.cfg.Password
		}
	}
	if !ok {
		tr := proto.NewReader(rest)
		tok := tr.Secret()
		tr.LongString()
		if tr.Complete() == nil {
			tokShape = true
			s.mu.Lock()
			ok = s.validToken(string(tok))
			s.mu.Unlock()
		}
	}
	if !ok {
		switch {
		case pwShape:
			return s.evict(out, req.Client, proto.EvictInvalidCredentials), true
		case tokShape:
			return s.evict(out, req.Client, proto.EvictInvalidToken), true
		}
		return s.evict(out, req.Client, proto.EvictMalformedLogin), true
	}
	s.mu.Lock()
	if pwShape && !tokShape {
		s.passwordLogins++
	} else {
		s.tokenLogins++
	}
	s.mu.Unlock()
	// §1.8: "Re-login on a connection that is still bound is treated as an
	// idempotent replay that keeps the old identity."
	if !st.bound {
		s.mu.Lock()
		if !s.primaryAlive() {
			// A backup forwards the login to the primary; with none alive
			// it is not accepted (server dispatch.rs forward_register).
			s.mu.Unlock()
			return reply(out, req, 0, uint32(proto.CodeTransientNotAccepted), nil), false
		}
		st.session = s.nextCommit()
		if d == proto.Dialect012 {
			cs := s.clientState(req.Client)
			cs.session = st.session
			copy(cs.secret[:], secret)
		}
		s.mu.Unlock()
		st.bound = true
		st.client = req.Client
		st.dialect = d
	}
	b := proto.AppendResultOK(nil)
	b = proto.AppendU32(b, 0) // root user id
	b = proto.AppendU64(b, st.session)
	b = proto.AppendU32(b, st.dialect.Version())
	b = proto.AppendName(b, ServerVersion)
	return reply(out, req, st.session, 0, b), false
}

// dropMember removes a client from every consumer group (disconnect or
// logout, §1.8). Callers hold s.mu.
func (s *Server) dropMember(client proto.ClientID) {
	for _, st := range s.streams {
		for _, t := range st.topics {
			for _, g := range t.groups {
				g.remove(client)
			}
		}
	}
}

// resolveStream finds a stream by identifier. Callers hold s.mu.
func (s *Server) resolveStream(id proto.Identifier) *stream {
	if id.Kind == proto.IDNumeric {
		return s.streams[id.Numeric]
	}
	return s.byName[string(id.Name)]
}

func (st *stream) resolveTopic(id proto.Identifier) *topic {
	if st == nil {
		return nil
	}
	if id.Kind == proto.IDNumeric {
		return st.topics[id.Numeric]
	}
	return st.byName[string(id.Name)]
}

func (t *topic) resolveGroup(id proto.Identifier) *group {
	if id.Kind == proto.IDNumeric {
		return t.groups[id.Numeric]
	}
	return t.groupByName[string(id.Name)]
}

// resolveTopic resolves stream and topic, returning the status for a miss
// (1009 / 2010, as reads and metadata ops report them).
func (s *Server) resolveTopic(r *proto.Reader) (*stream, *topic, uint32) {
	sid, tid := r.Identifier(), r.Identifier()
	if !r.Ok() {
		return nil, nil, uint32(proto.CodeInvalidCommand)
	}
	st := s.resolveStream(sid)
	if st == nil {
		return nil, nil, uint32(proto.CodeStreamIDNotFound)
	}
	t := st.resolveTopic(tid)
	if t == nil {
		return st, nil, uint32(proto.CodeTopicIDNotFound)
	}
	return st, t, 0
}

// read serves a non-replicated request. Callers hold s.mu.
func (s *Server) read(st *connState, req *proto.RequestHeader, body []byte) ([]byte, uint32) {
	r := proto.NewReader(body)
	switch req.Code {
	case proto.CodePing:
		return nil, 0
	case proto.CodeGetClusterMetadata:
		return s.appendClusterMetadata(nil, st.dialect, st.port), 0
	case proto.CodeGetMe:
		return s.getMe(st, req, &r)
	case proto.CodeGetStream:
		return s.getStream(st, req, &r)
	case proto.CodeGetStreams:
		var b []byte
		for _, str := range sortedStreams(s) {
			b = appendStream(b, st.dialect, str)
		}
		return b, 0
	case proto.CodeGetPartitionRoute:
		return s.partitionRoute(st, req, &r)
	case proto.CodeGetTopic:
		return s.getTopic(st, req, &r)
	case proto.CodeGetTopics:
		return s.getTopics(st, req, &r)
	case proto.CodePollMessages:
		return s.poll(st, &r)
	case proto.CodeGetConsumerOffset:
		return s.getConsumerOffset(st, req, &r)
	case proto.CodeGetConsumerGroup, proto.CodeSyncConsumerGroup:
		return s.getGroup(st, req, &r)
	case proto.CodeGetConsumerGroups:
		return s.getGroups(st, req, &r)
	}
	// §1.4: "An unknown code sent as operation 2 gets status 3."
	return nil, uint32(proto.CodeInvalidCommand)
}

// getMe serves GetMe (a read). Callers hold s.mu.
func (s *Server) getMe(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	b := proto.AppendU32(nil, st.connID)
	b = proto.AppendU32(b, 0)
	b = append(b, 1) // TCP
	b = proto.AppendLongString(b, "127.0.0.1")
	return proto.AppendU32(b, 0), 0
}

// getStream serves GetStream (a read). Callers hold s.mu.
func (s *Server) getStream(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	id := r.Identifier()
	if r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	str := s.resolveStream(id)
	if str == nil {
		return nil, 0 // §3.4: "Not found → status 0 with an empty body."
	}
	b := appendStream(nil, st.dialect, str)
	for _, t := range sortedTopics(str) {
		b = appendTopicHeader(b, st.dialect, t)
	}
	return b, 0
}

// partitionRoute serves GetPartitionRoute (a read). Callers hold s.mu.
func (s *Server) partitionRoute(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	// 0.12 (§9): [stream][topic][partition u32] → [incarnation u64]
	// [metadata_op u64][view u32][partitions_count u32][primary u8].
	_, t, status := s.resolveTopic(r)
	pid := r.U32()
	if r.Complete() != nil || st.dialect != proto.Dialect012 {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if status != 0 {
		return nil, status
	}
	if int(pid) >= len(t.partitions) {
		return nil, uint32(proto.CodePartitionNotFound)
	}
	b := proto.AppendU64(nil, t.partitions[pid].created)
	b = proto.AppendU64(b, s.commit)
	var view uint32
	primary := uint8(0)
	if c := s.cluster; c != nil {
		view, primary = uint32(c.view), uint8(c.primaryLocked())
		if n, ok := c.partPrimary[partRef{t.name, pid}]; ok {
			primary = uint8(n)
		}
	}
	b = proto.AppendU32(b, view)
	b = proto.AppendU32(b, uint32(len(t.partitions)))
	return append(b, primary), 0
}

// getTopic serves GetTopic (a read). Callers hold s.mu.
func (s *Server) getTopic(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	_, t, status := s.resolveTopic(r)
	if status == uint32(proto.CodeInvalidCommand) || r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if t == nil {
		return nil, 0 // §3.5: "Not found → status 0, empty body."
	}
	return appendTopic(nil, st.dialect, t), 0
}

// getTopics serves GetTopics (a read). Callers hold s.mu.
func (s *Server) getTopics(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	id := r.Identifier()
	if r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	str := s.resolveStream(id)
	if str == nil {
		return proto.AppendU32(nil, 0), 0
	}
	ts := sortedTopics(str)
	b := proto.AppendU32(nil, uint32(len(ts)))
	for _, t := range ts {
		b = appendTopicHeader(b, st.dialect, t)
	}
	return b, 0
}

// getConsumerOffset serves GetConsumerOffset (a read). Callers hold s.mu.
func (s *Server) getConsumerOffset(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	kind := r.U8()
	cid := r.Identifier()
	_, t, status := s.resolveTopic(r)
	flag, pid := r.U8(), r.U32()
	if r.Complete() != nil || (kind != proto.ConsumerSingle && kind != proto.ConsumerGroup) || flag > 1 {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if status != 0 {
		return nil, status
	}
	if flag == 0 {
		pid = 0 // §3.9: "An absent partition means partition 0."
	}
	if int(pid) >= len(t.partitions) {
		return nil, uint32(proto.CodePartitionNotFound)
	}
	p := t.partitions[pid]
	var v uint64
	var ok bool
	if kind == proto.ConsumerGroup {
		g := t.resolveGroup(cid)
		if g == nil {
			return nil, uint32(proto.CodeInvalidIdentifier)
		}
		v, ok = p.groupOffsets[g.id]
	} else {
		v, ok = p.offsets[consumerKey(cid)]
	}
	if !ok {
		return nil, 0 // §3.9: "No stored offset → status 0 with an empty body."
	}
	b := proto.AppendU32(nil, pid)
	b = proto.AppendU64(b, p.currentOffset())
	return proto.AppendU64(b, v), 0
}

// getGroup serves GetConsumerGroup, SyncConsumerGroup (a read). Callers hold s.mu.
func (s *Server) getGroup(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	_, t, status := s.resolveTopic(r)
	gid := r.Identifier()
	if r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if status != 0 {
		return nil, status
	}
	g := t.resolveGroup(gid)
	if g == nil {
		return nil, 0 // group not found / not a member: empty body
	}
	if req.Code == proto.CodeGetConsumerGroup {
		return appendGroup(nil, t, g), 0
	}
	parts := g.assignment(st.client, len(t.partitions))
	if parts == nil {
		return nil, 0 // §3.10: "Empty body = you are not a member."
	}
	b := proto.AppendU64(nil, g.generation)
	b = proto.AppendU32(b, uint32(len(parts)))
	for _, p := range parts {
		b = proto.AppendU32(b, p)
	}
	return b, 0
}

// getGroups serves GetConsumerGroups (a read). Callers hold s.mu.
func (s *Server) getGroups(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	_, t, status := s.resolveTopic(r)
	if r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if status != 0 {
		return nil, status
	}
	var b []byte
	for _, g := range sortedGroups(t) {
		b = appendGroupHeader(b, t, g)
	}
	return b, 0
}

// consumerKey is the offset key of a single consumer: numeric ids as is,
// named consumers hashed with XXH32 (§2.4).
func consumerKey(id proto.Identifier) uint32 {
	if id.Kind == proto.IDNumeric {
		return id.Numeric
	}
	return xxh32(id.Name)
}

// poll serves PollMessages (§3.8) and returns the reply body. Callers hold s.mu.
func (s *Server) poll(st *connState, r *proto.Reader) ([]byte, uint32) {
	// The reply body is built in the connection's scratch (reply copies
	// it), so a poll allocates nothing (the gateway's allocation tests).
	empty := func(pid uint32) ([]byte, uint32) {
		b := proto.AppendU32(st.pollBuf[:0], pid)
		b = proto.AppendU64(b, 0)
		b = proto.AppendU32(b, 0)
		if st.dialect == proto.Dialect012 {
			b = proto.AppendPartitionContext(b, proto.PartitionContext{})
		}
		return b, 0
	}
	kind := r.U8()
	cid := r.Identifier()
	sid, tid := r.Identifier(), r.Identifier()
	flag, pid := r.U8(), r.U32()
	strategy, value := r.U8(), r.U64()
	count := r.U32()
	autoCommit := r.U8()
	if r.Complete() != nil || flag > 1 || autoCommit > 1 || strategy < proto.PollOffset || strategy > proto.PollNext ||
		(kind != proto.ConsumerSingle && kind != proto.ConsumerGroup) {
		// §3.8: "an undecodable request → an empty poll (16 bytes, count 0)
		// with partition_id 0."
		return empty(0)
	}
	// §3.8: "A stream, topic or partition that does not exist → status
	// 1009, 2010 or 3007 with an empty body."
	str := s.resolveStream(sid)
	if str == nil {
		return nil, uint32(proto.CodeStreamIDNotFound)
	}
	t := str.resolveTopic(tid)
	if t == nil {
		return nil, uint32(proto.CodeTopicIDNotFound)
	}
	if gh, ok := str.ghosts[t.id]; ok && gh.t != t && time.Now().Before(gh.until) {
		// iggy-server 0.9: the recycled id still reaches the deleted
		// topic's partitions (docs/IGGY.md, "Topic incarnations").
		t = gh.t
	}
	var g *group
	if kind == proto.ConsumerGroup {
		g = t.resolveGroup(cid)
		if g == nil || flag == 0 {
			return empty(0)
		}
		if !g.owns(st.client, len(t.partitions), pid) {
			return empty(resyncPartition)
		}
	} else if flag == 0 {
		pid = 0
	}
	if int(pid) >= len(t.partitions) {
		return nil, uint32(proto.CodePartitionNotFound)
	}
	p := t.partitions[pid]
	var start uint64
	switch strategy {
	case proto.PollOffset:
		start = value
	case proto.PollTimestamp:
		var ok bool
		if start, ok = p.startForTimestamp(value); !ok {
			start = p.next
		}
	case proto.PollFirst:
		start = 0
	case proto.PollLast:
		if c := uint64(count); c > 0 && p.next > c {
			start = p.next - c
		}
	case proto.PollNext:
		var v uint64
		var ok bool
		if g != nil {
			v, ok = p.groupOffsets[g.id]
		} else {
			v, ok = p.offsets[consumerKey(cid)]
		}
		if ok {
			start = v + 1
		}
	}
	b := proto.AppendU32(st.pollBuf[:0], pid)
	b = proto.AppendU64(b, p.currentOffset())
	b = proto.AppendU32(b, 0)
	if st.dialect == proto.Dialect012 {
		b = proto.AppendPartitionContext(b, p.context())
	}
	var h xxh3.Hasher
	b, n, last := p.read(&h, b, start, count, proto.MaxFrameSize-proto.HeaderSize)
	binary.LittleEndian.PutUint32(b[12:], n)
	st.pollBuf = b
	if n > 0 && autoCommit == 1 {
		if g != nil {
			p.groupOffsets[g.id] = last
		} else {
			p.offsets[consumerKey(cid)] = last
		}
	}
	return b, 0
}

// metadata serves a replicated metadata operation (§3.4–3.6, §3.10) and
// returns the result-framed body. Callers hold s.mu.
func (s *Server) metadata(st *connState, req *proto.RequestHeader, body []byte) ([]byte, uint32) {
	r := proto.NewReader(body)
	now := s.nowMicros()
	switch req.Operation {
	case proto.OpCreateStream:
		return s.createStream(st, req, &r, now)
	case proto.OpDeleteStream:
		return s.deleteStream(st, req, &r)
	case proto.OpCreateTopic:
		return s.createTopic(st, req, &r, now)
	case proto.OpDeleteTopic:
		return s.deleteTopic(st, req, &r)
	case proto.OpUpdateTopic:
		return s.updateTopic(st, req, &r)
	case proto.OpUpdateResource:
		return s.updateResource(st, req, &r)
	case proto.OpCreatePartitions:
		return s.createPartitions(st, req, &r, now)
	case proto.OpCreateConsumerGroup:
		return s.createGroup(st, req, &r)
	case proto.OpDeleteConsumerGroup, proto.OpJoinConsumerGroup, proto.OpLeaveConsumerGroup:
		return s.groupMembership(st, req, &r)
	case proto.OpCreatePAT:
		return s.createPAT(&r, now)
	case proto.OpDeletePAT:
		return s.deletePAT(&r)
	}
	return nil, uint32(proto.CodeFeatureUnavailable)
}

// createStream serves CreateStream (a metadata write). Callers hold s.mu.
func (s *Server) createStream(st *connState, req *proto.RequestHeader, r *proto.Reader, now uint64) ([]byte, uint32) {
	name := r.Name()
	if !r.Ok() {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if r.Len() > 0 {
		return nil, uint32(proto.CodeUnsupportedOptionKey) // streams take no options yet
	}
	if s.byName[string(name)] != nil {
		return failResult(proto.CodeStreamNameAlreadyExists)
	}
	id := uint32(0)
	for s.streams[id] != nil {
		id++
	}
	str := &stream{id: id, name: string(name), created: now, topics: map[uint32]*topic{}, byName: map[string]*topic{}}
	s.streams[id] = str
	s.byName[str.name] = str
	return appendStream(proto.AppendResultOK(nil), st.dialect, str), 0
}

// deleteStream serves DeleteStream (a metadata write). Callers hold s.mu.
func (s *Server) deleteStream(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	id := r.Identifier()
	if r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	str := s.resolveStream(id)
	if str == nil {
		return failResult(proto.CodeStreamIDNotFound)
	}
	delete(s.streams, str.id)
	delete(s.byName, str.name)
	return proto.AppendResultOK(nil), 0
}

// maxTopicsPerStream bounds a stream's topic ids, as Iggy's namespace does
// (ids below 4096): a stream holds at most this many topics, and a create
// past it is TooManyTopics (2021). Config.MaxTopicsPerStream overrides it.
const maxTopicsPerStream = 4096

// createTopic serves CreateTopic (a metadata write). Callers hold s.mu.
func (s *Server) createTopic(st *connState, req *proto.RequestHeader, r *proto.Reader, now uint64) ([]byte, uint32) {
	sid := r.Identifier()
	count := r.U32()
	name := r.Name()
	if !r.Ok() {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	// §3.5: 0..=1000 per request; more → status 2015.
	if count > 1000 {
		return nil, uint32(proto.CodeTooManyPartitions)
	}
	opts := r.Rest()
	t := &topic{name: string(name), created: now, expiry: math.MaxUint64, maxSize: math.MaxUint64, compression: 1,
		options: append([]byte(nil), opts...), groups: map[uint32]*group{}, groupByName: map[string]*group{},
		msgsToSave: defaultMessagesRequiredToSave, sizeToSave: defaultSizeRequiredToSave, explicit: map[string]bool{}}
	if status := parseTopicOptions(st.dialect, t, opts); status != 0 {
		return nil, status
	}
	str := s.resolveStream(sid)
	if str == nil {
		return failResult(proto.CodeStreamIDNotFound)
	}
	if str.byName[t.name] != nil {
		return failResult(proto.CodeTopicNameAlreadyExists)
	}
	for str.topics[t.id] != nil {
		t.id++
	}
	if limit := s.cfg.MaxTopicsPerStream; t.id >= maxTopicsPerStream || (limit > 0 && t.id >= uint32(limit)) {
		return failResult(proto.CodeTooManyTopics)
	}
	for i := uint32(0); i < count; i++ {
		t.partitions = append(t.partitions, newPartition(i, now))
	}
	str.topics[t.id] = t
	str.byName[t.name] = t
	return appendTopic(proto.AppendResultOK(nil), st.dialect, t), 0
}

// deleteTopic serves DeleteTopic (a metadata write). Callers hold s.mu.
func (s *Server) deleteTopic(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	_, t, status := s.resolveTopic(r)
	if r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if status != 0 {
		return failResult(proto.Code(status))
	}
	str := s.resolveStream(proto.Identifier{Kind: proto.IDNumeric, Numeric: 0})
	for _, x := range s.streams {
		if x.topics[t.id] == t {
			str = x
		}
	}
	delete(str.topics, t.id)
	delete(str.byName, t.name)
	if ttl := s.cfg.StaleIncarnationPolls; ttl > 0 {
		if str.ghosts == nil {
			str.ghosts = map[uint32]ghost{}
		}
		for id, gh := range str.ghosts {
			if time.Now().After(gh.until) {
				delete(str.ghosts, id)
			}
		}
		str.ghosts[t.id] = ghost{t: t, until: time.Now().Add(ttl)}
	}
	return proto.AppendResultOK(nil), 0
}

// updateTopic serves UpdateTopic (a metadata write). Callers hold s.mu.
func (s *Server) updateTopic(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	// §3.5: [stream][topic][name][options]; the options block patches
	// compression_algorithm, message_expiry and max_topic_size only.
	str, t, status := s.resolveTopic(r)
	name := r.Name()
	if !r.Ok() {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	opts := r.Rest()
	if status != 0 {
		return failResult(proto.Code(status))
	}
	patched := *t
	patched.explicit = maps.Clone(t.explicit)
	if status := parseTopicOptions(st.dialect, &patched, opts); status != 0 {
		return nil, status
	}
	for k := range patched.explicit {
		if !t.explicit[k] && !patchable(k) {
			return nil, uint32(proto.CodeUnsupportedOptionKey)
		}
	}
	if string(name) != t.name {
		if str.byName[string(name)] != nil {
			return failResult(proto.CodeTopicNameAlreadyExists)
		}
		delete(str.byName, t.name)
		t.name = string(name)
		str.byName[t.name] = t
	}
	t.expiry, t.maxSize, t.compression = patched.expiry, patched.maxSize, patched.compression
	return proto.AppendResultOK(nil), 0
}

// updateResource serves UpdateResource (a metadata write). Callers hold s.mu.
func (s *Server) updateResource(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	// 0.12 (§9): [scope u8][identifiers][reset_count u8][reset names]
	// [options to the end]; iggytest patches topics (scope 1), and of
	// them the expiry, size cap and compression, as UpdateTopic did.
	if r.U8() != 1 {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	_, t, status := s.resolveTopic(r)
	n := int(r.U8())
	reset := make([]string, 0, n)
	for range n {
		reset = append(reset, string(r.Name()))
	}
	if !r.Ok() {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	opts := r.Rest()
	if status != 0 {
		return failResult(proto.Code(status))
	}
	patched := *t
	patched.explicit = map[string]bool{}
	if status := parseTopicOptions(st.dialect, &patched, opts); status != 0 {
		return nil, status
	}
	if len(reset) == 0 && len(patched.explicit) == 0 {
		return nil, uint32(proto.CodeInvalidCommand) // "a patch with nothing to set or reset"
	}
	for _, k := range reset {
		if patched.explicit[k] {
			return nil, uint32(proto.CodeInvalidCommand) // "a key both set and reset"
		}
		switch k {
		case "message_expiry":
			patched.expiry = math.MaxUint64
		case "max_topic_size":
			patched.maxSize = math.MaxUint64
		case "compression_algorithm":
			patched.compression = 1
		default:
			return nil, uint32(proto.CodeUnsupportedOptionKey)
		}
	}
	for k := range patched.explicit {
		if !patchable(k) {
			return nil, uint32(proto.CodeUnsupportedOptionKey)
		}
	}
	t.expiry, t.maxSize, t.compression = patched.expiry, patched.maxSize, patched.compression
	// The explicit options block GetTopic echoes follows the patch: a
	// key set here replaces its entry, a reset key leaves it (and is
	// reported among the derived options again). In 0.12 the SDK reads
	// expiry, size cap and compression from these blocks only (crate
	// iggy_common 0.11.1-edge.4, src/types/topic/mod.rs
	// TopicDetails::resolved_options), so keeping the create-time block
	// reported a patched topic as unchanged.
	patchedKeys := maps.Clone(patched.explicit)
	for _, k := range reset {
		patchedKeys[k] = true
	}
	var kept []byte
	for rest := t.options; len(rest) > 0; {
		er := proto.NewReader(rest)
		er.U8()
		key := er.LongString()
		er.U8()
		er.LongString()
		if !er.Ok() {
			break
		}
		if !patchedKeys[string(key)] {
			kept = append(kept, rest[:er.Offset()]...)
		}
		rest = rest[er.Offset():]
	}
	t.options = append(kept, opts...)
	for k := range patchedKeys {
		if patched.explicit[k] {
			t.explicit[k] = true
		} else {
			delete(t.explicit, k)
		}
	}
	return proto.AppendResultOK(nil), 0
}

// createPartitions serves CreatePartitions (a metadata write). Callers hold s.mu.
func (s *Server) createPartitions(st *connState, req *proto.RequestHeader, r *proto.Reader, now uint64) ([]byte, uint32) {
	_, t, status := s.resolveTopic(r)
	count := r.U32()
	if r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	// §3.6: "The count must be 1..=1000; 0 or more → 2015."
	if count == 0 || count > 1000 {
		return nil, uint32(proto.CodeTooManyPartitions)
	}
	if status != 0 {
		return failResult(proto.Code(status))
	}
	for i := uint32(0); i < count; i++ {
		t.partitions = append(t.partitions, newPartition(uint32(len(t.partitions)), now))
	}
	for _, g := range t.groups {
		g.generation++
	}
	return proto.AppendResultOK(nil), 0
}

// createGroup serves CreateConsumerGroup (a metadata write). Callers hold s.mu.
func (s *Server) createGroup(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	_, t, status := s.resolveTopic(r)
	name := r.Name()
	if r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if status != 0 {
		return failResult(proto.Code(status))
	}
	if t.groupByName[string(name)] != nil {
		return failResult(proto.CodeConsumerGroupNameAlreadyExists)
	}
	g := &group{id: t.nextGroup, name: string(name)}
	t.nextGroup++ // §3.10: "0-based, monotonic per topic, and never reused"
	t.groups[g.id] = g
	t.groupByName[g.name] = g
	return appendGroup(proto.AppendResultOK(nil), t, g), 0
}

// groupMembership serves DeleteConsumerGroup, JoinConsumerGroup, LeaveConsumerGroup (a metadata write). Callers hold s.mu.
func (s *Server) groupMembership(st *connState, req *proto.RequestHeader, r *proto.Reader) ([]byte, uint32) {
	_, t, status := s.resolveTopic(r)
	gid := r.Identifier()
	if r.Complete() != nil {
		return nil, uint32(proto.CodeInvalidCommand)
	}
	if status != 0 {
		return failResult(proto.Code(status))
	}
	g := t.resolveGroup(gid)
	if g == nil {
		return failResult(proto.CodeConsumerGroupIDNotFound)
	}
	switch req.Operation {
	case proto.OpDeleteConsumerGroup:
		delete(t.groups, g.id)
		delete(t.groupByName, g.name)
		for _, p := range t.partitions {
			delete(p.groupOffsets, g.id)
		}
	case proto.OpJoinConsumerGroup:
		for _, m := range g.members {
			if m == st.client {
				return proto.AppendResultOK(nil), 0
			}
		}
		g.members = append(g.members, st.client)
		g.generation++
	case proto.OpLeaveConsumerGroup:
		if !g.remove(st.client) {
			return failResult(proto.CodeConsumerGroupMemberNotFound)
		}
	}
	return proto.AppendResultOK(nil), 0
}

// patchable reports whether a topic option may be changed after creation
// (UpdateTopic, UpdateResource): the expiry, the size cap and the
// compression.
func patchable(key string) bool {
	return key == "compression_algorithm" || key == "message_expiry" || key == "max_topic_size"
}

// failResult is a committed reply whose result section carries code.
func failResult(c proto.Code) ([]byte, uint32) { return proto.AppendResultError(nil, c), 0 }

// The server's defaults for the flush options (core/common
// types/options/mod.rs DEFAULT_MESSAGES_REQUIRED_TO_SAVE,
// DEFAULT_SIZE_OF_MESSAGES_REQUIRED_TO_SAVE).
const (
	defaultMessagesRequiredToSave = 1024
	defaultSizeRequiredToSave     = 1 << 20
)

// uint32Option reads a Uint32 option value or a decimal String.
func uint32Option(kind uint8, val []byte) (uint32, bool) {
	switch kind {
	case proto.KindUint32:
		if len(val) == 4 {
			return binary.LittleEndian.Uint32(val), true
		}
	case proto.KindString:
		v, err := strconv.ParseUint(string(val), 10, 32)
		return uint32(v), err == nil
	}
	return 0, false
}

// parseTopicOptions applies a CreateTopic options block (§2.6, §3.5) in
// dialect d.
func parseTopicOptions(d proto.Dialect, t *topic, opts []byte) uint32 {
	if len(opts) > 100_000 {
		return uint32(proto.CodeOptionsBlockTooLarge)
	}
	seen := map[string]bool{}
	for len(opts) > 0 {
		r := proto.NewReader(opts)
		kk := r.U8()
		key := r.LongString()
		vk := r.U8()
		val := r.LongString()
		if !r.Ok() || kk != proto.KindString || vk == 0 || len(key) == 0 || len(val) == 0 || seen[string(key)] {
			return uint32(proto.CodeInvalidOptionValue)
		}
		seen[string(key)] = true
		t.explicit[string(key)] = true
		opts = opts[r.Offset():]
		u64 := func() (uint64, bool) {
			if vk == proto.KindUint64 && len(val) == 8 {
				return binary.LittleEndian.Uint64(val), true
			}
			return 0, vk == proto.KindString
		}
		switch string(key) {
		case "message_expiry":
			v, ok := u64()
			if !ok {
				return uint32(proto.CodeInvalidOptionValue)
			}
			if v != 0 && vk == proto.KindUint64 {
				t.expiry = v
			}
		case "max_topic_size":
			v, ok := u64()
			if !ok {
				return uint32(proto.CodeInvalidOptionValue)
			}
			if v != 0 && vk == proto.KindUint64 {
				t.maxSize = v // checked against the segment size below
			}
		case "compression_algorithm":
			switch {
			case vk == proto.KindUint8 && len(val) == 1 && (val[0] == 1 || val[0] == 2):
				t.compression = val[0]
			case vk == proto.KindString && (bytes.Equal(val, []byte("none")) || bytes.Equal(val, []byte("gzip"))):
				if val[0] == 'g' {
					t.compression = 2
				}
			default:
				return uint32(proto.CodeInvalidOptionValue)
			}
		case "messages_required_to_save":
			// Server parse_u32: Uint32 or a decimal String; 1..=16 Mi.
			v, ok := uint32Option(vk, val)
			if !ok || v == 0 || v > 16<<20 {
				return uint32(proto.CodeInvalidOptionValue)
			}
			t.msgsToSave = uint64(v)
		case "size_of_messages_required_to_save":
			v, ok := u64()
			if !ok || v > 1<<30 {
				return uint32(proto.CodeInvalidOptionValue)
			}
			if v != 0 && vk == proto.KindUint64 {
				t.sizeToSave = v
			}
		case "durability":
			// 0.12 (§9): "Message completion policy: String, either
			// replicated or persisted."
			if d != proto.Dialect012 {
				break // 0.11: accepted and reported back
			}
			if vk != proto.KindString || (string(val) != "replicated" && string(val) != "persisted") {
				return uint32(proto.CodeInvalidOptionValue)
			}
			t.fsync = string(val) == "persisted"
		case "enforce_fsync":
			if d == proto.Dialect012 {
				return uint32(proto.CodeUnsupportedOptionKey) // gone in 0.12
			}
			// Server parse_bool: one byte 0 or 1, or "true"/"false".
			switch {
			case vk == proto.KindBool && len(val) == 1 && val[0] <= 1:
				t.fsync = val[0] == 1
			case vk == proto.KindString && (string(val) == "true" || string(val) == "false"):
				t.fsync = string(val) == "true"
			default:
				return uint32(proto.CodeInvalidOptionValue)
			}
		case "segment_size":
			// iggy_common options: "a 512-byte multiple within
			// MIN_TOPIC_SEGMENT_SIZE (1 MiB)..=MAX_TOPIC_SEGMENT_SIZE (1 GiB)".
			// Accepted and reported back; iggytest has no segments.
			v, ok := u64()
			if !ok {
				return uint32(proto.CodeInvalidOptionValue)
			}
			if vk == proto.KindUint64 { // a size string ("128 MiB") is not parsed here
				if v%512 != 0 || v < 1<<20 || v > 1<<30 {
					return uint32(proto.CodeInvalidOptionValue)
				}
				t.segmentSize = v
			}
		case "preallocate_segments", "consumer_offset_durability":
			// Accepted and reported back; iggytest has no segments.
		default:
			return uint32(proto.CodeUnsupportedOptionKey)
		}
	}
	seg := t.segmentSize
	if seg == 0 {
		seg = 1 << 30
	}
	if t.maxSize != 0 && t.maxSize != math.MaxUint64 && t.maxSize < seg {
		return uint32(proto.CodeInvalidTopicSize) // §3.5: "Must be ≥ segment size, else 1019."
	}
	return 0
}

// partitionOp serves SendMessages and Store/DeleteConsumerOffset (§3.7,
// §3.9). drop means "no reply" (a batch that fails admission). Callers hold
// s.mu.
func (s *Server) partitionOp(st *connState, req *proto.RequestHeader, body []byte) (b []byte, status uint32, drop bool) {
	r := proto.NewReader(body)
	switch req.Operation {
	case proto.OpSendMessages:
		metaLen := r.U32()
		if !r.Ok() || uint64(metaLen) > uint64(r.Len()) {
			return nil, 0, true
		}
		mr := proto.NewReader(r.Bytes(int(metaLen)))
		sid, tid := mr.Identifier(), mr.Identifier()
		pkind := mr.U8()
		plen := int(mr.U8())
		pval := mr.Bytes(plen)
		count := mr.U32()
		if mr.Complete() != nil {
			return nil, 0, true
		}
		batch := r.Rest()
		var h xxh3.Hasher
		// §3.7: "If any check fails, the batch is dropped with no reply."
		if err := proto.ValidateBatch(&h, batch, count); err != nil {
			s.log.Warn("iggytest: failed to convert send_messages request", "err", err)
			return nil, 0, true
		}
		str := s.resolveStream(sid)
		t := str.resolveTopic(tid)
		if t == nil {
			return nil, uint32(proto.CodeResourceNotFound), false
		}
		var pid uint32
		switch {
		case pkind == proto.PartitionID && plen == 4:
			pid = binary.LittleEndian.Uint32(pval)
		case pkind == proto.PartitionBalanced && plen == 0 && len(t.partitions) > 0:
			pid = t.balanced % uint32(len(t.partitions))
			t.balanced++
		case pkind == proto.PartitionMessagesKey && plen > 0 && len(t.partitions) > 0:
			pid = xxh32(pval) % uint32(len(t.partitions))
		default:
			return nil, uint32(proto.CodeResourceNotFound), false
		}
		if int(pid) >= len(t.partitions) {
			return nil, uint32(proto.CodeResourceNotFound), false
		}
		base := t.partitions[pid].append(&h, t, batch, s.nowMicros())
		s.notifyAppend()
		b = proto.AppendU32(nil, 1)
		b = proto.AppendU32(b, str.id)
		b = proto.AppendU32(b, t.id)
		b = proto.AppendU32(b, pid)
		return proto.AppendU64(b, base), 0, false
	case proto.OpStoreConsumerOffset, proto.OpDeleteConsumerOffset:
		kind := r.U8()
		cid := r.Identifier()
		sid, tid := r.Identifier(), r.Identifier()
		flag, pid := r.U8(), r.U32()
		var offset uint64
		if req.Operation == proto.OpStoreConsumerOffset {
			offset = r.U64()
		}
		ack := r.U8()
		if r.Complete() != nil || ack > 1 || flag > 1 || (kind != proto.ConsumerSingle && kind != proto.ConsumerGroup) {
			return nil, uint32(proto.CodeInvalidCommand), false
		}
		t := s.resolveStream(sid).resolveTopic(tid)
		// §3.9: "The partition must be present. Without it, or with an
		// unresolvable target, the reply is status 20."
		if t == nil || flag == 0 || int(pid) >= len(t.partitions) {
			return nil, uint32(proto.CodeResourceNotFound), false
		}
		p := t.partitions[pid]
		offsets, key := p.offsets, consumerKey(cid)
		if kind == proto.ConsumerGroup {
			g := t.resolveGroup(cid)
			// Group offsets are fenced to the member owning the partition.
			if g == nil || !g.owns(st.client, len(t.partitions), pid) {
				return nil, uint32(proto.CodeResourceNotFound), false
			}
			offsets, key = p.groupOffsets, g.id
		}
		if req.Operation == proto.OpDeleteConsumerOffset {
			if _, ok := offsets[key]; !ok {
				// The server denies on the status channel (iggy_partition.rs).
				return nil, uint32(proto.CodeConsumerOffsetNotFound), false
			}
			delete(offsets, key)
			return proto.AppendResultOK(nil), 0, false
		}
		// iggy_partition.rs: "an empty partition accepts no offset, and a
		// stored offset may not run ahead of the committed offset"; the
		// InvalidOffset rides ReplyHeader.status.
		if p.next == 0 || offset > p.currentOffset() {
			return nil, uint32(proto.CodeInvalidOffset), false
		}
		offsets[key] = offset
		return proto.AppendResultOK(nil), 0, false
	}
	return nil, uint32(proto.CodeInvalidCommand), false
}
