package txn

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Aborted is one aborted transaction in one partition: its producer, its
// first offset there (a lower bound: Partition.First) and the offset of its
// abort marker. Fetch lists it to read_committed consumers, which skip the
// producer's batches from First up to the marker (KIP-98).
type Aborted struct {
	ProducerID int64
	First      int64
	Last       int64
}

// partKey names a partition.
type partKey struct {
	topic     string
	partition int32
}

// partState is one partition's transactions: the open ones, by producer,
// with their first offsets, and the aborted ones still in the log, in
// marker order (sorted by Last), with the longest span of any of them
// (Last − First, an upper bound once some were pruned), which bounds how
// far past a read's end AbortedIn looks.
type partState struct {
	open    map[int64]int64
	aborted []Aborted
	maxSpan int64
}

// setAborted replaces p's aborted list with a sorted copy of list.
func (p *partState) setAborted(list []Aborted) {
	p.aborted = slices.Clone(list)
	slices.SortStableFunc(p.aborted, func(a, b Aborted) int { return cmp.Compare(a.Last, b.Last) })
	p.maxSpan = 0
	for _, a := range p.aborted {
		p.maxSpan = max(p.maxSpan, a.Last-a.First)
	}
}

// addAborted inserts a into p's aborted list in marker order: at its end
// but for markers appended concurrently and closed out of order.
func (p *partState) addAborted(a Aborted) {
	i := len(p.aborted)
	for i > 0 && p.aborted[i-1].Last > a.Last {
		i--
	}
	p.aborted = slices.Insert(p.aborted, i, a)
	p.maxSpan = max(p.maxSpan, a.Last-a.First)
}

// Index is, per partition, what read_committed needs
// (docs/design/transactions.md §4): the last stable offset (the first offset of the
// earliest open transaction, or the high watermark) and the aborted
// transactions of an offset range. A partition no transaction ever touched
// costs one atomic load.
type Index struct {
	used  atomic.Bool // any partition has state
	mu    sync.RWMutex
	parts map[partKey]*partState
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{parts: make(map[partKey]*partState)} }

// Active reports whether any partition ever had transaction state.
func (x *Index) Active() bool { return x.used.Load() }

// part returns the state of topic/partition, creating it (caller holds mu).
func (x *Index) part(topic string, partition int32) *partState {
	k := partKey{topic, partition}
	p := x.parts[k]
	if p == nil {
		p = &partState{open: make(map[int64]int64)}
		x.parts[partKey{strings.Clone(topic), partition}] = p
		x.used.Store(true)
	}
	return p
}

// Open records that producerID's transaction is open in topic/partition
// from first on; a second Open of the same transaction keeps the earlier
// first offset.
func (x *Index) Open(topic string, partition int32, producerID, first int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.part(topic, partition)
	if f, ok := p.open[producerID]; !ok || first < f {
		p.open[producerID] = first
	}
}

// Close ends producerID's transaction in topic/partition with its marker at
// offset marker; an abort is added to the aborted index, and returned with
// ok=true so the caller persists the partition's aborted list (Aborted).
func (x *Index) Close(topic string, partition int32, producerID, marker int64, commit bool) (ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.part(topic, partition)
	first, open := p.open[producerID]
	delete(p.open, producerID)
	if commit || !open {
		// Not open: its marker was written already (a completion
		// retried writes every marker again).
		return false
	}
	for _, a := range p.aborted {
		if a.ProducerID == producerID && a.First == first {
			return false // the same transaction, its marker written again after a restart
		}
	}
	p.addAborted(Aborted{ProducerID: producerID, First: first, Last: marker})
	return true
}

// Touched reports whether topic/partition has transaction state (an open
// transaction or an aborted one), and the lowest first offset of its open
// transactions (math.MaxInt64 when none is open): what a read_committed
// read needs to know before it starts.
func (x *Index) Touched(topic string, partition int32) (firstOpen int64, touched bool) {
	if !x.used.Load() {
		return math.MaxInt64, false
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	p := x.parts[partKey{topic, partition}]
	if p == nil || len(p.open) == 0 && len(p.aborted) == 0 {
		return math.MaxInt64, false
	}
	firstOpen = math.MaxInt64
	for _, f := range p.open {
		firstOpen = min(firstOpen, f)
	}
	return firstOpen, true
}

// OpenFirst returns the first offset of producerID's open transaction in
// topic/partition; ok=false when it has none there.
func (x *Index) OpenFirst(topic string, partition int32, producerID int64) (int64, bool) {
	if !x.used.Load() {
		return -1, false
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if p := x.parts[partKey{topic, partition}]; p != nil {
		f, ok := p.open[producerID]
		return f, ok
	}
	return -1, false
}

// LastStable returns topic/partition's last stable offset given its high
// watermark.
func (x *Index) LastStable(topic string, partition int32, high int64) int64 {
	if !x.used.Load() {
		return high
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	p := x.parts[partKey{topic, partition}]
	if p == nil {
		return high
	}
	lso := high
	for _, f := range p.open {
		lso = min(lso, f)
	}
	return lso
}

// AbortedIn appends to dst the aborted transactions of topic/partition that
// a read of offsets [from, to) must list: every one whose marker is at or
// past from and whose first offset is below to (Kafka's
// LogSegment.collectAbortedTxns). It looks only at those whose markers lie
// in [from, to + the longest span): a binary search finds the first, and
// past the last no first offset can be below to.
func (x *Index) AbortedIn(dst []Aborted, topic string, partition int32, from, to int64) []Aborted {
	if !x.used.Load() {
		return dst
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	p := x.parts[partKey{topic, partition}]
	if p == nil {
		return dst
	}
	i, _ := slices.BinarySearchFunc(p.aborted, from, func(a Aborted, from int64) int { return cmp.Compare(a.Last, from) })
	for _, a := range p.aborted[i:] {
		if a.Last-p.maxSpan >= to {
			break // this and every later one start at or past to
		}
		if a.First < to {
			dst = append(dst, a)
		}
	}
	return dst
}

// AbortedList returns a copy of topic/partition's aborted index.
func (x *Index) AbortedList(topic string, partition int32) []Aborted {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if p := x.parts[partKey{topic, partition}]; p != nil {
		return slices.Clone(p.aborted)
	}
	return nil
}

// SetAborted replaces topic/partition's aborted index (loading it).
func (x *Index) SetAborted(topic string, partition int32, list []Aborted) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.part(topic, partition).setAborted(list)
}

// Prune drops the aborted transactions of topic/partition whose markers
// are below logStart (retention or DeleteRecords removed them); it reports
// whether any was dropped.
func (x *Index) Prune(topic string, partition int32, logStart int64) bool {
	if !x.used.Load() {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.parts[partKey{topic, partition}]
	if p == nil {
		return false
	}
	n := len(p.aborted)
	p.aborted = slices.DeleteFunc(p.aborted, func(a Aborted) bool { return a.Last < logStart })
	return len(p.aborted) != n
}

// WithAborted calls fn for every partition that has aborted transactions.
func (x *Index) WithAborted(fn func(topic string, partition int32)) {
	x.mu.RLock()
	var keys []partKey
	for k, p := range x.parts {
		if len(p.aborted) > 0 {
			keys = append(keys, k)
		}
	}
	x.mu.RUnlock()
	for _, k := range keys {
		fn(k.topic, k.partition)
	}
}

// DropTopic forgets every partition of a deleted topic and returns those
// that had aborted transactions.
func (x *Index) DropTopic(topic string) []int32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	var had []int32
	for k, p := range x.parts {
		if k.topic == topic {
			if len(p.aborted) > 0 {
				had = append(had, k.partition)
			}
			delete(x.parts, k)
		}
	}
	return had
}

// abortedKey is the system-store key of a partition's aborted index.
func abortedKey(topic string, partition int32) string {
	return topic + "/" + strconv.FormatInt(int64(partition), 10)
}

// parseAbortedKey reverses abortedKey (Kafka topic names hold no '/').
func parseAbortedKey(k string) (string, int32, bool) {
	i := strings.LastIndexByte(k, '/')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(k[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, false
	}
	return k[:i], int32(p), true
}

// encodeAborted is a partition's aborted index as persisted: version u8
// (1), u32 count, then per entry producer id, first and marker offsets
// (i64 each), little-endian.
func encodeAborted(list []Aborted) []byte {
	b := make([]byte, 0, 5+24*len(list))
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(list)))
	for _, a := range list {
		b = binary.LittleEndian.AppendUint64(b, uint64(a.ProducerID))
		b = binary.LittleEndian.AppendUint64(b, uint64(a.First))
		b = binary.LittleEndian.AppendUint64(b, uint64(a.Last))
	}
	return b
}

// decodeAborted reverses encodeAborted.
func decodeAborted(v []byte) ([]Aborted, error) {
	d := decoder{b: v}
	if d.u8() != 1 {
		return nil, ErrCorrupt
	}
	n := d.count(24)
	list := make([]Aborted, 0, n)
	for range n {
		list = append(list, Aborted{ProducerID: int64(d.u64()), First: int64(d.u64()), Last: int64(d.u64())})
	}
	if d.bad || len(d.b) != 0 {
		return nil, ErrCorrupt
	}
	return list, nil
}

// partitions returns every partition the index has state for.
func (x *Index) partitions() []PartitionID {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]PartitionID, 0, len(x.parts))
	for k := range x.parts {
		out = append(out, PartitionID{k.topic, k.partition})
	}
	return out
}

// drop forgets topic/partition (another instance leads it now).
func (x *Index) drop(topic string, partition int32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.parts, partKey{topic, partition})
}

// replace sets topic/partition's open transactions and aborted list
// (taking the partition over from another instance).
func (x *Index) replace(topic string, partition int32, open map[int64]int64, aborted []Aborted) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.part(topic, partition)
	p.open = open
	p.setAborted(aborted)
}
