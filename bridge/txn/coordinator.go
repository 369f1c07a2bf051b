package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/wire"
)

// System-store namespaces: the transactions by transactional id, and the
// aborted index by partition ("topic/partition").
const (
	NamespaceTxn     = "txn"
	NamespaceAborted = "txn-aborted"
)

// Backend is what the coordinator needs of the gateway: the partitions'
// high watermarks, the markers' appends and the group offsets' commits.
type Backend interface {
	// HighWatermark returns topic/partition's high watermark.
	HighWatermark(ctx context.Context, topic string, partition int32) (int64, error)
	// WriteMarker appends c to topic/partition (after every append of the
	// transaction's producer to it) and returns the marker's offset.
	WriteMarker(ctx context.Context, topic string, partition int32, c mapping.Control) (int64, error)
	// CommitOffsets stores a committed transaction's offsets of group.
	CommitOffsets(ctx context.Context, group string, offsets []Offset) error
	// NewProducerID returns a fresh producer id, or -1 when none is left.
	NewProducerID() int64
}

// Config configures a Coordinator; zero fields take Kafka's defaults.
type Config struct {
	// MaxTimeout is transaction.max.timeout.ms: a longer
	// transaction.timeout.ms is INVALID_TRANSACTION_TIMEOUT (900 s).
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms: an id with no
	// transaction open that long is forgotten (7 days).
	IDExpiration time.Duration
	// MaxIDs caps the transactional ids held: InitProducerId for a new id
	// past it is refused with COORDINATOR_NOT_AVAILABLE (15, which clients
	// retry), counted in Stats.Refused; no id is evicted for it, since an
	// id's producer may still be running. 0 means no cap. No Kafka
	// equivalent (ids only expire, after IDExpiration).
	MaxIDs int
	// Now is the clock (time.Now).
	Now func() time.Time
	// Logger reports transactions aborted by timeout and markers that
	// failed (slog.Default).
	Logger *slog.Logger
	// Cluster connects the coordinator to the other instances of a kiggy
	// cluster (docs/design/transactions.md §7); nil for a single instance,
	// which leads every partition and coordinates every group itself.
	Cluster *Cluster
}

// Cluster is what a coordinator in a kiggy cluster needs of the gateway:
// the partitions of a transaction and the groups of its offsets are led and
// coordinated by instances of their own (docs/design/transactions.md §7).
type Cluster struct {
	// SendMarker has topic/partition's leader apply marker
	// (WriteTxnMarkers) when it is another instance; sent=false when this
	// instance leads it, and the coordinator applies the marker itself.
	SendMarker func(ctx context.Context, topic string, partition int32, marker mapping.Control) (sent bool, err error)
	// ResolveGroup tells group's coordinator that the transaction of
	// marker is complete (its offsets committed, or dropped on abort), once
	// they are: it stops answering UNSTABLE_OFFSET_COMMIT for them and reads
	// the committed offsets. local=true when this instance coordinates the
	// group (nothing to send).
	ResolveGroup func(ctx context.Context, group string, marker mapping.Control) (local bool, err error)
	// Own reports whether this instance coordinates transactional id now;
	// on ok the caller acts on the id and calls release when done, which
	// holds back this instance's hand-over of the id to another one until
	// then (docs/design/cluster.md §5).
	Own func(id string) (release func(), ok bool)
}

// Kafka's defaults.
const (
	DefaultMaxTimeout   = 900 * time.Second
	DefaultIDExpiration = 7 * 24 * time.Hour
)

// Coordinator is the transaction coordinator of one gateway.
type Coordinator struct {
	cfg     Config
	backend Backend
	sys     store.SystemStore
	// Index is the per-partition view read_committed reads.
	Index *Index

	mu    sync.RWMutex
	txns  map[string]*entry
	byPID map[int64]*entry
	// pending counts, per group and partition, the open transactions
	// holding an offset for it (OffsetFetch's require_stable).
	pending map[pendingKey]int
	// remote holds, at a group's coordinator, the offsets that transactions
	// coordinated by other instances keep for its groups (NotePending).
	remote map[pidGroup]*remotePending
	// leaders are the transactional producers whose batches this instance
	// appends as a partition leader in a cluster (AdmitAppend).
	leaders map[int64]*leaderProducer

	// Stats counts completed transactions.
	Stats Stats

	// abortedMu serializes the stores of the aborted indexes, each
	// reading its partition's list as it stores it, so the one stored
	// last holds every abort closed before it (two transactions aborting
	// in a partition at once, or an abort and a prune, would otherwise
	// store their lists in either order and lose one).
	abortedMu sync.Mutex
}

// Stats are the coordinator's counters, for the gateway's metrics.
type Stats struct {
	// Committed and Aborted count transactions completed either way;
	// TimedOut counts the aborts Tick made for a timeout.
	Committed, Aborted, TimedOut atomic.Uint64
	// Refused counts InitProducerId requests for a new id refused at
	// Config.MaxIDs.
	Refused atomic.Uint64
}

// IDs counts the transactional ids held.
func (c *Coordinator) IDs() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.txns)
}

// Known reports whether the coordinator knows any transactional id: a
// gateway without one has nothing for Tick to do.
func (c *Coordinator) Known() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.txns) > 0
}

// Open counts the transactions open (Ongoing or being completed).
func (c *Coordinator) Open() int {
	n := 0
	for _, e := range c.entries() {
		e.mu.RLock()
		if s := e.t.State; s == Ongoing || s == PrepareCommit || s == PrepareAbort {
			n++
		}
		e.mu.RUnlock()
	}
	return n
}

type pendingKey struct {
	group, topic string
	partition    int32
}

// entry is one transactional id. Its lock is held for writing across a
// transition, I/O included, and for reading by a transactional append
// across its check and its append (CheckProduce), so a marker always
// follows every append of its transaction.
type entry struct {
	mu sync.RWMutex
	t  Txn
	// gone is set, under mu, when the entry leaves the coordinator's maps
	// (its id expired, or its creation was not stored): a request that
	// waited for mu looks the id up again instead of acting on it.
	gone bool
	// timingOut is set while Tick's abort of the transaction, past its
	// timeout, waits for the appends in flight: no new one is admitted.
	timingOut atomic.Bool
}

// New returns a coordinator over backend, persisting to sys.
func New(cfg Config, backend Backend, sys store.SystemStore) *Coordinator {
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.IDExpiration <= 0 {
		cfg.IDExpiration = DefaultIDExpiration
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Coordinator{cfg: cfg, backend: backend, sys: sys, Index: NewIndex(),
		txns: make(map[string]*entry), byPID: make(map[int64]*entry), pending: make(map[pendingKey]int), remote: make(map[pidGroup]*remotePending), leaders: make(map[int64]*leaderProducer)}
}

func (c *Coordinator) nowMs() int64 { return c.cfg.Now().UnixMilli() }

// Load reads the persisted transactions and aborted indexes, and opens the
// partitions of every unfinished transaction in the index. Call Recover
// next to complete the prepared ones.
func (c *Coordinator) Load(ctx context.Context) error {
	snap, err := c.LoadSnapshot(ctx)
	if err != nil {
		return err
	}
	for p, list := range snap.Aborted {
		c.Index.SetAborted(p.Topic, p.Partition, list)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, t := range snap.Txns {
		e := &entry{t: t}
		c.txns[id] = e
		c.byPID[t.ProducerID] = e
		c.track(&e.t, +1)
	}
	return nil
}

// Recover completes every transaction a previous run prepared but did not
// finish (its markers, its offsets), as Kafka's coordinator does when it
// loads its partition of the transaction log.
func (c *Coordinator) Recover(ctx context.Context) {
	for _, e := range c.entries() {
		release, ok := c.own(e)
		if !ok {
			continue
		}
		c.recoverOne(ctx, e)
		release()
	}
}

// recoverOne completes e's transaction when it is prepared.
func (c *Coordinator) recoverOne(ctx context.Context, e *entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.gone && (e.t.State == PrepareCommit || e.t.State == PrepareAbort) {
		if err := c.complete(ctx, e); err != nil {
			c.cfg.Logger.Warn("txn: completing a prepared transaction failed; retried later",
				"transactional_id", e.t.ID, "err", err)
		}
	}
}

// entries returns every entry (a snapshot).
func (c *Coordinator) entries() []*entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*entry, 0, len(c.txns))
	for _, e := range c.txns {
		out = append(out, e)
	}
	return out
}

// track adds (+1) or removes (-1) t's open partitions and pending offsets
// from the index and the pending counts (caller holds c.mu or owns t's
// entry before it is shared).
func (c *Coordinator) track(t *Txn, sign int) {
	if t.State != Ongoing && t.State != PrepareCommit && t.State != PrepareAbort {
		return
	}
	if sign > 0 && c.cfg.Cluster == nil {
		// In a cluster the partition's leader opens it, at the first
		// append of the transaction there (docs/design/transactions.md §7).
		for _, p := range t.Partitions {
			c.Index.Open(p.Topic, p.Partition, t.ProducerID, p.First)
		}
	}
	for _, g := range t.Groups {
		for _, o := range g.Offsets {
			k := pendingKey{g.Group, o.Topic, o.Partition}
			if c.pending[k] += sign; c.pending[k] <= 0 {
				delete(c.pending, k)
			}
		}
	}
}

// persist stores e's state; the caller answers only once it returns nil.
func (c *Coordinator) persist(ctx context.Context, t *Txn) error {
	return c.sys.PutSystem(ctx, NamespaceTxn, t.ID, t.Encode())
}

// fenced is the code for a stale epoch at request version v of an API
// that answers PRODUCER_FENCED from version fencedFrom (KIP-588).
func fenced(v, fencedFrom int16) wire.ErrorCode {
	if v >= fencedFrom {
		return wire.ProducerFenced
	}
	return wire.InvalidProducerEpoch
}

// The coordinator's methods copy what they keep of their string
// arguments, which may alias a request frame.

// InitProducerID answers InitProducerId for a transactional id
// (TransactionCoordinator.handleInitProducerId): a new id at epoch 0, or
// the id's next epoch, fencing the previous producer; an open transaction
// is aborted first. expectedPID/expectedEpoch are the producer's own
// (KIP-360, v3+; -1 otherwise); v is the request version.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, expectedPID int64, expectedEpoch int16, v int16) (int64, int16, wire.ErrorCode) {
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		return -1, -1, wire.InvalidTransactionTimeout
	}
	e := c.lockOrHold(id)
	if e == nil {
		return c.initNew(ctx, id, timeoutMs)
	}
	defer e.mu.Unlock()
	return c.initAgain(ctx, e, timeoutMs, expectedPID, expectedEpoch, v)
}

// lockOrHold returns id's entry with its lock held, like lockEntry, or nil
// with c.mu held when the id has none, so that the caller may add one.
func (c *Coordinator) lockOrHold(id string) *entry {
	c.mu.Lock()
	e := c.txns[id]
	for e != nil {
		c.mu.Unlock()
		e.mu.Lock()
		if !e.gone {
			break
		}
		e.mu.Unlock() // removed while we waited: look again
		c.mu.Lock()
		e = c.txns[id]
	}
	return e
}

// initNew gives a transactional id its first producer id, at epoch 0, if
// the id cap (MaxIDs) allows another. The caller holds c.mu; initNew
// releases it.
func (c *Coordinator) initNew(ctx context.Context, id string, timeoutMs int32) (int64, int16, wire.ErrorCode) {
	if c.cfg.MaxIDs > 0 && len(c.txns) >= c.cfg.MaxIDs {
		c.mu.Unlock()
		c.Stats.Refused.Add(1)
		return -1, -1, wire.CoordinatorNotAvailable
	}
	pid := c.backend.NewProducerID()
	if pid < 0 {
		c.mu.Unlock()
		return -1, -1, wire.UnknownServerError
	}
	now := c.nowMs()
	id = strings.Clone(id) // the request's string may alias its frame
	e := &entry{t: Txn{ID: id, ProducerID: pid, LastEpoch: -1, TimeoutMs: timeoutMs, State: Empty, UpdateMs: now}}
	e.mu.Lock()
	c.txns[id] = e
	c.byPID[pid] = e
	c.mu.Unlock()
	defer e.mu.Unlock()
	if err := c.persist(ctx, &e.t); err != nil {
		e.gone = true
		c.mu.Lock()
		delete(c.txns, id)
		delete(c.byPID, pid)
		c.mu.Unlock()
		return -1, -1, storeCode(err)
	}
	return pid, 0, wire.NoError
}

// initAgain answers InitProducerId for an id that has a producer (the
// caller holds e's lock): the same answer to the retry of the bump just
// made, else the next epoch (or a new producer id once the epoch is
// exhausted) after completing or aborting what the previous producer left.
func (c *Coordinator) initAgain(ctx context.Context, e *entry, timeoutMs int32, expectedPID int64, expectedEpoch int16, v int16) (int64, int16, wire.ErrorCode) {
	t := &e.t
	if expectedPID >= 0 && expectedPID == t.ProducerID && expectedEpoch == t.LastEpoch && t.State == Empty {
		// KIP-360: the retry of the bump just made (its answer was lost),
		// nothing begun since: the same answer again.
		return t.ProducerID, t.Epoch, wire.NoError
	}
	if expectedPID >= 0 && !(expectedPID == t.ProducerID && expectedEpoch == t.Epoch) {
		// KIP-360: only the current producer may bump its own epoch.
		return -1, -1, fenced(v, 4)
	}
	switch t.State {
	case PrepareCommit, PrepareAbort:
		// Completing after a crash; the client retries.
		if err := c.complete(ctx, e); err != nil {
			return -1, -1, wire.ConcurrentTransactions
		}
	case Ongoing:
		// A new producer for the id: abort what the old one left open,
		// with a bumped epoch so the old one is fenced.
		if code := c.abortFenced(ctx, e); code != wire.NoError {
			return -1, -1, code
		}
	}
	next := *t
	next.TimeoutMs = timeoutMs
	next.State = Empty
	next.UpdateMs = c.nowMs()
	next.Partitions, next.Groups = nil, nil
	if next.Epoch >= math.MaxInt16-1 {
		// Epoch exhausted: a new producer id at epoch 0.
		pid := c.backend.NewProducerID()
		if pid < 0 {
			return -1, -1, wire.UnknownServerError
		}
		next.ProducerID, next.Epoch, next.LastEpoch = pid, 0, -1
	} else {
		next.LastEpoch = next.Epoch
		next.Epoch++
	}
	if err := c.persist(ctx, &next); err != nil {
		return -1, -1, storeCode(err)
	}
	c.replace(e, next)
	return next.ProducerID, next.Epoch, wire.NoError
}

// replace installs next as e's state (caller holds e's lock), keeping the
// producer-id map and pending counts current.
func (c *Coordinator) replace(e *entry, next Txn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.track(&e.t, -1)
	if next.ProducerID != e.t.ProducerID {
		delete(c.byPID, e.t.ProducerID)
		c.byPID[next.ProducerID] = e
	}
	e.t = next
	c.track(&e.t, +1)
}

// abortFenced aborts e's open transaction with the epoch bumped (a new
// producer took the id, or the transaction timed out), fencing its
// producer. Caller holds e's lock.
func (c *Coordinator) abortFenced(ctx context.Context, e *entry) wire.ErrorCode {
	next := e.t.clone()
	if next.Epoch < math.MaxInt16 {
		// Up to 32767 from the last usable epoch, as Kafka's
		// prepareFenceProducerEpoch: the next InitProducerId then
		// finds the epoch exhausted and rotates the producer id.
		next.Epoch++
	}
	next.State = PrepareAbort
	next.UpdateMs = c.nowMs()
	if err := c.persist(ctx, &next); err != nil {
		return storeCode(err)
	}
	c.replace(e, next)
	if err := c.complete(ctx, e); err != nil {
		return wire.ConcurrentTransactions
	}
	return wire.NoError
}

// check validates a request's producer id and epoch against e (caller
// holds e's lock): INVALID_PRODUCER_ID_MAPPING for another id, a fencing
// code for another epoch.
func check(t *Txn, pid int64, epoch int16, v, fencedFrom int16) wire.ErrorCode {
	switch {
	case t.ProducerID != pid:
		return wire.InvalidProducerIDMapping
	case t.Epoch != epoch:
		return fenced(v, fencedFrom)
	}
	return wire.NoError
}

// maxString is the longest string the persisted state can hold (a u16
// length: Txn.Encode); a longer topic, group or metadata is refused
// before it is kept, or the transaction would not load after a restart.
const maxString = math.MaxUint16

// lookup returns the entry of id, or nil.
func (c *Coordinator) lookup(id string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.txns[id]
}

// lockEntry returns the entry of id locked for writing, or nil; an entry
// removed while this waited for its lock is looked up again.
func (c *Coordinator) lockEntry(id string) *entry {
	for {
		e := c.lookup(id)
		if e == nil {
			return nil
		}
		e.mu.Lock()
		if !e.gone {
			return e
		}
		e.mu.Unlock()
	}
}

// begin moves t to Ongoing when it is not (a new transaction).
func (c *Coordinator) begin(t *Txn) {
	if t.State != Ongoing {
		t.State = Ongoing
		t.StartMs = c.nowMs()
		t.Partitions, t.Groups = nil, nil
	}
	t.UpdateMs = c.nowMs()
}

// PartitionResult is one partition's outcome of AddPartitions.
type PartitionResult struct {
	Topic     string
	Partition int32
	Code      wire.ErrorCode
}

// AddPartitions adds partitions to id's transaction
// (AddPartitionsToTxn): the whole request succeeds or fails alike, as
// Kafka's coordinator answers it. unknown lists partitions the gateway
// found missing: they answer UNKNOWN_TOPIC_OR_PARTITION and the others
// OPERATION_NOT_ATTEMPTED. It returns one code for all the partitions.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []Partition, v int16) wire.ErrorCode {
	for _, p := range parts {
		if len(p.Topic) > maxString {
			return wire.InvalidTopicException
		}
	}
	e := c.lockEntry(id)
	if e == nil {
		return wire.InvalidProducerIDMapping
	}
	defer e.mu.Unlock()
	t := &e.t
	if code := check(t, pid, epoch, v, 2); code != wire.NoError {
		return code
	}
	if t.State == PrepareCommit || t.State == PrepareAbort {
		return wire.ConcurrentTransactions
	}
	next := t.clone()
	c.begin(&next)
	added := false
	for _, p := range parts {
		if next.hasPartition(p.Topic, p.Partition) {
			continue
		}
		hw, err := c.backend.HighWatermark(ctx, p.Topic, p.Partition)
		if err != nil {
			return storeCode(err)
		}
		next.Partitions = append(next.Partitions, Partition{Topic: strings.Clone(p.Topic), Partition: p.Partition, First: hw})
		added = true
	}
	if !added && t.State == Ongoing {
		return wire.NoError // all there already (a retry)
	}
	if err := c.persist(ctx, &next); err != nil {
		return storeCode(err)
	}
	c.replace(e, next)
	return wire.NoError
}

// AddOffsets adds group's offsets to id's transaction (AddOffsetsToTxn).
func (c *Coordinator) AddOffsets(ctx context.Context, id string, pid int64, epoch int16, group string, v int16) wire.ErrorCode {
	if len(group) > maxString {
		return wire.InvalidGroupID
	}
	e := c.lockEntry(id)
	if e == nil {
		return wire.InvalidProducerIDMapping
	}
	defer e.mu.Unlock()
	t := &e.t
	if code := check(t, pid, epoch, v, 2); code != wire.NoError {
		return code
	}
	if t.State == PrepareCommit || t.State == PrepareAbort {
		return wire.ConcurrentTransactions
	}
	next := t.clone()
	c.begin(&next)
	next.group(strings.Clone(group))
	if err := c.persist(ctx, &next); err != nil {
		return storeCode(err)
	}
	c.replace(e, next)
	return wire.NoError
}

// CommitOffsets records offsets of group in id's transaction
// (TxnOffsetCommit): stored with the transaction, made visible when it
// commits. It returns one code for all the offsets.
func (c *Coordinator) CommitOffsets(ctx context.Context, id, group string, pid int64, epoch int16, offsets []Offset) wire.ErrorCode {
	if len(group) > maxString {
		return wire.InvalidGroupID
	}
	for _, o := range offsets {
		switch {
		case len(o.Topic) > maxString:
			return wire.InvalidTopicException
		case len(o.Metadata) > maxString:
			return wire.OffsetMetadataTooLarge
		}
	}
	e := c.lockEntry(id)
	if e == nil {
		return wire.InvalidProducerIDMapping
	}
	defer e.mu.Unlock()
	t := &e.t
	if t.ProducerID != pid {
		return wire.InvalidProducerIDMapping
	}
	if t.Epoch != epoch {
		// GroupMetadataManager.storeOffsets for a stale producer epoch.
		return wire.InvalidProducerEpoch
	}
	if t.State != Ongoing {
		return wire.InvalidTxnState
	}
	next := t.clone()
	g := next.group(strings.Clone(group))
	for _, o := range offsets {
		o.Topic, o.Metadata = strings.Clone(o.Topic), strings.Clone(o.Metadata)
		i := slices.IndexFunc(g.Offsets, func(x Offset) bool { return x.Topic == o.Topic && x.Partition == o.Partition })
		if i >= 0 {
			g.Offsets[i] = o
		} else {
			g.Offsets = append(g.Offsets, o)
		}
	}
	next.UpdateMs = c.nowMs()
	if err := c.persist(ctx, &next); err != nil {
		return storeCode(err)
	}
	c.replace(e, next)
	return wire.NoError
}

// End commits or aborts id's transaction (EndTxn): prepared, persisted,
// markers written to every partition, offsets committed, completed and
// persisted, before it returns.
func (c *Coordinator) End(ctx context.Context, id string, pid int64, epoch int16, commit bool, v int16) wire.ErrorCode {
	e := c.lockEntry(id)
	if e == nil {
		return wire.InvalidProducerIDMapping
	}
	defer e.mu.Unlock()
	t := &e.t
	if code := check(t, pid, epoch, v, 2); code != wire.NoError {
		return code
	}
	switch {
	case t.State == Ongoing:
	case t.State == PrepareCommit && commit, t.State == PrepareAbort && !commit:
		// A retry after markers failed: finish them.
		if err := c.complete(ctx, e); err != nil {
			return wire.ConcurrentTransactions
		}
		return wire.NoError
	case t.State == CompleteCommit && commit, t.State == CompleteAbort && !commit:
		return wire.NoError // the retry of an answered EndTxn
	default:
		// Empty, or the other outcome than the one prepared or completed
		// (Kafka's endTransaction: logInvalidStateTransitionAndReturnError).
		return wire.InvalidTxnState
	}
	next := t.clone()
	next.State = PrepareAbort
	if commit {
		next.State = PrepareCommit
	}
	next.UpdateMs = c.nowMs()
	if err := c.persist(ctx, &next); err != nil {
		return storeCode(err)
	}
	c.replace(e, next)
	if err := c.complete(ctx, e); err != nil {
		c.cfg.Logger.Warn("txn: writing markers failed; completed on the client's retry or by the janitor",
			"transactional_id", id, "err", err)
		// Prepared and persisted: the outcome is decided. Kafka answers
		// here too and completes in the background.
	}
	return wire.NoError
}

// complete writes the markers of e's prepared transaction, commits its
// offsets when it commits, and persists it complete (caller holds e's
// lock). A failure leaves it prepared, to be completed again.
func (c *Coordinator) complete(ctx context.Context, e *entry) error {
	t := &e.t
	commit := t.State == PrepareCommit
	marker := mapping.Control{ProducerID: t.ProducerID, ProducerEpoch: t.Epoch, Commit: commit}
	errs := c.writeMarkers(ctx, t.Partitions, marker)
	var failed error
	for i, p := range t.Partitions {
		if err := errs[i]; err != nil && failed == nil {
			failed = fmt.Errorf("marker for %s/%d: %w", p.Topic, p.Partition, err)
		}
	}
	if failed != nil {
		return failed
	}
	if commit {
		for _, g := range t.Groups {
			if len(g.Offsets) == 0 {
				continue
			}
			if err := c.backend.CommitOffsets(ctx, g.Group, g.Offsets); err != nil {
				return fmt.Errorf("offsets of group %s: %w", g.Group, err)
			}
		}
	}
	if cl := c.cfg.Cluster; cl != nil {
		for _, g := range t.Groups {
			if _, err := cl.ResolveGroup(ctx, g.Group, marker); err != nil {
				return fmt.Errorf("resolving the offsets of group %s at its coordinator: %w", g.Group, err)
			}
		}
	}
	next := t.clone()
	next.State = CompleteAbort
	if commit {
		next.State = CompleteCommit
	}
	next.UpdateMs = c.nowMs()
	if err := c.persist(ctx, &next); err != nil {
		return err
	}
	c.replace(e, next)
	if commit {
		c.Stats.Committed.Add(1)
	} else {
		c.Stats.Aborted.Add(1)
	}
	return nil
}

// ApplyMarker is a partition leader's part of ending a transaction: it
// appends marker to topic/partition (after every append of the transaction
// admitted before it), closes the transaction in the index and, on abort,
// stores the partition's aborted index. A deleted partition has nothing to
// end. A marker applied twice (a completion retried, or redone by the
// coordinator that took over) is harmless: the second closes nothing.
func (c *Coordinator) ApplyMarker(ctx context.Context, topic string, partition int32, marker mapping.Control) error {
	defer c.fence(marker)()
	off, err := c.backend.WriteMarker(ctx, topic, partition, marker)
	if isGone(err) {
		c.Index.Close(topic, partition, marker.ProducerID, -1, true)
		return nil
	}
	if err != nil {
		return err
	}
	// An abort stores the partition's aborted index even when Close added
	// nothing: a retried completion whose first store failed finds the
	// transaction closed already.
	if c.Index.Close(topic, partition, marker.ProducerID, off, marker.Commit) || !marker.Commit {
		if err := c.storeAborted(ctx, topic, partition); err != nil {
			return fmt.Errorf("aborted index: %w", err)
		}
	}
	return nil
}

// maxMarkerWrites bounds the markers of one transaction appended at once.
const maxMarkerWrites = 32

// writeMarkers has marker applied to every partition, at most
// maxMarkerWrites at once (on Iggy each append is a round trip: a
// transaction over many partitions ends in about one, not one per
// partition), and returns each partition's error: applied here
// (ApplyMarker), or sent to the partition's leader in a cluster.
func (c *Coordinator) writeMarkers(ctx context.Context, parts []Partition, marker mapping.Control) []error {
	errs := make([]error, len(parts))
	one := func(i int) {
		p := parts[i]
		if cl := c.cfg.Cluster; cl != nil {
			if sent, err := cl.SendMarker(ctx, p.Topic, p.Partition, marker); sent {
				errs[i] = err
				return
			}
		}
		errs[i] = c.ApplyMarker(ctx, p.Topic, p.Partition, marker)
	}
	if len(parts) == 1 {
		one(0)
		return errs
	}
	sem := make(chan struct{}, maxMarkerWrites)
	var wg sync.WaitGroup
	for i := range parts {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			one(i)
		}()
	}
	wg.Wait()
	return errs
}

// isGone reports whether err says the partition no longer exists.
func isGone(err error) bool {
	return errors.Is(err, store.ErrUnknownTopic) || errors.Is(err, store.ErrUnknownPartition)
}

// storeCode maps a system-store or log error to the code a client retries
// on: the state is unchanged.
func storeCode(err error) wire.ErrorCode {
	if isGone(err) {
		return wire.UnknownTopicOrPartition
	}
	return wire.CoordinatorNotAvailable
}

// Produce is what CheckProduce and AdmitAppend return for an allowed
// transactional append: call Done once the append has finished (the marker
// waits for it).
type Produce struct{ mu *sync.RWMutex }

// Done releases the transaction for its markers.
func (p Produce) Done() {
	if p.mu != nil {
		p.mu.RUnlock()
	}
}

// CheckProduce admits a transactional batch of producer pid at epoch to
// topic/partition: its transaction must be open and hold the partition.
// On NoError the caller appends and then calls Done.
func (c *Coordinator) CheckProduce(pid int64, epoch int16, topic string, partition int32) (Produce, wire.ErrorCode) {
	e, code := c.holdForProduce(pid, epoch)
	if code != wire.NoError {
		return Produce{}, code
	}
	if !e.t.hasPartition(topic, partition) {
		// KIP-890 part 1: a transactional write the coordinator does not
		// know of (never added).
		e.mu.RUnlock()
		return Produce{}, wire.InvalidTxnState
	}
	return Produce{mu: &e.mu}, wire.NoError
}

// CheckProduceAll admits the transactional batches of one Produce request,
// all of producer pid at epoch, under one hold of the transaction:
// partition(i) names the partition of the i-th of n batches (ok false: not
// transactional, not checked), and admitted(i, code) is told each checked
// one's code. The hold is returned when at least one was admitted (call
// Done once every admitted append has finished), else the zero Produce.
// One hold per request, not one per batch: a goroutine holding the
// transaction twice would wedge behind a marker waiting for its first hold.
func (c *Coordinator) CheckProduceAll(pid int64, epoch int16, n int, partition func(i int) (topic string, p int32, ok bool), admitted func(i int, code wire.ErrorCode)) Produce {
	e, code := c.holdForProduce(pid, epoch)
	if code != wire.NoError {
		for i := range n {
			if _, _, ok := partition(i); ok {
				admitted(i, code)
			}
		}
		return Produce{}
	}
	held := false
	for i := range n {
		topic, p, ok := partition(i)
		if !ok {
			continue
		}
		if !e.t.hasPartition(topic, p) {
			admitted(i, wire.InvalidTxnState) // KIP-890 part 1, as CheckProduce
			continue
		}
		held = true
		admitted(i, wire.NoError)
	}
	if !held {
		e.mu.RUnlock()
		return Produce{}
	}
	return Produce{mu: &e.mu}
}

// holdForProduce read-locks producer pid's transaction for a transactional
// append at epoch: it must be open (Ongoing) at that epoch. On NoError the
// caller holds e.mu for reading.
func (c *Coordinator) holdForProduce(pid int64, epoch int16) (*entry, wire.ErrorCode) {
	c.mu.RLock()
	e := c.byPID[pid]
	c.mu.RUnlock()
	if e == nil {
		return nil, wire.InvalidProducerIDMapping
	}
	if e.timingOut.Load() {
		// Being aborted at its timeout: refused at once rather than
		// waiting behind the abort's lock for the appends in flight.
		return nil, wire.InvalidTxnState
	}
	e.mu.RLock()
	t := &e.t
	code := wire.NoError
	switch {
	case t.ProducerID != pid || e.gone:
		code = wire.InvalidProducerIDMapping
	case e.timingOut.Load():
		// Being aborted at its timeout (timeOutBusy).
		code = wire.InvalidTxnState
	case epoch < t.Epoch:
		code = wire.InvalidProducerEpoch
	case epoch > t.Epoch, t.State != Ongoing:
		// KIP-890 part 1: a transactional write the coordinator does not
		// know of (its transaction already ended).
		code = wire.InvalidTxnState
	}
	if code != wire.NoError {
		e.mu.RUnlock()
		return nil, code
	}
	return e, wire.NoError
}

// PendingOffset reports whether an open transaction holds an offset of
// group for topic/partition (OffsetFetch require_stable answers
// UNSTABLE_OFFSET_COMMIT then).
func (c *Coordinator) PendingOffset(group, topic string, partition int32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.pending[pendingKey{group, topic, partition}] > 0
}

// Describe returns a copy of id's state; ok=false when unknown.
func (c *Coordinator) Describe(id string) (Txn, bool) {
	e := c.lookup(id)
	if e == nil {
		return Txn{}, false
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.gone {
		return Txn{}, false
	}
	return e.t.clone(), true
}

// List returns a copy of every transaction's state.
func (c *Coordinator) List() []Txn {
	es := c.entries()
	out := make([]Txn, 0, len(es))
	for _, e := range es {
		e.mu.RLock()
		if !e.gone {
			out = append(out, e.t.clone())
		}
		e.mu.RUnlock()
	}
	return out
}

// Tick aborts open transactions past their timeout (fencing their
// producers, as Kafka's abortTimedOutTransactions does), completes prepared
// ones whose markers failed, and forgets ids idle past IDExpiration.
func (c *Coordinator) Tick(ctx context.Context) {
	now := c.nowMs()
	if c.cfg.Cluster != nil {
		c.pruneLeaders(now)
	}
	for _, e := range c.entries() {
		release, ok := c.own(e)
		if !ok {
			continue // coordinated by another instance now (Sync drops it)
		}
		c.tickOne(ctx, e, now)
		release()
	}
}

// own is Cluster.Own for e's id: whether this instance coordinates it.
func (c *Coordinator) own(e *entry) (release func(), ok bool) {
	if c.cfg.Cluster == nil {
		return func() {}, true
	}
	e.mu.RLock()
	id := e.t.ID
	e.mu.RUnlock()
	return c.cfg.Cluster.Own(id)
}

// tickOne is Tick's work on one entry.
func (c *Coordinator) tickOne(ctx context.Context, e *entry, now int64) {
	if !e.mu.TryLock() {
		c.timeOutBusy(e, now)
		return
	}
	if e.gone {
		e.mu.Unlock()
		return
	}
	t := &e.t
	switch {
	case t.State == Ongoing && now-t.StartMs > int64(t.TimeoutMs):
		c.cfg.Logger.Info("txn: aborting a transaction past its timeout", "transactional_id", t.ID,
			"producer_id", t.ProducerID, "timeout_ms", t.TimeoutMs)
		if c.abortFenced(ctx, e) == wire.NoError {
			c.Stats.TimedOut.Add(1)
		}
	case t.State == PrepareCommit || t.State == PrepareAbort:
		if err := c.complete(ctx, e); err != nil {
			c.cfg.Logger.Warn("txn: completing a prepared transaction failed", "transactional_id", t.ID, "err", err)
		}
	case (t.State == Empty || t.State == CompleteCommit || t.State == CompleteAbort) &&
		now-t.UpdateMs > c.cfg.IDExpiration.Milliseconds():
		if err := c.sys.PutSystem(ctx, NamespaceTxn, t.ID, nil); err == nil {
			e.gone = true
			c.mu.Lock()
			delete(c.txns, t.ID)
			if c.byPID[t.ProducerID] == e {
				delete(c.byPID, t.ProducerID)
			}
			c.mu.Unlock()
		}
	}
	e.mu.Unlock()
}

// timeOutBusy aborts e's transaction past its timeout while appends hold
// it (a producer that never pauses would otherwise never time out, where
// Kafka aborts it whatever the producer does): no further append is
// admitted, and a goroutine aborts it once those in flight are done.
func (c *Coordinator) timeOutBusy(e *entry, now int64) {
	if !e.mu.TryRLock() {
		return // a transition holds it: the next tick
	}
	t := &e.t
	overdue := !e.gone && t.State == Ongoing && now-t.StartMs > int64(t.TimeoutMs)
	start := t.StartMs
	e.mu.RUnlock()
	if !overdue || !e.timingOut.CompareAndSwap(false, true) {
		return
	}
	go func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), timeoutAbortLimit)
		defer cancel()
		defer e.timingOut.Store(false)
		if e.gone || e.t.State != Ongoing || e.t.StartMs != start {
			return // ended meanwhile
		}
		c.cfg.Logger.Info("txn: aborting a transaction past its timeout", "transactional_id", e.t.ID,
			"producer_id", e.t.ProducerID, "timeout_ms", e.t.TimeoutMs)
		if c.abortFenced(ctx, e) == wire.NoError {
			c.Stats.TimedOut.Add(1)
		}
	}()
}

// timeoutAbortLimit bounds an abort timeOutBusy starts, from when it holds
// the transaction (the gateway's shutdown does not wait for it: an abort
// cut short is completed at the next start).
const timeoutAbortLimit = 30 * time.Second

// PruneAborted drops topic/partition's aborted transactions below
// logStart, persisting the shorter index.
func (c *Coordinator) PruneAborted(ctx context.Context, topic string, partition int32, logStart int64) error {
	if !c.Index.Prune(topic, partition, logStart) {
		return nil
	}
	return c.storeAborted(ctx, topic, partition)
}

// storeAborted stores topic/partition's aborted index as it is now,
// deleting the key when it is empty.
func (c *Coordinator) storeAborted(ctx context.Context, topic string, partition int32) error {
	c.abortedMu.Lock()
	defer c.abortedMu.Unlock()
	var v []byte
	if list := c.Index.AbortedList(topic, partition); len(list) > 0 {
		v = encodeAborted(list)
	}
	return c.sys.PutSystem(ctx, NamespaceAborted, abortedKey(topic, partition), v)
}

// DropTopic forgets a deleted topic's partitions and their aborted
// indexes (a topic created again under the name starts with none).
func (c *Coordinator) DropTopic(ctx context.Context, topic string) error {
	for _, p := range c.Index.DropTopic(topic) {
		if err := c.storeAborted(ctx, topic, p); err != nil {
			return err
		}
	}
	return nil
}
