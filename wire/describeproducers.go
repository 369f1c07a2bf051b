package wire

// DescribeProducers (key 61), version 0 only, flexible (KIP-664;
// DescribeProducersRequest.json and DescribeProducersResponse.json,
// "validVersions": "0", "flexibleVersions": "0+"). It lists the active
// idempotent producers of each partition: what
// `kafka-transactions --describe-producers` prints.

const (
	describeProducersMin, describeProducersMax int16 = 0, 0
	describeProducersFlexible                  int16 = 0
)

// DescribeProducersRequest is the body of a DescribeProducers request.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type DescribeProducersRequest struct {
	// Topics are the topics to describe.
	Topics []DescribeProducersRequestTopic
}

// DescribeProducersRequestTopic is one topic to describe.
type DescribeProducersRequestTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions (Kafka: PartitionIndexes) are the partitions to describe.
	Partitions []int32
}

// Decode parses a DescribeProducers request body of the given version into
// r, reusing the capacity of r's slices. Strings alias body: they are valid
// until the frame is released. Unknown tagged fields are skipped. On error
// r's contents are unspecified.
func (r *DescribeProducersRequest) Decode(body []byte, version int16) error {
	if version < describeProducersMin || version > describeProducersMax {
		return ErrUnsupportedVersion
	}
	flex := version >= describeProducersFlexible
	rd := NewReader(body)
	// A topic is at least a name, a partition count and its tags: 3 bytes.
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, 3))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic = rd.Str(flex)
		t.Partitions = int32s(&rd, flex, t.Partitions)
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// DescribeProducersResponse is the body of a DescribeProducers response.
type DescribeProducersResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// Topics holds one entry per requested topic.
	Topics []DescribeProducersResponseTopic
}

// DescribeProducersResponseTopic is the result for one topic.
type DescribeProducersResponseTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions holds one entry per requested partition.
	Partitions []DescribeProducersResponsePartition
}

// DescribeProducersResponsePartition is the result for one partition.
type DescribeProducersResponsePartition struct {
	// Partition (Kafka: PartitionIndex) is the partition index.
	Partition int32
	// ErrorCode is the partition's result.
	ErrorCode ErrorCode
	// ErrorMessage is a human-readable error, null on success.
	ErrorMessage NullString
	// ActiveProducers are the partition's producers with state.
	ActiveProducers []DescribeProducersActiveProducer
}

// DescribeProducersActiveProducer is one producer's state in a partition.
type DescribeProducersActiveProducer struct {
	// ProducerID is the producer's id.
	ProducerID int64
	// ProducerEpoch is an int32 on the wire although epochs are int16.
	ProducerEpoch int32
	// LastSequence is the last sequence appended, -1 when none.
	LastSequence int32
	// LastTimestamp is the time of the last append (ms), -1 when unknown.
	LastTimestamp int64
	// CoordinatorEpoch is the transaction coordinator's epoch (-1: none).
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the open transaction's first offset, -1
	// when none.
	CurrentTxnStartOffset int64
}

// AppendTo appends the response body for the given version to dst.
func (r *DescribeProducersResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= describeProducersFlexible
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
			dst = AppendNullableStr(dst, flex, p.ErrorMessage.S, p.ErrorMessage.Valid)
			dst = AppendArrayLen(dst, flex, len(p.ActiveProducers))
			for k := range p.ActiveProducers {
				a := &p.ActiveProducers[k]
				dst = AppendInt64(dst, a.ProducerID)
				dst = AppendInt32(dst, a.ProducerEpoch)
				dst = AppendInt32(dst, a.LastSequence)
				dst = AppendInt64(dst, a.LastTimestamp)
				dst = AppendInt32(dst, a.CoordinatorEpoch)
				dst = AppendInt64(dst, a.CurrentTxnStartOffset)
				dst = AppendEmptyTags(dst, flex)
			}
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *DescribeProducersResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}
