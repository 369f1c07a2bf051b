package wire

// TxnOffsetCommit (key 28), versions 0–5, flexible from 3
// (TxnOffsetCommitRequest.json, TxnOffsetCommitResponse.json,
// "flexibleVersions": "3+"). A transactional producer commits a group's
// offsets as part of its transaction. v1 is the same as v0, v2 adds the
// committed leader epoch, v3 "adds the member.id, group.instance.id and
// generation.id" (KIP-447), v4 adds TRANSACTION_ABORTABLE (KIP-890), and
// "Version 5 is the same as version 4 (KIP-890)": with transaction V2 it
// also does what AddOffsetsToTxn did. v6 (topic ids) is not supported.

const (
	// TxnOffsetCommitMinVersion is the lowest TxnOffsetCommit version wire
	// decodes.
	TxnOffsetCommitMinVersion int16 = 0
	// TxnOffsetCommitMaxVersion is the highest TxnOffsetCommit version wire
	// decodes.
	TxnOffsetCommitMaxVersion int16 = 5
	// TxnOffsetCommitFlexible is the first flexible version:
	// "flexibleVersions": "3+".
	TxnOffsetCommitFlexible int16 = 3
)

// TxnOffsetCommitRequest is a TxnOffsetCommit request body, v0–5. Strings
// alias the frame: valid until the frame is released.
type TxnOffsetCommitRequest struct {
	// TransactionalID is the id of the transaction.
	TransactionalID string
	// Group (Kafka: GroupId) is the group id.
	Group string
	// ProducerID is the producer's id.
	ProducerID int64
	// ProducerEpoch is the producer's current epoch.
	ProducerEpoch int16
	// Generation (Kafka: GenerationId, v3+) is the consumer's generation;
	// -1 before v3.
	Generation int32
	// MemberID is the consumer's member id (v3+); "" before v3.
	MemberID string
	// InstanceID (Kafka: GroupInstanceId, v3+) is the static member id;
	// null when absent and before v3.
	InstanceID NullString
	// Topics are the offsets to commit.
	Topics []TxnOffsetCommitRequestTopic
}

// TxnOffsetCommitRequestTopic is one topic of a TxnOffsetCommitRequest.
type TxnOffsetCommitRequestTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions are the partition offsets to commit.
	Partitions []TxnOffsetCommitRequestPartition
}

// TxnOffsetCommitRequestPartition is one partition offset to commit.
type TxnOffsetCommitRequestPartition struct {
	// Partition (Kafka: PartitionIndex) is the partition index.
	Partition int32
	// Offset (Kafka: CommittedOffset) is the offset to commit.
	Offset int64
	// LeaderEpoch (Kafka: CommittedLeaderEpoch, v2+) is the epoch of the
	// last consumed record; -1 (unknown) before v2.
	LeaderEpoch int32
	// Metadata (Kafka: CommittedMetadata) is client metadata stored with
	// the offset, or null.
	Metadata NullString
}

// Decode parses a TxnOffsetCommit request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *TxnOffsetCommitRequest) Decode(body []byte, version int16) error {
	if version < TxnOffsetCommitMinVersion || version > TxnOffsetCommitMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= TxnOffsetCommitFlexible
	rd := NewReader(body)
	r.TransactionalID = rd.Str(flex)
	r.Group = rd.Str(flex)
	r.ProducerID = rd.Int64()
	r.ProducerEpoch = rd.Int16()
	// GenerationId, MemberId, GroupInstanceId: "versions": "3+", with
	// defaults -1, "" and null.
	r.Generation, r.MemberID, r.InstanceID = -1, "", NullString{}
	if version >= 3 {
		r.Generation = rd.Int32()
		r.MemberID = rd.Str(flex)
		r.InstanceID = nullStr(&rd, flex)
	}
	// Smallest partition: index, offset, the leader epoch (2+), null
	// metadata, and the tag count (3+).
	pmin := 4 + 8 + 2
	if version >= 2 {
		pmin += 4
	}
	if flex {
		pmin = 4 + 8 + 4 + 1 + 1
	}
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, minStringArraySize(flex)))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic = rd.Str(flex)
		t.Partitions = resize(t.Partitions, arrayLen(&rd, flex, pmin))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			p.Partition = rd.Int32()
			p.Offset = rd.Int64()
			p.LeaderEpoch = -1
			if version >= 2 { // CommittedLeaderEpoch: "versions": "2+"
				p.LeaderEpoch = rd.Int32()
			}
			p.Metadata = nullStr(&rd, flex)
			endStruct(&rd, flex)
		}
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// AppendTo appends r encoded at version (a client's view; used by tests).
func (r *TxnOffsetCommitRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= TxnOffsetCommitFlexible
	dst = AppendStr(dst, flex, r.TransactionalID)
	dst = AppendStr(dst, flex, r.Group)
	dst = AppendInt64(dst, r.ProducerID)
	dst = AppendInt16(dst, r.ProducerEpoch)
	if version >= 3 {
		dst = AppendInt32(dst, r.Generation)
		dst = AppendStr(dst, flex, r.MemberID)
		dst = AppendNullableStr(dst, flex, r.InstanceID.S, r.InstanceID.Valid)
	}
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendStr(dst, flex, t.Topic)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt32(dst, p.Partition)
			dst = AppendInt64(dst, p.Offset)
			if version >= 2 {
				dst = AppendInt32(dst, p.LeaderEpoch)
			}
			dst = AppendNullableStr(dst, flex, p.Metadata.S, p.Metadata.Valid)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// TxnOffsetCommitResponse is a TxnOffsetCommit response body, v0–5.
type TxnOffsetCommitResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// Topics answer the committed topics.
	Topics []TxnOffsetCommitResponseTopic
}

// TxnOffsetCommitResponseTopic is one topic of a TxnOffsetCommitResponse.
type TxnOffsetCommitResponseTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions answer the committed partitions.
	Partitions []TxnOffsetCommitResponsePartition
}

// TxnOffsetCommitResponsePartition answers one committed partition.
type TxnOffsetCommitResponsePartition struct {
	// Partition (Kafka: PartitionIndex) is the partition index.
	Partition int32
	// ErrorCode is the partition's error.
	ErrorCode ErrorCode
}

// AppendTo appends r's body encoded at version. It does not allocate when
// dst has room.
func (r *TxnOffsetCommitResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= TxnOffsetCommitFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendStr(dst, flex, t.Topic)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt32(dst, p.Partition)
			dst = AppendInt16(dst, int16(p.ErrorCode))
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *TxnOffsetCommitResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}

// Decode parses a TxnOffsetCommit response body of the given version into
// r (the client's side: a group coordinator that forwarded the request to
// the transaction's coordinator on another instance), reusing r's slices.
// Strings alias body.
func (r *TxnOffsetCommitResponse) Decode(body []byte, version int16) error {
	if version < TxnOffsetCommitMinVersion || version > TxnOffsetCommitMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= TxnOffsetCommitFlexible
	rd := NewReader(body)
	r.ThrottleMillis = rd.Int32()
	// A topic is at least a string and an array; a partition 6 bytes.
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, minStringArraySize(flex)))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic = rd.Str(flex)
		t.Partitions = resize(t.Partitions, arrayLen(&rd, flex, 6))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			p.Partition = rd.Int32()
			p.ErrorCode = ErrorCode(rd.Int16())
			endStruct(&rd, flex)
		}
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}
