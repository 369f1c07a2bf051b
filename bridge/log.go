package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
)

// Log is the storage port: everything the Kafka handlers need from a log
// store. bridge/memlog (embedded, the default) and bridge/iggy (Apache Iggy)
// implement it. Every method is safe for concurrent use and may block; the
// handlers call it on an event loop only when the backend declares
// Capabilities.NonBlocking.
//
// Kafka topic T is the backend's topic T; Kafka partition p is partition p;
// Kafka offsets are the backend's offsets (docs/design/record-mapping.md §4).
type Log interface {
	// Topics lists every topic.
	Topics(ctx context.Context) ([]TopicInfo, error)
	// Topic describes one topic, or fails with ErrUnknownTopic.
	Topic(ctx context.Context, name string) (TopicInfo, error)
	// CreateTopic creates a topic with the given partition count (≥ 1), or
	// fails with ErrTopicExists.
	CreateTopic(ctx context.Context, name string, partitions int32, cfg TopicConfig) (TopicInfo, error)
	// DeleteTopic deletes a topic and its data, or fails with ErrUnknownTopic.
	DeleteTopic(ctx context.Context, name string) error
	// CreatePartitions grows a topic to total partitions.
	CreatePartitions(ctx context.Context, name string, total int32) error

	// Append appends every frame of b to one partition, atomically and in
	// order, and returns the offset given to the first. Appends to one
	// partition are serialized in arrival order. ErrUnknownTopic /
	// ErrUnknownPartition when the target is missing; ErrUnknownOutcome when
	// the records may or may not have been stored; ErrUnavailable when
	// nothing was stored and a retry is safe.
	Append(ctx context.Context, topic string, partition int32, b *message.Batch) (baseOffset int64, err error)
	// Read calls fn for messages of one partition from offset on, in offset
	// order, until fn returns false, about maxBytes of payload and headers
	// have been delivered (at least one message is always delivered if any
	// exists), or the end of the log. The Message passed to fn is valid only
	// during the call. It returns the partition's watermarks as of the read.
	// An offset below the log start reads from the log start; reading at the
	// high watermark delivers nothing.
	Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int, fn func(*message.Message) bool) (Watermarks, error)
	// Watermarks returns a partition's log start and high watermark.
	Watermarks(ctx context.Context, topic string, partition int32) (Watermarks, error)
	// OffsetForTime returns the first offset whose origin timestamp is ≥ ts
	// (µs), or ok=false when there is none.
	OffsetForTime(ctx context.Context, topic string, partition int32, ts uint64) (offset int64, ok bool, err error)

	// CommitOffset stores a consumer group's committed offset for a partition
	// (the next offset to read, verbatim). A negative offset deletes it.
	CommitOffset(ctx context.Context, group, topic string, partition int32, offset int64, metadata string) error
	// FetchOffset returns a group's committed offset, ok=false when none.
	FetchOffset(ctx context.Context, group, topic string, partition int32) (offset int64, metadata string, ok bool, err error)

	// Ready reports whether the backend is reachable (for /readyz).
	Ready(ctx context.Context) error
	// Close releases the backend's resources.
	Close() error
}

// MetricsWriter is implemented by a Log with metrics of its own (the Iggy
// client: backend request latency, errors, reconnects, sessions); the
// gateway's WriteMetrics appends them in the Prometheus text format.
type MetricsWriter interface {
	WriteMetrics(w io.Writer)
}

// Capabilities are properties of a backend that change how the gateway
// drives it. The zero value (no Capabilities method) is the safe default for
// a networked, shared store such as Iggy.
type Capabilities struct {
	// NonBlocking: no method ever waits on I/O or on another process (the
	// embedded log), so small requests are served on the event loop and a
	// Produce needs no timeout of its own.
	NonBlocking bool
	// SoleWriter: every append goes through this gateway, which then wakes
	// the parked Fetches itself; without it a parked Fetch also polls the
	// backend every 100 ms for appends by other writers.
	SoleWriter bool
	// LocalLatency: a call costs no network round trip, so the partitions of
	// one Produce or Fetch are appended or read one after another instead of
	// concurrently.
	LocalLatency bool
	// NoFrameChecksums: the backend does not use the Iggy frame checksums
	// (the embedded log stores frames as they are), so the gateway leaves
	// them 0; otherwise the mapping stamps each frame as it writes it,
	// while the frame is in cache, and the Iggy client sends the checksums
	// as they are (message.Batch.Checksums).
	NoFrameChecksums bool
}

// CapabilityDeclarer is implemented by a Log that has Capabilities other
// than the zero value (bridge/memlog); New reads them once.
type CapabilityDeclarer interface {
	Capabilities() Capabilities
}

// capabilitiesOf returns what store declares, or the zero value.
func capabilitiesOf(store Log) Capabilities {
	if d, ok := store.(CapabilityDeclarer); ok {
		return d.Capabilities()
	}
	return Capabilities{}
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name       string
	Partitions int32
	Config     TopicConfig
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

// Errors a Log reports. Backends wrap them (errors.Is) with detail.
var (
	ErrUnknownTopic      = errors.New("bridge: unknown topic")
	ErrUnknownPartition  = errors.New("bridge: unknown partition")
	ErrTopicExists       = errors.New("bridge: topic already exists")
	ErrInvalidConfig     = errors.New("bridge: invalid topic config")
	ErrInvalidPartitions = errors.New("bridge: invalid partition count")
	// ErrUnknownOutcome means a write may or may not have been stored (a
	// lost connection or a timeout after sending): Kafka REQUEST_TIMED_OUT.
	ErrUnknownOutcome = errors.New("bridge: write outcome unknown")
	// ErrUnavailable means the backend could not be reached and nothing was
	// stored: a retry is safe.
	ErrUnavailable = errors.New("bridge: backend unavailable")
	// ErrInvalidGroup means a group id the backend cannot key offsets by.
	ErrInvalidGroup = errors.New("bridge: group id not supported by the backend")
	// ErrTooLarge means the write exceeds a backend limit.
	ErrTooLarge = errors.New("bridge: write too large for backend")
)
