package wire

// OffsetDelete (key 47), version 0 only, not flexible (KIP-496). From
// OffsetDeleteRequest.json and OffsetDeleteResponse.json in apache/kafka:
//
//	"validVersions": "0", "flexibleVersions": "none"
//	request:  GroupId string (0+),
//	          Topics []{Name string, Partitions []{PartitionIndex int32}} (0+)
//	response: ErrorCode int16 (0+), ThrottleTimeMs int32 (0+),
//	          Topics []{Name string, Partitions []{PartitionIndex int32, ErrorCode int16}} (0+)
//
// It deletes a group's committed offsets for the listed partitions: what
// `kafka-consumer-groups --delete-offsets` sends. A newer response schema
// adds a flexible v1 (KIP-1313) that the Kafka 4.x clients do not send and
// kiggy does not serve.

const (
	offsetDeleteMin, offsetDeleteMax int16 = 0, 0
	// offsetDeleteFlexible is the first flexible version: "flexibleVersions":
	// "none" for the versions served, so one past offsetDeleteMax.
	offsetDeleteFlexible int16 = 1
)

// OffsetDeleteRequest is an OffsetDelete request, v0. Strings alias the
// frame: valid until the frame is released.
type OffsetDeleteRequest struct {
	// Group (Kafka: GroupId) is the group whose offsets to delete.
	Group string
	// Topics are the partitions whose offsets to delete.
	Topics []OffsetDeleteRequestTopic
}

// OffsetDeleteRequestTopic is one topic of an OffsetDelete request.
type OffsetDeleteRequestTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions (Kafka: Partitions[].PartitionIndex) are the partitions.
	Partitions []int32
}

// Decode parses an OffsetDelete request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *OffsetDeleteRequest) Decode(body []byte, version int16) error {
	if version < offsetDeleteMin || version > offsetDeleteMax {
		return ErrUnsupportedVersion
	}
	flex := version >= offsetDeleteFlexible
	rd := NewReader(body)
	r.Group = rd.Str(flex)
	// A topic is at least a name and a partition count: 6 bytes.
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, 6))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic = rd.Str(flex)
		// Not flexible: a partition struct is its one INT32.
		t.Partitions = int32s(&rd, flex, t.Partitions)
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// OffsetDeleteResponse is an OffsetDelete response, v0.
type OffsetDeleteResponse struct {
	// ErrorCode is the group-level error, or None.
	ErrorCode ErrorCode
	// ThrottleMillis is the client throttle in milliseconds.
	ThrottleMillis int32
	// Topics holds one entry per requested topic.
	Topics []OffsetDeleteResponseTopic
}

// OffsetDeleteResponseTopic is one topic's result.
type OffsetDeleteResponseTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions holds one entry per requested partition.
	Partitions []OffsetDeleteResponsePartition
}

// OffsetDeleteResponsePartition is one partition's result.
type OffsetDeleteResponsePartition struct {
	// Partition (Kafka: PartitionIndex) is the partition index.
	Partition int32
	// ErrorCode is the partition's result, or None.
	ErrorCode ErrorCode
}

// AppendTo appends the response body at the given version to dst.
func (r *OffsetDeleteResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= offsetDeleteFlexible
	dst = AppendInt16(dst, int16(r.ErrorCode))
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
func (r *OffsetDeleteResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}
