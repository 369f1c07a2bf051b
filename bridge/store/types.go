package store

import (
	"fmt"
	"time"
)

// TopicInfo describes a topic.
type TopicInfo struct {
	Name string
	// ID is the topic's Kafka topic id (KIP-516): the same for as long as
	// the topic lives, on every gateway over the backend, and another one
	// for a topic deleted and re-created under the same name; shaped by
	// TopicID, so never all zero (docs/design/record-mapping.md §8).
	ID         [16]byte
	Partitions int32
	Config     TopicConfig
}

// TopicID shapes 16 random or hashed bytes into a Kafka topic id as
// Uuid.randomUuid draws them (apache/kafka clients Uuid.java): a version 4,
// variant 2 UUID, so never Uuid.ZERO_UUID or Uuid.ONE_UUID
// (METADATA_TOPIC_ID), whose most significant bits are 0, and never one whose
// base64 form starts with "-" (a command-line tool would read it as an
// option), which Uuid.randomUuid also refuses.
func TopicID(b [16]byte) [16]byte {
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 2 (IETF)
	if b[0]>>2 == 62 {      // base64url digit 62 is '-'
		b[0] ^= 0x80
	}
	return b
}

// TopicConfig holds the topic settings that have a backend equivalent.
type TopicConfig struct {
	// MessageExpiry is how long messages are kept; 0 means forever
	// (Kafka retention.ms, Iggy message_expiry).
	MessageExpiry time.Duration
	// MaxBytes caps the topic size; 0 means unlimited (Kafka retention.bytes
	// per partition × partitions, Iggy max_topic_size).
	MaxBytes uint64
	// Durability is when the backend confirms a write to the topic. Passed
	// to CreateTopic it is the topic's own request (DurabilityDefault = the
	// backend's configured level; Kafka flush.messages / flush.ms ask for
	// DurabilityFsync); read back from Topic it is what the backend does for
	// the topic (docs/IGGY.md, "Durability").
	Durability Durability
	// SegmentBytes is the size of the backend's segment files; 0 = the
	// backend's default (Kafka segment.bytes, Iggy segment_size). Applied
	// at creation only.
	SegmentBytes int64
	// Compression is the topic's Kafka compression.type ("producer",
	// "uncompressed", "gzip", "snappy", "lz4", "zstd"; "" = "producer"):
	// the codec Fetch serves the topic's batches in.
	Compression string
}

// Durability says when a backend confirms a write, and so what a Kafka
// acknowledgement promises (docs/IGGY.md, "Durability").
type Durability uint8

// Durability levels, weakest promise last.
const (
	// DurabilityDefault asks for the backend's configured level (CreateTopic)
	// or means the backend does not say (Topic).
	DurabilityDefault Durability = iota
	// DurabilityWritten: confirmed once the records are written to the
	// storage files (the OS page cache), so a crash of the storage process
	// cannot lose them; a crash of the machine can.
	DurabilityWritten
	// DurabilityFsync: confirmed once the records are written and fsynced,
	// so a crash of the machine cannot lose them either.
	DurabilityFsync
	// DurabilityBuffered: confirmed while the records are still in the
	// storage process's memory; a crash of that process loses them.
	DurabilityBuffered
	// DurabilityMemory: the embedded in-memory log; records live as long
	// as the kiggy process.
	DurabilityMemory
)

var durabilityNames = [...]string{"default", "written", "fsync", "buffered", "memory"}

// String returns the level's configuration name.
func (d Durability) String() string {
	if int(d) < len(durabilityNames) {
		return durabilityNames[d]
	}
	return "unknown"
}

// ParseDurability reads a level by its configuration name ("written",
// "fsync", "buffered").
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "written":
		return DurabilityWritten, nil
	case "fsync":
		return DurabilityFsync, nil
	case "buffered":
		return DurabilityBuffered, nil
	}
	return 0, fmt.Errorf("durability %q: want written, fsync or buffered", s)
}

// Watermarks are a partition's offset bounds.
type Watermarks struct {
	// LogStart is the earliest offset still stored.
	LogStart int64
	// High is one past the last stored offset (the next offset to assign).
	High int64
}
