package wire

// Metadata (key 3), versions 0–13, flexible from 9 (docs/design/kafka-protocol.md §2.1, §2.4;
// MetadataRequest.json, MetadataResponse.json; v13 only appends the top-level
// ErrorCode, KIP-1102).

const (
	metadataMinVersion = 0
	metadataMaxVersion = 13
	// metadataFlexible is the first flexible version: "flexibleVersions": "9+".
	metadataFlexible int16 = 9
)

// AuthorizedOperationsUnknown is the value of TopicAuthorizedOperations and
// ClusterAuthorizedOperations that means "not computed" (INT32 minimum, the
// schema default). Use it unless the client asked for authorized operations.
const AuthorizedOperationsUnknown int32 = -2147483648

// MetadataRequestTopic names one topic in a Metadata request.
type MetadataRequestTopic struct {
	// TopicID (v10+) is all zero when the topic is named; lookup by id is
	// only implemented by Kafka from v12 on.
	TopicID [16]byte
	// Name is nullable from v10 on (null when looking up by id); before
	// v10 it is always valid. It is a view into the frame, valid until the
	// frame is released.
	Name NullString
}

// MetadataRequest is a Metadata request body.
type MetadataRequest struct {
	// Topics is nil when the client asks for all topics: a null array in
	// v1+, an empty array in v0 ("v0: empty array = all topics"; Decode
	// normalizes both to nil). A non-nil empty slice (v1+) asks for no
	// topics, which Admin and librdkafka use to learn the brokers.
	Topics []MetadataRequestTopic
	// AllowAutoTopicCreation is v4+; before v4 Kafka behaves as if true,
	// and Decode reports true.
	AllowAutoTopicCreation bool
	// IncludeClusterAuthorizedOperations is v8–10.
	IncludeClusterAuthorizedOperations bool
	// IncludeTopicAuthorizedOperations is v8+.
	IncludeTopicAuthorizedOperations bool
}

// Decode parses a Metadata request body of the given version into r, reusing
// r's slices. Strings alias body: they are valid until the frame is released.
func (r *MetadataRequest) Decode(body []byte, version int16) error {
	if version < metadataMinVersion || version > metadataMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= metadataFlexible
	rd := NewReader(body)

	// Smallest topic entry: an empty name (INT16 or 1-byte compact length)
	// plus, from v10, the 16-byte id and, when flexible, the tag count.
	minTopic := 2
	if version >= 10 {
		minTopic = 18
	}
	n := rd.ArrayLen(flex, minTopic)
	switch {
	case n < 0 && version < 1:
		// "Topics ... nullableVersions 1+": null is invalid in v0.
		rd.Fail(ErrNegativeLength)
		n = 0
	case n < 0 || n == 0 && version == 0:
		r.Topics = nil
	case r.Topics == nil:
		// A non-nil empty slice; make([]T, 0) of a non-empty type
		// allocates nothing when n is 0.
		r.Topics = make([]MetadataRequestTopic, n)
	default:
		r.Topics = resize(r.Topics, n)
	}
	for i := 0; i < n && rd.Ok(); i++ {
		t := &r.Topics[i]
		if version >= 10 {
			t.TopicID = rd.UUID()
			s, ok := rd.NullableStr(flex)
			t.Name = NullString{S: s, Valid: ok}
		} else {
			t.TopicID = [16]byte{}
			t.Name = NullString{S: rd.Str(flex), Valid: true}
		}
		if flex {
			rd.SkipTags()
		}
	}

	r.AllowAutoTopicCreation = true
	if version >= 4 {
		r.AllowAutoTopicCreation = rd.Bool()
	}
	r.IncludeClusterAuthorizedOperations = false
	if version >= 8 && version <= 10 {
		r.IncludeClusterAuthorizedOperations = rd.Bool()
	}
	r.IncludeTopicAuthorizedOperations = false
	if version >= 8 {
		r.IncludeTopicAuthorizedOperations = rd.Bool()
	}
	if flex {
		rd.SkipTags()
	}
	// Bytes after the last field are ignored, as Kafka ignores them
	// (docs/design/kafka-protocol.md §2.4): librdkafka 2.16 appends three to
	// its all-topics request (confluent-kafka-python's list_topics()).
	return rd.Err()
}

// AppendTo appends r encoded at version (a client's view; used by tests and
// fuzz seeds). A nil Topics is a null array in v1+ and an empty one in v0.
func (r *MetadataRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= metadataFlexible
	switch {
	case r.Topics == nil && version >= 1:
		dst = AppendArrayLen(dst, flex, -1)
	default:
		dst = AppendArrayLen(dst, flex, len(r.Topics))
	}
	for i := range r.Topics {
		t := &r.Topics[i]
		if version >= 10 {
			dst = AppendUUID(dst, t.TopicID)
			dst = AppendNullableStr(dst, flex, t.Name.S, t.Name.Valid)
		} else {
			dst = AppendStr(dst, flex, t.Name.S)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	if version >= 4 {
		dst = AppendBool(dst, r.AllowAutoTopicCreation)
	}
	if version >= 8 && version <= 10 {
		dst = AppendBool(dst, r.IncludeClusterAuthorizedOperations)
	}
	if version >= 8 {
		dst = AppendBool(dst, r.IncludeTopicAuthorizedOperations)
	}
	return AppendEmptyTags(dst, flex)
}

// MetadataResponseBroker is one broker (for kiggy: one gateway listener) in a
// Metadata response. Every node id used as leader or controller must appear.
type MetadataResponseBroker struct {
	NodeID int32
	Host   string
	Port   int32
	// Rack is v1+.
	Rack NullString
}

// MetadataResponsePartition is one partition of a topic in a Metadata response.
type MetadataResponsePartition struct {
	ErrorCode      ErrorCode
	PartitionIndex int32
	LeaderID       int32
	// LeaderEpoch is v7+; -1 means unknown and turns off KIP-320
	// truncation detection in clients.
	LeaderEpoch  int32
	ReplicaNodes []int32
	IsrNodes     []int32
	// OfflineReplicas is v5+.
	OfflineReplicas []int32
}

// MetadataResponseTopic is one topic in a Metadata response.
type MetadataResponseTopic struct {
	ErrorCode ErrorCode
	// Name is nullable from v12 on; before v12 a null name is written as "".
	Name NullString
	// TopicID is v10+; all zero means "no id" and makes clients use
	// name-based Fetch/Produce versions.
	TopicID [16]byte
	// IsInternal is v1+.
	IsInternal bool
	Partitions []MetadataResponsePartition
	// TopicAuthorizedOperations is v8+; AuthorizedOperationsUnknown unless
	// computed.
	TopicAuthorizedOperations int32
}

// MetadataResponse is a Metadata response body.
type MetadataResponse struct {
	// ThrottleMillis is v3+.
	ThrottleMillis int32
	Brokers        []MetadataResponseBroker
	// ClusterID is v2+.
	ClusterID NullString
	// ControllerID is v1+; it must be a node id listed in Brokers.
	ControllerID int32
	Topics       []MetadataResponseTopic
	// ClusterAuthorizedOperations is v8–10.
	ClusterAuthorizedOperations int32
	// ErrorCode is the top-level error, v13+ (KIP-1102).
	ErrorCode ErrorCode
}

// AppendTo appends r's body encoded at version. No tagged fields are emitted.
// It does not allocate when dst has room.
func (r *MetadataResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= metadataFlexible
	if version >= 3 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendArrayLen(dst, flex, len(r.Brokers))
	for i := range r.Brokers {
		b := &r.Brokers[i]
		dst = AppendInt32(dst, b.NodeID)
		dst = AppendStr(dst, flex, b.Host)
		dst = AppendInt32(dst, b.Port)
		if version >= 1 {
			dst = AppendNullableStr(dst, flex, b.Rack.S, b.Rack.Valid)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	if version >= 2 {
		dst = AppendNullableStr(dst, flex, r.ClusterID.S, r.ClusterID.Valid)
	}
	if version >= 1 {
		dst = AppendInt32(dst, r.ControllerID)
	}
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		dst = r.Topics[i].appendTo(dst, version, flex)
	}
	if version >= 8 && version <= 10 {
		dst = AppendInt32(dst, r.ClusterAuthorizedOperations)
	}
	if version >= 13 {
		dst = AppendInt16(dst, int16(r.ErrorCode))
	}
	return AppendEmptyTags(dst, flex)
}

func (t *MetadataResponseTopic) appendTo(dst []byte, version int16, flex bool) []byte {
	dst = AppendInt16(dst, int16(t.ErrorCode))
	if version >= 12 {
		dst = AppendNullableStr(dst, flex, t.Name.S, t.Name.Valid)
	} else {
		dst = AppendStr(dst, flex, t.Name.S)
	}
	if version >= 10 {
		dst = AppendUUID(dst, t.TopicID)
	}
	if version >= 1 {
		dst = AppendBool(dst, t.IsInternal)
	}
	dst = AppendArrayLen(dst, flex, len(t.Partitions))
	for i := range t.Partitions {
		p := &t.Partitions[i]
		dst = AppendInt16(dst, int16(p.ErrorCode))
		dst = AppendInt32(dst, p.PartitionIndex)
		dst = AppendInt32(dst, p.LeaderID)
		if version >= 7 {
			dst = AppendInt32(dst, p.LeaderEpoch)
		}
		dst = appendMetadataInt32s(dst, flex, p.ReplicaNodes)
		dst = appendMetadataInt32s(dst, flex, p.IsrNodes)
		if version >= 5 {
			dst = appendMetadataInt32s(dst, flex, p.OfflineReplicas)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	if version >= 8 {
		dst = AppendInt32(dst, t.TopicAuthorizedOperations)
	}
	return AppendEmptyTags(dst, flex)
}

// appendMetadataInt32s appends a non-nullable []INT32 (compact when flexible:
// KIP-482 applies to arrays of primitives too).
func appendMetadataInt32s(dst []byte, flex bool, a []int32) []byte {
	dst = AppendArrayLen(dst, flex, len(a))
	for _, v := range a {
		dst = AppendInt32(dst, v)
	}
	return dst
}

// CountErrors reports r's error codes to c.
func (r *MetadataResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Topics {
		t := &r.Topics[i]
		countError(c, t.ErrorCode)
		for j := range t.Partitions {
			countError(c, t.Partitions[j].ErrorCode)
		}
	}
}
