// Package store is kiggy's storage port: the interfaces a backend implements
// for the gateway (package bridge) to serve Kafka requests over it, with the
// types and errors they share. bridge/memlog (the embedded log, the default)
// and bridge/iggy (Apache Iggy) implement Log and some of its optional
// interfaces; bridge/cluster implements Placement.
//
// The gateway discovers an optional interface with a type assertion on the
// Log it was given (CapabilityDeclarer, JoinedAppender, TopicUpdater,
// LogStartAdvancer, ReadEstimator, SharedReads, SystemStore, MetricsWriter,
// AppendWaiter);
// a backend without one gets the gateway's fallback.
package store

import (
	"context"
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
// than the zero value (bridge/memlog); bridge.New reads them once.
type CapabilityDeclarer interface {
	Capabilities() Capabilities
}

// JoinedAppender is implemented by a Log that can append several batches
// of one partition as one, each written from its own buffer (bridge/iggy:
// one vectored SendMessages). The batches already form one: a common origin,
// offset deltas counting through them (message.Batch.Rebase) and every
// frame stamped (message.Batch.Sums). It returns the base offset of the
// first batch's first message, as Log.Append does.
type JoinedAppender interface {
	AppendJoined(ctx context.Context, topic string, partition int32, bs []*message.Batch) (int64, error)
}

// TopicUpdater is implemented by a Log that can change a topic's retention
// in place (Iggy UpdateTopic, the embedded log's caps); without it an
// altered retention is stored and reported but the backend keeps what the
// topic was created with (docs/LIMITS.md, "Topic configs").
type TopicUpdater interface {
	// UpdateTopic sets the topic's MessageExpiry and MaxBytes to cfg's
	// (0 = none); the other fields are ignored.
	UpdateTopic(ctx context.Context, name string, cfg TopicConfig) error
}

// LogStartAdvancer is implemented by a Log that can drop a partition's
// records below an offset (the embedded log; Iggy whole segments where it
// allows). Without it DeleteRecords moves only the logical log start kept
// in the system store (docs/design/record-mapping.md §4).
type LogStartAdvancer interface {
	// AdvanceLogStart drops records below offset (≤ the high watermark)
	// where the backend can; records it keeps below offset are hidden by
	// the gateway.
	AdvanceLogStart(ctx context.Context, topic string, partition int32, offset int64) error
}

// ReadEstimator is implemented by a Log that can tell, without a round
// trip, about how many bytes a Read from an offset would find (the
// gateway's Fetch reads in waves within its budget: bridge/fetch.go, readAll).
type ReadEstimator interface {
	// ReadEstimate tells about a Read of topic/partition from offset,
	// judged at now (the caller's clock, read once for all the partitions
	// of a Fetch's wave): see Estimate.
	ReadEstimate(now time.Time, topic string, partition int32, offset int64) Estimate
}

// Estimate is what a ReadEstimator tells of a Read.
type Estimate struct {
	// Bytes is about how many bytes of messages the Read may find: 0
	// when the Log knows nothing is past the offset, −1 when it cannot
	// tell.
	Bytes int64
	// Local: the Read would be answered from memory now, without a round
	// trip (a hint: the gateway runs such reads on the Fetch's own
	// goroutine rather than hand them to a reader goroutine).
	Local bool
	// Answered: the offset is the partition's high watermark, known from
	// memory, and a Read there would return nothing without a round trip.
	// The estimate then was that Read: the Log did what the Read would
	// have done (noted the reader), High is the high watermark it would
	// have returned, and the caller need not Read. A consumer at the tail
	// of many partitions so costs the Log one look at each.
	Answered bool
	High     int64
}

// ClockedReads is implemented by a Log whose reads consult the clock (the
// Iggy read cache: how old a cached stretch is, when a partition was last
// read). A Fetch reads the clock once for a wave of reads and hands that
// time to each, rather than each read reading it: on a Fetch of 1,000
// partitions at their tail, the clock was 30 % of the gateway's CPU
// (docs/BENCHMARKS.md, "Fetch sessions").
type ClockedReads interface {
	// ReadAt is Log.Read with the clock read by the caller, at most a
	// wave's reads ago; the zero time reads the clock.
	ReadAt(ctx context.Context, now time.Time, topic string, partition int32, offset int64, maxBytes int,
		fn func(*message.Message) bool) (Watermarks, error)
}

// SharedReads is implemented by a Log whose reads Fetch may answer from the
// record batches it encoded for an earlier Fetch (bridge/fetchcache).
type SharedReads interface {
	// FetchCacheBytes is the memory bound of the encoded batches the gateway
	// keeps for this Log; ≤ 0 = none (the cache is off).
	FetchCacheBytes() int64
	// ReadGeneration returns a number that changes whenever a Read of
	// topic/partition may deliver other messages at an offset than an
	// earlier Read did (a topic deleted, created or purged, a reconnect),
	// and the highest high watermark the Log knows for the partition (−1:
	// none). It must be cheap: it is asked once per partition per Fetch.
	ReadGeneration(topic string, partition int32) (gen uint64, high int64)
}

// SystemStore keeps kiggy's own state, the records Kafka keeps in its
// metadata log: SCRAM credentials, ACLs, topic configs Iggy has no field
// for, log start offsets set by DeleteRecords. A Log implements it where that
// state can outlive the process (the Iggy backend: in the reserved system
// stream, docs/design/record-mapping.md §7); the gateway falls back to an
// in-memory store otherwise (the embedded log, which forgets everything at
// exit anyway).
//
// State is grouped in namespaces ("scram", "acl", "topic-config",
// "log-start"), each a map from key to an opaque value its owner encodes.
type SystemStore interface {
	// LoadSystem returns every live entry of namespace ns.
	LoadSystem(ctx context.Context, ns string) (map[string][]byte, error)
	// PutSystem stores value under key in namespace ns; a nil value deletes
	// the key. It returns once the change is stored as durably as an
	// acknowledged record (docs/IGGY.md, "Durability").
	PutSystem(ctx context.Context, ns, key string, value []byte) error
	// PutSystemAll stores entries in namespace ns as one change, which the
	// store takes or refuses whole (the Iggy store: one batch in one
	// SendMessages). It returns as PutSystem does.
	PutSystemAll(ctx context.Context, ns string, entries []SystemEntry) error
}

// PartitionSizer is implemented by a Log that knows how many bytes each
// partition holds: DescribeLogDirs answers with it (kafka-log-dirs, the
// topic sizes of Kafka UIs and of Cruise Control).
type PartitionSizer interface {
	// PartitionSizes returns the bytes each partition of topic holds, by
	// partition index, or fails with ErrUnknownTopic.
	PartitionSizes(ctx context.Context, topic string) ([]int64, error)
	// LogDir names where the Log keeps its records: DescribeLogDirs's log
	// directory.
	LogDir() string
}

// SystemVersions is implemented by a SystemStore that other instances
// write too (the Iggy store, shared by the gateways on one Iggy):
// SystemVersion reads what they wrote to namespace ns up to now and returns
// a number that changes whenever they changed the namespace's entries, so
// that a gateway re-reads a namespace only then (bridge's shared state
// refresh, docs/design/cluster.md §10). A change made through this store
// need not change it: the caller that made it knows of it.
type SystemVersions interface {
	SystemVersion(ctx context.Context, ns string) (uint64, error)
}

// SystemEntry is one change of a SystemStore namespace: Value stored
// under Key, or Key deleted when Value is nil.
type SystemEntry struct {
	Key   string
	Value []byte
}

// CommitSyncer is implemented by a Log whose committed offsets other
// instances also write (bridge/iggy's commit log in a cluster,
// docs/design/cluster.md §9): SyncCommits reads what they committed up to
// now, so the offsets this instance answers include it.
type CommitSyncer interface {
	SyncCommits(ctx context.Context) error
}

// AppendWaiter is implemented by a Log that can wait, without polling, until
// one of several partitions of a topic holds a record at or past an offset,
// whoever appended it (bridge/iggy on Iggy 0.10, protocol 0.12: the
// server-side readiness wait WaitForMessages, docs/IGGY.md "Versions"). A
// parked Fetch (bridge/fetch.go) can wait on it instead of re-reading its
// partitions on a timer for appends by other writers.
type AppendWaiter interface {
	// WaitForAppend returns ready = true as soon as some partitions[i]
	// holds a record at offsets[i] (the next offset the Fetch reads) or
	// past it: at once when one already does. It returns ready = false when
	// wait has passed first (wait is also cut to ctx's deadline), and ctx's
	// error as soon as ctx ends, without waiting for the backend (which
	// cancels its wait in the background). partitions and offsets have the
	// same length; a partition named twice waits for the lower offset.
	//
	// Errors: ErrUnsupported when the backend cannot wait at the moment (an
	// Iggy 0.9 server), ErrUnavailable when no wait could be started (every
	// wait session busy, the backend unreachable), ErrUnknownTopic,
	// ErrUnknownPartition. On any error the caller falls back to polling;
	// an error never means a record arrived.
	WaitForAppend(ctx context.Context, topic string, partitions []int32, offsets []int64, wait time.Duration) (ready bool, err error)
}

// ApplySystemEntries applies entries to the namespace map m, copying the
// values: the common core of in-memory SystemStores.
func ApplySystemEntries(m map[string][]byte, entries []SystemEntry) {
	for _, e := range entries {
		if e.Value == nil {
			delete(m, e.Key)
		} else {
			m[e.Key] = append([]byte(nil), e.Value...)
		}
	}
}

// Settler is implemented by a Log whose reads can miss a write that was in
// flight when its outcome became unknown (bridge/iggy: a write the server
// accepted but had not committed when the connection was lost, or when its
// primary failed, is committed later — by a new primary after a view change
// — and reads show committed writes only). The gateway settles a partition
// before it reads the partition's tail to learn whether a write whose
// outcome was unknown was stored (an idempotent producer's retry,
// bridge/idempotence.go).
type Settler interface {
	// Settle returns once every write to topic/partition the backend
	// accepted before the call is decided, and a Read or Watermarks that
	// follows sees it if it was stored. ErrUnavailable means no node could
	// settle the partition now (a failover in progress): retry later.
	Settle(ctx context.Context, topic string, partition int32) error
}
