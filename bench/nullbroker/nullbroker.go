// Package nullbroker is the benchmark's ceiling: a minimal Kafka-protocol
// server that answers ApiVersions, Metadata and InitProducerId and
// acknowledges every Produce without decoding its records. Producing into it
// measures what a client can push through one machine's loopback when the
// server costs (almost) nothing, so bench/ can report kiggy relative to that
// ceiling as well as relative to Apache Kafka.
//
// Design note. One goroutine per connection reads a 4-byte size and the frame
// into a per-connection buffer, answers it into a per-connection output
// buffer, and flushes when no further request is already buffered, so
// pipelined requests (docs/design/kafka-protocol.md §1.5: up to 5 Produce requests in
// flight) get their responses in one write, in request order. The only look
// inside a RECORDS field is each batch header's lastOffsetDelta (docs/design/kafka-protocol.md §4.1), so
// that the base offsets it returns advance like a real log's and clients see
// plausible offsets; records are never decompressed or iterated, and nothing
// is stored, so the broker cannot be consumed from.
//
// Anything it does not serve (another API key, an unsupported version, a
// malformed frame) closes that connection; it never panics on input.
package nullbroker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kiggy-io/kiggy/wire"
)

// NodeID is the broker id the null broker reports in Metadata, as leader of
// every partition and as controller.
const NodeID = 1

// DefaultMaxFrameSize is the largest request frame accepted when
// Config.MaxFrameSize is 0 (Kafka's socket.request.max.bytes default).
const DefaultMaxFrameSize = 100 << 20

// Config configures a Server. The zero value means one partition per topic,
// 100 MiB frames, and no logging.
type Config struct {
	// Partitions is the partition count Metadata reports for every topic
	// (0 = 1, at most 1<<16). The benchmark starts a fresh null broker per
	// load, with the load's partition count.
	Partitions int32
	// MaxFrameSize bounds a request frame in bytes (0 = 100 MiB); a larger
	// size prefix closes the connection, as Kafka does.
	MaxFrameSize int32
	// ClusterID is returned in Metadata ("" = "nullbroker").
	ClusterID string
	// Logger receives one line per connection closed for bad input (nil =
	// discard).
	Logger *slog.Logger
}

func (c *Config) normalize() {
	if c.Partitions <= 0 {
		c.Partitions = 1
	}
	if c.Partitions > 1<<16 {
		c.Partitions = 1 << 16
	}
	if c.MaxFrameSize <= 0 {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if c.ClusterID == "" {
		c.ClusterID = "nullbroker"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Stats are the server's counters since it was created.
type Stats struct {
	// Connections is the number of connections accepted.
	Connections uint64
	// Requests is the number of requests answered (or, for acks=0
	// Produce, consumed).
	Requests uint64
	// ProduceRequests is the number of Produce requests.
	ProduceRequests uint64
	// Records is the number of records acknowledged, from the batch
	// headers' lastOffsetDelta.
	Records uint64
	// RecordBytes is the number of RECORDS bytes received.
	RecordBytes uint64
	// BadRequests is the number of connections closed for input the
	// server does not serve.
	BadRequests uint64
}

// Server is a null broker. Create it with New, run it with Serve, stop it
// with Close.
type Server struct {
	// Immutable after New.
	cfg        Config
	advertised []wire.APIVersionsKey
	apiMax     int16

	// Counters, updated atomically.
	connections, requests, produceRequests, records, recordBytes, badRequests atomic.Uint64

	// producerID hands out producer ids to InitProducerId.
	producerID atomic.Int64

	// mu guards topics, conns, lns and closed. It is held only briefly:
	// to look up or add a topic, and to track connections.
	mu     sync.Mutex
	topics map[string]*topic
	conns  map[net.Conn]struct{}
	lns    map[net.Listener]struct{}
	closed bool
}

// topic is one topic the null broker has been asked about or produced to.
type topic struct {
	name string
	// meta is the Metadata entry, built once.
	meta wire.MetadataResponseTopic
	// offsetsMu guards next, each partition's next offset; it is the
	// topic's own lock so that Produce does not serialize on Server.mu.
	offsetsMu sync.Mutex
	next      []int64
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("nullbroker: server closed")

// New returns a Server for cfg.
func New(cfg Config) *Server {
	cfg.normalize()
	s := &Server{
		cfg:    cfg,
		topics: map[string]*topic{},
		conns:  map[net.Conn]struct{}{},
		lns:    map[net.Listener]struct{}{},
	}
	// The APIs a producer needs (docs/design/kafka-protocol.md §8.0, without the
	// consume and group side), with the ranges wire decodes.
	for _, k := range []wire.APIKey{wire.KeyProduce, wire.KeyMetadata, wire.KeyAPIVersions, wire.KeyInitProducerID} {
		a, ok := wire.LookupAPI(k)
		if !ok {
			continue
		}
		if k == wire.KeyProduce {
			// Produce v13 names topics by id (KIP-516), and the null
			// broker has no topic ids: v12 at most, as a Kafka broker
			// before 4.1.
			a.Max = min(a.Max, 12)
		}
		s.advertised = append(s.advertised, wire.APIVersionsKey{APIKey: a.Key, MinVersion: a.Min, MaxVersion: a.Max})
		if k == wire.KeyAPIVersions {
			s.apiMax = a.Max
		}
	}
	return s
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Connections:     s.connections.Load(),
		Requests:        s.requests.Load(),
		ProduceRequests: s.produceRequests.Load(),
		Records:         s.records.Load(),
		RecordBytes:     s.recordBytes.Load(),
		BadRequests:     s.badRequests.Load(),
	}
}

// Serve accepts connections on ln until Close, serving each on its own
// goroutine. It returns ErrClosed after Close, or the accept error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			delete(s.lns, ln)
			s.mu.Unlock()
			if closed {
				return ErrClosed
			}
			return err
		}
		s.connections.Add(1)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return ErrClosed
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

// Close stops every listener and closes every connection.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	return nil
}

func (s *Server) serveConn(c net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	cs := newConnState(s, c.LocalAddr())
	br := bufio.NewReaderSize(c, 256<<10)
	bw := bufio.NewWriterSize(c, 64<<10)
	var size [4]byte
	for {
		if br.Buffered() == 0 {
			// Nothing more is pipelined behind the requests answered so
			// far: send their responses now, in one write.
			if err := bw.Flush(); err != nil {
				return
			}
		}
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		// docs/design/kafka-protocol.md §1.1: the size prefix counts the bytes that
		// follow; Kafka closes the connection when it is negative or
		// exceeds socket.request.max.bytes.
		if n < 0 || n > s.cfg.MaxFrameSize {
			s.bad("frame size out of range", c, nil)
			return
		}
		frame := cs.frameBuffer(int(n))
		if _, err := io.ReadFull(br, frame); err != nil {
			return
		}
		resp, err := cs.handle(frame)
		if err != nil {
			s.bad("request not served", c, err)
			return
		}
		if resp != nil {
			if _, err := bw.Write(resp); err != nil {
				return
			}
		}
	}
}

func (s *Server) bad(msg string, c net.Conn, err error) {
	s.badRequests.Add(1)
	s.cfg.Logger.Info("nullbroker: closing connection: "+msg, "remote", c.RemoteAddr().String(), "err", err)
}

// topicFor returns the topic named name, creating it on first use. name may
// be a view into a frame: it is cloned before being kept.
func (s *Server) topicFor(name string) *topic {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.topics[name]; ok {
		return t
	}
	name = strings.Clone(name)
	t := &topic{name: name, next: make([]int64, s.cfg.Partitions)}
	t.meta = wire.MetadataResponseTopic{
		Name:                      wire.NullStringOf(name),
		Partitions:                make([]wire.MetadataResponsePartition, s.cfg.Partitions),
		TopicAuthorizedOperations: wire.AuthorizedOperationsUnknown,
	}
	nodes := []int32{NodeID}
	for i := range t.meta.Partitions {
		t.meta.Partitions[i] = wire.MetadataResponsePartition{
			PartitionIndex: int32(i),
			LeaderID:       NodeID,
			LeaderEpoch:    -1, // unknown: no OffsetForLeaderEpoch traffic (docs/design/kafka-protocol.md §2.4)
			ReplicaNodes:   nodes,
			IsrNodes:       nodes,
		}
	}
	s.topics[name] = t
	return t
}

// allTopics returns the Metadata entries of every known topic, for a
// Metadata request that asks for all topics.
func (s *Server) allTopics(dst []wire.MetadataResponseTopic) []wire.MetadataResponseTopic {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.topics {
		dst = append(dst, t.meta)
	}
	return dst
}

// connState is one connection's buffers and reusable decode targets; it is
// owned by the connection's goroutine.
type connState struct {
	s *Server

	// Immutable: the address this connection reached, advertised in
	// Metadata (right for a broker on a directly reachable port).
	host string
	port int32

	// Owned by the connection goroutine.
	frame       []byte
	out         []byte
	apiReq      wire.APIVersionsRequest
	metaReq     wire.MetadataRequest
	metaResp    wire.MetadataResponse
	initReq     wire.InitProducerIDRequest
	produceReq  wire.ProduceRequest
	produceResp wire.ProduceResponse
	// last caches the previous Produce's topic lookup: a producer sends
	// the same topic over and over.
	last *topic
}

func newConnState(s *Server, local net.Addr) *connState {
	cs := &connState{s: s, host: "127.0.0.1"}
	if a, ok := local.(*net.TCPAddr); ok {
		cs.host = a.IP.String()
		cs.port = int32(a.Port)
	}
	return cs
}

// frameBuffer returns a buffer of length n for the next frame, reusing the
// previous one when it is large enough.
func (cs *connState) frameBuffer(n int) []byte {
	if cap(cs.frame) < n {
		cs.frame = make([]byte, n)
	}
	return cs.frame[:n]
}

// handle answers one request frame (without its size prefix). It returns the
// response with its size prefix, nil for a request that gets none (acks=0
// Produce), or an error that closes the connection. The response is valid
// until the next call.
func (cs *connState) handle(frame []byte) ([]byte, error) {
	h, body, err := wire.ParseRequestHeader(frame)
	if err != nil {
		return nil, err
	}
	cs.s.requests.Add(1)
	out, off := wire.ReserveInt32(cs.out[:0])
	switch h.APIKey {
	case wire.KeyAPIVersions:
		out = cs.apiVersions(out, h, body)
	case wire.KeyMetadata:
		out, err = cs.metadata(out, h, body)
	case wire.KeyInitProducerID:
		out, err = cs.initProducerID(out, h, body)
	case wire.KeyProduce:
		out, err = cs.produce(out, h, body)
	default:
		err = wire.ErrUnsupportedVersion
	}
	cs.out = out[:0]
	if err != nil || out == nil {
		return nil, err
	}
	wire.PutInt32(out, off, int32(len(out)-off-4))
	return out, nil
}

func (cs *connState) apiVersions(out []byte, h wire.RequestHeader, body []byte) []byte {
	// ApiVersions responses always use response header v0 (KIP-511).
	out = wire.AppendResponseHeader(out, wire.KeyAPIVersions, h.APIVersion, h.CorrelationID)
	if h.APIVersion > cs.s.apiMax {
		// KIP-511: a too-new ApiVersions gets the v0 body with
		// UNSUPPORTED_VERSION and our range; the client retries.
		return wire.AppendAPIVersionsUnsupported(out, 0, cs.s.apiMax)
	}
	resp := wire.APIVersionsResponse{APIKeys: cs.s.advertised}
	if err := cs.apiReq.Decode(body, h.APIVersion); err != nil || !cs.apiReq.Valid(h.APIVersion) {
		// Kafka answers INVALID_REQUEST to a v3+ request whose software
		// name or version does not match the KIP-511 pattern.
		resp.ErrorCode = wire.InvalidRequest
	}
	return resp.AppendTo(out, h.APIVersion)
}

func (cs *connState) metadata(out []byte, h wire.RequestHeader, body []byte) ([]byte, error) {
	if err := cs.metaReq.Decode(body, h.APIVersion); err != nil {
		return nil, err
	}
	r := &cs.metaResp
	*r = wire.MetadataResponse{
		Brokers:                     append(r.Brokers[:0], wire.MetadataResponseBroker{NodeID: NodeID, Host: cs.host, Port: cs.port}),
		ClusterID:                   wire.NullStringOf(cs.s.cfg.ClusterID),
		ControllerID:                NodeID, // must be a listed node (docs/design/kafka-protocol.md §2.4)
		Topics:                      r.Topics[:0],
		ClusterAuthorizedOperations: wire.AuthorizedOperationsUnknown,
	}
	if cs.metaReq.Topics == nil {
		r.Topics = cs.s.allTopics(r.Topics)
	} else {
		for i := range cs.metaReq.Topics {
			name := cs.metaReq.Topics[i].Name
			if !name.Valid || name.S == "" {
				// A lookup by topic id: the null broker has no ids.
				r.Topics = append(r.Topics, wire.MetadataResponseTopic{
					ErrorCode: wire.UnknownTopicID,
					TopicID:   cs.metaReq.Topics[i].TopicID,
				})
				continue
			}
			r.Topics = append(r.Topics, cs.s.topicFor(name.S).meta)
		}
	}
	out = wire.AppendResponseHeader(out, wire.KeyMetadata, h.APIVersion, h.CorrelationID)
	return r.AppendTo(out, h.APIVersion), nil
}

func (cs *connState) initProducerID(out []byte, h wire.RequestHeader, body []byte) ([]byte, error) {
	if err := cs.initReq.Decode(body, h.APIVersion); err != nil {
		return nil, err
	}
	resp := wire.InitProducerIDResponse{ProducerID: cs.s.producerID.Add(1) - 1}
	if cs.initReq.TransactionalID.Valid {
		// Transactions need a coordinator and control batches: refused,
		// as kiggy refuses them.
		resp = wire.InitProducerIDResponse{ErrorCode: wire.TransactionalIDAuthFailed, ProducerID: -1, ProducerEpoch: -1}
	}
	out = wire.AppendResponseHeader(out, wire.KeyInitProducerID, h.APIVersion, h.CorrelationID)
	return resp.AppendTo(out, h.APIVersion), nil
}

func (cs *connState) produce(out []byte, h wire.RequestHeader, body []byte) ([]byte, error) {
	req := &cs.produceReq
	if err := req.Decode(body, h.APIVersion); err != nil {
		return nil, err
	}
	s := cs.s
	s.produceRequests.Add(1)
	resp := &cs.produceResp
	resp.Topics = resizeTopics(resp.Topics, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		t := cs.last
		if t == nil || t.name != rt.Name {
			t = s.topicFor(rt.Name)
			cs.last = t
		}
		tr := &resp.Topics[i]
		tr.Name = rt.Name // a view into the frame, encoded before it is reused
		tr.Partitions = resizePartitions(tr.Partitions, len(rt.Partitions))
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			pr := &tr.Partitions[j]
			*pr = wire.ProduceResponsePartition{Index: rp.Index, LogAppendTimeMillis: -1, RecordErrors: pr.RecordErrors[:0]}
			if rp.Index < 0 || int(rp.Index) >= len(t.next) {
				pr.ErrorCode = wire.UnknownTopicOrPartition
				pr.BaseOffset = -1
				continue
			}
			n := countRecords(rp.Records)
			s.records.Add(uint64(n))
			s.recordBytes.Add(uint64(len(rp.Records)))
			t.offsetsMu.Lock()
			pr.BaseOffset = t.next[rp.Index]
			t.next[rp.Index] += n
			t.offsetsMu.Unlock()
		}
	}
	if req.Acks == 0 {
		// docs/design/kafka-protocol.md §1.5: acks=0 gets no response at all.
		return nil, nil
	}
	out = wire.AppendResponseHeader(out, wire.KeyProduce, h.APIVersion, h.CorrelationID)
	return resp.AppendTo(out, h.APIVersion), nil
}

// countRecords returns the number of records in a RECORDS field from each
// batch header's lastOffsetDelta (docs/design/kafka-protocol.md §4.1: baseOffset INT64,
// batchLength INT32, partitionLeaderEpoch INT32, magic INT8, crc INT32,
// attributes INT16, lastOffsetDelta INT32; a batch spans 12+batchLength
// bytes). It trusts the client: a truncated or odd batch ends the count.
func countRecords(records []byte) int64 {
	var n int64
	for len(records) >= 27 {
		length := int32(binary.BigEndian.Uint32(records[8:12]))
		delta := int32(binary.BigEndian.Uint32(records[23:27]))
		if length < 15 || int64(length)+12 > int64(len(records)) {
			break
		}
		if delta >= 0 {
			n += int64(delta) + 1
		}
		records = records[12+int(length):]
	}
	return n
}

func resizeTopics(s []wire.ProduceResponseTopic, n int) []wire.ProduceResponseTopic {
	if n <= cap(s) {
		return s[:n]
	}
	return append(s[:cap(s)], make([]wire.ProduceResponseTopic, n-cap(s))...)
}

func resizePartitions(s []wire.ProduceResponsePartition, n int) []wire.ProduceResponsePartition {
	if n <= cap(s) {
		return s[:n]
	}
	return append(s[:cap(s)], make([]wire.ProduceResponsePartition, n-cap(s))...)
}
