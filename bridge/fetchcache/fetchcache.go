// Package fetchcache keeps the Fetch batches shared between consumer
// groups (docs/IGGY.md, "Fetches share encoded batches"): several consumer
// groups reading the same partition send Fetches for the same offsets with
// the same limits, and each would map the same messages into the same Kafka
// record batches again. The cache keeps the encoded record batches one
// Fetch built for a partition read, keyed by everything that decides those
// bytes (topic, partition, fetch offset, byte limit, codec, timestamp type,
// whether the read had to return at least one record), and later Fetches
// with the same key copy those bytes into their response instead of reading
// and mapping again.
//
// What a read returns at an offset can only change when the backend says
// so: a Log that offers the cache (store.SharedReads) gives a generation
// that changes whenever a Read may deliver other messages at an offset than
// an earlier one (a topic deleted, created or purged, a reconnect), and
// every entry is served only under the generation it was built under, for
// at most TTL. An entry whose batches end at the high watermark of its read
// (a reader at the tail) is served only while the Log knows no higher one:
// once more records exist, an unshared read would return them too. The
// per-Fetch checks (leader, log start, ACLs, zstd below v10) are the
// gateway's and run before the cache is asked, on every Fetch.
//
// Entries are immutable once stored. A reader pins the entry it copies
// from; an evicted entry's buffer is recycled once the last reader unpins
// it. While one Fetch builds an entry, others with the same key wait for it
// rather than build the same bytes at the same time.
package fetchcache

import (
	"io"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/lru"
	"github.com/kiggy-io/kiggy/internal/metric"
)

// TTL is how long an entry is served after it was built: it bounds how
// long a change the Log has not yet noticed (a purge by another writer) can
// be hidden, as the Iggy read cache's TTL does.
const TTL = 5 * time.Second

// Recycled entry buffers are kept by size class: class k holds buffers of
// 2^k to 2^(k+1)-1 bytes, at most freePerClass of each (a Fetch of 16
// partitions evicts about 16 entries of one size), and at most
// freePerClass × maxBuf bytes in all, so the small buffers of tail reads
// and the large ones of full reads each find their kind.
const (
	freePerClass = 16
	freeClasses  = 40
)

// Key is everything that decides the bytes of one partition read.
type Key struct {
	Topic     string
	Partition int32
	Limit     int32 // the read's byte limit
	Offset    int64 // the fetch offset
	Codec     batch.Codec
	LogAppend bool // the topic's timestamps are LogAppendTime
	MinOne    bool // the read had to return at least one record
}

// Read is what the read that built an entry reports beside its batches.
type Read struct {
	Watermarks store.Watermarks // the read's high watermark and log start (before the gateway applies its own)
	Next       int64            // the offset after the last record
	Records    int              // records in the batches
	Oversized  bool             // its first message alone was over the read's limit
}

// Entry is one partition read's encoded record batches. An entry a caller
// got from Acquire or StoreOwned is pinned: its Data stays valid until the
// caller calls Cache.Release, or Unpin when the engine wrote it as a
// splice.
type Entry struct {
	key              Key
	data             []byte // the record batches; immutable while cached or pinned
	buf              []byte // data's buffer (owned)
	gen              uint64 // the Log's generation before the read
	high             int64  // the read's high watermark
	logStart         int64  // the read's log start (before applyLogStart)
	tail             bool   // the batches end at high
	oversized        bool   // Read.Oversized
	records          int    // records in data
	next             int64  // the offset after the last record
	built            time.Time
	refs             int32 // readers copying from it now (under Cache.mu)
	fc               *Cache
	cached           bool // in the map and the LRU
	lru.Links[Entry]      // in Cache.lru
}

// Data is the entry's record batches; read-only.
func (e *Entry) Data() []byte { return e.data }

// Records is the number of records in Data.
func (e *Entry) Records() int { return e.records }

// Next is the offset after Data's last record.
func (e *Entry) Next() int64 { return e.next }

// Oversized reports whether the read returned a batch larger than its
// limit (Read.Oversized).
func (e *Entry) Oversized() bool { return e.oversized }

// LogStart is the log start the read reported.
func (e *Entry) LogStart() int64 { return e.logStart }

// Unpin releases the pin of a Fetch response that carried e's batches
// (engine.Splice) once the engine wrote them.
func (e *Entry) Unpin() { e.fc.Release(e) }

// LRULinks places an entry in the cache's LRU list (internal/lru).
func (e *Entry) LRULinks() *lru.Links[Entry] { return &e.Links }

// Cache is the gateway's cache of encoded partition reads. A nil *Cache
// (the Log offers none) may be asked to DropTopic and WriteMetrics.
type Cache struct {
	limit  int64
	log    store.SharedReads
	ttl    time.Duration // TTL
	maxBuf int           // the largest buffer kept for recycling

	mu        sync.Mutex
	entries   map[Key]*Entry
	building  map[Key]struct{} // reads in flight that will store
	built     sync.Cond        // broadcast when a build ends
	lru       lru.List[Entry, *Entry]
	bytes     int64
	free      [freeClasses][][]byte // by size class (freeClass)
	freeBytes int64
	freeEnts  []*Entry
	names     map[string]string // interned topic names of the keys

	hits, misses, waits, evictions, invalidations, stale atomic.Uint64
	copied                                               atomic.Uint64 // bytes copied into entries
	gauge, freeGauge                                     atomic.Int64
}

// New returns a cache of at most limit bytes of batches over log's reads;
// it recycles entry buffers of at most maxBuf bytes (the largest read
// buffer the gateway keeps).
func New(limit int64, log store.SharedReads, maxBuf int) *Cache {
	fc := &Cache{limit: limit, log: log, ttl: TTL, maxBuf: maxBuf, entries: map[Key]*Entry{},
		building: map[Key]struct{}{}, names: map[string]string{}}
	fc.built.L = &fc.mu
	return fc
}

// Acquire looks key up: it returns the entry pinned for the caller (who
// calls Release) and the high watermark to answer with, or nil and whether
// the caller is to build the entry (then it must call Store, StoreOwned or
// Abandon) and
// the generation to build it under. A read of key in flight is waited for.
func (fc *Cache) Acquire(key Key) (e *Entry, gen uint64, high int64, build bool) {
	gen, high = fc.log.ReadGeneration(key.Topic, key.Partition)
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for waited := false; ; waited = true {
		if e = fc.entries[key]; e != nil {
			switch {
			case e.gen != gen:
				fc.invalidations.Add(1)
				fc.dropLocked(e)
				e = nil
			case time.Since(e.built) > fc.ttl || e.tail && e.high != high:
				fc.stale.Add(1)
				fc.dropLocked(e)
				e = nil
			default:
				e.refs++
				fc.touch(e)
				fc.hits.Add(1)
				// A full read's records do not depend on the high
				// watermark; the answer gets the latest one known.
				return e, gen, max(high, e.high), false
			}
		}
		if _, ok := fc.building[key]; !ok {
			break
		}
		if !waited {
			fc.waits.Add(1)
		}
		fc.built.Wait()
		// The builder may have seen a newer generation: ask again.
		gen, high = fc.log.ReadGeneration(key.Topic, key.Partition)
	}
	key.Topic = fc.intern(key.Topic)
	fc.building[key] = struct{}{}
	fc.misses.Add(1)
	return nil, gen, high, true
}

// intern returns the cache's copy of topic (keys outlive the request frames
// names alias); under mu.
func (fc *Cache) intern(topic string) string {
	if s, ok := fc.names[topic]; ok {
		return s
	}
	s := strings.Clone(topic)
	fc.names[s] = s
	return s
}

// Abandon ends a build that stores nothing (an error, nothing to share).
func (fc *Cache) Abandon(key Key) {
	fc.mu.Lock()
	delete(fc.building, key)
	fc.built.Broadcast()
	fc.mu.Unlock()
}

// Store ends a build: it keeps a copy of data (the read's record batches)
// under key and gen, unless the copy would not fit the bound.
func (fc *Cache) Store(key Key, gen uint64, data []byte, r Read) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if e := fc.storeLocked(key, gen, data, r); e != nil {
		fc.copyIn(e, data)
	}
}

// copyIn fills e with a copy of data in a buffer of its size and
// publishes it; under mu.
func (fc *Cache) copyIn(e *Entry, data []byte) {
	e.buf = append(fc.takeBuf(len(data)), data...)
	fc.copied.Add(uint64(len(data)))
	fc.publishLocked(e)
}

// StoreOwned ends a build like Store, without the copy: the entry takes
// data's buffer over (data must start it), pinned for the caller (who
// serves from it and calls Release), and the caller gets a recycled buffer
// with room for as much as data for its next read, or nil when none fits
// (its next read grows a buffer of its own). When data's buffer has much
// more room than data (the copy is smaller: see Resize) it stores as Store
// does and returns nil, nil: the caller keeps data; when the entry would
// not fit the bound, it stores nothing and returns nil, nil.
func (fc *Cache) StoreOwned(key Key, gen uint64, data []byte, r Read) (*Entry, []byte) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	e := fc.storeLocked(key, gen, data, r)
	if e == nil {
		return nil, nil
	}
	n := len(data)
	if roomy(cap(data), n) {
		// Far more room than data: a tight copy holds less.
		fc.copyIn(e, data)
		return nil, nil
	}
	// After storeLocked's evictions recycled some: as much room as data's
	// buffer, which the reader's reads of this size grow to (the gateway's
	// partReader.growPart), and not so much that a read of data's size
	// would be roomy in it (copied). With none, the reader's next read
	// grows one: an allocation, as a copy would have cost here, without
	// the copy.
	spare := fc.takeSpare(cap(data), keepMax(n))
	e.buf = data
	fc.publishLocked(e)
	e.refs = 1
	return e, spare
}

// storeLocked ends a build and makes room for an entry of data's size; it
// returns the entry to fill (its buf) and publish, or nil when data is
// not to be kept; under mu.
func (fc *Cache) storeLocked(key Key, gen uint64, data []byte, r Read) *Entry {
	delete(fc.building, key)
	fc.built.Broadcast()
	size := int64(len(data))
	if size == 0 || size > fc.limit/4 {
		return nil
	}
	if old := fc.entries[key]; old != nil {
		fc.dropLocked(old)
	}
	for fc.bytes+size > fc.limit && fc.lru.Oldest() != nil {
		fc.evictions.Add(1)
		fc.dropLocked(fc.lru.Oldest())
	}
	e := fc.newEntry()
	key.Topic = fc.intern(key.Topic)
	e.fc = fc
	e.key, e.gen, e.high, e.logStart = key, gen, r.Watermarks.High, r.Watermarks.LogStart
	e.tail, e.oversized, e.records, e.next = r.Next >= r.Watermarks.High, r.Oversized, r.Records, r.Next
	e.built = time.Now()
	return e
}

// publishLocked puts a filled entry in the map and the LRU, evicting what
// its buffer's room still needs (storeLocked made room for the data); under
// mu.
func (fc *Cache) publishLocked(e *Entry) {
	for fc.bytes+int64(cap(e.buf)) > fc.limit && fc.lru.Oldest() != nil {
		fc.evictions.Add(1)
		fc.dropLocked(fc.lru.Oldest())
	}
	e.data = e.buf
	e.cached = true
	fc.entries[e.key] = e
	fc.bytes += int64(cap(e.buf))
	fc.gauge.Store(fc.bytes)
	fc.lru.PushBack(e)
}

// Release unpins e.
func (fc *Cache) Release(e *Entry) {
	fc.mu.Lock()
	e.refs--
	if e.refs == 0 && !e.cached {
		fc.recycle(e)
	}
	fc.mu.Unlock()
}

// DropTopic drops every entry of topic (deleted, created, its log start
// moved).
func (fc *Cache) DropTopic(topic string) {
	if fc == nil {
		return
	}
	fc.mu.Lock()
	for k, e := range fc.entries {
		if k.Topic == topic {
			fc.invalidations.Add(1)
			fc.dropLocked(e)
		}
	}
	delete(fc.names, topic)
	fc.mu.Unlock()
}

// dropLocked removes e from the map and the LRU; its buffer is recycled
// once no reader holds it; under mu.
func (fc *Cache) dropLocked(e *Entry) {
	if !e.cached {
		return
	}
	e.cached = false
	if fc.entries[e.key] == e {
		delete(fc.entries, e.key)
	}
	fc.lru.Remove(e)
	fc.bytes -= int64(cap(e.buf))
	fc.gauge.Store(fc.bytes)
	if e.refs == 0 {
		fc.recycle(e)
	}
}

// newEntry returns a recycled or new entry; under mu.
func (fc *Cache) newEntry() *Entry {
	if n := len(fc.freeEnts); n > 0 {
		e := fc.freeEnts[n-1]
		fc.freeEnts[n-1] = nil
		fc.freeEnts = fc.freeEnts[:n-1]
		return e
	}
	return new(Entry)
}

// roomy reports whether a buffer of c bytes is too large to keep for n
// bytes of batches: past keepMax(n). A read's buffer is sized by the Log's
// estimate (Room), Iggy's bytes, which exceed the batches' by a header of
// 64 bytes and more per record: 1 KiB records fill most of their buffer
// (about 85 % of a large one), 100-byte ones about half (copied).
func roomy(c, n int) bool { return c > keepMax(n) }

// keepMax is the largest buffer kept for n bytes of batches (StoreOwned):
// half more and a page.
func keepMax(n int) int { return n + n/2 + 4096 }

// Room is the buffer a read the Log expects n bytes of (its estimate) is
// given: a sixteenth more and a page, for the records that arrive between
// the estimate and the read. Kafka's record framing is smaller than
// Iggy's (a 64-byte header a message), so the batches fit.
func Room(n int) int { return n + n/16 + 4096 }

// keptFor is the largest buffer StoreOwned keeps for a read the Log
// expects n bytes of: its batches may be an eighth smaller than the Log's
// bytes (1 KiB records: 6 %).
func keptFor(n int) int { return keepMax(n - n/8) }

// Resize trades b, a read buffer the fetch cache would not keep for a read
// the Log expects about n bytes of (roomy: one grown by a larger read
// before) or one too small for it (one a smaller read was given), for a
// recycled buffer between Room(n) and keptFor(n), which the read needs no
// other beside and StoreOwned takes over instead of copying the batches
// out; b is kept for a later read of its size. With no recycled buffer of
// that size at hand it returns nil for a roomy b (the read grows its own)
// and b itself for a small one. Any other b is returned as it is.
func (fc *Cache) Resize(b []byte, n int) []byte {
	if fc == nil {
		return b
	}
	roomyB := cap(b) > keptFor(n)
	if !roomyB && cap(b) >= Room(n) {
		return b
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	nb := fc.takeSpare(Room(n), keptFor(n))
	if nb == nil && !roomyB {
		return b
	}
	fc.putFree(b)
	return nb
}

// takeBuf returns an empty buffer with room for n bytes, recycled when one
// fits; under mu.
func (fc *Cache) takeBuf(n int) []byte {
	if b := fc.takeSpare(n, 2*n+4096); b != nil {
		return b
	}
	// Room for the next reads of a similar size, which vary by a record.
	return make([]byte, 0, n+n/16)
}

// takeSpare returns a recycled buffer (empty) of at least lo bytes and at
// most hi, or nil; under mu.
func (fc *Cache) takeSpare(lo, hi int) []byte {
	lo = max(lo, 1)
	for c := freeClass(lo); c <= freeClass(max(hi, lo)) && c < freeClasses; c++ {
		l := fc.free[c]
		for i := len(l) - 1; i >= 0; i-- {
			if b := l[i]; cap(b) >= lo && cap(b) <= hi {
				last := len(l) - 1
				l[i], l[last] = l[last], nil
				fc.free[c] = l[:last]
				fc.freeBytes -= int64(cap(b))
				fc.freeGauge.Store(fc.freeBytes)
				return b[:0]
			}
		}
	}
	return nil
}

// freeClass is the size class of a buffer of c > 0 bytes: ⌊log2 c⌋.
func freeClass(c int) int { return bits.Len(uint(c)) - 1 }

// recycle keeps e's buffer for a later entry and e itself; under mu.
func (fc *Cache) recycle(e *Entry) {
	fc.putFree(e.buf)
	*e = Entry{}
	if len(fc.freeEnts) < 256 {
		fc.freeEnts = append(fc.freeEnts, e)
	}
}

// putFree keeps b (nil: nothing) for a later entry, if it is at most
// maxBuf, in its size class; a full class drops its oldest buffer (reads
// of the sizes kept before may be over), and b is dropped when all of
// them would hold over freePerClass × maxBuf bytes; under mu.
func (fc *Cache) putFree(b []byte) {
	if cap(b) == 0 || cap(b) > fc.maxBuf {
		return
	}
	k := freeClass(cap(b))
	if k >= freeClasses {
		return
	}
	l := fc.free[k]
	if len(l) >= freePerClass {
		fc.freeBytes -= int64(cap(l[0]))
		copy(l, l[1:])
		l[len(l)-1] = nil
		l = l[:len(l)-1]
	}
	if fc.freeBytes+int64(cap(b)) > int64(freePerClass)*int64(fc.maxBuf) {
		fc.free[k] = l
		fc.freeGauge.Store(fc.freeBytes)
		return
	}
	fc.free[k] = append(l, b[:0])
	fc.freeBytes += int64(cap(b))
	fc.freeGauge.Store(fc.freeBytes)
}

// touch makes a cached entry the most recently used; under mu.
func (fc *Cache) touch(e *Entry) {
	if e.cached {
		fc.lru.Touch(e)
	}
}

// WriteMetrics writes the cache's metrics (zeros when it is off).
func (fc *Cache) WriteMetrics(w io.Writer) {
	var limit, bytes, free int64
	var hits, misses, waits, evictions, invalidations, stale, copied uint64
	if fc != nil {
		limit, bytes, free = fc.limit, fc.gauge.Load(), fc.freeGauge.Load()
		hits, misses, waits, copied = fc.hits.Load(), fc.misses.Load(), fc.waits.Load(), fc.copied.Load()
		evictions, invalidations, stale = fc.evictions.Load(), fc.invalidations.Load(), fc.stale.Load()
	}
	metric.Single(w, "kiggy_fetch_cache_limit_bytes", "gauge", "The bound of the encoded record batches Fetches share (--iggy-fetch-cache-bytes; 0 = off).", limit)
	metric.Single(w, "kiggy_fetch_cache_bytes", "gauge", "Bytes of encoded record batches held for later Fetches.", bytes)
	metric.Single(w, "kiggy_fetch_cache_free_bytes", "gauge", "Bytes of recycled entry buffers kept for the next entries (outside the bound, at most 16 of each power-of-two size).", free)
	metric.Single(w, "kiggy_fetch_cache_hits_total", "counter", "Partition reads of a Fetch answered with batches an earlier Fetch encoded.", hits)
	metric.Single(w, "kiggy_fetch_cache_misses_total", "counter", "Partition reads of a Fetch that read and encoded the batches themselves.", misses)
	metric.Single(w, "kiggy_fetch_cache_copied_bytes_total", "counter", "Bytes of batches copied into entries: reads built into a Fetch response, and reads whose buffer had far more room than their batches.", copied)
	metric.Single(w, "kiggy_fetch_cache_shared_waits_total", "counter", "Partition reads that waited for another Fetch encoding the same read.", waits)
	metric.Single(w, "kiggy_fetch_cache_evictions_total", "counter", "Entries evicted to stay within the bound (least recently used first).", evictions)
	metric.Single(w, "kiggy_fetch_cache_invalidations_total", "counter", "Entries dropped because the backend's data may have changed (a topic deleted, created or purged, DeleteRecords, a reconnect).", invalidations)
	metric.Single(w, "kiggy_fetch_cache_stale_total", "counter", "Entries dropped when asked for after their 5 s, or at the tail once the high watermark moved.", stale)
}
