package wire

// AddPartitionsToTxn (key 24), the client versions 0–3, flexible from 3
// (AddPartitionsToTxnRequest.json, AddPartitionsToTxnResponse.json,
// "validVersions": "0-5", "flexibleVersions": "3+"). A transactional
// producer adds the partitions it is about to write to its transaction. v1
// is the same as v0, v2 adds PRODUCER_FENCED, v3 is flexible. v4 ("adds
// VerifyOnly field to check if partitions are already in transaction and
// adds support to batch multiple transactions") and v5 (TRANSACTION_ABORTABLE,
// KIP-890) are the broker-to-broker batched form: "Versions 3 and below will
// be exclusively used by clients and versions 4 and above will be used by
// brokers." wire decodes v0–3 and refuses the others.

const (
	// AddPartitionsToTxnMinVersion is the lowest AddPartitionsToTxn version
	// wire decodes.
	AddPartitionsToTxnMinVersion int16 = 0
	// AddPartitionsToTxnMaxVersion is the highest AddPartitionsToTxn
	// version wire decodes: the last client version (v4+ is brokers').
	AddPartitionsToTxnMaxVersion int16 = 3
	// AddPartitionsToTxnFlexible is the first flexible version:
	// "flexibleVersions": "3+".
	AddPartitionsToTxnFlexible int16 = 3
)

// AddPartitionsToTxnRequest is an AddPartitionsToTxn request body, v0–3
// (Kafka's V3AndBelow fields). Strings alias the frame: valid until the
// frame is released.
type AddPartitionsToTxnRequest struct {
	// TransactionalID (Kafka: V3AndBelowTransactionalId) is the id of the
	// transaction.
	TransactionalID string
	// ProducerID (Kafka: V3AndBelowProducerId) is the producer's id.
	ProducerID int64
	// ProducerEpoch (Kafka: V3AndBelowProducerEpoch) is the producer's
	// current epoch.
	ProducerEpoch int16
	// Topics (Kafka: V3AndBelowTopics) are the partitions to add.
	Topics []AddPartitionsToTxnRequestTopic
}

// AddPartitionsToTxnRequestTopic is one topic of an AddPartitionsToTxnRequest.
type AddPartitionsToTxnRequestTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions are the partition indexes to add.
	Partitions []int32
}

// Decode parses an AddPartitionsToTxn request body of the given version
// into r, reusing the capacity of r's slices. Strings alias body: they are
// valid until the frame is released. Versions 4 and above (brokers' batched
// form) are refused with ErrUnsupportedVersion. On error r's contents are
// unspecified.
func (r *AddPartitionsToTxnRequest) Decode(body []byte, version int16) error {
	if version < AddPartitionsToTxnMinVersion || version > AddPartitionsToTxnMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= AddPartitionsToTxnFlexible
	rd := NewReader(body)
	// V3AndBelowTransactionalId, ...ProducerId, ...ProducerEpoch,
	// ...Topics: "versions": "0-3".
	r.TransactionalID = rd.Str(flex)
	r.ProducerID = rd.Int64()
	r.ProducerEpoch = rd.Int16()
	// A topic is at least a name, a partition count and (flexible) its
	// tags.
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, minStringArraySize(flex)))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic = rd.Str(flex)
		t.Partitions = int32s(&rd, flex, t.Partitions)
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// AppendTo appends r encoded at version (a client's view; used by tests).
func (r *AddPartitionsToTxnRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= AddPartitionsToTxnFlexible
	dst = AppendStr(dst, flex, r.TransactionalID)
	dst = AppendInt64(dst, r.ProducerID)
	dst = AppendInt16(dst, r.ProducerEpoch)
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendStr(dst, flex, t.Topic)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for _, p := range t.Partitions {
			dst = AppendInt32(dst, p)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// AddPartitionsToTxnResponse is an AddPartitionsToTxn response body, v0–3.
type AddPartitionsToTxnResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// Topics (Kafka: ResultsByTopicV3AndBelow) answer the requested topics.
	Topics []AddPartitionsToTxnResponseTopic
}

// AddPartitionsToTxnResponseTopic is one topic of an
// AddPartitionsToTxnResponse.
type AddPartitionsToTxnResponseTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions (Kafka: ResultsByPartition) answer the requested
	// partitions.
	Partitions []AddPartitionsToTxnResponsePartition
}

// AddPartitionsToTxnResponsePartition answers one partition.
type AddPartitionsToTxnResponsePartition struct {
	// Partition (Kafka: PartitionIndex) is the partition index.
	Partition int32
	// ErrorCode (Kafka: PartitionErrorCode) is the partition's error.
	ErrorCode ErrorCode
}

// AppendTo appends r's body encoded at version, which must be one wire
// decodes (0–3). It does not allocate when dst has room.
func (r *AddPartitionsToTxnResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= AddPartitionsToTxnFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	// ResultsByTopicV3AndBelow: "versions": "0-3".
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
func (r *AddPartitionsToTxnResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}
