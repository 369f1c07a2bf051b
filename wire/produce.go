package wire

// Produce (key 0), flexible from v9 (docs/design/kafka-protocol.md §2.1, §2.4; ProduceRequest.json,
// ProduceResponse.json).
//
// Advertised vs decodable: the APIs table row is {0, 0, 13, 9} because Kafka
// 4.x still advertises Produce min version 0 (KAFKA-18659: librdkafka < 2.11.1
// turns compression off unless the range contains 0), yet rejects v0–2
// (KIP-896). ProduceRequest.Decode therefore accepts only v3–13 and returns
// ErrUnsupportedVersion for v0–2; the connection is then closed without a
// response, as Kafka does. The response encoder handles v0–13.
//
// v13 names topics by id (KIP-516; ProduceRequest.json and
// ProduceResponse.json, Kafka 4.4: "Name": "versions": "0-12", "TopicId":
// "uuid", "versions": "13+", in the request's and the response's topics);
// an id the broker does not know is UNKNOWN_TOPIC_ID on each partition.

import "github.com/kiggy-io/kiggy/varint"

const (
	produceMinDecodeVersion = 3
	produceMaxVersion       = 13
	// produceTopicIDs is the first version naming topics by id.
	produceTopicIDs int16 = 13
	// produceFlexible is the first flexible version: "flexibleVersions": "9+".
	produceFlexible int16 = 9
	// produceHints is the first version with the KIP-951 leader hints.
	produceHints int16 = 10
)

// ProduceRequestPartition is one partition's data in a Produce request.
type ProduceRequestPartition struct {
	Index int32
	// Records is the RECORDS field: concatenated record batches, nil when
	// null. It is a view into the frame, valid until the frame is released.
	Records []byte
}

// ProduceRequestTopic is one topic's data in a Produce request.
type ProduceRequestTopic struct {
	// Name is a view into the frame, valid until the frame is released
	// (v0–12; "" from v13 on, until the caller sets it from TopicID).
	Name string
	// TopicID is the topic id (v13+; zero below).
	TopicID    [16]byte
	Partitions []ProduceRequestPartition
}

// ProduceRequest is a Produce request body (v3–13).
type ProduceRequest struct {
	// TransactionalID is null for non-transactional producers. It is a view
	// into the frame, valid until the frame is released.
	TransactionalID NullString
	// Acks is -1 (all), 0 (no response at all) or 1 (leader); anything else
	// is answered with INVALID_REQUIRED_ACKS by the handler.
	Acks          int16
	TimeoutMillis int32
	Topics        []ProduceRequestTopic
}

// Decode parses a Produce request body of the given version into r, reusing
// r's slices (including each topic's Partitions), so decoding requests of a
// steady shape allocates nothing. Names and records alias body: they are
// valid until the frame is released. Versions 0–2 (removed in Kafka 4.0,
// KIP-896) and 14+ return ErrUnsupportedVersion.
func (r *ProduceRequest) Decode(body []byte, version int16) error {
	if version < produceMinDecodeVersion || version > produceMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= produceFlexible
	ids := version >= produceTopicIDs
	rd := NewReader(body)

	s, ok := rd.NullableStr(flex)
	r.TransactionalID = NullString{S: s, Valid: ok}
	r.Acks = rd.Int16()
	r.TimeoutMillis = rd.Int32()

	// Smallest topic: empty name or an id, empty partition array (and a
	// tag count).
	minTopic, minPart := fetchTopicMin(ids, flex), 8
	if flex {
		minPart = 6
	}
	n := rd.ArrayLen(flex, minTopic)
	if n < 0 {
		rd.Fail(ErrNegativeLength) // TopicData is not nullable
		n = 0
	}
	r.Topics = resize(r.Topics, n)
	for i := 0; i < n && rd.Ok(); i++ {
		t := &r.Topics[i]
		t.Name, t.TopicID = fetchTopicKey(&rd, ids, flex)
		np := rd.ArrayLen(flex, minPart)
		if np < 0 {
			rd.Fail(ErrNegativeLength) // PartitionData is not nullable
			np = 0
		}
		t.Partitions = resize(t.Partitions, np)
		for j := 0; j < np && rd.Ok(); j++ {
			p := &t.Partitions[j]
			p.Index = rd.Int32()
			p.Records = rd.NullableByteSlice(flex)
			if flex {
				rd.SkipTags()
			}
		}
		if flex {
			rd.SkipTags()
		}
	}
	if flex {
		rd.SkipTags()
	}
	if err := rd.Complete(); err != nil {
		// Leave no half-filled views into a rejected frame behind.
		*r = ProduceRequest{Topics: r.Topics[:0]}
		return err
	}
	return nil
}

// AppendTo appends r encoded at version (a client's view; used by tests,
// benchmarks and fuzz seeds). Versions 0–2 are encoded without
// TransactionalId, as the schema says, although Decode rejects them.
func (r *ProduceRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= produceFlexible
	if version >= 3 {
		dst = AppendNullableStr(dst, flex, r.TransactionalID.S, r.TransactionalID.Valid)
	}
	dst = AppendInt16(dst, r.Acks)
	dst = AppendInt32(dst, r.TimeoutMillis)
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = appendTopicKey(dst, version >= produceTopicIDs, flex, t.Name, t.TopicID)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt32(dst, p.Index)
			dst = AppendNullableByteSlice(dst, flex, p.Records)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// ProduceRecordError is one per-record error (v8+, KIP-467).
type ProduceRecordError struct {
	// BatchIndex is the index of the failed record within its batch.
	BatchIndex             int32
	BatchIndexErrorMessage NullString
}

// ProduceResponsePartition is one partition's result in a Produce response.
type ProduceResponsePartition struct {
	Index     int32
	ErrorCode ErrorCode
	// BaseOffset is the offset given to the first record of the batch.
	BaseOffset int64
	// LogAppendTimeMillis is v2+; -1 unless the topic uses LogAppendTime.
	LogAppendTimeMillis int64
	// LogStartOffset is v5+.
	LogStartOffset int64
	// RecordErrors is v8+.
	RecordErrors []ProduceRecordError
	// ErrorMessage is v8+.
	ErrorMessage NullString
	// CurrentLeader is the partition's leader hint (v10+, tagged field 0,
	// KIP-951), sent with NOT_LEADER_OR_FOLLOWER (docs/design/cluster.md §6).
	CurrentLeader LeaderHint
}

// LeaderHint is a KIP-951 CurrentLeader (LeaderIdAndEpoch): where a
// partition's leader is now, so the client need not ask Metadata. The zero
// value is not sent (a tagged field left at its default, leader and epoch
// -1).
type LeaderHint struct {
	// Valid: the hint is sent.
	Valid bool
	// LeaderID is the leader's node id.
	LeaderID int32
	// LeaderEpoch is the partition's leader epoch.
	LeaderEpoch int32
}

// leaderHintSize is a LeaderHint's tagged payload: LeaderId and
// LeaderEpoch (int32 each) and the struct's own empty tag section.
const leaderHintSize = 9

// appendLeaderHintTags appends a flexible struct's whole TAGGED_FIELDS
// section holding h as tag (or the empty section when h is not Valid).
func appendLeaderHintTags(dst []byte, tag uint32, h LeaderHint) []byte {
	if !h.Valid {
		return append(dst, 0)
	}
	dst = append(dst, 1) // one tagged field
	dst = varint.AppendUvarint(dst, tag)
	dst = varint.AppendUvarint(dst, leaderHintSize)
	dst = AppendInt32(dst, h.LeaderID)
	dst = AppendInt32(dst, h.LeaderEpoch)
	return append(dst, 0)
}

// NodeEndpoint is one broker's address in a KIP-951 NodeEndpoints list
// (Produce response v10+, tagged field 0 of the response): the leaders the
// response's hints name.
type NodeEndpoint struct {
	NodeID int32
	Host   string
	Port   int32
	// Rack is null when the broker has none (kiggy's never have one).
	Rack NullString
}

// appendNodeEndpointsTags appends the response's TAGGED_FIELDS section:
// NodeEndpoints as tag 0 when there are any, else the empty section.
func appendNodeEndpointsTags(dst []byte, eps []NodeEndpoint) []byte {
	if len(eps) == 0 {
		return append(dst, 0)
	}
	// The payload's size first: a COMPACT_ARRAY of {NodeId int32, Host
	// COMPACT_STRING, Port int32, Rack COMPACT_NULLABLE_STRING, tags}.
	size := varint.UvarintLen(uint32(len(eps)) + 1)
	for i := range eps {
		e := &eps[i]
		size += 4 + varint.UvarintLen(uint32(len(e.Host))+1) + len(e.Host) + 4 + 1
		if e.Rack.Valid {
			size += varint.UvarintLen(uint32(len(e.Rack.S))+1) + len(e.Rack.S)
		} else {
			size++
		}
	}
	dst = append(dst, 1, 0) // one tagged field; tag 0
	dst = varint.AppendUvarint(dst, uint32(size))
	dst = varint.AppendUvarint(dst, uint32(len(eps))+1)
	for i := range eps {
		e := &eps[i]
		dst = AppendInt32(dst, e.NodeID)
		dst = AppendCompactString(dst, e.Host)
		dst = AppendInt32(dst, e.Port)
		dst = AppendCompactNullableString(dst, e.Rack.S, e.Rack.Valid)
		dst = append(dst, 0)
	}
	return dst
}

// ProduceResponseTopic is one topic's results in a Produce response.
type ProduceResponseTopic struct {
	// Name is the topic name (v0–12).
	Name string
	// TopicID is the topic id (v13+).
	TopicID    [16]byte
	Partitions []ProduceResponsePartition
}

// ProduceResponse is a Produce response body. acks=0 requests get none.
type ProduceResponse struct {
	Topics []ProduceResponseTopic
	// ThrottleMillis is v1+ and is written after the topic array, unlike
	// most responses.
	ThrottleMillis int32
	// NodeEndpoints are the addresses of the leaders the partitions'
	// CurrentLeader hints name (v10+, tagged field 0, KIP-951).
	NodeEndpoints []NodeEndpoint
}

// AppendTo appends r's body encoded at version (0–13). The KIP-951 hints
// (each partition's CurrentLeader, the response's NodeEndpoints) are
// written from v10 when set. It does not allocate when dst has room.
func (r *ProduceResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= produceFlexible
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = appendTopicKey(dst, version >= produceTopicIDs, flex, t.Name, t.TopicID)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt32(dst, p.Index)
			dst = AppendInt16(dst, int16(p.ErrorCode))
			dst = AppendInt64(dst, p.BaseOffset)
			if version >= 2 {
				dst = AppendInt64(dst, p.LogAppendTimeMillis)
			}
			if version >= 5 {
				dst = AppendInt64(dst, p.LogStartOffset)
			}
			if version >= 8 {
				dst = AppendArrayLen(dst, flex, len(p.RecordErrors))
				for k := range p.RecordErrors {
					e := &p.RecordErrors[k]
					dst = AppendInt32(dst, e.BatchIndex)
					dst = AppendNullableStr(dst, flex, e.BatchIndexErrorMessage.S, e.BatchIndexErrorMessage.Valid)
					dst = AppendEmptyTags(dst, flex)
				}
				dst = AppendNullableStr(dst, flex, p.ErrorMessage.S, p.ErrorMessage.Valid)
			}
			if version >= produceHints {
				// ProduceResponse.json: CurrentLeader, "taggedVersions": "10+", "tag": 0.
				dst = appendLeaderHintTags(dst, 0, p.CurrentLeader)
			} else {
				dst = AppendEmptyTags(dst, flex)
			}
		}
		dst = AppendEmptyTags(dst, flex)
	}
	if version >= 1 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	if version >= produceHints {
		// ProduceResponse.json: NodeEndpoints, "taggedVersions": "10+", "tag": 0.
		return appendNodeEndpointsTags(dst, r.NodeEndpoints)
	}
	return AppendEmptyTags(dst, flex)
}

// appendTopicKey appends a topic's name or, when ids, its id.
func appendTopicKey(dst []byte, ids, flex bool, name string, id [16]byte) []byte {
	if ids {
		return append(dst, id[:]...)
	}
	return AppendStr(dst, flex, name)
}
