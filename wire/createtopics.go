package wire

// CreateTopics (key 19), versions 2–7, flexible from 5 (docs/design/kafka-protocol.md
// §2.1, §2.4). Kafka 4.0 removed v0–1 (KIP-896).
//
// This file also holds the small helpers every admin codec in this package
// shares (createtopics.go, deletetopics.go, createpartitions.go,
// describeconfigs.go, alterconfigs.go, describecluster.go).

const (
	createTopicsMin, createTopicsMax int16 = 2, 7
	createTopicsFlexible             int16 = 5
)

// CreateTopicsRequest is the body of a CreateTopics request.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type CreateTopicsRequest struct {
	// Topics are the topics to create.
	Topics []CreateTopicsRequestTopic
	// TimeoutMillis is how long the client waits for the creation.
	TimeoutMillis int32
	// ValidateOnly asks for a dry run: validate, create nothing (v1+).
	ValidateOnly bool
}

// CreateTopicsRequestTopic is one topic to create.
type CreateTopicsRequestTopic struct {
	// Topic is the topic name.
	Topic string
	// NumPartitions is the partition count, or -1 with a manual assignment
	// or (v4+) for the broker default.
	NumPartitions int32
	// ReplicationFactor is the replica count, or -1 with a manual assignment
	// or (v4+) for the broker default.
	ReplicationFactor int16
	// ReplicaAssignment is the manual assignment, empty for automatic.
	ReplicaAssignment []CreateTopicsRequestTopicReplicaAssignment
	// Configs are topic-level configs to set.
	Configs []CreateTopicsRequestTopicConfig
}

// CreateTopicsRequestTopicReplicaAssignment places one partition.
type CreateTopicsRequestTopicReplicaAssignment struct {
	// Partition is the partition index.
	Partition int32
	// Replicas are the broker ids to place the partition on.
	Replicas []int32
}

// CreateTopicsRequestTopicConfig is one topic config to set.
type CreateTopicsRequestTopicConfig struct {
	// Name is the config key, e.g. "retention.ms".
	Name string
	// Value is the config value; null is allowed by the schema.
	Value NullString
}

// Decode parses a CreateTopics request body of the given version into r,
// reusing the capacity of r's slices (and of the slices inside their
// elements). Strings alias body: they are valid until the frame is released.
// Unknown tagged fields are skipped. On error r's contents are unspecified.
func (r *CreateTopicsRequest) Decode(body []byte, version int16) error {
	if version < createTopicsMin || version > createTopicsMax {
		return ErrUnsupportedVersion
	}
	flex := version >= createTopicsFlexible
	rd := NewReader(body)

	// Smallest encodings: name, NumPartitions, ReplicationFactor, two
	// array counts (and the tag section when flexible).
	topicMin, assignMin, configMin := 16, 8, 4
	if flex {
		topicMin, assignMin, configMin = 10, 6, 3
	}
	r.Topics = resize(r.Topics, arrayLen(&rd, flex, topicMin))
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic = rd.Str(flex)
		t.NumPartitions = rd.Int32()
		t.ReplicationFactor = rd.Int16()
		t.ReplicaAssignment = resize(t.ReplicaAssignment, arrayLen(&rd, flex, assignMin))
		for j := range t.ReplicaAssignment {
			a := &t.ReplicaAssignment[j]
			a.Partition = rd.Int32()
			a.Replicas = int32s(&rd, flex, a.Replicas)
			endStruct(&rd, flex)
		}
		t.Configs = resize(t.Configs, arrayLen(&rd, flex, configMin))
		for j := range t.Configs {
			c := &t.Configs[j]
			c.Name = rd.Str(flex)
			c.Value = nullStr(&rd, flex)
			endStruct(&rd, flex)
		}
		endStruct(&rd, flex)
	}
	r.TimeoutMillis = rd.Int32()
	// "Version 1 adds validateOnly."
	r.ValidateOnly = false
	if version >= 1 {
		r.ValidateOnly = rd.Bool()
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// CreateTopicsResponse is the body of a CreateTopics response.
type CreateTopicsResponse struct {
	// ThrottleMillis is the quota throttle applied (v2+).
	ThrottleMillis int32
	// Topics holds one result per requested topic.
	Topics []CreateTopicsResponseTopic
}

// CreateTopicsResponseTopic is the result for one topic.
type CreateTopicsResponseTopic struct {
	// Topic is the topic name.
	Topic string
	// TopicID is the new topic's id (v7+).
	TopicID [16]byte
	// ErrorCode is the creation result.
	ErrorCode ErrorCode
	// ErrorMessage is a human-readable error, null on success (v1+).
	ErrorMessage NullString
	// ConfigErrorCode (Kafka: TopicConfigErrorCode) is tagged field 0 (v5+):
	// why Configs could not be returned. It is written only when non-zero.
	ConfigErrorCode ErrorCode
	// NumPartitions is the topic's partition count (v5+; Kafka's default -1).
	NumPartitions int32
	// ReplicationFactor is the topic's replication factor (v5+; default -1).
	ReplicationFactor int16
	// Configs are the topic's configs (v5+). A nil slice encodes null, which
	// Kafka sends only together with a non-zero ConfigErrorCode; use a
	// non-nil empty slice for "no configs".
	Configs []CreateTopicsResponseTopicConfig
}

// CreateTopicsResponseTopicConfig is one config of a created topic (v5+).
type CreateTopicsResponseTopicConfig struct {
	// Name is the config key.
	Name string
	// Value is the config value, null for sensitive configs.
	Value NullString
	// ReadOnly reports whether the config cannot be altered.
	ReadOnly bool
	// Source is where the value came from (Kafka's default -1).
	Source ConfigSource
	// IsSensitive reports whether the value is hidden.
	IsSensitive bool
}

// AppendTo appends the response body for the given version to dst.
func (r *CreateTopicsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= createTopicsFlexible
	// "Version 2 adds the throttle time."
	if version >= 2 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendArrayLen(dst, flex, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		dst = AppendStr(dst, flex, t.Topic)
		// "Version 7 returns the topic ID of the newly created topic if
		// creation is successful."
		if version >= 7 {
			dst = AppendUUID(dst, t.TopicID)
		}
		dst = AppendInt16(dst, int16(t.ErrorCode))
		// "Version 1 adds a per-topic error message string."
		if version >= 1 {
			dst = AppendNullableStr(dst, flex, t.ErrorMessage.S, t.ErrorMessage.Valid)
		}
		// "Version 5 also returns topic configs in the response (KIP-525)."
		if version >= 5 {
			dst = AppendInt32(dst, t.NumPartitions)
			dst = AppendInt16(dst, t.ReplicationFactor)
			n := len(t.Configs)
			if t.Configs == nil {
				n = -1 // "nullableVersions": "5+"
			}
			dst = AppendArrayLen(dst, flex, n)
			for j := range t.Configs {
				c := &t.Configs[j]
				dst = AppendStr(dst, flex, c.Name)
				dst = AppendNullableStr(dst, flex, c.Value.S, c.Value.Valid)
				dst = AppendBool(dst, c.ReadOnly)
				dst = AppendInt8(dst, int8(c.Source))
				dst = AppendBool(dst, c.IsSensitive)
				dst = AppendEmptyTags(dst, flex)
			}
		}
		if flex {
			// TopicConfigErrorCode: "tag": 0, "taggedVersions": "5+". Kafka
			// omits a tagged field equal to its default (KIP-482).
			if t.ConfigErrorCode != NoError {
				dst = append(dst, 1)        // one tagged field
				dst = AppendUvarint(dst, 0) // tag
				dst = AppendUvarint(dst, 2) // size of an INT16
				dst = AppendInt16(dst, int16(t.ConfigErrorCode))
			} else {
				dst = append(dst, 0)
			}
		}
	}
	return AppendEmptyTags(dst, flex)
}

// Helpers shared by the admin codecs.

// endStruct skips the tagged-field section that ends every struct of a
// flexible version (KIP-482: "readers must skip unknown tags by size").
func endStruct(rd *Reader, flex bool) {
	if flex {
		rd.SkipTags()
	}
}

// CountErrors reports r's error codes to c.
func (r *CreateTopicsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		countError(c, r.Topics[i].ErrorCode)
		countError(c, r.Topics[i].ConfigErrorCode)
	}
}
