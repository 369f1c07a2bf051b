package store

import "errors"

// Errors a Log reports. Backends wrap them (errors.Is) with detail. Their
// texts keep the "bridge:" prefix they had when the port lived in package
// bridge.
var (
	// ErrUnknownTopic means the topic does not exist.
	ErrUnknownTopic = errors.New("bridge: unknown topic")
	// ErrUnknownPartition means the topic has no such partition.
	ErrUnknownPartition = errors.New("bridge: unknown partition")
	// ErrTopicExists means CreateTopic found the topic already there.
	ErrTopicExists = errors.New("bridge: topic already exists")
	// ErrInvalidConfig means a topic config the backend cannot honour.
	ErrInvalidConfig = errors.New("bridge: invalid topic config")
	// ErrTooManyTopics means the backend holds as many topics as it can
	// (Iggy: 4,096 a stream).
	ErrTooManyTopics = errors.New("bridge: the backend holds its maximum of topics")
	// ErrInvalidPartitions means a partition count the backend cannot
	// create or grow to.
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
	// ErrUnsupported means the backend cannot do this now, although it
	// implements the optional interface that asks (an AppendWaiter on an
	// Iggy 0.9 server): the gateway takes its fallback.
	ErrUnsupported = errors.New("bridge: not supported by the backend")
)
