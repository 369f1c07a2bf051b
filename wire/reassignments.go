package wire

// The replica placement admin APIs: ElectLeaders (key 43, versions 0–2,
// ElectLeadersRequest.json: "validVersions": "0-2", "flexibleVersions":
// "2+"), AlterPartitionReassignments (key 45, versions 0–1, flexible from
// 0; v1 adds AllowReplicationFactorChange, KIP-860) and
// ListPartitionReassignments (key 46, version 0, flexible). They are what
// `kafka-leader-election`, `kafka-reassign-partitions` and Cruise Control
// send (Admin.electLeaders, alterPartitionReassignments,
// listPartitionReassignments).

const (
	electLeadersMin, electLeadersMax int16 = 0, 2
	electLeadersFlexible             int16 = 2

	alterReassignmentsMin, alterReassignmentsMax int16 = 0, 1
	listReassignmentsMin, listReassignmentsMax   int16 = 0, 0
	reassignmentsFlexible                        int16 = 0
)

// TopicPartitions names partitions of one topic (Kafka's TopicPartitions
// of ElectLeaders, ListPartitionReassignmentsTopics).
type TopicPartitions struct {
	// Topic is the topic name.
	Topic string
	// Partitions are the partition indexes.
	Partitions []int32
}

// decodeTopicPartitions reads a nullable array of TopicPartitions into s's
// storage: null is nil, empty is empty.
func decodeTopicPartitions(rd *Reader, flex bool, s []TopicPartitions) []TopicPartitions {
	// A topic is at least a name and a partition count: 6 bytes, 3 when
	// flexible (with its tags).
	minTopic := 6
	if flex {
		minTopic = 3
	}
	s = resizeNullable(s, rd.ArrayLen(flex, minTopic))
	for i := 0; i < len(s) && rd.Ok(); i++ {
		t := &s[i]
		t.Topic = rd.Str(flex)
		t.Partitions = int32s(rd, flex, t.Partitions)
		endStruct(rd, flex)
	}
	return s
}

// ElectLeadersRequest is the body of an ElectLeaders request.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type ElectLeadersRequest struct {
	// ElectionType is 0 for the preferred replica, 1 for unclean (v1+; v0
	// is preferred).
	ElectionType int8
	// Topics (Kafka: TopicPartitions) are the partitions to elect leaders
	// for; nil (null) asks for every partition.
	Topics []TopicPartitions
	// TimeoutMillis is how long the election may take.
	TimeoutMillis int32
}

// Decode parses an ElectLeaders request body of the given version into r,
// reusing the capacity of r's slices. Strings alias body: they are valid
// until the frame is released. Unknown tagged fields are skipped. On error
// r's contents are unspecified.
func (r *ElectLeadersRequest) Decode(body []byte, version int16) error {
	if version < electLeadersMin || version > electLeadersMax {
		return ErrUnsupportedVersion
	}
	flex := version >= electLeadersFlexible
	rd := NewReader(body)
	r.ElectionType = 0
	if version >= 1 {
		r.ElectionType = rd.Int8()
	}
	r.Topics = decodeTopicPartitions(&rd, flex, r.Topics)
	r.TimeoutMillis = rd.Int32()
	endStruct(&rd, flex)
	return rd.Complete()
}

// ElectLeadersResponse is the body of an ElectLeaders response.
type ElectLeadersResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// ErrorCode is the request's result (v1+).
	ErrorCode ErrorCode
	// Topics (Kafka: ReplicaElectionResults) are the results by topic.
	Topics []TopicResults
}

// TopicResults is one topic's per-partition results (ElectLeaders'
// ReplicaElectionResult, AlterPartitionReassignments'
// ReassignableTopicResponse).
type TopicResults struct {
	// Topic (Kafka: Topic, Name) is the topic name.
	Topic string
	// Partitions (Kafka: PartitionResult, Partitions) are its partitions'
	// results.
	Partitions []PartitionResult
}

// PartitionResult is one partition's result with its message.
type PartitionResult struct {
	// Partition (Kafka: PartitionId, PartitionIndex) is the index.
	Partition int32
	// ErrorCode is the partition's result.
	ErrorCode ErrorCode
	// ErrorMessage is a human-readable error, null on success.
	ErrorMessage NullString
}

// AppendTo appends the response body for the given version to dst.
func (r *ElectLeadersResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= electLeadersFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	if version >= 1 {
		dst = AppendInt16(dst, int16(r.ErrorCode))
	}
	dst = appendTopicResults(dst, flex, r.Topics)
	return AppendEmptyTags(dst, flex)
}

// appendTopicResults appends an array of TopicResults.
func appendTopicResults(dst []byte, flex bool, ts []TopicResults) []byte {
	dst = AppendArrayLen(dst, flex, len(ts))
	for i := range ts {
		t := &ts[i]
		dst = AppendStr(dst, flex, t.Topic)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt32(dst, p.Partition)
			dst = AppendInt16(dst, int16(p.ErrorCode))
			dst = AppendNullableStr(dst, flex, p.ErrorMessage.S, p.ErrorMessage.Valid)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return dst
}

// countTopicResults reports the request's code and every partition's to c.
func countTopicResults(c ErrorCounter, code ErrorCode, ts []TopicResults) {
	countError(c, code)
	for i := range ts {
		for j := range ts[i].Partitions {
			countError(c, ts[i].Partitions[j].ErrorCode)
		}
	}
}

// CountErrors reports r's error codes to c.
func (r *ElectLeadersResponse) CountErrors(c ErrorCounter) {
	countTopicResults(c, r.ErrorCode, r.Topics)
}

// AlterPartitionReassignmentsRequest is the body of an
// AlterPartitionReassignments request.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type AlterPartitionReassignmentsRequest struct {
	// TimeoutMillis is how long the request may take.
	TimeoutMillis int32
	// AllowReplicationFactorChange lets a reassignment change a partition's
	// replication factor (v1+; "default": "true").
	AllowReplicationFactorChange bool
	// Topics are the partitions to reassign.
	Topics []ReassignableTopic
}

// ReassignableTopic is one topic's partitions to reassign.
type ReassignableTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions are its partitions to reassign.
	Partitions []ReassignablePartition
}

// ReassignablePartition is one partition to reassign.
type ReassignablePartition struct {
	// Partition (Kafka: PartitionIndex) is the index.
	Partition int32
	// Replicas are the brokers to place it on; nil (null) cancels a
	// pending reassignment.
	Replicas []int32
}

// Decode parses an AlterPartitionReassignments request body of the given
// version into r, reusing the capacity of r's slices. Strings alias body:
// they are valid until the frame is released. Unknown tagged fields are
// skipped. On error r's contents are unspecified.
func (r *AlterPartitionReassignmentsRequest) Decode(body []byte, version int16) error {
	if version < alterReassignmentsMin || version > alterReassignmentsMax {
		return ErrUnsupportedVersion
	}
	const flex = true
	rd := NewReader(body)
	r.TimeoutMillis = rd.Int32()
	r.AllowReplicationFactorChange = true
	if version >= 1 {
		r.AllowReplicationFactorChange = rd.Bool()
	}
	// A topic is at least a name, a partition count and its tags: 3 bytes.
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, 3))
	for i := 0; i < len(r.Topics) && rd.Ok(); i++ {
		t := &r.Topics[i]
		t.Topic = rd.Str(flex)
		// A partition is its index, a replica count and its tags: 6 bytes.
		t.Partitions = resize(t.Partitions, arrayLen(&rd, flex, 6))
		for j := 0; j < len(t.Partitions) && rd.Ok(); j++ {
			p := &t.Partitions[j]
			p.Partition = rd.Int32()
			p.Replicas = nullableInt32s(&rd, flex, p.Replicas)
			endStruct(&rd, flex)
		}
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// nullableInt32s reads a nullable []INT32 into s's storage: null is nil,
// empty is empty.
func nullableInt32s(rd *Reader, flex bool, s []int32) []int32 {
	s = resizeNullable(s, rd.ArrayLen(flex, 4))
	for i := range s {
		s[i] = rd.Int32()
	}
	return s
}

// AlterPartitionReassignmentsResponse is the body of an
// AlterPartitionReassignments response.
type AlterPartitionReassignmentsResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// AllowReplicationFactorChange echoes the request's (v1+).
	AllowReplicationFactorChange bool
	// ErrorCode and ErrorMessage are the request's result.
	ErrorCode    ErrorCode
	ErrorMessage NullString
	// Topics (Kafka: Responses) are the results by topic.
	Topics []TopicResults
}

// AppendTo appends the response body for the given version to dst.
func (r *AlterPartitionReassignmentsResponse) AppendTo(dst []byte, version int16) []byte {
	const flex = true
	dst = AppendInt32(dst, r.ThrottleMillis)
	if version >= 1 {
		dst = AppendBool(dst, r.AllowReplicationFactorChange)
	}
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendNullableStr(dst, flex, r.ErrorMessage.S, r.ErrorMessage.Valid)
	dst = appendTopicResults(dst, flex, r.Topics)
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *AlterPartitionReassignmentsResponse) CountErrors(c ErrorCounter) {
	countTopicResults(c, r.ErrorCode, r.Topics)
}

// ListPartitionReassignmentsRequest is the body of a
// ListPartitionReassignments request.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type ListPartitionReassignmentsRequest struct {
	// TimeoutMillis is how long the request may take.
	TimeoutMillis int32
	// Topics are the partitions to list; nil (null) lists every one.
	Topics []TopicPartitions
}

// Decode parses a ListPartitionReassignments request body of the given
// version into r, reusing the capacity of r's slices. Strings alias body:
// they are valid until the frame is released. Unknown tagged fields are
// skipped. On error r's contents are unspecified.
func (r *ListPartitionReassignmentsRequest) Decode(body []byte, version int16) error {
	if version < listReassignmentsMin || version > listReassignmentsMax {
		return ErrUnsupportedVersion
	}
	const flex = true
	rd := NewReader(body)
	r.TimeoutMillis = rd.Int32()
	r.Topics = decodeTopicPartitions(&rd, flex, r.Topics)
	endStruct(&rd, flex)
	return rd.Complete()
}

// ListPartitionReassignmentsResponse is the body of a
// ListPartitionReassignments response.
type ListPartitionReassignmentsResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// ErrorCode and ErrorMessage are the request's result.
	ErrorCode    ErrorCode
	ErrorMessage NullString
	// Topics are the ongoing reassignments by topic.
	Topics []OngoingTopicReassignment
}

// OngoingTopicReassignment is one topic's ongoing reassignments.
type OngoingTopicReassignment struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions are its partitions being reassigned.
	Partitions []OngoingPartitionReassignment
}

// OngoingPartitionReassignment is one partition being reassigned.
type OngoingPartitionReassignment struct {
	// Partition (Kafka: PartitionIndex) is the index.
	Partition int32
	// Replicas, AddingReplicas and RemovingReplicas are the current
	// replica set and the replicas being added and removed.
	Replicas, AddingReplicas, RemovingReplicas []int32
}

// AppendTo appends the response body for the given version to dst.
func (r *ListPartitionReassignmentsResponse) AppendTo(dst []byte, _ int16) []byte {
	const flex = true
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendNullableStr(dst, flex, r.ErrorMessage.S, r.ErrorMessage.Valid)
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendStr(dst, flex, t.Topic)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt32(dst, p.Partition)
			dst = appendMetadataInt32s(dst, flex, p.Replicas)
			dst = appendMetadataInt32s(dst, flex, p.AddingReplicas)
			dst = appendMetadataInt32s(dst, flex, p.RemovingReplicas)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *ListPartitionReassignmentsResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
}
