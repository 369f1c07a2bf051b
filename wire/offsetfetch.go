package wire

// OffsetFetch (key 9), versions 1–10, flexible from 6 (docs/design/kafka-protocol.md
// §2.1, §2.4). v0 was removed by KIP-896. OffsetFetchRequest.json and
// OffsetFetchResponse.json (Kafka 4.4, "validVersions": "1-10"): v10 names
// the topics of Groups[] by id, in the request and the response ("Name":
// "versions": "8-9", "TopicId": "uuid", "versions": "10+"); an unknown id
// is UNKNOWN_TOPIC_ID.
//
// Two layouts share the API: v1–7 ask about one group (Group, Topics) and
// answer with a top-level ErrorCode *after* the topics; v8+ (KIP-709) batch
// groups (Groups[]) and carry the error per group. Below v8 the batched
// fields are empty; from v8 the single-group fields are.

// offsetFetchFlexible is the first flexible version: "flexibleVersions": "6+".
const offsetFetchFlexible int16 = 6

// offsetFetchTopicIDs is the first version naming topics by id.
const offsetFetchTopicIDs int16 = 10

// OffsetFetchRequest is an OffsetFetch request, v1–10. Strings alias the
// frame: valid until the frame is released.
type OffsetFetchRequest struct {
	// Group is the group id (v0–7).
	Group string
	// Topics are the topics to fetch (v0–7); nil means all topics (null
	// array, v2+).
	Topics []OffsetFetchRequestTopic
	// Groups are the groups to fetch (v8+).
	Groups []OffsetFetchRequestGroup
	// RequireStable asks for UNSTABLE_OFFSET_COMMIT while a transactional
	// commit is pending (v7+).
	RequireStable bool

	topicsBuf []OffsetFetchRequestTopic // Topics' storage while it is null
}

// OffsetFetchRequestGroup is one group of an OffsetFetchRequest (v8+).
type OffsetFetchRequestGroup struct {
	// Group is the group id.
	Group string
	// MemberID is the KIP-848 member id (v9+; null when absent).
	MemberID NullString
	// MemberEpoch is the KIP-848 member epoch (v9+; -1 when absent).
	MemberEpoch int32
	// Topics are the topics to fetch; nil means all topics.
	Topics []OffsetFetchRequestTopic

	topicsBuf []OffsetFetchRequestTopic // Topics' storage while it is null
}

// OffsetFetchRequestTopic is one topic of an OffsetFetch request, in either
// layout.
type OffsetFetchRequestTopic struct {
	// Topic is the topic name (v0–9; "" from v10 on, until the caller sets
	// it from TopicID).
	Topic string
	// TopicID is the topic id (v10+; zero below).
	TopicID [16]byte
	// Partitions are the partition indexes to fetch.
	Partitions []int32
}

// Decode parses an OffsetFetch request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *OffsetFetchRequest) Decode(body []byte, version int16) error {
	if version < 1 || version > offsetFetchTopicIDs {
		return ErrUnsupportedVersion
	}
	flex := version >= offsetFetchFlexible
	rd := NewReader(body)
	r.Group = ""
	if r.Topics != nil {
		r.topicsBuf = r.Topics
	}
	r.Topics = nil
	r.Groups = r.Groups[:0]
	if version <= 7 {
		r.Group = rd.Str(flex)
		// Topics: "nullableVersions": "2-7".
		r.Topics, r.topicsBuf = offsetFetchTopics(&rd, flex, version >= 2, false, r.topicsBuf)
	} else {
		gmin := 1 + 1 + 1 // empty group id, null topics, tags
		if version >= 9 {
			gmin += 1 + 4
		}
		r.Groups = resize(r.Groups, arrayLen(&rd, flex, gmin))
		for i := range r.Groups {
			g := &r.Groups[i]
			g.Group = rd.Str(flex)
			g.MemberID, g.MemberEpoch = NullString{}, -1
			if version >= 9 {
				g.MemberID = nullStr(&rd, flex)
				g.MemberEpoch = rd.Int32()
			}
			if g.Topics != nil {
				g.topicsBuf = g.Topics
			}
			// Topics: "nullableVersions": "8+".
			g.Topics, g.topicsBuf = offsetFetchTopics(&rd, flex, true, version >= offsetFetchTopicIDs, g.topicsBuf)
			rd.SkipTags() // v8+ is flexible
		}
	}
	r.RequireStable = false
	if version >= 7 {
		r.RequireStable = rd.Bool()
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// offsetFetchTopics reads a topics array, by name or (ids) by id, into
// buf's storage. A null array (allowed when nullable) returns nil topics and
// keeps buf as the spare storage; otherwise the spare is consumed.
func offsetFetchTopics(rd *Reader, flex, nullable, ids bool, buf []OffsetFetchRequestTopic) (topics, spare []OffsetFetchRequestTopic) {
	n := rd.ArrayLen(flex, fetchTopicMin(ids, flex))
	if n < 0 {
		if !nullable {
			rd.Fail(ErrNegativeLength)
		}
		return nil, buf
	}
	topics = resize(buf, n)
	if topics == nil {
		topics = []OffsetFetchRequestTopic{} // empty, not null
	}
	for i := range topics {
		t := &topics[i]
		t.Topic, t.TopicID = fetchTopicKey(rd, ids, flex)
		t.Partitions = int32s(rd, flex, t.Partitions)
		if flex {
			rd.SkipTags()
		}
	}
	return topics, nil
}

// OffsetFetchResponse is an OffsetFetch response, v1–10.
type OffsetFetchResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v3+).
	ThrottleMillis int32
	// Topics answer the single group (v0–7).
	Topics []OffsetFetchResponseTopic
	// ErrorCode is the single group's error (v2–7), written after Topics.
	ErrorCode ErrorCode
	// Groups answer each requested group (v8+).
	Groups []OffsetFetchResponseGroup
}

// OffsetFetchResponseGroup answers one group (v8+).
type OffsetFetchResponseGroup struct {
	// Group is the group id.
	Group string
	// Topics are the group's committed offsets.
	Topics []OffsetFetchResponseTopic
	// ErrorCode is the group's error, written after Topics.
	ErrorCode ErrorCode
}

// OffsetFetchResponseTopic is one topic of an OffsetFetch response, in
// either layout.
type OffsetFetchResponseTopic struct {
	// Topic is the topic name (v0–9).
	Topic string
	// TopicID is the topic id (v10+, in Groups only).
	TopicID [16]byte
	// Partitions are the committed offsets.
	Partitions []OffsetFetchResponseTopicPartition
}

// OffsetFetchResponseTopicPartition is one committed offset.
type OffsetFetchResponseTopicPartition struct {
	// Partition is the partition index.
	Partition int32
	// Offset is the committed offset, or -1 when there is none.
	Offset int64
	// LeaderEpoch is the committed leader epoch (v5+; -1 = unknown).
	LeaderEpoch int32
	// Metadata is the metadata stored with the offset, or null.
	Metadata NullString
	// ErrorCode is the partition's error.
	ErrorCode ErrorCode
}

// AppendTo appends the response body at the given version to dst.
func (r *OffsetFetchResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= offsetFetchFlexible
	if version >= 3 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	if version <= 7 {
		dst = appendOffsetFetchTopics(dst, version, flex, r.Topics)
		// "ErrorCode ... versions 2-7" comes after the topics.
		if version >= 2 {
			dst = AppendInt16(dst, int16(r.ErrorCode))
		}
	} else {
		dst = AppendArrayLen(dst, flex, len(r.Groups))
		for i := range r.Groups {
			g := &r.Groups[i]
			dst = AppendStr(dst, flex, g.Group)
			dst = appendOffsetFetchTopics(dst, version, flex, g.Topics)
			dst = AppendInt16(dst, int16(g.ErrorCode))
			dst = AppendEmptyTags(dst, flex)
		}
	}
	return AppendEmptyTags(dst, flex)
}

func appendOffsetFetchTopics(dst []byte, version int16, flex bool, topics []OffsetFetchResponseTopic) []byte {
	dst = AppendArrayLen(dst, flex, len(topics))
	for i := range topics {
		t := &topics[i]
		if version >= offsetFetchTopicIDs {
			dst = append(dst, t.TopicID[:]...)
		} else {
			dst = AppendStr(dst, flex, t.Topic)
		}
		dst = AppendArrayLen(dst, flex, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = AppendInt32(dst, p.Partition)
			dst = AppendInt64(dst, p.Offset)
			if version >= 5 {
				dst = AppendInt32(dst, p.LeaderEpoch)
			}
			dst = appendNullString(dst, flex, p.Metadata)
			dst = AppendInt16(dst, int16(p.ErrorCode))
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return dst
}

// CountErrors reports r's error codes to c.
func (r *OffsetFetchResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	countOffsetFetchTopics(c, r.Topics)
	for i := range r.Groups {
		countError(c, r.Groups[i].ErrorCode)
		countOffsetFetchTopics(c, r.Groups[i].Topics)
	}
}

// countOffsetFetchTopics reports the partition error codes of topics to c.
func countOffsetFetchTopics(c ErrorCounter, topics []OffsetFetchResponseTopic) {
	for i := range topics {
		for j := range topics[i].Partitions {
			countError(c, topics[i].Partitions[j].ErrorCode)
		}
	}
}
