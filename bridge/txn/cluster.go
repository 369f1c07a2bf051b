package txn

// The coordinator's side of a kiggy cluster (docs/design/transactions.md
// §7): the instances share one system store, in which every coordinator
// persists its transactions and every leader its partitions' aborted
// indexes. An instance that takes over transactional ids, partitions or
// groups after a view change reads that store once (LoadSnapshot) and
// adopts what moved to it (Adopt, SyncPartitions, SyncPending).

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/wire"
)

// PartitionID names a partition.
type PartitionID struct {
	Topic     string
	Partition int32
}

// Snapshot is the shared system store's transactions and aborted indexes
// as one read found them.
type Snapshot struct {
	// Txns are the transactions by transactional id.
	Txns map[string]Txn
	// Aborted are the aborted indexes by partition.
	Aborted map[PartitionID][]Aborted
}

// unfinished reports whether t may still write to its partitions or
// commit its offsets.
func unfinished(t *Txn) bool {
	return t.State == Ongoing || t.State == PrepareCommit || t.State == PrepareAbort
}

// LoadSnapshot reads the transactions and aborted indexes of the system
// store.
func (c *Coordinator) LoadSnapshot(ctx context.Context) (*Snapshot, error) {
	s := &Snapshot{Txns: map[string]Txn{}, Aborted: map[PartitionID][]Aborted{}}
	abs, err := c.sys.LoadSystem(ctx, NamespaceAborted)
	if err != nil {
		return nil, err
	}
	for k, v := range abs {
		topic, p, ok := parseAbortedKey(k)
		list, err := decodeAborted(v)
		if !ok || err != nil {
			c.cfg.Logger.Warn("txn: skipping an unreadable aborted index", "key", k)
			continue
		}
		s.Aborted[PartitionID{topic, p}] = list
	}
	txns, err := c.sys.LoadSystem(ctx, NamespaceTxn)
	if err != nil {
		return nil, err
	}
	for id, v := range txns {
		t, err := Decode(id, v)
		if err != nil {
			c.cfg.Logger.Warn("txn: skipping an unreadable transaction", "transactional_id", id)
			continue
		}
		s.Txns[id] = t
	}
	return s, nil
}

// Partitions returns every partition s has state for: an unfinished
// transaction holds it, or it has aborted transactions.
func (s *Snapshot) Partitions() map[PartitionID]bool {
	out := make(map[PartitionID]bool, len(s.Aborted))
	for k := range s.Aborted {
		out[k] = true
	}
	for _, t := range s.Txns {
		if unfinished(&t) {
			for _, p := range t.Partitions {
				out[PartitionID{p.Topic, p.Partition}] = true
			}
		}
	}
	return out
}

// Adopt makes the coordinator hold the transactional ids it coordinates
// now: every id moved says moved here since the last sync is loaded from s
// (replacing what this instance held of it, which another coordinator has
// changed since), and every id own says is coordinated elsewhere is
// dropped. It returns the ids loaded; call Recover next to complete the
// prepared ones among them.
func (c *Coordinator) Adopt(s *Snapshot, own, moved func(id string) bool) []string {
	var loaded []string
	for _, e := range c.entries() {
		e.mu.Lock()
		id := e.t.ID
		if !e.gone && !own(id) {
			c.removeLocked(e)
		}
		e.mu.Unlock()
	}
	for id, t := range s.Txns {
		if !own(id) || !moved(id) {
			continue
		}
		e := c.lockEntry(id)
		if e != nil {
			c.removeLocked(e)
			e.mu.Unlock()
		}
		ne := &entry{t: t}
		c.mu.Lock()
		c.txns[id] = ne
		c.byPID[t.ProducerID] = ne
		c.track(&ne.t, +1)
		c.mu.Unlock()
		loaded = append(loaded, id)
	}
	return loaded
}

// removeLocked takes e out of the coordinator's maps (caller holds e's
// lock).
func (c *Coordinator) removeLocked(e *entry) {
	e.gone = true
	c.mu.Lock()
	defer c.mu.Unlock()
	c.track(&e.t, -1)
	if c.txns[e.t.ID] == e {
		delete(c.txns, e.t.ID)
	}
	if c.byPID[e.t.ProducerID] == e {
		delete(c.byPID, e.t.ProducerID)
	}
}

// SyncPartitions makes the index hold, for every partition this instance
// leads and took over since the last sync (moved), what s says of it: the
// unfinished transactions holding it, from their first offsets, and its
// aborted transactions; and drops every partition it no longer leads
// (leads false). A transaction's later appends here open it again at no
// lower offset, which keeps the earlier first offset.
func (c *Coordinator) SyncPartitions(s *Snapshot, leads, moved func(topic string, partition int32) bool) {
	for _, p := range c.Index.partitions() {
		if !leads(p.Topic, p.Partition) {
			c.Index.drop(p.Topic, p.Partition)
		}
	}
	for p := range s.Partitions() {
		if !leads(p.Topic, p.Partition) || !moved(p.Topic, p.Partition) {
			continue
		}
		open := map[int64]int64{}
		for _, t := range s.Txns {
			if !unfinished(&t) {
				continue
			}
			for _, tp := range t.Partitions {
				if tp.Topic == p.Topic && tp.Partition == p.Partition {
					open[t.ProducerID] = tp.First
				}
			}
		}
		c.Index.replace(p.Topic, p.Partition, open, s.Aborted[p])
	}
}

// pidGroup names the offsets one producer's transaction holds for a group
// whose coordinator is this instance while the transaction's coordinator
// is another (NotePending).
type pidGroup struct {
	producerID int64
	group      string
}

// remotePending is what NotePending keeps of one producer's offsets for a
// group.
type remotePending struct {
	id   string // the transactional id
	keys []pendingKey
}

// NotePending records, at a group's coordinator, that transactional id's
// open transaction (producer pid) holds offsets of group, kept by the
// transaction's coordinator on another instance: until ResolvePending,
// OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for them.
func (c *Coordinator) NotePending(id string, pid int64, group string, offsets []Offset) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := pidGroup{pid, strings.Clone(group)}
	rp := c.remote[k]
	if rp == nil {
		rp = &remotePending{id: strings.Clone(id)}
		c.remote[k] = rp
	}
	for _, o := range offsets {
		pk := pendingKey{k.group, strings.Clone(o.Topic), o.Partition}
		found := false
		for _, x := range rp.keys {
			if x == pk {
				found = true
				break
			}
		}
		if !found {
			rp.keys = append(rp.keys, pk)
			c.pending[pk]++
		}
	}
}

// ResolvePending ends what NotePending recorded for producer pid and
// group: the transaction completed.
func (c *Coordinator) ResolvePending(pid int64, group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resolveLocked(pidGroup{pid, group})
}

func (c *Coordinator) resolveLocked(k pidGroup) {
	rp := c.remote[k]
	if rp == nil {
		return
	}
	delete(c.remote, k)
	for _, pk := range rp.keys {
		if c.pending[pk]--; c.pending[pk] <= 0 {
			delete(c.pending, pk)
		}
	}
}

// RemotePending reports whether NotePending holds anything.
func (c *Coordinator) RemotePending() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.remote) > 0
}

// SyncPending reconciles what NotePending holds with s: offsets of a
// transaction s shows finished, or replaced by another producer, are
// resolved (their coordinator's notice went to an instance that no longer
// coordinates the group), and the offsets of every unfinished transaction
// coordinated elsewhere (own false) for a group this instance coordinates
// (coordinates true) are noted (a group that moved here).
func (c *Coordinator) SyncPending(s *Snapshot, own func(id string) bool, coordinates func(group string) bool) {
	c.mu.Lock()
	for k, rp := range c.remote {
		t, ok := s.Txns[rp.id]
		if !ok || !unfinished(&t) || t.ProducerID != k.producerID || !coordinates(k.group) {
			c.resolveLocked(k)
		}
	}
	c.mu.Unlock()
	for id, t := range s.Txns {
		if !unfinished(&t) || own(id) {
			continue
		}
		for _, g := range t.Groups {
			if len(g.Offsets) > 0 && coordinates(g.Group) {
				c.NotePending(id, t.ProducerID, g.Group, g.Offsets)
			}
		}
	}
}

// leaderProducer is what a partition leader in a cluster keeps of a
// transactional producer whose batches it appends: the lock that orders
// its appends before the markers that end its transactions here, and the
// highest epoch of a marker applied here (a batch of an older epoch is a
// zombie's: its transaction was aborted with the epoch bumped).
type leaderProducer struct {
	mu     sync.RWMutex
	epoch  int16
	usedMs atomic.Int64
}

// leaderIdle is how long a leaderProducer unused is kept.
const leaderIdle = time.Hour

// leader returns producer pid's leaderProducer, creating it.
func (c *Coordinator) leader(pid int64) *leaderProducer {
	c.mu.Lock()
	defer c.mu.Unlock()
	lp := c.leaders[pid]
	if lp == nil {
		lp = &leaderProducer{epoch: -1}
		c.leaders[pid] = lp
	}
	lp.usedMs.Store(c.nowMs())
	return lp
}

// AdmitAppend admits, at the leader of topic/partition in a cluster, a
// transactional batch of producer pid at epoch: refused with
// INVALID_PRODUCER_EPOCH when a marker of a newer epoch ended a
// transaction of pid here (the producer was fenced); else the
// transaction is open in the partition from its high watermark on, before
// the batch is appended (Kafka's leader learns a transaction's first
// offset from its first append; docs/design/transactions.md §7). check,
// when not nil, is the coordinator's own admission (CheckProduce), for a
// transaction coordinated by this instance. On NoError the caller appends
// and then calls Done.
func (c *Coordinator) AdmitAppend(ctx context.Context, pid int64, epoch int16, topic string, partition int32, check func() (Produce, wire.ErrorCode)) (Produce, wire.ErrorCode) {
	// The coordinator's check first: its lock, held for writing across a
	// completion, is taken before the leader's, as complete takes them.
	var inner Produce
	if check != nil {
		var code wire.ErrorCode
		if inner, code = check(); code != wire.NoError {
			return Produce{}, code
		}
	}
	lp := c.leader(pid)
	lp.mu.RLock()
	inner.Done() // the leader's lock orders the markers from here on
	if epoch < lp.epoch {
		lp.mu.RUnlock()
		return Produce{}, wire.InvalidProducerEpoch
	}
	if _, open := c.Index.OpenFirst(topic, partition, pid); !open {
		hw, err := c.backend.HighWatermark(ctx, topic, partition)
		if err != nil {
			lp.mu.RUnlock()
			return Produce{}, storeCode(err)
		}
		c.Index.Open(topic, partition, pid, hw)
	}
	return Produce{mu: &lp.mu}, wire.NoError
}

// fence is ApplyMarker's hold on pid in a cluster: it waits for the
// appends admitted before it and records the marker's epoch.
func (c *Coordinator) fence(marker mapping.Control) func() {
	if c.cfg.Cluster == nil {
		return func() {}
	}
	lp := c.leader(marker.ProducerID)
	lp.mu.Lock()
	if marker.ProducerEpoch > lp.epoch {
		lp.epoch = marker.ProducerEpoch
	}
	return lp.mu.Unlock
}

// pruneLeaders forgets the leaderProducers unused for leaderIdle.
func (c *Coordinator) pruneLeaders(now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pid, lp := range c.leaders {
		if now-lp.usedMs.Load() > leaderIdle.Milliseconds() {
			delete(c.leaders, pid)
		}
	}
}

// ResolvePendingWhere is ResolvePending for every group of producer pid
// that in reports (a marker for a partition of __consumer_offsets names
// the groups of that partition).
func (c *Coordinator) ResolvePendingWhere(pid int64, in func(group string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.remote {
		if k.producerID == pid && in(k.group) {
			c.resolveLocked(k)
		}
	}
}

// Coordinates returns the transactional id of producer pid when this
// coordinator holds it.
func (c *Coordinator) Coordinates(pid int64) (id string, ok bool) {
	c.mu.RLock()
	e := c.byPID[pid]
	c.mu.RUnlock()
	if e == nil {
		return "", false
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.t.ID, !e.gone
}
