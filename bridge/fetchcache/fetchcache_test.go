package fetchcache

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// testMaxBuf is the largest buffer the tests' caches recycle (the
// gateway's maxRetainedPartBuf).
const testMaxBuf = 4 << 20

// fakeShared is a SharedReads whose generation and high watermark a test
// sets.
type fakeShared struct {
	mu   sync.Mutex
	gen  uint64
	high int64
}

func (f *fakeShared) FetchCacheBytes() int64 { return 1 << 20 }

func (f *fakeShared) ReadGeneration(string, int32) (uint64, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen, f.high
}

func (f *fakeShared) set(gen uint64, high int64) {
	f.mu.Lock()
	f.gen, f.high = gen, high
	f.mu.Unlock()
}

// build acquires key in fc, expecting a miss, and stores data as a read
// that ended at next with high watermark high.
func build(t *testing.T, fc *Cache, key Key, data []byte, next, high int64) {
	t.Helper()
	e, gen, _, ok := fc.Acquire(key)
	if e != nil || !ok {
		t.Fatalf("%+v: a hit (%v) or no build", key, e != nil)
	}
	fc.Store(key, gen, data, Read{Watermarks: store.Watermarks{High: high}, Next: next, Records: 1})
}

// hit acquires key, expecting an entry holding data, and releases it.
func hit(t *testing.T, fc *Cache, key Key, data []byte) int64 {
	t.Helper()
	e, _, high, ok := fc.Acquire(key)
	if e == nil {
		if ok {
			fc.Abandon(key)
		}
		t.Fatalf("%+v: a miss", key)
	}
	if !bytes.Equal(e.data, data) {
		t.Fatalf("%+v: %d bytes, not the %d stored", key, len(e.data), len(data))
	}
	fc.Release(e)
	return high
}

// miss acquires key, expecting a miss, and abandons the build.
func miss(t *testing.T, fc *Cache, key Key) {
	t.Helper()
	e, _, _, ok := fc.Acquire(key)
	if e != nil {
		fc.Release(e)
		t.Fatalf("%+v: a hit", key)
	}
	if !ok {
		t.Fatalf("%+v: no build", key)
	}
	fc.Abandon(key)
}

// TestFetchCacheEntries: an entry is served under the generation it was
// built under and its key only; a read that reached the high watermark
// only while no higher one is known, one that ended at its budget with the
// latest one; not after its TTL; topics drop.
func TestFetchCacheEntries(t *testing.T) {
	log := &fakeShared{gen: 1, high: 100}
	fc := New(1<<20, log, testMaxBuf)
	data := bytes.Repeat([]byte("x"), 1000)
	full := Key{Topic: "t", Partition: 0, Offset: 10, Limit: 500, Codec: batch.NoCompression, MinOne: true}
	build(t, fc, full, data, 20, 100)
	hit(t, fc, full, data)
	for _, k := range []Key{
		{Topic: "u", Partition: 0, Offset: 10, Limit: 500, MinOne: true},
		{Topic: "t", Partition: 1, Offset: 10, Limit: 500, MinOne: true},
		{Topic: "t", Partition: 0, Offset: 11, Limit: 500, MinOne: true},
		{Topic: "t", Partition: 0, Offset: 10, Limit: 501, MinOne: true},
		{Topic: "t", Partition: 0, Offset: 10, Limit: 500, Codec: batch.LZ4, MinOne: true},
		{Topic: "t", Partition: 0, Offset: 10, Limit: 500, LogAppend: true, MinOne: true},
		{Topic: "t", Partition: 0, Offset: 10, Limit: 500},
	} {
		miss(t, fc, k)
	}
	log.set(1, 150)
	if h := hit(t, fc, full, data); h != 150 {
		t.Fatalf("a full read answered with high watermark %d, want the latest 150", h)
	}

	tail := Key{Topic: "t", Partition: 0, Offset: 20, Limit: 500, MinOne: true}
	build(t, fc, tail, data, 150, 150)
	hit(t, fc, tail, data)
	log.set(1, 151)
	miss(t, fc, tail)
	if fc.stale.Load() != 1 {
		t.Fatalf("stale %d, want 1", fc.stale.Load())
	}

	log.set(2, 151)
	miss(t, fc, full)
	if fc.invalidations.Load() != 1 {
		t.Fatalf("invalidations %d, want 1", fc.invalidations.Load())
	}

	build(t, fc, full, data, 20, 151)
	fc.ttl = time.Millisecond
	testtools.WaitFor(t, 5*time.Second, "the entry to outlive its 1 ms TTL", func() bool {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		return time.Since(fc.entries[full].built) > fc.ttl
	})
	miss(t, fc, full)
	fc.ttl = TTL

	build(t, fc, full, data, 20, 151)
	fc.DropTopic("t")
	miss(t, fc, full)
	if fc.bytes != 0 || len(fc.entries) != 0 || fc.lru.Oldest() != nil {
		t.Fatalf("after dropTopic: %d bytes, %d entries", fc.bytes, len(fc.entries))
	}
}

// TestFetchCacheBound: the entries' bytes stay within the bound, least
// recently used evicted first; an entry over a quarter of the bound is not
// kept; an entry evicted while a reader copies from it keeps its bytes
// until released, then its buffer is recycled.
func TestFetchCacheBound(t *testing.T) {
	log := &fakeShared{gen: 1, high: 1 << 40}
	fc := New(64<<10, log, testMaxBuf)
	key := func(i int) Key { return Key{Topic: "b", Offset: int64(i), Limit: 1 << 20, MinOne: true} }
	data := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 10<<10) }
	build(t, fc, key(0), data(0), 1, 1<<40)
	pinned, _, _, _ := fc.Acquire(key(0))
	for i := 1; i < 20; i++ {
		build(t, fc, key(i), data(i), int64(i+1), 1<<40)
		hit(t, fc, key(1), data(1)) // key 1 stays recently used
		if fc.bytes > fc.limit {
			t.Fatalf("after %d entries: %d bytes over the bound %d", i+1, fc.bytes, fc.limit)
		}
	}
	hit(t, fc, key(1), data(1))
	miss(t, fc, key(2))
	if fc.evictions.Load() == 0 {
		t.Fatal("nothing evicted")
	}
	if pinned.cached || !bytes.Equal(pinned.data, data(0)) {
		t.Fatalf("the pinned entry: cached %v, its bytes changed %v", pinned.cached, !bytes.Equal(pinned.data, data(0)))
	}
	free := fc.freeGauge.Load()
	fc.Release(pinned)
	if fc.freeGauge.Load() <= free {
		t.Fatal("the released entry's buffer was not recycled")
	}

	big := Key{Topic: "b", Offset: 1000, Limit: 1 << 20, MinOne: true}
	build(t, fc, big, make([]byte, 17<<10), 1001, 1<<40)
	miss(t, fc, big)
}

// TestFetchCacheBuildOnce: while one read builds an entry, another asking
// for the same key waits and is answered from it; a build abandoned wakes
// the waiter to build itself.
func TestFetchCacheBuildOnce(t *testing.T) {
	log := &fakeShared{gen: 1, high: 1 << 40}
	fc := New(1<<20, log, testMaxBuf)
	key := Key{Topic: "w", Limit: 100, MinOne: true}
	data := []byte("batches")
	for _, abandon := range []bool{false, true} {
		fc.DropTopic("w")
		_, gen, _, ok := fc.Acquire(key)
		if !ok {
			t.Fatal("no build")
		}
		got := make(chan *Entry)
		built := make(chan bool)
		go func() {
			e, _, _, b := fc.Acquire(key)
			if b {
				fc.Abandon(key)
			}
			built <- b
			got <- e
		}()
		// The waiter counts its wait before it sleeps.
		testtools.WaitFor(t, 5*time.Second, "the second reader to wait", func() bool { return fc.waits.Load() != 0 })
		if abandon {
			fc.Abandon(key)
		} else {
			fc.Store(key, gen, data, Read{Watermarks: store.Watermarks{High: 1 << 40}, Next: 1, Records: 1})
		}
		b, e := <-built, <-got
		switch {
		case abandon && (e != nil || !b):
			t.Fatalf("after an abandoned build: entry %v, build %v; want a build of its own", e != nil, b)
		case !abandon && (e == nil || b || !bytes.Equal(e.data, data)):
			t.Fatalf("after the build: entry %v, build %v; want the built entry", e != nil, b)
		}
		if e != nil {
			fc.Release(e)
		}
		fc.waits.Store(0)
	}
}

// TestFetchCacheStoreOwned: a build that hands its buffer over is stored
// without a copy (the entry holds the very bytes, pinned for the builder);
// the builder gets a recycled buffer of at least the read's room once
// evictions recycled some, nil before; a buffer with far more room than
// its read is copied as Store does (and counted); the bound holds either
// way.
func TestFetchCacheStoreOwned(t *testing.T) {
	log := &fakeShared{gen: 1, high: 1 << 40}
	fc := New(64<<10, log, testMaxBuf)
	key := func(i int) Key { return Key{Topic: "o", Offset: int64(i), Limit: 1 << 20, MinOne: true} }
	data := func(i int) []byte {
		b := make([]byte, 10<<10, 11<<10)
		for j := range b {
			b[j] = byte(i)
		}
		return b
	}
	spares, none := 0, 0
	for i := range 20 {
		_, gen, _, ok := fc.Acquire(key(i))
		if !ok {
			t.Fatalf("entry %d: no build", i)
		}
		d := data(i)
		e, spare := fc.StoreOwned(key(i), gen, d, Read{Watermarks: store.Watermarks{High: 1 << 40}, Next: int64(i + 1), Records: 1})
		if e == nil {
			t.Fatalf("entry %d: not kept", i)
		}
		if &e.data[0] != &d[0] {
			t.Fatalf("entry %d: an owned store copied", i)
		}
		if spare == nil {
			none++
		} else {
			spares++
			if len(spare) != 0 || cap(spare) < cap(d) || &spare[:1][0] == &d[0] {
				t.Fatalf("entry %d: spare of len %d cap %d (read's cap %d)", i, len(spare), cap(spare), cap(d))
			}
		}
		fc.Release(e)
		hit(t, fc, key(i), data(i))
		if fc.bytes > fc.limit {
			t.Fatalf("after %d entries: %d bytes over the bound %d", i+1, fc.bytes, fc.limit)
		}
	}
	if spares == 0 || none == 0 {
		t.Fatalf("%d stores got a spare and %d none: want both (none until evictions recycle buffers)", spares, none)
	}
	if c := fc.copied.Load(); c != 0 {
		t.Fatalf("%d bytes copied by owned stores", c)
	}
	// A buffer with much more room than its read is copied, not kept.
	_, gen, _, _ := fc.Acquire(key(100))
	if e, _ := fc.StoreOwned(key(100), gen, make([]byte, 10<<10, 40<<10), Read{Watermarks: store.Watermarks{High: 1 << 40}, Next: 101, Records: 1}); e != nil {
		t.Fatal("a read of 10 KiB in a 40 KiB buffer was kept whole")
	}
	if c := fc.copied.Load(); c != 10<<10 {
		t.Fatalf("%d bytes counted copied, want %d", c, 10<<10)
	}
	hit(t, fc, key(100), make([]byte, 10<<10))
}

// TestFetchCacheResize: a read buffer the cache would not keep for the
// batches of a read the Log expects n bytes of (roomy), or too small for
// them, is traded for a recycled one between Room(n) and keptFor(n); with
// none at hand a roomy buffer gives nil (the read grows one) and a small
// one itself. The traded buffer is kept for a later read of its size; one
// of the right size is returned as it is.
func TestFetchCacheResize(t *testing.T) {
	fc := New(64<<20, &fakeShared{gen: 1, high: 1 << 40}, testMaxBuf)
	big := make([]byte, 100, 1<<20)
	if b := fc.Resize(big, 800<<10); cap(b) != 1<<20 || len(b) != 100 {
		t.Fatalf("a 1 MiB buffer for a read of about 800 KiB: got cap %d len %d, want it back", cap(b), len(b))
	}
	if b := fc.Resize(big, 600<<10); b != nil {
		t.Fatalf("a 1 MiB buffer for a read of about 600 KiB (copied: roomy), none recycled: got cap %d, want nil", cap(b))
	}
	if b := fc.takeSpare(600<<10, 2*600<<10+4096); cap(b) != 1<<20 {
		t.Fatalf("the traded 1 MiB buffer was not kept: a spare for 600 KiB has cap %d", cap(b))
	}
	fc.putFree(make([]byte, 0, 40<<10)) // past keptFor(20 KiB): not given out
	fc.putFree(make([]byte, 0, 24<<10)) // under Room(20 KiB)
	fc.putFree(make([]byte, 0, 30<<10))
	if b := fc.Resize(make([]byte, 0, 1<<20), 20<<10); cap(b) != 30<<10 {
		t.Fatalf("a 30 KiB buffer is recycled for a read of about 20 KiB: got cap %d", cap(b))
	}
	if b := fc.Resize(make([]byte, 0, 1<<20), 20<<10); b != nil {
		t.Fatalf("no recycled buffer between Room and keptFor of 20 KiB is left: got cap %d", cap(b))
	}
	small := make([]byte, 0, 8<<10)
	if b := fc.Resize(small, 20<<10); cap(b) != 8<<10 {
		t.Fatalf("an 8 KiB buffer for a read of about 20 KiB, none recycled: got cap %d, want it back", cap(b))
	}
	fc.putFree(make([]byte, 0, 28<<10))
	if b := fc.Resize(small, 20<<10); cap(b) != 28<<10 {
		t.Fatalf("an 8 KiB buffer for a read of about 20 KiB: got cap %d, want the recycled 28 KiB", cap(b))
	}
	if b := fc.takeSpare(8<<10, 8<<10); cap(b) != 8<<10 {
		t.Fatalf("the traded 8 KiB buffer was not kept: got cap %d", cap(b))
	}
	var off *Cache
	if b := off.Resize(big, 1); cap(b) != 1<<20 {
		t.Fatal("a cache that is off changed the buffer")
	}
}

// TestFetchCacheFreeClasses: recycled buffers are kept by power-of-two
// size, the newest freePerClass of each, so a run of small tail reads keeps
// buffers for the next small reads without pushing out the ones full
// reads' hand-overs need (storeOwned's spares), and a spare is at least
// the size asked for and at most about twice it.
func TestFetchCacheFreeClasses(t *testing.T) {
	fc := New(64<<20, &fakeShared{gen: 1, high: 1 << 40}, testMaxBuf)
	fc.putFree(make([]byte, 0, 1<<20))
	for range 2 * freePerClass {
		fc.putFree(make([]byte, 0, 10<<10))
	}
	fc.putFree(make([]byte, 0, testMaxBuf+1)) // over maxBuf: dropped
	if fc.freeBytes != int64(freePerClass*(10<<10)+(1<<20)) {
		t.Fatalf("free bytes %d, want %d small and one of 1 MiB", fc.freeBytes, freePerClass)
	}
	if b := fc.takeSpare(12<<10, 2*12<<10+4096); b != nil {
		t.Fatalf("a spare for 12 KiB: cap %d, want none (the kept ones are smaller)", cap(b))
	}
	if b := fc.takeSpare(6<<10, 9<<10); b != nil {
		t.Fatalf("a spare of 6 to 9 KiB: cap %d, want none (the kept ones are larger)", cap(b))
	}
	for i := range freePerClass {
		if b := fc.takeSpare(6<<10, 2*6<<10+4096); cap(b) != 10<<10 {
			t.Fatalf("spare %d for a 6 KiB read: cap %d, want 10 KiB", i, cap(b))
		}
	}
	if b := fc.takeSpare(6<<10, 2*6<<10+4096); b != nil {
		t.Fatalf("a fifth spare for 6 KiB: cap %d", cap(b))
	}
	if b := fc.takeSpare(100<<10, 2*100<<10+4096); b != nil {
		t.Fatalf("a spare for 100 KiB: cap %d, more than twice it", cap(b))
	}
	if b := fc.takeSpare(600<<10, 2*600<<10+4096); cap(b) != 1<<20 {
		t.Fatalf("a spare for a 600 KiB read: cap %d", cap(b))
	}
	if fc.freeBytes != 0 {
		t.Fatalf("free bytes %d after taking every buffer", fc.freeBytes)
	}
	// A full class drops its oldest buffer for the newest: the sizes reads
	// ask for now.
	for range freePerClass {
		fc.putFree(make([]byte, 0, 9<<10))
	}
	fc.putFree(make([]byte, 0, 12<<10))
	if fc.freeBytes != int64((freePerClass-1)*(9<<10)+(12<<10)) {
		t.Fatalf("free bytes %d after a full class took a newer buffer", fc.freeBytes)
	}
	if b := fc.takeSpare(11<<10, 2*11<<10+4096); cap(b) != 12<<10 {
		t.Fatalf("a spare for 11 KiB: cap %d, want the newest, 12 KiB", cap(b))
	}
}
