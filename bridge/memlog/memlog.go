// Package memlog is kiggy's embedded in-memory log: the default backend, so
// the gateway runs with nothing else installed. It implements bridge.Log.
//
// Each partition is an append-only sequence of Iggy-shaped message frames
// (bridge/message) with contiguous offsets from 0. Frames are copied once, on
// append, into large immutable chunks; readers get views into those chunks
// without holding a lock while they read. A per-partition byte cap advances
// the log start offset by dropping the oldest messages.
//
// Concurrency: Log.mu guards the topic map; each partition has its own mutex,
// held only to append or to snapshot the entry slice. Lock order: Log.mu,
// then a partition's mu; never the reverse.
package memlog

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/message"
)

// Config configures the embedded log. The zero value means defaults.
type Config struct {
	// PartitionBytes caps each partition's stored frame bytes; older
	// messages are dropped beyond it (Kafka retention.bytes). 0 = 1 GiB.
	PartitionBytes int64
	// ChunkSize is the size of the storage chunks frames are copied into.
	// 0 = 4 MiB.
	ChunkSize int
	// Now is the clock for append timestamps; nil = time.Now.
	Now func() time.Time
}

func (c *Config) normalize() {
	if c.PartitionBytes <= 0 {
		c.PartitionBytes = 1 << 30
	}
	if c.ChunkSize <= 0 {
		c.ChunkSize = 4 << 20
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Log is the embedded log. It is safe for concurrent use.
type Log struct {
	cfg Config

	mu      sync.RWMutex
	topics  map[string]*topic
	offsets map[offsetKey]committed
}

type topic struct {
	info       bridge.TopicInfo
	partitions []*partition
}

type offsetKey struct {
	group, topic string
	partition    int32
}

type committed struct {
	offset   int64
	metadata string
}

// entry is one stored message. It holds no pointers (its frame is named by
// chunk number and position), so millions of entries cost the garbage
// collector nothing to scan and the entry slice grows by plain copying.
type entry struct {
	chunk     uint64 // number of the chunk holding the frame
	off, size uint32 // the frame's position in that chunk
	timestamp uint64 // append time, µs
	origin    uint64 // producer timestamp, µs
}

type partition struct {
	mu       sync.Mutex
	entries  []entry // entries[i] has offset logStart+i
	logStart int64
	bytes    int64
	// chunks[i] is chunk number chunkBase+i; frames are appended to the
	// last one and never rewritten, so readers use them without the lock.
	chunks    [][]byte
	chunkBase uint64
	capBytes  int64
	lastTS    uint64
}

// frame returns e's frame from chunks, which start at chunk number base.
func (e *entry) frame(chunks [][]byte, base uint64) []byte {
	c := chunks[e.chunk-base]
	return c[e.off : e.off+e.size : e.off+e.size]
}

// New returns an empty log.
func New(cfg Config) *Log {
	cfg.normalize()
	return &Log{cfg: cfg, topics: make(map[string]*topic), offsets: make(map[offsetKey]committed)}
}

var _ bridge.Log = (*Log)(nil)

// Topics implements bridge.Log.
func (l *Log) Topics(context.Context) ([]bridge.TopicInfo, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]bridge.TopicInfo, 0, len(l.topics))
	for _, t := range l.topics {
		out = append(out, t.info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Topic implements bridge.Log.
func (l *Log) Topic(_ context.Context, name string) (bridge.TopicInfo, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	t, ok := l.topics[name]
	if !ok {
		return bridge.TopicInfo{}, fmt.Errorf("%w: %q", bridge.ErrUnknownTopic, name)
	}
	return t.info, nil
}

// CreateTopic implements bridge.Log.
func (l *Log) CreateTopic(_ context.Context, name string, partitions int32, cfg bridge.TopicConfig) (bridge.TopicInfo, error) {
	if partitions < 1 {
		return bridge.TopicInfo{}, fmt.Errorf("%w: %d", bridge.ErrInvalidPartitions, partitions)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.topics[name]; ok {
		return bridge.TopicInfo{}, fmt.Errorf("%w: %q", bridge.ErrTopicExists, name)
	}
	name = clone(name) // it may alias a request frame
	// Records live in this process's memory whatever the topic asked for
	// (docs/IGGY.md, "Durability").
	cfg.Durability = bridge.DurabilityMemory
	t := &topic{info: bridge.TopicInfo{Name: name, Partitions: partitions, Config: cfg}}
	for range partitions {
		t.partitions = append(t.partitions, l.newPartition(cfg))
	}
	l.topics[name] = t
	return t.info, nil
}

func (l *Log) newPartition(cfg bridge.TopicConfig) *partition {
	c := l.cfg.PartitionBytes
	if cfg.MaxBytes > 0 && int64(cfg.MaxBytes) < c {
		c = int64(cfg.MaxBytes)
	}
	return &partition{capBytes: c}
}

// DeleteTopic implements bridge.Log.
func (l *Log) DeleteTopic(_ context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.topics[name]; !ok {
		return fmt.Errorf("%w: %q", bridge.ErrUnknownTopic, name)
	}
	delete(l.topics, name)
	for k := range l.offsets {
		if k.topic == name {
			delete(l.offsets, k)
		}
	}
	return nil
}

// CreatePartitions implements bridge.Log.
func (l *Log) CreatePartitions(_ context.Context, name string, total int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", bridge.ErrUnknownTopic, name)
	}
	if total <= t.info.Partitions {
		return fmt.Errorf("%w: topic %q has %d partitions, asked for %d", bridge.ErrInvalidPartitions, name, t.info.Partitions, total)
	}
	parts := slices.Clone(t.partitions)
	for int32(len(parts)) < total {
		parts = append(parts, l.newPartition(t.info.Config))
	}
	t.partitions = parts
	t.info.Partitions = total
	return nil
}

func (l *Log) partition(topicName string, p int32) (*partition, error) {
	l.mu.RLock()
	t, ok := l.topics[topicName]
	if !ok {
		l.mu.RUnlock()
		return nil, bridge.ErrUnknownTopic
	}
	if p < 0 || int(p) >= len(t.partitions) {
		l.mu.RUnlock()
		return nil, bridge.ErrUnknownPartition
	}
	part := t.partitions[p]
	l.mu.RUnlock()
	return part, nil
}

// Append implements bridge.Log.
func (l *Log) Append(_ context.Context, topicName string, p int32, b *message.Batch) (int64, error) {
	part, err := l.partition(topicName, p)
	if err != nil {
		return -1, err
	}
	frames := b.Frames()
	now := uint64(l.cfg.Now().UnixMicro())

	part.mu.Lock()
	defer part.mu.Unlock()
	// Iggy's base_timestamp is strictly monotonic per partition; so is ours.
	if now <= part.lastTS {
		now = part.lastTS + 1
	}
	part.lastTS = now
	chunk, start := part.store(frames, l.cfg.ChunkSize)
	stored := part.chunks[chunk-part.chunkBase][start:]
	base := part.logStart + int64(len(part.entries))
	for off := 0; off < len(stored); {
		f, err := message.ParseFrame(stored[off:])
		if err != nil {
			// The bridge builds every batch; a bad one is a bug, not input.
			return -1, fmt.Errorf("memlog: %w at byte %d", err, off)
		}
		part.entries = append(part.entries, entry{
			chunk:     chunk,
			off:       uint32(start + off),
			size:      uint32(f.Size),
			timestamp: now,
			origin:    b.Origin + uint64(f.TimestampDelta),
		})
		off += f.Size
	}
	part.bytes += int64(len(stored))
	part.trim()
	return base, nil
}

// maxChunk bounds a chunk so that entry positions fit in 32 bits; a batch
// of frames is far smaller (it comes from one request frame).
const maxChunk = 1<<32 - 1

// store copies frames into the partition's current chunk (or a new one) and
// returns the chunk's number and where the copy starts in it.
func (p *partition) store(frames []byte, chunkSize int) (uint64, int) {
	last := len(p.chunks) - 1
	if last < 0 || len(frames) > cap(p.chunks[last])-len(p.chunks[last]) {
		n := min(max(chunkSize, len(frames)), maxChunk)
		p.chunks = append(p.chunks, make([]byte, 0, n))
		last++
	}
	c := p.chunks[last]
	start := len(c)
	p.chunks[last] = append(c, frames...)
	return p.chunkBase + uint64(last), start
}

// trim drops the oldest messages while the partition is over its cap,
// always keeping the newest message, and the chunks no message uses.
func (p *partition) trim() {
	if p.bytes <= p.capBytes {
		return
	}
	drop := 0
	for drop < len(p.entries)-1 && p.bytes > p.capBytes {
		p.bytes -= int64(p.entries[drop].size)
		drop++
	}
	p.logStart += int64(drop)
	// A reslice: entries hold no pointers, so the dropped prefix pins no
	// chunk, and the next growth of the slice copies only the live entries
	// (amortised O(1) per message; copying here made every append O(n)).
	// Snapshots keep their own slice headers, and appends write only past
	// every snapshot's end.
	p.entries = p.entries[drop:]
	// The chunk list is copied, so the dropped chunks are collectable.
	if unused := p.entries[0].chunk - p.chunkBase; unused > 0 {
		p.chunks = append([][]byte(nil), p.chunks[unused:]...)
		p.chunkBase += unused
	}
}

// view is a consistent snapshot of a partition, usable without its lock:
// everything it names is immutable.
type view struct {
	entries   []entry
	chunks    [][]byte
	chunkBase uint64
	wm        bridge.Watermarks
}

func (p *partition) snapshot() view {
	p.mu.Lock()
	defer p.mu.Unlock()
	return view{
		entries: p.entries, chunks: p.chunks, chunkBase: p.chunkBase,
		wm: bridge.Watermarks{LogStart: p.logStart, High: p.logStart + int64(len(p.entries))},
	}
}

var messagePool = sync.Pool{New: func() any { return new(message.Message) }}

// Read implements bridge.Log.
func (l *Log) Read(_ context.Context, topicName string, p int32, offset int64, maxBytes int, fn func(*message.Message) bool) (bridge.Watermarks, error) {
	part, err := l.partition(topicName, p)
	if err != nil {
		return bridge.Watermarks{}, err
	}
	v := part.snapshot()
	wm := v.wm
	if offset < wm.LogStart {
		offset = wm.LogStart
	}
	// fn may keep its argument past the call as far as the compiler knows,
	// so a local Message would escape: a pooled one costs no allocation.
	m := messagePool.Get().(*message.Message)
	defer messagePool.Put(m)
	delivered := 0
	for i := offset - wm.LogStart; i < int64(len(v.entries)); i++ {
		e := &v.entries[i]
		f, err := message.ParseFrame(e.frame(v.chunks, v.chunkBase))
		if err != nil {
			return wm, fmt.Errorf("memlog: stored frame: %w", err)
		}
		size := len(f.Payload) + len(f.Headers)
		if delivered > 0 && delivered+size > maxBytes {
			break
		}
		*m = message.Message{
			Offset:          wm.LogStart + i,
			Timestamp:       e.timestamp,
			OriginTimestamp: e.origin,
			ID:              f.ID,
			Payload:         f.Payload,
			Headers:         f.Headers,
		}
		delivered += size
		if !fn(m) {
			break
		}
	}
	return wm, nil
}

// Watermarks implements bridge.Log.
func (l *Log) Watermarks(_ context.Context, topicName string, p int32) (bridge.Watermarks, error) {
	part, err := l.partition(topicName, p)
	if err != nil {
		return bridge.Watermarks{}, err
	}
	return part.snapshot().wm, nil
}

// OffsetForTime implements bridge.Log.
func (l *Log) OffsetForTime(_ context.Context, topicName string, p int32, ts uint64) (int64, bool, error) {
	part, err := l.partition(topicName, p)
	if err != nil {
		return -1, false, err
	}
	v := part.snapshot()
	for i := range v.entries {
		if v.entries[i].origin >= ts {
			return v.wm.LogStart + int64(i), true, nil
		}
	}
	return -1, false, nil
}

// CommitOffset implements bridge.Log.
func (l *Log) CommitOffset(_ context.Context, group, topicName string, p int32, offset int64, metadata string) error {
	k := offsetKey{group: group, topic: topicName, partition: p}
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset < 0 {
		delete(l.offsets, k)
		return nil
	}
	// The strings may alias a request frame: keep copies.
	k.group = clone(group)
	k.topic = clone(topicName)
	l.offsets[k] = committed{offset: offset, metadata: clone(metadata)}
	return nil
}

// FetchOffset implements bridge.Log.
func (l *Log) FetchOffset(_ context.Context, group, topicName string, p int32) (int64, string, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	c, ok := l.offsets[offsetKey{group: group, topic: topicName, partition: p}]
	if !ok {
		return -1, "", false, nil
	}
	return c.offset, c.metadata, true, nil
}

// Ready implements bridge.Log; the embedded log is always ready.
func (l *Log) Ready(context.Context) error { return nil }

// Close implements bridge.Log.
func (l *Log) Close() error { return nil }

func clone(s string) string { return string(append([]byte(nil), s...)) }
