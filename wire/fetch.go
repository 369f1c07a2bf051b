package wire

// Fetch (key 1), versions 4–18, flexible from 12 (docs/design/kafka-protocol.md §2.1, §2.4,
// §7). FetchRequest.json and FetchResponse.json (Kafka 4.4, "validVersions":
// "4-18"):
//
//   - v13 replaces the topic name with its id in the request's Topics and
//     ForgottenTopics and in the response's Topics ("Topic": "versions":
//     "0-12"; "TopicId": "uuid", "versions": "13+", KIP-516); a topic id
//     the broker does not know is UNKNOWN_TOPIC_ID per partition.
//   - v14 adds the error OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405), v16 the
//     response's NodeEndpoints (tag 0, KIP-951; never written: kiggy's
//     leader hints need no endpoints a client lacks), v17 and v18 replica
//     fields (the partition tags ReplicaDirectoryId and HighWatermark).
//   - v15 drops ReplicaId ("versions": "0-14") for the ReplicaState tag
//     (KIP-903), a replica field too: a v15+ request is a consumer's.
//
// The replica-only tags are skipped once their shape is checked
// (fetchPartitionTags).
//
// Design note — writing a response without copying records. A Fetch
// response is mostly record batches. The bridge builds them straight into
// the response buffer with the streaming encoders below:
//
//	dst = AppendFetchResponseStart(dst, v, throttle, NoError, 0, len(topics))
//	for each topic:
//		dst = AppendFetchTopicStart(dst, v, name, id, len(partitions))
//		for each partition:
//			dst, m := AppendFetchPartitionBegin(dst, v, &p, budget)
//			dst = <append record batches to dst>   // e.g. a batch builder
//			dst = AppendFetchPartitionEnd(dst, m, &p) // watermarks known now
//		dst = AppendFetchTopicEnd(dst, v)
//	dst = AppendFetchResponseEnd(dst, v)
//
// AppendFetchPartitionBegin reserves the records length (docs/design/style.md habit 2);
// AppendFetchPartitionEnd backfills it and rewrites the partition's
// fixed-size leading fields, so the watermarks a log read returns after the
// records were produced still land in front of them. In flexible versions
// the length is an UNSIGNED_VARINT whose width depends on the size: Begin
// reserves the width for the caller's size hint, and End moves the records
// within the buffer by the difference only when the hint was wrong.
// AppendFetchPartition is the one-call form for records already in memory,
// and FetchResponse.AppendTo the whole-struct form used by tests and simple
// callers.

import (
	"encoding/binary"
	"errors"

	"github.com/kiggy-io/kiggy/varint"
)

// fetchFlexible is the first flexible version: "flexibleVersions": "12+"
// (FetchRequest.json, FetchResponse.json).
const fetchFlexible int16 = 12

// fetchTopicIDs is the first version that names topics by id ("TopicId":
// "versions": "13+"); fetchMax the last version served.
const (
	fetchTopicIDs int16 = 13
	fetchMax      int16 = 18
)

// FetchRequest is a Fetch request, v4–18. Strings alias the frame: valid
// until the frame is released.
type FetchRequest struct {
	// ClusterID is the tagged field 0 (v12+): the cluster id the client
	// believes it talks to, or null.
	ClusterID NullString
	// ReplicaID is -1 for consumers (v0–14; -1 from v15 on).
	ReplicaID int32
	// MaxWaitMillis bounds how long the broker may park the request.
	MaxWaitMillis int32
	// MinBytes is the byte count that answers the request before MaxWaitMillis.
	MinBytes int32
	// MaxBytes caps the whole response (v3+; the first batch may exceed it).
	MaxBytes int32
	// IsolationLevel is 0 (read uncommitted) or 1 (read committed) (v4+).
	IsolationLevel int8
	// SessionID is the fetch session id (v7+; 0 = none).
	SessionID int32
	// SessionEpoch is the fetch session epoch (v7+; -1 = no session).
	SessionEpoch int32
	// Topics are the topics to fetch, in request order.
	Topics []FetchRequestTopic
	// ForgottenTopics leave an incremental fetch session (v7+).
	ForgottenTopics []FetchRequestForgottenTopic
	// Rack is the consumer's rack (v11+; "" when absent).
	Rack string
}

// FetchRequestTopic is one topic of a FetchRequest.
type FetchRequestTopic struct {
	// Topic is the topic name (v0–12; "" from v13 on, until the caller
	// sets it from TopicID).
	Topic string
	// TopicID is the topic id (v13+, KIP-516; zero below).
	TopicID [16]byte
	// Partitions are the partitions to fetch, in request order.
	Partitions []FetchRequestTopicPartition
}

// FetchRequestTopicPartition is one partition of a FetchRequestTopic.
type FetchRequestTopicPartition struct {
	// Partition is the partition index.
	Partition int32
	// CurrentLeaderEpoch is the client's leader epoch (v9+; -1 = do not check).
	CurrentLeaderEpoch int32
	// FetchOffset is the first offset wanted.
	FetchOffset int64
	// LastFetchedEpoch is the epoch of the last fetched record (v12+; -1 when absent).
	LastFetchedEpoch int32
	// LogStartOffset is a follower's log start (v5+; -1 for consumers).
	LogStartOffset int64
	// PartitionMaxBytes caps this partition's records (the first batch may exceed it).
	PartitionMaxBytes int32
}

// FetchRequestForgottenTopic removes partitions from a fetch session (v7+).
type FetchRequestForgottenTopic struct {
	// Topic is the topic name (v7–12).
	Topic string
	// TopicID is the topic id (v13+; zero below).
	TopicID [16]byte
	// Partitions are the partition indexes to forget.
	Partitions []int32
}

// Decode parses a Fetch request body of the given version into r, reusing
// r's slices. Strings alias body: valid until the frame is released. On error
// r's contents are unspecified.
func (r *FetchRequest) Decode(body []byte, version int16) error {
	if version < 4 || version > fetchMax {
		return ErrUnsupportedVersion
	}
	flex := version >= fetchFlexible
	ids := version >= fetchTopicIDs
	rd := NewReader(body)
	r.decodeHead(&rd, version)
	pmin := fetchPartitionMin(version)
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, fetchTopicMin(ids, flex)))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic, t.TopicID = fetchTopicKey(&rd, ids, flex)
		t.Partitions = resize(t.Partitions, arrayLen(&rd, flex, pmin))
		for j := range t.Partitions {
			// Inline, not a method: a call per partition costs a tenth of
			// a 1,000-partition decode (BenchmarkFetchRequestDecode).
			p := &t.Partitions[j]
			p.Partition = rd.Int32()
			p.CurrentLeaderEpoch = -1
			if version >= 9 {
				p.CurrentLeaderEpoch = rd.Int32()
			}
			p.FetchOffset = rd.Int64()
			p.LastFetchedEpoch = -1
			if version >= 12 {
				p.LastFetchedEpoch = rd.Int32()
			}
			p.LogStartOffset = -1
			if version >= 5 {
				p.LogStartOffset = rd.Int64()
			}
			p.PartitionMaxBytes = rd.Int32()
			if flex {
				// Partition tags 0 (ReplicaDirectoryId) and 1
				// (HighWatermark) are v17+/v18+ replica fields,
				// skipped below v13 once their shape is checked.
				fetchPartitionTags(&rd)
			}
		}
		if flex {
			rd.SkipTags()
		}
	}
	r.decodeForgotten(&rd, version)
	r.Rack = ""
	if version >= 11 {
		r.Rack = rd.Str(flex)
	}
	if flex {
		r.decodeTags(&rd)
	}
	return rd.Complete()
}

// decodeHead reads the fields before the topics, setting those the version
// lacks to their defaults.
func (r *FetchRequest) decodeHead(rd *Reader, version int16) {
	r.ClusterID = NullString{}
	r.ReplicaID = -1
	if version < 15 {
		r.ReplicaID = rd.Int32() // "versions": "0-14"
	}
	r.MaxWaitMillis = rd.Int32()
	r.MinBytes = rd.Int32()
	r.MaxBytes = rd.Int32()      // v3+
	r.IsolationLevel = rd.Int8() // v4+
	r.SessionID, r.SessionEpoch = 0, -1
	if version >= 7 {
		r.SessionID = rd.Int32()
		r.SessionEpoch = rd.Int32()
	}
}

// fetchPartitionMin is the smallest encoding of a request partition:
// Partition, FetchOffset, PartitionMaxBytes, then LogStartOffset (5+),
// CurrentLeaderEpoch (9+), LastFetchedEpoch and the tag count (12+).
func fetchPartitionMin(version int16) int {
	n := 4 + 8 + 4
	if version >= 5 {
		n += 8
	}
	if version >= 9 {
		n += 4
	}
	if version >= fetchFlexible {
		n += 4 + 1
	}
	return n
}

// decodeForgotten reads the partitions that leave an incremental fetch
// session (v7+; none below).
func (r *FetchRequest) decodeForgotten(rd *Reader, version int16) {
	r.ForgottenTopics = r.ForgottenTopics[:0]
	if version < 7 {
		return
	}
	flex, ids := version >= fetchFlexible, version >= fetchTopicIDs
	r.ForgottenTopics = resize(r.ForgottenTopics, arrayLen(rd, flex, fetchTopicMin(ids, flex)))
	for i := range r.ForgottenTopics {
		t := &r.ForgottenTopics[i]
		t.Topic, t.TopicID = fetchTopicKey(rd, ids, flex)
		t.Partitions = int32s(rd, flex, t.Partitions)
		if flex {
			rd.SkipTags()
		}
	}
}

// decodeTags reads the top-level tagged fields (flexible versions): 0 =
// ClusterId (12+), 1 = ReplicaState (15+, skipped here once its shape is
// checked, see fetchPartitionTags); others are unknown and skipped.
func (r *FetchRequest) decodeTags(rd *Reader) {
	n := rd.Uvarint()
	for k := uint32(0); k < n && rd.Ok(); k++ {
		tag := rd.Uvarint()
		size := int(rd.Uvarint())
		payload := rd.Rest()
		rd.Skip(size)
		switch {
		case !rd.Ok():
		case tag == 0:
			r.ClusterID = tagNullString(rd, payload[:size:size])
		case tag == 1:
			// "ReplicaState": { "ReplicaId": int32,
			// "ReplicaEpoch": int64 }, a flexible struct.
			t := NewReader(payload[:size:size])
			t.Int32()
			t.Int64()
			t.SkipTags()
			if err := t.Complete(); err != nil {
				rd.Fail(err)
			}
		}
	}
}

// fetchTopicMin is the smallest encoding of a request topic: its name or
// id, an empty array and, if flexible, the tag count (Fetch, OffsetCommit,
// OffsetFetch and Produce topics all start so).
func fetchTopicMin(ids, flex bool) int {
	if ids {
		return 16 + 1 + 1 // every version with ids is flexible
	}
	return minStringArraySize(flex)
}

// fetchTopicKey reads a request topic's name or, when ids, its id.
func fetchTopicKey(rd *Reader, ids, flex bool) (string, [16]byte) {
	if ids {
		return "", rd.UUID()
	}
	return rd.Str(flex), [16]byte{}
}

// FetchResponse is a Fetch response, v4–18. AppendTo encodes it; the
// streaming encoders (AppendFetchResponseStart and friends) produce the same
// bytes without building the struct.
type FetchResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v1+).
	ThrottleMillis int32
	// ErrorCode is the session-level error (v7+).
	ErrorCode ErrorCode
	// SessionID is the fetch session id (v7+; 0 = none).
	SessionID int32
	// Topics answer every requested topic.
	Topics []FetchResponseTopic
}

// FetchResponseTopic is one topic of a FetchResponse.
type FetchResponseTopic struct {
	// Topic is the topic name (v0–12).
	Topic string
	// TopicID is the topic id (v13+).
	TopicID [16]byte
	// Partitions answer every requested partition of the topic.
	Partitions []FetchResponseTopicPartition
}

// FetchResponseTopicPartition is one partition of a FetchResponseTopic.
type FetchResponseTopicPartition struct {
	// Partition is the partition index.
	Partition int32
	// ErrorCode is the partition's error.
	ErrorCode ErrorCode
	// HighWatermark is one past the last visible offset.
	HighWatermark int64
	// LastStableOffset is the LSO (v4+); equal to HighWatermark without
	// transactions (docs/design/kafka-protocol.md §7.1).
	LastStableOffset int64
	// LogStartOffset is the earliest available offset (v5+).
	LogStartOffset int64
	// AbortedTransactions lists aborted transactions (v4+); nil is null,
	// which is what a broker without transactions sends.
	AbortedTransactions []FetchResponseTopicPartitionAbortedTransaction
	// PreferredReadReplica is the replica to read from (v11+); -1 = none.
	PreferredReadReplica int32
	// Records are the record batches, written verbatim. Unlike other
	// nullable bytes, nil is written as empty, never null: Kafka always
	// answers a partition with a (possibly empty) records value
	// (docs/design/kafka-protocol.md §7.2) and librdkafka rejects a negative
	// MessageSetSize.
	Records []byte
	// CurrentLeader is the partition's leader hint (v12+, tagged field 1,
	// KIP-951), sent with NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH
	// (docs/design/cluster.md §6).
	CurrentLeader LeaderHint
}

// FetchResponseTopicPartitionAbortedTransaction is one aborted transaction
// (v4+).
type FetchResponseTopicPartitionAbortedTransaction struct {
	// ProducerID is the aborting producer.
	ProducerID int64
	// FirstOffset is the transaction's first offset.
	FirstOffset int64
}

// AppendTo appends the response body at the given version to dst.
func (r *FetchResponse) AppendTo(dst []byte, version int16) []byte {
	dst = AppendFetchResponseStart(dst, version, r.ThrottleMillis, r.ErrorCode, r.SessionID, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendFetchTopicStart(dst, version, t.Topic, t.TopicID, len(t.Partitions))
		for j := range t.Partitions {
			dst = AppendFetchPartition(dst, version, &t.Partitions[j])
		}
		dst = AppendFetchTopicEnd(dst, version)
	}
	return AppendFetchResponseEnd(dst, version)
}

// AppendFetchResponseStart appends the fields before the topics and the
// topic count of a Fetch response body. Exactly numTopics topics must
// follow, each from AppendFetchTopicStart to AppendFetchTopicEnd, then
// AppendFetchResponseEnd.
func AppendFetchResponseStart(dst []byte, version int16, throttleMillis int32, errorCode ErrorCode, sessionID int32, numTopics int) []byte {
	dst = AppendInt32(dst, throttleMillis) // v1+
	if version >= 7 {
		dst = AppendInt16(dst, int16(errorCode))
		dst = AppendInt32(dst, sessionID)
	}
	return AppendArrayLen(dst, version >= fetchFlexible, numTopics)
}

// AppendFetchTopicStart appends a topic's name (v4–12) or id (v13+) and
// partition count. Exactly numPartitions partitions must follow
// (AppendFetchPartition or a Begin/End pair), then AppendFetchTopicEnd.
func AppendFetchTopicStart(dst []byte, version int16, topic string, id [16]byte, numPartitions int) []byte {
	flex := version >= fetchFlexible
	if version >= fetchTopicIDs {
		dst = append(dst, id[:]...)
	} else {
		dst = AppendStr(dst, flex, topic)
	}
	return AppendArrayLen(dst, flex, numPartitions)
}

// AppendFetchTopicEnd closes a topic (its tagged fields in flexible versions).
func AppendFetchTopicEnd(dst []byte, version int16) []byte {
	return AppendEmptyTags(dst, version >= fetchFlexible)
}

// AppendFetchResponseEnd closes the response body (its tagged fields in
// flexible versions; NodeEndpoints, tag 0, is v16+ and never written).
func AppendFetchResponseEnd(dst []byte, version int16) []byte {
	return AppendEmptyTags(dst, version >= fetchFlexible)
}

// AppendFetchPartition appends one whole partition, p.Records included.
func AppendFetchPartition(dst []byte, version int16, p *FetchResponseTopicPartition) []byte {
	flex := version >= fetchFlexible
	dst = appendFetchPartitionHead(dst, version, p)
	if flex {
		dst = AppendCompactBytes(dst, p.Records)
	} else {
		dst = AppendBytes(dst, p.Records)
	}
	return appendFetchPartitionTags(dst, version, p)
}

// appendFetchPartitionTags closes a partition: its TAGGED_FIELDS in flexible
// versions. Of tags 0–2 (DivergingEpoch, CurrentLeader, SnapshotId) only
// CurrentLeader, tag 1, is ever sent (FetchResponse.json: "taggedVersions":
// "12+", "tag": 1); the other two are replica fields.
func appendFetchPartitionTags(dst []byte, version int16, p *FetchResponseTopicPartition) []byte {
	if version < fetchFlexible {
		return dst
	}
	return appendLeaderHintTags(dst, 1, p.CurrentLeader)
}

// FetchPartitionMark remembers where AppendFetchPartitionBegin put a
// partition in the buffer. It is only meaningful for that buffer, until the
// matching AppendFetchPartitionEnd.
type FetchPartitionMark struct {
	start   int // offset of the partition's first byte
	lenAt   int // offset of the reserved records length
	width   int // reserved width of the records length
	version int16
}

// RecordsStart returns the offset in the buffer where the partition's
// records begin. Truncating the buffer to it discards the records appended
// so far (for example when the log read failed and the partition gets an
// error code instead).
func (m FetchPartitionMark) RecordsStart() int { return m.lenAt + m.width }

// Start returns the offset in the buffer of the partition's first byte.
// Truncating the buffer to it, after AppendFetchPartitionEnd, leaves the
// partition out: an incremental Fetch leaves out the partitions of its
// session that have not changed (docs/design/kafka-protocol.md §7.4); the
// count AppendFetchTopicStart wrote is then corrected with
// RewriteFetchArrayLen.
func (m FetchPartitionMark) Start() int { return m.start }

// RewriteFetchArrayLen corrects a topic or partition count that
// AppendFetchResponseStart or AppendFetchTopicStart wrote for written
// elements, ending at offset end of dst, to n (0 ≤ n ≤ written) once
// fewer followed. INT32 counts (v4–11) are rewritten in place; a
// COMPACT_ARRAY count (v12+, "flexibleVersions": "12+") of N+1 may take
// fewer bytes than the one written, and everything after it then moves
// back: shift is by how many bytes (offsets past end are shift smaller).
func RewriteFetchArrayLen(dst []byte, version int16, end, written, n int) (_ []byte, shift int) {
	if n < 0 || n > written {
		n = written
	}
	if version < fetchFlexible {
		PutInt32(dst, end-4, int32(n))
		return dst, 0
	}
	w := varint.UvarintLen(uint32(written) + 1)
	nw := varint.UvarintLen(uint32(n) + 1)
	at := end - w
	varint.AppendUvarint(dst[at:at], uint32(n)+1) // nw ≤ w bytes, in place
	if shift = w - nw; shift > 0 {
		copy(dst[at+nw:], dst[end:])
		dst = dst[:len(dst)-shift]
	}
	return dst, shift
}

// SetFetchResponseSession rewrites the top-level ErrorCode and SessionId
// (v7+) of a Fetch response body that starts at offset start of dst, for a
// session created or checked once the response was built.
func SetFetchResponseSession(dst []byte, start int, version int16, code ErrorCode, sessionID int32) {
	if version < 7 {
		return
	}
	binary.BigEndian.PutUint16(dst[start+4:], uint16(code))
	binary.BigEndian.PutUint32(dst[start+6:], uint32(sessionID))
}

// AppendFetchPartitionBegin appends a partition's fields up to its records
// and reserves the records length. The caller then appends the record
// batches directly to the returned buffer and finishes with
// AppendFetchPartitionEnd.
//
// sizeHint is the expected records size in bytes, typically the
// partition's byte budget. It only sizes the reserved length in flexible
// versions: a wrong hint costs one move of the records inside the buffer,
// never correctness. Non-flexible versions always reserve exactly 4 bytes.
func AppendFetchPartitionBegin(dst []byte, version int16, p *FetchResponseTopicPartition, sizeHint int) ([]byte, FetchPartitionMark) {
	m := FetchPartitionMark{start: len(dst), version: version}
	dst = appendFetchPartitionHead(dst, version, p)
	m.lenAt = len(dst)
	if version >= fetchFlexible {
		if sizeHint < 0 {
			sizeHint = 0
		}
		if sizeHint > maxFetchRecords {
			sizeHint = maxFetchRecords
		}
		m.width = varint.UvarintLen(uint32(sizeHint) + 1)
	} else {
		m.width = 4
	}
	return append(dst, zeroPrefix[:m.width]...), m
}

// RelistFetchAborted rewrites the AbortedTransactions (and the other fields
// Begin wrote) of a partition started with AppendFetchPartitionBegin, from
// p, keeping what was appended since Begin (its records so far) after them:
// the records move by the difference in size. It returns dst and the
// partition's new mark, to finish with. A read_committed read learns only
// once it is done that a transaction aborted while it read (the bridge's
// fetchPartition); the records need not be read again to list it. The new
// fields are built in a buffer of their own: this is not a hot path.
func RelistFetchAborted(dst []byte, m FetchPartitionMark, p *FetchResponseTopicPartition) ([]byte, FetchPartitionMark) {
	head := appendFetchPartitionHead(nil, m.version, p)
	oldLen := m.lenAt - m.start
	diff := len(head) - oldLen
	switch {
	case diff > 0:
		dst = append(dst, make([]byte, diff)...)
		copy(dst[m.lenAt+diff:], dst[m.lenAt:len(dst)-diff])
	case diff < 0:
		copy(dst[m.lenAt+diff:], dst[m.lenAt:])
		dst = dst[:len(dst)+diff]
	}
	copy(dst[m.start:], head)
	m.lenAt += diff
	return dst, m
}

// maxFetchRecords is the largest records size a partition can declare: an
// INT32 length, and a COMPACT length of N+1 in a uint32.
const maxFetchRecords = 1<<31 - 2

// AppendFetchPartitionEnd finishes a partition started with
// AppendFetchPartitionBegin: everything appended to dst since Begin is the
// partition's records. It backfills the records length and rewrites the
// leading fixed-size fields (Partition, ErrorCode, HighWatermark,
// LastStableOffset, LogStartOffset) from p, so they may be set after the
// records were built, and writes p.CurrentLeader. AbortedTransactions and PreferredReadReplica are
// written by Begin and must not change in between. Records larger than
// 2 GiB − 2 bytes cannot be framed; the caller's byte budgets keep them far
// smaller.
func AppendFetchPartitionEnd(dst []byte, m FetchPartitionMark, p *FetchResponseTopicPartition) []byte {
	dst, _ = endFetchPartition(dst, m, p, len(dst)-m.RecordsStart(), false)
	return dst
}

// AppendFetchPartitionEndExternal finishes a partition started with
// AppendFetchPartitionBegin whose n bytes of records are not in dst: the
// caller's transport writes them at the returned offset of dst
// (engine.Splice), where AppendFetchPartitionEnd would have them. Anything
// appended to dst since Begin is discarded.
func AppendFetchPartitionEndExternal(dst []byte, m FetchPartitionMark, p *FetchResponseTopicPartition, n int) ([]byte, int) {
	return endFetchPartition(dst[:m.RecordsStart()], m, p, n, true)
}

// endFetchPartition is AppendFetchPartitionEnd for n bytes of records, in
// dst after the reserved length or (external) outside it; it returns dst
// and where the records begin.
func endFetchPartition(dst []byte, m FetchPartitionMark, p *FetchResponseTopicPartition, n int, external bool) ([]byte, int) {
	recStart := m.lenAt + m.width
	held := n // the records' bytes in dst
	if external {
		held = 0
	}
	if m.version >= fetchFlexible {
		want := varint.UvarintLen(uint32(n) + 1)
		if want > m.width {
			dst = append(dst, zeroPrefix[:want-m.width]...)
			copy(dst[m.lenAt+want:], dst[recStart:recStart+held])
		} else if want < m.width {
			copy(dst[m.lenAt+want:], dst[recStart:])
			dst = dst[:len(dst)-(m.width-want)]
		}
		// Writes exactly want bytes in place: capacity is there.
		varint.AppendUvarint(dst[m.lenAt:m.lenAt], uint32(n)+1)
		recStart = m.lenAt + want
	} else {
		PutInt32(dst, m.lenAt, int32(n))
	}
	// The leading fields have fixed offsets from the partition's start.
	h := dst[m.start:]
	binary.BigEndian.PutUint32(h[0:], uint32(p.Partition))
	binary.BigEndian.PutUint16(h[4:], uint16(p.ErrorCode))
	binary.BigEndian.PutUint64(h[6:], uint64(p.HighWatermark))
	binary.BigEndian.PutUint64(h[14:], uint64(p.LastStableOffset)) // v4+
	if m.version >= 5 {
		binary.BigEndian.PutUint64(h[22:], uint64(p.LogStartOffset))
	}
	return appendFetchPartitionTags(dst, m.version, p), recStart
}

// appendFetchPartitionHead appends a partition's fields before Records.
func appendFetchPartitionHead(dst []byte, version int16, p *FetchResponseTopicPartition) []byte {
	flex := version >= fetchFlexible
	dst = AppendInt32(dst, p.Partition)
	dst = AppendInt16(dst, int16(p.ErrorCode))
	dst = AppendInt64(dst, p.HighWatermark)
	dst = AppendInt64(dst, p.LastStableOffset) // v4+
	if version >= 5 {
		dst = AppendInt64(dst, p.LogStartOffset)
	}
	// AbortedTransactions: "versions": "4+", "nullableVersions": "4+".
	if p.AbortedTransactions == nil {
		dst = AppendArrayLen(dst, flex, -1)
	} else {
		dst = AppendArrayLen(dst, flex, len(p.AbortedTransactions))
		for i := range p.AbortedTransactions {
			a := &p.AbortedTransactions[i]
			dst = AppendInt64(dst, a.ProducerID)
			dst = AppendInt64(dst, a.FirstOffset)
			dst = AppendEmptyTags(dst, flex)
		}
	}
	if version >= 11 {
		dst = AppendInt32(dst, p.PreferredReadReplica)
	}
	return dst
}

// Helpers shared by the consume-side codecs (this file and the group,
// offset and ListOffsets files). Prefixed cs to stay clear of the other
// codec files in this package.

// zeroPrefix backs reserved length prefixes.
var zeroPrefix [8]byte

// minStringArraySize is the smallest encoding of a struct that starts with a
// string and an array: both empty, plus the struct's tag count if flexible.
func minStringArraySize(flex bool) int {
	if flex {
		return 3
	}
	return 6
}

// errFetchTag fails a Fetch request whose replica-only tagged field does not
// hold the value its schema defines.
var errFetchTag = errors.New("wire: malformed Fetch tagged field")

// fetchPartitionTags reads a Fetch partition's TAGGED_FIELDS. Tags 0
// (ReplicaDirectoryId UUID, v17+) and 1 (HighWatermark INT64, v18+) are
// replica fields of versions above ours and are skipped like unknown tags
// (docs/design/kafka-protocol.md §1.3: "every one must be skippable when received"), but a
// payload that is not the schema's UUID or INT64 is malformed, as both
// Kafka's and franz-go's readers find it, so the request fails.
func fetchPartitionTags(rd *Reader) {
	n := rd.Uvarint()
	for k := uint32(0); k < n && rd.Ok(); k++ {
		tag := rd.Uvarint()
		size := int(rd.Uvarint())
		if (tag == 0 && size != 16) || (tag == 1 && size != 8) {
			rd.Fail(errFetchTag)
			return
		}
		rd.Skip(size)
	}
}

// tagNullString parses a tagged field's payload holding one compact nullable
// string; a malformed payload fails rd.
func tagNullString(rd *Reader, payload []byte) NullString {
	t := NewReader(payload)
	s := nullStr(&t, true)
	if err := t.Complete(); err != nil {
		rd.Fail(err)
		return NullString{}
	}
	return s
}

// appendNullString appends a nullable string.
func appendNullString(dst []byte, flex bool, s NullString) []byte {
	return AppendNullableStr(dst, flex, s.S, s.Valid)
}
