package wire

// DeleteTopics (key 20), versions 1–6, flexible from 4 (docs/design/kafka-protocol.md
// §2.1, §2.4). Kafka 4.0 removed v0 (KIP-896). "Version 6 reorganizes topics, adds
// topic IDs and allows topic names to be null": v1–5 requests carry
// TopicNames, v6 requests carry Topics.

const (
	deleteTopicsMin, deleteTopicsMax int16 = 1, 6
	deleteTopicsFlexible             int16 = 4
)

// DeleteTopicsRequest is the body of a DeleteTopics request.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type DeleteTopicsRequest struct {
	// TopicNames are the topics to delete (v0–5; empty for v6+).
	TopicNames []string
	// Topics are the topics to delete, by name or by id (v6+; empty before).
	Topics []DeleteTopicsRequestTopic
	// TimeoutMillis is how long the client waits for the deletion.
	TimeoutMillis int32
}

// DeleteTopicsRequestTopic names one topic to delete (v6+): by Topic, or,
// when Topic is null, by TopicID.
type DeleteTopicsRequestTopic struct {
	// Topic is the topic name, or null to delete by id.
	Topic NullString
	// TopicID is the topic id; all zero when deleting by name.
	TopicID [16]byte
}

// Decode parses a DeleteTopics request body of the given version into r,
// reusing the capacity of r's slices. Strings alias body: they are valid
// until the frame is released. Unknown tagged fields are skipped. On error
// r's contents are unspecified.
func (r *DeleteTopicsRequest) Decode(body []byte, version int16) error {
	if version < deleteTopicsMin || version > deleteTopicsMax {
		return ErrUnsupportedVersion
	}
	flex := version >= deleteTopicsFlexible
	rd := NewReader(body)

	r.TopicNames = r.TopicNames[:0]
	r.Topics = r.Topics[:0]
	if version >= 6 {
		// Topics: "versions": "6+"; a nullable name, a UUID and the tag
		// section (v6 is flexible), so at least 18 bytes each.
		r.Topics = resize(r.Topics, arrayLen(&rd, flex, 18))
		for i := range r.Topics {
			t := &r.Topics[i]
			t.Topic = nullStr(&rd, flex)
			t.TopicID = rd.UUID()
			endStruct(&rd, flex)
		}
	} else {
		// TopicNames: "versions": "0-5".
		r.TopicNames = strs(&rd, flex, false, r.TopicNames)
	}
	r.TimeoutMillis = rd.Int32()
	endStruct(&rd, flex)
	return rd.Complete()
}

// DeleteTopicsResponse is the body of a DeleteTopics response.
type DeleteTopicsResponse struct {
	// ThrottleMillis is the quota throttle applied (v1+).
	ThrottleMillis int32
	// Topics (Kafka: Responses) holds one result per requested topic.
	Topics []DeleteTopicsResponseTopic
}

// DeleteTopicsResponseTopic is the result for one topic.
type DeleteTopicsResponseTopic struct {
	// Topic is the topic name. It may be null only in v6+ (a topic deleted
	// by an unknown id); earlier versions write a null as "".
	Topic NullString
	// TopicID is the topic id (v6+).
	TopicID [16]byte
	// ErrorCode is the deletion result.
	ErrorCode ErrorCode
	// ErrorMessage is a human-readable error, null on success (v5+).
	ErrorMessage NullString
}

// AppendTo appends the response body for the given version to dst.
func (r *DeleteTopicsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= deleteTopicsFlexible
	// "Version 1 adds the throttle time."
	if version >= 1 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		// Name: "nullableVersions": "6+".
		if version >= 6 {
			dst = AppendNullableStr(dst, flex, t.Topic.S, t.Topic.Valid)
		} else {
			name := t.Topic.S
			if !t.Topic.Valid {
				name = ""
			}
			dst = AppendStr(dst, flex, name)
		}
		// "Version 6 adds topic ID to responses."
		if version >= 6 {
			dst = AppendUUID(dst, t.TopicID)
		}
		dst = AppendInt16(dst, int16(t.ErrorCode))
		// "Version 5 adds ErrorMessage in the response."
		if version >= 5 {
			dst = AppendNullableStr(dst, flex, t.ErrorMessage.S, t.ErrorMessage.Valid)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *DeleteTopicsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		countError(c, r.Topics[i].ErrorCode)
	}
}
