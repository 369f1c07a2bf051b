package wire

// OffsetCommit (key 8), versions 2–10, flexible from 8 (docs/design/kafka-protocol.md
// §2.1, §2.4). v0–1 were removed by KIP-896. OffsetCommitRequest.json and
// OffsetCommitResponse.json (Kafka 4.4, "validVersions": "2-10"): "Version 10
// adds support for topic ids and removes support for topic names" — "Name":
// "versions": "0-9", "TopicId": "uuid", "versions": "10+", in the request's
// and the response's topics; an unknown id is UNKNOWN_TOPIC_ID.

// offsetCommitFlexible is the first flexible version: "flexibleVersions": "8+".
const offsetCommitFlexible int16 = 8

// offsetCommitTopicIDs is the first version naming topics by id.
const offsetCommitTopicIDs int16 = 10

// OffsetCommitRequest is an OffsetCommit request, v2–10. Strings alias the
// frame: valid until the frame is released.
type OffsetCommitRequest struct {
	// Group is the group id.
	Group string
	// Generation is the generation id, or the member epoch for KIP-848
	// members (v9); -1 with an empty MemberID is a "simple" commit.
	Generation int32
	// MemberID is the member id.
	MemberID string
	// InstanceID is the static member id (v7+; null when absent).
	InstanceID NullString
	// RetentionTimeMillis is the requested retention (v2–4; -1 = broker
	// default, and -1 when absent).
	RetentionTimeMillis int64
	// Topics are the offsets to commit.
	Topics []OffsetCommitRequestTopic
}

// OffsetCommitRequestTopic is one topic of an OffsetCommitRequest.
type OffsetCommitRequestTopic struct {
	// Topic is the topic name (v0–9; "" from v10 on, until the caller sets
	// it from TopicID).
	Topic string
	// TopicID is the topic id (v10+; zero below).
	TopicID [16]byte
	// Partitions are the partition offsets to commit.
	Partitions []OffsetCommitRequestTopicPartition
}

// OffsetCommitRequestTopicPartition is one partition offset to commit.
type OffsetCommitRequestTopicPartition struct {
	// Partition is the partition index.
	Partition int32
	// Offset is the committed offset (the next offset to consume).
	Offset int64
	// LeaderEpoch is the epoch of the last consumed record (v6+; -1 = unknown).
	LeaderEpoch int32
	// Metadata is client metadata stored with the offset, or null.
	Metadata NullString
}

// Decode parses an OffsetCommit request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *OffsetCommitRequest) Decode(body []byte, version int16) error {
	if version < 2 || version > 10 {
		return ErrUnsupportedVersion
	}
	flex := version >= offsetCommitFlexible
	ids := version >= offsetCommitTopicIDs
	rd := NewReader(body)
	r.Group = rd.Str(flex)
	r.Generation = rd.Int32() // v1+
	r.MemberID = rd.Str(flex) // v1+
	r.InstanceID = NullString{}
	if version >= 7 {
		r.InstanceID = nullStr(&rd, flex)
	}
	r.RetentionTimeMillis = -1
	if version <= 4 { // RetentionTimeMs: "versions": "2-4"
		r.RetentionTimeMillis = rd.Int64()
	}
	// Smallest partition: index, offset, null metadata, then the leader
	// epoch (6+) and the tag count (8+).
	pmin := 4 + 8 + 2
	if version >= 6 {
		pmin += 4
	}
	if flex {
		pmin = 4 + 8 + 4 + 1 + 1
	}
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, fetchTopicMin(ids, flex)))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic, t.TopicID = fetchTopicKey(&rd, ids, flex)
		t.Partitions = resize(t.Partitions, arrayLen(&rd, flex, pmin))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			p.Partition = rd.Int32()
			p.Offset = rd.Int64()
			// CommitTimestamp: "versions": "1" — gone from v2.
			p.LeaderEpoch = -1
			if version >= 6 {
				p.LeaderEpoch = rd.Int32()
			}
			p.Metadata = nullStr(&rd, flex)
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

// OffsetCommitResponse is an OffsetCommit response, v2–10.
type OffsetCommitResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v3+).
	ThrottleMillis int32
	// Topics answer the committed topics.
	Topics []OffsetCommitResponseTopic
}

// OffsetCommitResponseTopic is one topic of an OffsetCommitResponse.
type OffsetCommitResponseTopic struct {
	// Topic is the topic name (v0–9).
	Topic string
	// TopicID is the topic id (v10+).
	TopicID [16]byte
	// Partitions answer the committed partitions.
	Partitions []OffsetCommitResponseTopicPartition
}

// OffsetCommitResponseTopicPartition answers one committed partition.
type OffsetCommitResponseTopicPartition struct {
	// Partition is the partition index.
	Partition int32
	// ErrorCode is the partition's error.
	ErrorCode ErrorCode
}

// AppendTo appends the response body at the given version to dst.
func (r *OffsetCommitResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= offsetCommitFlexible
	if version >= 3 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		if version >= offsetCommitTopicIDs {
			dst = append(dst, t.TopicID[:]...)
		} else {
			dst = AppendStr(dst, flex, t.Topic)
		}
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
func (r *OffsetCommitResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}
