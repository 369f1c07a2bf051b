package wire

// DeleteRecords (key 21), versions 0–2, flexible from 2. From
// DeleteRecordsRequest.json and DeleteRecordsResponse.json in apache/kafka
// (4.4: "validVersions": "0-2", "flexibleVersions": "2+"; "Version 1 is
// the same as version 0", "Version 2 is the first flexible version"):
//
//	request:  Topics []{Name string, Partitions []{PartitionIndex int32,
//	          Offset int64}} (0+), TimeoutMs int32 (0+)
//	response: ThrottleTimeMs int32 (0+), Topics []{Name string,
//	          Partitions []{PartitionIndex int32, LowWatermark int64,
//	          ErrorCode int16}} (0+)
//
// It moves partitions' log start offsets forward: what
// `kafka-delete-records` and Kafka Streams' repartition-topic purge send.

const (
	deleteRecordsMin, deleteRecordsMax int16 = 0, 2
	// deleteRecordsFlexible is the first flexible version.
	deleteRecordsFlexible int16 = 2
)

// DeleteRecordsRequest is a DeleteRecords request. Strings alias the
// frame: valid until the frame is released.
type DeleteRecordsRequest struct {
	// Topics are the partitions to delete records from.
	Topics []DeleteRecordsRequestTopic
	// TimeoutMillis (Kafka: TimeoutMs) is how long to wait for the deletion.
	TimeoutMillis int32
}

// DeleteRecordsRequestTopic is one topic of a DeleteRecords request.
type DeleteRecordsRequestTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions are the partitions and their new log starts.
	Partitions []DeleteRecordsRequestPartition
}

// DeleteRecordsRequestPartition is one partition of a DeleteRecords request.
type DeleteRecordsRequestPartition struct {
	// Partition (Kafka: PartitionIndex) is the partition index.
	Partition int32
	// Offset is the new log start: records before it are deleted; −1 means
	// the high watermark.
	Offset int64
}

// Decode parses a DeleteRecords request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is
// released. Unknown tagged fields are skipped. On error r's contents are
// unspecified.
func (r *DeleteRecordsRequest) Decode(body []byte, version int16) error {
	if version < deleteRecordsMin || version > deleteRecordsMax {
		return ErrUnsupportedVersion
	}
	flex := version >= deleteRecordsFlexible
	rd := NewReader(body)
	// A topic is at least a name and a partition count (6 bytes, 3
	// flexible); a partition is an INT32 and an INT64 (12, 13 flexible).
	topicMin, partMin := 6, 12
	if flex {
		topicMin, partMin = 3, 13
	}
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, topicMin))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic = rd.Str(flex)
		t.Partitions = resize(t.Partitions, arrayLen(&rd, flex, partMin))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			p.Partition = rd.Int32()
			p.Offset = rd.Int64()
			endStruct(&rd, flex)
		}
		endStruct(&rd, flex)
	}
	r.TimeoutMillis = rd.Int32()
	endStruct(&rd, flex)
	return rd.Complete()
}

// DeleteRecordsResponse is a DeleteRecords response.
type DeleteRecordsResponse struct {
	// ThrottleMillis is the client throttle in milliseconds.
	ThrottleMillis int32
	// Topics holds one entry per requested topic.
	Topics []DeleteRecordsResponseTopic
}

// DeleteRecordsResponseTopic is one topic's result.
type DeleteRecordsResponseTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions holds one entry per requested partition.
	Partitions []DeleteRecordsResponsePartition
}

// DeleteRecordsResponsePartition is one partition's result.
type DeleteRecordsResponsePartition struct {
	// Partition (Kafka: PartitionIndex) is the partition index.
	Partition int32
	// LowWatermark is the partition's log start after the deletion.
	LowWatermark int64
	// ErrorCode is the partition's result, or None.
	ErrorCode ErrorCode
}

// AppendTo appends the response body at the given version to dst.
func (r *DeleteRecordsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= deleteRecordsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendStr(dst, flex, t.Topic)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt32(dst, p.Partition)
			dst = AppendInt64(dst, p.LowWatermark)
			dst = AppendInt16(dst, int16(p.ErrorCode))
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *DeleteRecordsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}
