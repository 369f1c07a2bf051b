// Package memlog is kiggy's embedded in-memory log: the default backend, so
// the gateway runs with nothing else installed. It implements store.Log.
//
// Each partition is an append-only sequence of Iggy-shaped message frames
// (bridge/message) with contiguous offsets from 0. Frames are copied once, on
// append, into large immutable chunks; readers get views into those chunks
// without holding a lock while they read. A per-partition byte cap advances
// the log start offset by dropping the oldest messages, and a total cap on
// the memory all chunks hold drops the oldest chunk across partitions, so
// many partitions cannot exhaust the machine's memory.
//
// Concurrency: Log.mu guards the topic map; each partition has its own mutex,
// held only to append or to snapshot the entry slice. Lock order: evictMu,
// then Log.mu, then a partition's mu; never the reverse.
package memlog

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/metric"
)

// Config configures the embedded log. The zero value means defaults.
type Config struct {
	// PartitionBytes caps each partition's stored frame bytes; older
	// messages are dropped beyond it (Kafka retention.bytes). 0 = 1 GiB.
	PartitionBytes int64
	// TotalBytes caps the memory the storage chunks of all partitions hold
	// together (the index of 32 bytes per message comes on top): beyond it
	// the oldest chunk across partitions is dropped, with its messages,
	// advancing that partition's log start, until the log fits again.
	// 0 = DefaultTotalBytes(); negative = no total cap.
	TotalBytes int64
	// ChunkSize is the largest size of the storage chunks frames are copied
	// into (a partition's first chunk is at most 64 KiB, each next one twice
	// the one before, so a partition holding little holds little memory).
	// 0 = 4 MiB.
	ChunkSize int
	// Now is the clock for append timestamps; nil = time.Now.
	Now func() time.Time
}

func (c *Config) normalize() {
	if c.PartitionBytes <= 0 {
		c.PartitionBytes = 1 << 30
	}
	if c.TotalBytes == 0 {
		c.TotalBytes = DefaultTotalBytes()
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

	// held is the memory of every partition's chunks (the total cap's
	// measure); evictMu lets one appender at a time drop chunks for it.
	held    atomic.Int64
	evictMu sync.Mutex
	// dropped counts the frame bytes of messages dropped, by limit.
	dropped [numLimits]atomic.Uint64
}

// The limits that drop messages.
const (
	limitPartition = iota // Config.PartitionBytes (or the topic's MaxBytes)
	limitTotal            // Config.TotalBytes
	numLimits
)

var limitNames = [numLimits]string{limitPartition: "partition", limitTotal: "total"}

type topic struct {
	info       store.TopicInfo
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
	// chunks[i] is chunk number chunkBase+i, allocated at its full length;
	// frames are copied into the last one at fill and never rewritten, and
	// no chunk's slice header changes once stored, so readers use them
	// without the lock.
	chunks    [][]byte
	chunkBase uint64
	fill      int
	capBytes  int64
	lastTS    uint64
	// deleted: the topic was deleted; appends that looked the partition up
	// before fail.
	deleted bool
	// oldest is the append time of the first stored message (0 = empty),
	// for the total cap's choice of the globally oldest chunk without
	// taking every partition's lock.
	oldest atomic.Uint64
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

var (
	_ store.Log                = (*Log)(nil)
	_ store.CapabilityDeclarer = (*Log)(nil)
	_ store.PartitionSizer     = (*Log)(nil)
)

// Capabilities implements store.CapabilityDeclarer: the embedded log lives
// in this process, never waits on I/O, and only this gateway appends to it.
func (l *Log) Capabilities() store.Capabilities {
	return store.Capabilities{NonBlocking: true, SoleWriter: true, LocalLatency: true, NoFrameChecksums: true}
}

// Topics implements store.Log.
func (l *Log) Topics(context.Context) ([]store.TopicInfo, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]store.TopicInfo, 0, len(l.topics))
	for _, t := range l.topics {
		out = append(out, t.info)
	}
	slices.SortFunc(out, func(a, b store.TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Topic implements store.Log.
func (l *Log) Topic(_ context.Context, name string) (store.TopicInfo, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	t, ok := l.topics[name]
	if !ok {
		// The bare sentinel: a Metadata naming unknown topics (a client
		// probing, a flood of random names) allocates nothing per name.
		return store.TopicInfo{}, store.ErrUnknownTopic
	}
	return t.info, nil
}

// CreateTopic implements store.Log.
func (l *Log) CreateTopic(_ context.Context, name string, partitions int32, cfg store.TopicConfig) (store.TopicInfo, error) {
	if partitions < 1 {
		return store.TopicInfo{}, fmt.Errorf("%w: %d", store.ErrInvalidPartitions, partitions)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.topics[name]; ok {
		return store.TopicInfo{}, fmt.Errorf("%w: %q", store.ErrTopicExists, name)
	}
	name = strings.Clone(name) // it may alias a request frame
	// Records live in this process's memory whatever the topic asked for
	// (docs/IGGY.md, "Durability").
	cfg.Durability = store.DurabilityMemory
	// A topic id drawn at random, as Kafka's controller does: the log
	// lives as long as the process, so nothing has to find the id again
	// (docs/design/record-mapping.md §8).
	var id [16]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	t := &topic{info: store.TopicInfo{Name: name, ID: store.TopicID(id), Partitions: partitions, Config: cfg}}
	for range partitions {
		t.partitions = append(t.partitions, l.newPartition(cfg))
	}
	l.topics[name] = t
	return t.info, nil
}

func (l *Log) newPartition(cfg store.TopicConfig) *partition {
	c := l.cfg.PartitionBytes
	if cfg.MaxBytes > 0 && int64(cfg.MaxBytes) < c {
		c = int64(cfg.MaxBytes)
	}
	return &partition{capBytes: c}
}

// DeleteTopic implements store.Log.
func (l *Log) DeleteTopic(_ context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, name)
	}
	delete(l.topics, name)
	for _, p := range t.partitions {
		l.held.Add(-p.release())
	}
	for k := range l.offsets {
		if k.topic == name {
			delete(l.offsets, k)
		}
	}
	return nil
}

// CreatePartitions implements store.Log.
func (l *Log) CreatePartitions(_ context.Context, name string, total int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.topics[name]
	if !ok {
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, name)
	}
	if total <= t.info.Partitions {
		return fmt.Errorf("%w: topic %q has %d partitions, asked for %d", store.ErrInvalidPartitions, name, t.info.Partitions, total)
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
		return nil, store.ErrUnknownTopic
	}
	if p < 0 || int(p) >= len(t.partitions) {
		l.mu.RUnlock()
		return nil, store.ErrUnknownPartition
	}
	part := t.partitions[p]
	l.mu.RUnlock()
	return part, nil
}

// Append implements store.Log.
func (l *Log) Append(_ context.Context, topicName string, p int32, b *message.Batch) (int64, error) {
	part, err := l.partition(topicName, p)
	if err != nil {
		return -1, err
	}
	base, grown, err := part.append(b, uint64(l.cfg.Now().UnixMicro()), l.cfg.ChunkSize, &l.dropped[limitPartition])
	if grown != 0 && l.held.Add(grown) > l.cfg.TotalBytes && l.cfg.TotalBytes > 0 {
		l.evict()
	}
	return base, err
}

// append stores b's frames at time now (µs) and returns the offset of the
// first and the change in the memory the partition's chunks hold.
func (p *partition) append(b *message.Batch, now uint64, chunkSize int, dropped *atomic.Uint64) (base, grown int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return -1, 0, store.ErrUnknownTopic
	}
	// Iggy's base_timestamp is strictly monotonic per partition; so is ours.
	if now <= p.lastTS {
		now = p.lastTS + 1
	}
	p.lastTS = now
	frames := b.Frames()
	chunk, start, grown := p.store(frames, chunkSize)
	stored := p.chunks[chunk-p.chunkBase][start : start+len(frames)]
	base = p.logStart + int64(len(p.entries))
	for off := 0; off < len(stored); {
		f, err := message.ParseFrame(stored[off:])
		if err != nil {
			// The bridge builds every batch; a bad one is a bug, not input.
			return -1, grown, fmt.Errorf("memlog: %w at byte %d", err, off)
		}
		p.entries = append(p.entries, entry{
			chunk:     chunk,
			off:       uint32(start + off),
			size:      uint32(f.Size),
			timestamp: now,
			origin:    b.Origin + uint64(f.TimestampDelta),
		})
		off += f.Size
	}
	p.bytes += int64(len(stored))
	released, lost := p.trim()
	if lost > 0 {
		dropped.Add(uint64(lost))
	}
	p.setOldest()
	return base, grown - released, nil
}

// setOldest publishes the append time of the first stored message.
func (p *partition) setOldest() {
	if len(p.entries) == 0 {
		p.oldest.Store(0)
	} else {
		p.oldest.Store(p.entries[0].timestamp)
	}
}

// evict drops the globally oldest chunk, one at a time, until the memory
// all chunks hold is within Config.TotalBytes: the partition whose first
// message is the oldest loses its first chunk (the newest data of that
// partition included when it holds only one), and its log start advances as
// with the per-partition cap, so a Fetch below it is OFFSET_OUT_OF_RANGE.
// Appenders over the cap at once wait for one another here; the first
// makes room for all.
func (l *Log) evict() {
	l.evictMu.Lock()
	defer l.evictMu.Unlock()
	for l.held.Load() > l.cfg.TotalBytes {
		p := l.oldestPartition()
		if p == nil {
			return
		}
		released, lost := p.dropFirstChunk()
		l.held.Add(-released)
		l.dropped[limitTotal].Add(uint64(lost))
	}
}

// oldestPartition returns the partition whose first stored message is the
// oldest, or nil when every partition is empty.
func (l *Log) oldestPartition() *partition {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var best *partition
	var bestTS uint64
	for _, t := range l.topics {
		for _, p := range t.partitions {
			if ts := p.oldest.Load(); ts != 0 && (best == nil || ts < bestTS) {
				best, bestTS = p, ts
			}
		}
	}
	return best
}

// dropFirstChunk drops the partition's first chunk and the messages stored
// in it, and returns the chunk memory released and the frame bytes lost.
func (p *partition) dropFirstChunk() (released, lost int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.setOldest()
	if len(p.chunks) == 0 {
		return 0, 0
	}
	drop := 0
	for drop < len(p.entries) && p.entries[drop].chunk == p.chunkBase {
		lost += int64(p.entries[drop].size)
		drop++
	}
	p.bytes -= lost
	p.logStart += int64(drop)
	p.entries = p.entries[drop:] // a reslice, as in trim
	released = int64(cap(p.chunks[0]))
	// Copied, so the dropped chunk is collectable once no snapshot names it.
	p.chunks = append([][]byte(nil), p.chunks[1:]...)
	p.chunkBase++
	return released, lost
}

// release empties a deleted topic's partition and returns the chunk memory
// it held.
func (p *partition) release() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var held int64
	for _, c := range p.chunks {
		held += int64(cap(c))
	}
	p.deleted = true
	p.entries, p.chunks, p.bytes = nil, nil, 0
	p.oldest.Store(0)
	return held
}

// maxChunk bounds a chunk so that entry positions fit in 32 bits; a batch
// of frames is far smaller (it comes from one request frame).
const maxChunk = 1<<32 - 1

// firstChunk bounds a partition's first chunk; each next chunk is twice the
// one before, up to Config.ChunkSize.
const firstChunk = 64 << 10

// store copies frames into the partition's current chunk (or a new one) and
// returns the chunk's number, where the copy starts in it, and the size of
// the chunk it allocated (0 when it used the current one).
func (p *partition) store(frames []byte, chunkSize int) (uint64, int, int64) {
	last := len(p.chunks) - 1
	var grown int64
	if last < 0 || len(frames) > len(p.chunks[last])-p.fill {
		n := min(chunkSize, firstChunk)
		if last >= 0 {
			n = min(chunkSize, 2*len(p.chunks[last]))
		}
		n = min(max(n, len(frames)), maxChunk)
		p.chunks = append(p.chunks, make([]byte, n))
		last++
		p.fill = 0
		grown = int64(n)
	}
	start := p.fill
	p.fill += copy(p.chunks[last][start:], frames)
	return p.chunkBase + uint64(last), start, grown
}

// trim drops the oldest messages while the partition is over its cap,
// always keeping the newest message, and the chunks no message uses. It
// returns the chunk memory released and the frame bytes dropped.
func (p *partition) trim() (released, lost int64) {
	if p.bytes <= p.capBytes {
		return 0, 0
	}
	drop := 0
	for drop < len(p.entries)-1 && p.bytes > p.capBytes {
		lost += int64(p.entries[drop].size)
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
		for _, c := range p.chunks[:unused] {
			released += int64(cap(c))
		}
		p.chunks = append([][]byte(nil), p.chunks[unused:]...)
		p.chunkBase += unused
	}
	return released, lost
}

// view is a consistent snapshot of a partition, usable without its lock:
// everything it names is immutable.
type view struct {
	entries   []entry
	chunks    [][]byte
	chunkBase uint64
	wm        store.Watermarks
}

func (p *partition) snapshot() view {
	p.mu.Lock()
	defer p.mu.Unlock()
	return view{
		entries: p.entries, chunks: p.chunks, chunkBase: p.chunkBase,
		wm: store.Watermarks{LogStart: p.logStart, High: p.logStart + int64(len(p.entries))},
	}
}

var messagePool = sync.Pool{New: func() any { return new(message.Message) }}

// Read implements store.Log.
func (l *Log) Read(_ context.Context, topicName string, p int32, offset int64, maxBytes int, fn func(*message.Message) bool) (store.Watermarks, error) {
	part, err := l.partition(topicName, p)
	if err != nil {
		return store.Watermarks{}, err
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

// Watermarks implements store.Log.
func (l *Log) Watermarks(_ context.Context, topicName string, p int32) (store.Watermarks, error) {
	part, err := l.partition(topicName, p)
	if err != nil {
		return store.Watermarks{}, err
	}
	return part.snapshot().wm, nil
}

// PartitionSizes implements store.PartitionSizer: the bytes of the frames
// each partition holds.
func (l *Log) PartitionSizes(_ context.Context, topicName string) ([]int64, error) {
	l.mu.RLock()
	t := l.topics[topicName]
	var parts []*partition
	if t != nil {
		parts = t.partitions
	}
	l.mu.RUnlock()
	if t == nil {
		return nil, fmt.Errorf("%w: %q", store.ErrUnknownTopic, topicName)
	}
	out := make([]int64, len(parts))
	for i, p := range parts {
		p.mu.Lock()
		out[i] = p.bytes
		p.mu.Unlock()
	}
	return out, nil
}

// LogDir implements store.PartitionSizer: the embedded log keeps its
// records in this process's memory.
func (l *Log) LogDir() string { return "memory:kiggy-embedded-log" }

// OffsetForTime implements store.Log.
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

// CommitOffset implements store.Log.
func (l *Log) CommitOffset(_ context.Context, group, topicName string, p int32, offset int64, metadata string) error {
	k := offsetKey{group: group, topic: topicName, partition: p}
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset < 0 {
		delete(l.offsets, k)
		return nil
	}
	// The strings may alias a request frame: keep copies.
	k.group = strings.Clone(group)
	k.topic = strings.Clone(topicName)
	l.offsets[k] = committed{offset: offset, metadata: strings.Clone(metadata)}
	return nil
}

// FetchOffset implements store.Log.
func (l *Log) FetchOffset(_ context.Context, group, topicName string, p int32) (int64, string, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	c, ok := l.offsets[offsetKey{group: group, topic: topicName, partition: p}]
	if !ok {
		return -1, "", false, nil
	}
	return c.offset, c.metadata, true, nil
}

// WriteMetrics implements store.MetricsWriter: the memory held, the total
// cap, and the bytes each limit dropped.
func (l *Log) WriteMetrics(w io.Writer) {
	metric.Single(w, "kiggy_memlog_bytes", "gauge", "Memory the embedded log's storage chunks hold now (the measure of --memlog-total-bytes).", l.held.Load())
	metric.Single(w, "kiggy_memlog_limit_bytes", "gauge", "The embedded log's total cap (--memlog-total-bytes); 0 = none.", max(l.cfg.TotalBytes, 0))
	const name = "kiggy_memlog_dropped_bytes_total"
	metric.Header(w, name, "counter", "Bytes of messages the embedded log dropped to stay within a limit: partition (--memlog-partition-bytes) or total (--memlog-total-bytes).")
	for i := range l.dropped {
		fmt.Fprintf(w, "%s{limit=%q} %d\n", name, limitNames[i], l.dropped[i].Load())
	}
}

// Ready implements store.Log; the embedded log is always ready.
func (l *Log) Ready(context.Context) error { return nil }

// Close implements store.Log.
func (l *Log) Close() error { return nil }

// UpdateTopic implements store.TopicUpdater: the topic's size cap
// (retention.bytes, per partition here) changes at once; the embedded log
// has no time expiry, so MessageExpiry is only recorded.
func (l *Log) UpdateTopic(_ context.Context, name string, cfg store.TopicConfig) error {
	l.mu.Lock()
	t, ok := l.topics[name]
	if !ok {
		l.mu.Unlock()
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, name)
	}
	t.info.Config.MessageExpiry, t.info.Config.MaxBytes = cfg.MessageExpiry, cfg.MaxBytes
	parts := t.partitions
	l.mu.Unlock()
	for _, p := range parts {
		c := l.newPartition(cfg).capBytes
		p.mu.Lock()
		p.capBytes = c
		released, lost := p.trim()
		p.setOldest()
		p.mu.Unlock()
		l.held.Add(-released)
		if lost > 0 {
			l.dropped[limitPartition].Add(uint64(lost))
		}
	}
	return nil
}

// AdvanceLogStart implements store.LogStartAdvancer: the partition's
// messages below offset (at most its high watermark) are dropped, and the
// chunks no message uses any more are released.
func (l *Log) AdvanceLogStart(_ context.Context, topicName string, p int32, offset int64) error {
	part, err := l.partition(topicName, p)
	if err != nil {
		return err
	}
	l.held.Add(-part.advance(offset))
	return nil
}

// advance drops the messages below offset and returns the chunk memory
// released.
func (p *partition) advance(offset int64) (released int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.setOldest()
	drop := int(min(max(offset-p.logStart, 0), int64(len(p.entries))))
	if drop == 0 {
		return 0
	}
	for _, e := range p.entries[:drop] {
		p.bytes -= int64(e.size)
	}
	p.logStart += int64(drop)
	p.entries = p.entries[drop:] // a reslice, as in trim
	// Keep the chunk the first live message is in, or the last chunk (the
	// one appends fill) when none is left.
	keep := uint64(len(p.chunks)) - 1
	if len(p.entries) > 0 {
		keep = p.entries[0].chunk - p.chunkBase
	}
	if len(p.chunks) > 0 && keep > 0 {
		for _, c := range p.chunks[:keep] {
			released += int64(cap(c))
		}
		p.chunks = append([][]byte(nil), p.chunks[keep:]...)
		p.chunkBase += keep
	}
	return released
}
