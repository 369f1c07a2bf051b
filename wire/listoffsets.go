package wire

// ListOffsets (key 2), versions 1–10, flexible from 6 (docs/design/kafka-protocol.md
// §2.1, §2.4). v0 (MaxNumOffsets, OldStyleOffsets) was removed by KIP-896 and is
// not served.

// listOffsetsFlexible is the first flexible version: "flexibleVersions": "6+".
const listOffsetsFlexible int16 = 6

// ListOffsetsRequest is a ListOffsets request, v1–10. Strings alias the
// frame: valid until the frame is released.
type ListOffsetsRequest struct {
	// ReplicaID is -1 for consumers.
	ReplicaID int32
	// IsolationLevel is 0 (read uncommitted) or 1 (read committed) (v2+; 0 when absent).
	IsolationLevel int8
	// Topics are the topics to list offsets for.
	Topics []ListOffsetsRequestTopic
	// TimeoutMillis bounds the request (v10+; 30000 when absent).
	TimeoutMillis int32
}

// ListOffsetsRequestTopic is one topic of a ListOffsetsRequest.
type ListOffsetsRequestTopic struct {
	// Topic is the topic name.
	Topic string
	// Partitions are the partitions to list offsets for.
	Partitions []ListOffsetsRequestTopicPartition
}

// ListOffsetsRequestTopicPartition is one partition of a ListOffsetsRequestTopic.
type ListOffsetsRequestTopicPartition struct {
	// Partition is the partition index.
	Partition int32
	// CurrentLeaderEpoch is the client's leader epoch (v4+; -1 = do not check).
	CurrentLeaderEpoch int32
	// Timestamp selects the offset: -1 latest, -2 earliest, -3 max
	// timestamp (v7+), -4 local log start (v8+), -5 last tiered (v9+),
	// otherwise the first offset whose timestamp is at least this (ms).
	Timestamp int64
}

// Decode parses a ListOffsets request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *ListOffsetsRequest) Decode(body []byte, version int16) error {
	if version < 1 || version > 10 {
		return ErrUnsupportedVersion
	}
	flex := version >= listOffsetsFlexible
	rd := NewReader(body)
	r.ReplicaID = rd.Int32()
	r.IsolationLevel = 0
	if version >= 2 {
		r.IsolationLevel = rd.Int8()
	}
	pmin := 4 + 8
	if version >= 4 {
		pmin += 4
	}
	if flex {
		pmin++
	}
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, minStringArraySize(flex)))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic = rd.Str(flex)
		t.Partitions = resize(t.Partitions, arrayLen(&rd, flex, pmin))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			p.Partition = rd.Int32()
			p.CurrentLeaderEpoch = -1
			if version >= 4 {
				p.CurrentLeaderEpoch = rd.Int32()
			}
			p.Timestamp = rd.Int64()
			// MaxNumOffsets: "versions": "0" — gone from v1.
			if flex {
				rd.SkipTags()
			}
		}
		if flex {
			rd.SkipTags()
		}
	}
	r.TimeoutMillis = 30000
	if version >= 10 {
		r.TimeoutMillis = rd.Int32()
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// ListOffsetsResponse is a ListOffsets response, v1–10.
type ListOffsetsResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v2+).
	ThrottleMillis int32
	// Topics answer the requested topics.
	Topics []ListOffsetsResponseTopic
}

// ListOffsetsResponseTopic is one topic of a ListOffsetsResponse.
type ListOffsetsResponseTopic struct {
	// Topic is the topic name.
	Topic string
	// Partitions answer the requested partitions.
	Partitions []ListOffsetsResponseTopicPartition
}

// ListOffsetsResponseTopicPartition is one partition of a ListOffsetsResponseTopic.
type ListOffsetsResponseTopicPartition struct {
	// Partition is the partition index.
	Partition int32
	// ErrorCode is the partition's error.
	ErrorCode ErrorCode
	// Timestamp is the found record's timestamp; -1 for latest/earliest or
	// when nothing was found.
	Timestamp int64
	// Offset is the found offset, or -1.
	Offset int64
	// LeaderEpoch is the epoch of the found offset (v4+; -1 = unknown).
	LeaderEpoch int32
}

// AppendTo appends the response body at the given version to dst.
func (r *ListOffsetsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= listOffsetsFlexible
	if version >= 2 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendStr(dst, flex, t.Topic)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt32(dst, p.Partition)
			dst = AppendInt16(dst, int16(p.ErrorCode))
			// OldStyleOffsets: "versions": "0" — gone from v1.
			dst = AppendInt64(dst, p.Timestamp) // v1+
			dst = AppendInt64(dst, p.Offset)    // v1+
			if version >= 4 {
				dst = AppendInt32(dst, p.LeaderEpoch)
			}
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *ListOffsetsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}
