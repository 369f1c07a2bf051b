package wire

// CreatePartitions (key 37), versions 0–3, flexible from 2 (docs/design/kafka-protocol.md
// §2.1, §2.4). "Version 1 is the same as version 0"; "Version 3 is identical to
// version 2 but may return a THROTTLING_QUOTA_EXCEEDED error".

const (
	createPartitionsMin, createPartitionsMax int16 = 0, 3
	createPartitionsFlexible                 int16 = 2
)

// CreatePartitionsRequest is the body of a CreatePartitions request.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type CreatePartitionsRequest struct {
	// Topics are the topics to grow.
	Topics []CreatePartitionsRequestTopic
	// TimeoutMillis is how long the client waits for the creation.
	TimeoutMillis int32
	// ValidateOnly asks for a dry run.
	ValidateOnly bool
}

// CreatePartitionsRequestTopic is one topic to grow.
type CreatePartitionsRequestTopic struct {
	// Topic is the topic name.
	Topic string
	// Count is the new total partition count (not the number to add).
	Count int32
	// Assignment (Kafka: Assignments) places each new partition. nil means
	// null, "assign automatically".
	Assignment []CreatePartitionsRequestTopicAssignment
}

// CreatePartitionsRequestTopicAssignment places one new partition.
type CreatePartitionsRequestTopicAssignment struct {
	// Replicas (Kafka: BrokerIds) are the brokers to place it on.
	Replicas []int32
}

// Decode parses a CreatePartitions request body of the given version into r,
// reusing the capacity of r's slices. Strings alias body: they are valid
// until the frame is released. Unknown tagged fields are skipped. On error
// r's contents are unspecified.
func (r *CreatePartitionsRequest) Decode(body []byte, version int16) error {
	if version < createPartitionsMin || version > createPartitionsMax {
		return ErrUnsupportedVersion
	}
	flex := version >= createPartitionsFlexible
	rd := NewReader(body)

	// Name, Count, assignment count (, tags); one assignment is a replica
	// count (, tags).
	topicMin, assignMin := 10, 4
	if flex {
		topicMin, assignMin = 7, 2
	}
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, topicMin))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic = rd.Str(flex)
		t.Count = rd.Int32()
		// Assignments: "nullableVersions": "0+".
		t.Assignment = resizeNullable(t.Assignment, rd.ArrayLen(flex, assignMin))
		for j := range t.Assignment {
			a := &t.Assignment[j]
			a.Replicas = int32s(&rd, flex, a.Replicas)
			endStruct(&rd, flex)
		}
		endStruct(&rd, flex)
	}
	r.TimeoutMillis = rd.Int32()
	r.ValidateOnly = rd.Bool()
	endStruct(&rd, flex)
	return rd.Complete()
}

// CreatePartitionsResponse is the body of a CreatePartitions response.
type CreatePartitionsResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// Topics (Kafka: Results) holds one result per requested topic.
	Topics []CreatePartitionsResponseTopic
}

// CreatePartitionsResponseTopic is the result for one topic.
type CreatePartitionsResponseTopic struct {
	// Topic is the topic name.
	Topic string
	// ErrorCode is the result; INVALID_PARTITIONS when Count does not grow
	// the topic.
	ErrorCode ErrorCode
	// ErrorMessage is a human-readable error, null on success.
	ErrorMessage NullString
}

// AppendTo appends the response body for the given version to dst.
func (r *CreatePartitionsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= createPartitionsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendStr(dst, flex, t.Topic)
		dst = AppendInt16(dst, int16(t.ErrorCode))
		dst = AppendNullableStr(dst, flex, t.ErrorMessage.S, t.ErrorMessage.Valid)
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *CreatePartitionsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		countError(c, r.Topics[i].ErrorCode)
	}
}
