package wire

// OffsetForLeaderEpoch (key 23), versions 2–4, flexible from 4
// (docs/design/kafka-protocol.md §2.1, §2.4). v0–1 were removed by KIP-896.

// offsetForLeaderEpochFlexible is the first flexible version: "flexibleVersions": "4+".
const offsetForLeaderEpochFlexible int16 = 4

// OffsetForLeaderEpochRequest is an OffsetForLeaderEpoch request, v2–4.
// Strings alias the frame: valid until the frame is released.
type OffsetForLeaderEpochRequest struct {
	// ReplicaID is -1 for consumers (v3+; -2, "debug", when absent).
	ReplicaID int32
	// Topics are the topics to look up.
	Topics []OffsetForLeaderEpochRequestTopic
}

// OffsetForLeaderEpochRequestTopic is one topic of an OffsetForLeaderEpochRequest.
type OffsetForLeaderEpochRequestTopic struct {
	// Topic is the topic name.
	Topic string
	// Partitions are the partitions to look up.
	Partitions []OffsetForLeaderEpochRequestTopicPartition
}

// OffsetForLeaderEpochRequestTopicPartition is one partition to look up.
type OffsetForLeaderEpochRequestTopicPartition struct {
	// Partition is the partition index.
	Partition int32
	// CurrentLeaderEpoch is the client's leader epoch (v2+; -1 = do not check).
	CurrentLeaderEpoch int32
	// LeaderEpoch is the epoch whose end offset is wanted.
	LeaderEpoch int32
}

// Decode parses an OffsetForLeaderEpoch request body of the given version
// into r, reusing r's slices. Strings alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *OffsetForLeaderEpochRequest) Decode(body []byte, version int16) error {
	if version < 2 || version > 4 {
		return ErrUnsupportedVersion
	}
	flex := version >= offsetForLeaderEpochFlexible
	rd := NewReader(body)
	r.ReplicaID = -2
	if version >= 3 {
		r.ReplicaID = rd.Int32()
	}
	pmin := 4 + 4 + 4 // v2+: Partition, CurrentLeaderEpoch, LeaderEpoch
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
			p.CurrentLeaderEpoch = rd.Int32() // v2+
			p.LeaderEpoch = rd.Int32()
			if flex {
				rd.SkipTags()
			}
		}
		if flex {
			rd.SkipTags()
		}
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// OffsetForLeaderEpochResponse is an OffsetForLeaderEpoch response, v2–4.
type OffsetForLeaderEpochResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v2+).
	ThrottleMillis int32
	// Topics answer the requested topics.
	Topics []OffsetForLeaderEpochResponseTopic
}

// OffsetForLeaderEpochResponseTopic is one topic of an OffsetForLeaderEpochResponse.
type OffsetForLeaderEpochResponseTopic struct {
	// Topic is the topic name.
	Topic string
	// Partitions answer the requested partitions.
	Partitions []OffsetForLeaderEpochResponseTopicPartition
}

// OffsetForLeaderEpochResponseTopicPartition answers one partition.
type OffsetForLeaderEpochResponseTopicPartition struct {
	// ErrorCode is the partition's error.
	ErrorCode ErrorCode
	// Partition is the partition index.
	Partition int32
	// LeaderEpoch is the largest epoch not above the requested one, or -1.
	LeaderEpoch int32
	// EndOffset is that epoch's end offset, or -1.
	EndOffset int64
}

// AppendTo appends the response body at the given version to dst.
func (r *OffsetForLeaderEpochResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= offsetForLeaderEpochFlexible
	dst = AppendInt32(dst, r.ThrottleMillis) // v2+
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendStr(dst, flex, t.Topic)
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt16(dst, int16(p.ErrorCode))
			dst = AppendInt32(dst, p.Partition)
			dst = AppendInt32(dst, p.LeaderEpoch) // v1+
			dst = AppendInt64(dst, p.EndOffset)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *OffsetForLeaderEpochResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}
