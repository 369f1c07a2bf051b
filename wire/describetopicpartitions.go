package wire

// DescribeTopicPartitions (key 75), version 0 only, flexible (KIP-966;
// DescribeTopicPartitionsRequest.json and DescribeTopicPartitionsResponse.json,
// "validVersions": "0", "flexibleVersions": "0+"). Kafka 4.x's Admin
// describeTopics (`kafka-topics --describe`) uses it when the broker
// advertises it, paging through the partitions with a cursor.
//
// Request:  Topics [{Name string}], ResponsePartitionLimit int32 (default
//           2000), Cursor {TopicName string, PartitionIndex int32}
//           ("nullableVersions": "0+").
// Response: ThrottleTimeMs, Topics [{ErrorCode, Name (nullable), TopicId
//           uuid, IsInternal, Partitions [{ErrorCode, PartitionIndex,
//           LeaderId, LeaderEpoch, ReplicaNodes, IsrNodes,
//           EligibleLeaderReplicas (nullable), LastKnownELR (nullable),
//           OfflineReplicas}], TopicAuthorizedOperations}], NextCursor
//           (nullable, as Cursor).
//
// A nullable struct is one INT8 before its fields: -1 for null, 1 when
// present (franz-go kmsg reads any other value as present too).

const (
	describeTopicPartitionsMin, describeTopicPartitionsMax int16 = 0, 0
	describeTopicPartitionsFlexible                        int16 = 0
)

// DescribeTopicPartitionsCursor names the first topic and partition to
// describe (the request's Cursor, the response's NextCursor).
type DescribeTopicPartitionsCursor struct {
	// Topic (Kafka: TopicName) is the topic's name; in a request, a view
	// into the frame.
	Topic string
	// Partition (Kafka: PartitionIndex) is the first partition.
	Partition int32
}

// DescribeTopicPartitionsRequest is the body of a DescribeTopicPartitions
// request.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type DescribeTopicPartitionsRequest struct {
	// Topics are the names to describe; empty means every topic.
	Topics []string
	// ResponsePartitionLimit bounds the partitions in the response.
	ResponsePartitionLimit int32
	// Cursor is where to start, when HasCursor (null otherwise).
	Cursor    DescribeTopicPartitionsCursor
	HasCursor bool
}

// Decode parses a DescribeTopicPartitions request body of the given version
// into r, reusing the capacity of r's slices. Strings alias body: they are
// valid until the frame is released. Unknown tagged fields are skipped. On
// error r's contents are unspecified.
func (r *DescribeTopicPartitionsRequest) Decode(body []byte, version int16) error {
	if version < describeTopicPartitionsMin || version > describeTopicPartitionsMax {
		return ErrUnsupportedVersion
	}
	flex := version >= describeTopicPartitionsFlexible
	rd := NewReader(body)
	// A topic is at least a name and its tags: 2 bytes.
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, 2))
	for i := range r.Topics {
		r.Topics[i] = rd.Str(flex)
		endStruct(&rd, flex)
	}
	r.ResponsePartitionLimit = rd.Int32()
	r.HasCursor = rd.Int8() != -1 && rd.Ok()
	r.Cursor = DescribeTopicPartitionsCursor{}
	if r.HasCursor {
		r.Cursor.Topic = rd.Str(flex)
		r.Cursor.Partition = rd.Int32()
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// DescribeTopicPartitionsResponse is the body of a DescribeTopicPartitions
// response.
type DescribeTopicPartitionsResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// Topics holds the topics described.
	Topics []DescribeTopicPartitionsResponseTopic
	// NextCursor is where the next request starts, when HasNextCursor
	// (null: everything asked for was described).
	NextCursor    DescribeTopicPartitionsCursor
	HasNextCursor bool
}

// DescribeTopicPartitionsResponseTopic is one topic described.
type DescribeTopicPartitionsResponseTopic struct {
	// ErrorCode is the topic's result.
	ErrorCode ErrorCode
	// Topic (Kafka: Name) is the topic name.
	Topic NullString
	// TopicID is the topic's id (KIP-516).
	TopicID [16]byte
	// IsInternal marks an internal topic.
	IsInternal bool
	// Partitions are the topic's partitions described.
	Partitions []DescribeTopicPartitionsResponsePartition
	// AuthorizedOperations is a bit field; AuthorizedOperationsUnknown when
	// not computed.
	AuthorizedOperations int32
}

// DescribeTopicPartitionsResponsePartition is one partition described.
type DescribeTopicPartitionsResponsePartition struct {
	// ErrorCode is the partition's result.
	ErrorCode ErrorCode
	// Partition (Kafka: PartitionIndex) is the partition index.
	Partition int32
	// Leader (Kafka: LeaderId) is the leader's node id.
	Leader int32
	// LeaderEpoch is the leader's epoch, -1 when unknown.
	LeaderEpoch int32
	// Replicas (Kafka: ReplicaNodes) and ISR (Kafka: IsrNodes) are node ids.
	Replicas, ISR []int32
	// EligibleLeaderReplicas and LastKnownELR are nullable (nil = null).
	EligibleLeaderReplicas, LastKnownELR []int32
	// OfflineReplicas are the offline replicas' node ids.
	OfflineReplicas []int32
}

// AppendTo appends the response body for the given version to dst.
func (r *DescribeTopicPartitionsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= describeTopicPartitionsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendInt16(dst, int16(t.ErrorCode))
		dst = AppendNullableStr(dst, flex, t.Topic.S, t.Topic.Valid)
		dst = AppendUUID(dst, t.TopicID)
		dst = AppendBool(dst, t.IsInternal)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt16(dst, int16(p.ErrorCode))
			dst = AppendInt32(dst, p.Partition)
			dst = AppendInt32(dst, p.Leader)
			dst = AppendInt32(dst, p.LeaderEpoch)
			dst = appendMetadataInt32s(dst, flex, p.Replicas)
			dst = appendMetadataInt32s(dst, flex, p.ISR)
			dst = appendNullableInt32s(dst, flex, p.EligibleLeaderReplicas)
			dst = appendNullableInt32s(dst, flex, p.LastKnownELR)
			dst = appendMetadataInt32s(dst, flex, p.OfflineReplicas)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendInt32(dst, t.AuthorizedOperations)
		dst = AppendEmptyTags(dst, flex)
	}
	if !r.HasNextCursor {
		dst = AppendInt8(dst, -1)
	} else {
		dst = AppendInt8(dst, 1)
		dst = AppendStr(dst, flex, r.NextCursor.Topic)
		dst = AppendInt32(dst, r.NextCursor.Partition)
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// appendNullableInt32s appends a nullable []INT32: nil is null.
func appendNullableInt32s(dst []byte, flex bool, a []int32) []byte {
	if a == nil {
		return AppendArrayLen(dst, flex, -1)
	}
	return appendMetadataInt32s(dst, flex, a)
}

// CountErrors reports r's error codes to c.
func (r *DescribeTopicPartitionsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		countError(c, r.Topics[i].ErrorCode)
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}
