package bridge

// What the consumer group protocol's handlers (68_consumer_group_heartbeat.go,
// 69_consumer_group_describe.go) share: the topic metadata the coordinator
// assigns from (docs/design/consumer-groups.md §4).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/metric"
	"github.com/kiggy-io/kiggy/wire"
)

// topicSnapshotMaxAge is how stale the topic metadata consumer groups
// assign from may be: a topic created or grown is assigned within it plus
// a heartbeat interval.
const topicSnapshotMaxAge = time.Second

// topicSnapshot is every topic at one moment, by name and by id; it
// implements group.TopicLookup and is never mutated once published.
type topicSnapshot struct {
	at     time.Time
	byName map[string]store.TopicInfo
	byID   map[[16]byte]string
	names  []string
}

// ByName returns a topic's id and partition count.
func (s *topicSnapshot) ByName(name string) ([16]byte, int32, bool) {
	t, ok := s.byName[name]
	return t.ID, t.Partitions, ok
}

// ByID returns a topic's name.
func (s *topicSnapshot) ByID(id [16]byte) (string, bool) {
	n, ok := s.byID[id]
	return n, ok
}

// Names returns every topic name, sorted.
func (s *topicSnapshot) Names() []string { return s.names }

// classicMemberTopics is group.Config.Topics: the topic metadata classic
// members of a consumer group are assigned from (the last snapshot when
// the store does not answer; nil before any).
func (g *Gateway) classicMemberTopics() group.TopicLookup {
	s, err := g.consumerTopics(g.ctx)
	if err != nil {
		if s = g.ctopics.Load(); s == nil {
			return nil
		}
	}
	return s
}

// consumerTopics returns topic metadata at most topicSnapshotMaxAge old,
// listing the topics again when it is older. On a backend with network
// round trips the caller runs on a worker.
func (g *Gateway) consumerTopics(ctx context.Context) (*topicSnapshot, error) {
	if s := g.ctopics.Load(); s != nil && time.Since(s.at) < topicSnapshotMaxAge {
		return s, nil
	}
	ts, err := g.store.Topics(ctx)
	if err != nil {
		return nil, err
	}
	s := &topicSnapshot{at: time.Now(), byName: make(map[string]store.TopicInfo, len(ts)), byID: make(map[[16]byte]string, len(ts))}
	for _, t := range ts {
		s.byName[t.Name] = t
		s.byID[t.ID] = t.Name
		s.names = append(s.names, t.Name)
	}
	slices.Sort(s.names)
	g.ctopics.Store(s)
	return s, nil
}

// consumerGroupNS is the system store namespace of consumer-protocol groups
// (docs/design/consumer-groups.md §6): a head record and a record per member
// for each group (group.ConsumerGroupHeadKey, group.ConsumerGroupMemberKey),
// so that a change writes what changed. consumerGroupV1NS held each group
// as one whole form, as versions before 2026-12 stored them: a group found
// only there is restored from it and moved to consumerGroupNS.
const (
	consumerGroupNS   = "consumer-group-records"
	consumerGroupV1NS = "consumer-groups"
)

// consumerGroupWriteDelay batches the changes of a burst of heartbeats into
// one write per group.
const consumerGroupWriteDelay = 100 * time.Millisecond

// initConsumerGroups loads the stored consumer groups this instance
// coordinates (retrying in the background until the store answers) and
// starts their writer.
func (g *Gateway) initConsumerGroups() {
	load := func() bool {
		ctx, cancel := context.WithTimeout(g.ctx, 30*time.Second)
		defer cancel()
		stored, v1, err := g.loadStoredConsumerGroups(ctx)
		if err != nil {
			g.cfg.Logger.Warn("consumer groups: loading the stored groups failed; retrying", "err", err)
			return false
		}
		var classic map[string][]byte
		if g.cfg.Placement == nil {
			// In a cluster, classic groups are restored when a member
			// first names one (classicGroupReady): by then the view has
			// settled and the group's last coordinator has let it go, so
			// the store holds its last form, where a read at start could
			// predate the changes another instance made before the view
			// gave the group back.
			if classic, err = g.system.LoadSystem(ctx, classicGroupNS); err != nil {
				g.cfg.Logger.Warn("classic groups: loading the stored groups failed; retrying", "err", err)
				return false
			}
		}
		for id, sg := range stored {
			if g.lostGroup(id) {
				continue // another instance's (docs/design/cluster.md §7)
			}
			if err := g.groups.RestoreConsumerGroup(id, sg); err != nil {
				g.cfg.Logger.Warn("consumer groups: a stored group does not load; its members rejoin", "group", id, "err", err)
			}
		}
		for id, b := range v1 {
			if !g.lostGroup(id) {
				g.restoreConsumerGroupV1(id, b)
			}
		}
		g.restoreClassicGroups(classic)
		g.cgLoaded.Store(true)
		return true
	}
	if !load() {
		g.retryInBackground(load)
	}
	g.wg.Add(1)
	go g.consumerGroupWriter()
}

// consumerGroupWriter stores the groups (both protocols) that changed. It
// waits on cgChanged and allocates nothing while no group changes. Changes
// are gathered for consumerGroupWriteDelay, except while answers wait for
// them (group.Config.AwaitStore): those are written at once, and what
// changes during a write goes in the next.
func (g *Gateway) consumerGroupWriter() {
	defer g.wg.Done()
	for {
		select {
		case <-g.ctx.Done():
			g.storeConsumerGroups() // the last changes, best effort
			return
		case <-g.cgChanged:
		}
		g.gatherGroupChanges()
		g.storeConsumerGroups()
	}
}

// gatherGroupChanges waits consumerGroupWriteDelay for more changes, and
// returns early when an answer waits for a change (it is woken on
// cgChanged then) or the gateway closes.
func (g *Gateway) gatherGroupChanges() {
	if g.groups.AnswersHeld() {
		return
	}
	t := time.NewTimer(consumerGroupWriteDelay)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
			return
		case <-g.cgChanged:
			if g.groups.AnswersHeld() {
				return
			}
		}
	}
}

// storeConsumerGroups writes the changes of the consumer and classic
// groups that changed and reports them stored to the coordinator, which
// sends the answers waiting for them (group.Config.AwaitStore). A failed
// write is logged; the group's next change writes it again (a consumer
// group's, every record of it).
func (g *Gateway) storeConsumerGroups() {
	g.storeConsumerGroupChanges(g.groups.DirtyConsumerGroups())
	g.groups.ConsumerGroupsStored()
	g.storeGroups(classicGroupNS, g.groups.DirtyClassicGroups(), g.groups.ClassicGroupsStored)
}

// loadStoredConsumerGroups reads the stored consumer groups: those stored
// as records, and those only in the whole-group form of earlier versions.
// It removes the records of no group and the old forms of groups stored
// as records too (a move cut short by a crash), which nothing restores.
func (g *Gateway) loadStoredConsumerGroups(ctx context.Context) (map[string]group.StoredConsumerGroup, map[string][]byte, error) {
	ns, err := g.system.LoadSystem(ctx, consumerGroupNS)
	if err != nil {
		return nil, nil, err
	}
	v1, err := g.system.LoadSystem(ctx, consumerGroupV1NS)
	if err != nil {
		return nil, nil, err
	}
	stored, orphans := group.SplitConsumerGroups(ns)
	var moved []store.SystemEntry
	for id := range v1 {
		if _, ok := stored[id]; ok {
			delete(v1, id)
			moved = append(moved, store.SystemEntry{Key: id})
		}
	}
	var gone []store.SystemEntry
	for _, k := range orphans {
		if id, _, ok := group.SplitConsumerGroupMemberKey(k); !ok || !g.lostGroup(id) {
			gone = append(gone, store.SystemEntry{Key: k})
		}
	}
	if len(moved) > 0 {
		if err := g.system.PutSystemAll(ctx, consumerGroupV1NS, moved); err != nil {
			g.cfg.Logger.Warn("consumer groups: removing old forms of groups stored as records failed", "err", err)
		}
	}
	if len(gone) > 0 {
		if err := g.system.PutSystemAll(ctx, consumerGroupNS, gone); err != nil {
			g.cfg.Logger.Warn("consumer groups: removing records of no group failed", "err", err)
		}
	}
	return stored, v1, nil
}

// restoreConsumerGroupV1 restores consumer group id from its old whole
// form b; the writer then stores it as records and removes b.
func (g *Gateway) restoreConsumerGroupV1(id string, b []byte) {
	g.cgLoadMu.Lock()
	if g.cgV1 == nil {
		g.cgV1 = map[string]bool{}
	}
	g.cgV1[id] = true
	g.cgLoadMu.Unlock()
	if err := g.groups.RestoreConsumerGroupV1(id, b); err != nil {
		g.cfg.Logger.Warn("consumer groups: a stored group does not load; its members rejoin", "group", id, "err", err)
	}
}

// storeConsumerGroupChanges writes the consumer groups' changes to
// consumerGroupNS, a group's change whole, several groups to a write up to
// groupsPerWrite and groupBytesPerWrite, and then removes the old forms of
// the groups written that had one (consumerGroupV1NS).
func (g *Gateway) storeConsumerGroupChanges(changes []*group.ConsumerGroupChange) {
	for len(changes) > 0 {
		n, size := 0, 0
		for n < len(changes) && n < groupsPerWrite {
			s := 0
			for _, e := range changes[n].Entries {
				s += len(e.Key) + len(e.Value)
			}
			if n > 0 && size+s > groupBytesPerWrite {
				break
			}
			size += s
			n++
		}
		g.storeConsumerGroupWrite(changes[:n])
		changes = changes[n:]
	}
}

// storeConsumerGroupWrite writes changes as one change of the store. When
// the store refuses it as too large (a record past the Iggy system store's
// bounds, docs/IGGY.md "kiggy's own state"), each group's change is written
// alone, and a group whose change is still refused is removed from the
// store instead, so that no older form of it is restored: its members
// rejoin after a restart or a move, as before groups were stored.
func (g *Gateway) storeConsumerGroupWrite(changes []*group.ConsumerGroupChange) {
	put := func(entries []store.SystemEntry) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := g.system.PutSystemAll(ctx, consumerGroupNS, entries)
		g.groupWrites[consumerWrites].count(entries, err)
		return err
	}
	entries := func(es []group.StoreEntry) []store.SystemEntry {
		out := make([]store.SystemEntry, len(es))
		for i, e := range es {
			out[i] = store.SystemEntry{Key: e.Key, Value: e.Value}
		}
		return out
	}
	var all []store.SystemEntry
	for _, ch := range changes {
		all = append(all, entries(ch.Entries)...)
	}
	err := put(all)
	switch {
	case err == nil:
		g.removeConsumerGroupsV1(changes)
		return
	case !errors.Is(err, store.ErrTooLarge):
		g.cfg.Logger.Warn("groups: storing consumer groups failed", "groups", len(changes), "err", err)
		for _, ch := range changes {
			ch.Failed()
		}
		return
	}
	for _, ch := range changes {
		err := put(entries(ch.Entries))
		if errors.Is(err, store.ErrTooLarge) {
			g.cfg.Logger.Warn("groups: a consumer group is too large to store; its members rejoin after a restart or a move", "group", ch.Group, "err", err)
			if err = put(entries(ch.Removal())); err == nil {
				ch.Removed()
			}
		}
		if err != nil {
			g.cfg.Logger.Warn("groups: storing a consumer group failed", "group", ch.Group, "err", err)
			ch.Failed()
			continue
		}
		g.removeConsumerGroupsV1([]*group.ConsumerGroupChange{ch})
	}
}

// removeConsumerGroupsV1 removes the old whole forms of the groups whose
// changes were written, where they had one. A removal that fails is tried
// again after the group's next write.
func (g *Gateway) removeConsumerGroupsV1(changes []*group.ConsumerGroupChange) {
	g.cgLoadMu.Lock()
	var old []store.SystemEntry
	for _, ch := range changes {
		if g.cgV1[ch.Group] {
			old = append(old, store.SystemEntry{Key: ch.Group})
		}
	}
	g.cgLoadMu.Unlock()
	if len(old) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.system.PutSystemAll(ctx, consumerGroupV1NS, old); err != nil {
		g.cfg.Logger.Warn("consumer groups: removing the old forms of groups failed", "groups", len(old), "err", err)
		return
	}
	g.cgLoadMu.Lock()
	for _, e := range old {
		delete(g.cgV1, e.Key)
	}
	g.cgLoadMu.Unlock()
}

// groupsPerWrite and groupBytesPerWrite bound one change of stored groups,
// so that a round in which thousands of groups formed (a flood of
// one-member groups) is written in batches of a bounded size.
const (
	groupsPerWrite     = 256
	groupBytesPerWrite = 4 << 20
)

// storeGroups writes dirty (group id → stored form, nil: remove) to
// namespace ns in id order, in changes of at most groupsPerWrite groups and
// groupBytesPerWrite, and calls stored, when set, with each change's ids
// once it is written or failed.
func (g *Gateway) storeGroups(ns string, dirty map[string][]byte, stored func(ids []string)) {
	if len(dirty) == 0 {
		return
	}
	entries := make([]store.SystemEntry, 0, len(dirty))
	for id, b := range dirty {
		entries = append(entries, store.SystemEntry{Key: id, Value: b})
	}
	slices.SortFunc(entries, func(a, b store.SystemEntry) int { return strings.Compare(a.Key, b.Key) })
	for len(entries) > 0 {
		n, size := 0, 0
		for n < len(entries) && n < groupsPerWrite && (n == 0 || size+len(entries[n].Value) <= groupBytesPerWrite) {
			size += len(entries[n].Key) + len(entries[n].Value)
			n++
		}
		g.storeGroupChange(ns, entries[:n])
		if stored != nil {
			ids := make([]string, n)
			for i, e := range entries[:n] {
				ids[i] = e.Key
			}
			stored(ids)
		}
		entries = entries[n:]
	}
}

// storeGroupChange writes entries to ns as one change. A change the store
// refuses as too large (a group id or a group's form past the Iggy system
// store's bounds, docs/IGGY.md "kiggy's own state") is written entry by
// entry, and a group too large to store is removed from the store instead,
// so that no older form of it is restored: its members rejoin after a
// restart, as before groups were stored.
func (g *Gateway) storeGroupChange(ns string, entries []store.SystemEntry) {
	counts := &g.groupWrites[classicWrites]
	put := func(f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return f(ctx)
	}
	err := put(func(ctx context.Context) error { return g.system.PutSystemAll(ctx, ns, entries) })
	counts.count(entries, err)
	if err == nil {
		return
	}
	if !errors.Is(err, store.ErrTooLarge) {
		g.cfg.Logger.Warn("groups: storing groups failed", "namespace", ns, "groups", len(entries), "err", err)
		return
	}
	for _, e := range entries {
		err := put(func(ctx context.Context) error { return g.system.PutSystem(ctx, ns, e.Key, e.Value) })
		counts.count([]store.SystemEntry{e}, err)
		if errors.Is(err, store.ErrTooLarge) && e.Value != nil {
			g.cfg.Logger.Warn("groups: a group is too large to store; its members rejoin after a restart or a move", "namespace", ns, "group", e.Key, "bytes", len(e.Value))
			err = put(func(ctx context.Context) error { return g.system.PutSystem(ctx, ns, e.Key, nil) })
			counts.count([]store.SystemEntry{{Key: e.Key}}, err)
		}
		if err != nil && !errors.Is(err, store.ErrTooLarge) {
			g.cfg.Logger.Warn("groups: storing a group failed", "namespace", ns, "group", e.Key, "err", err)
		}
	}
}

// groupWriteCounts are the system store writes of one protocol's groups.
type groupWriteCounts struct {
	writes, bytes, failed atomic.Uint64
}

// count records a write of entries to the store: err its outcome.
func (c *groupWriteCounts) count(entries []store.SystemEntry, err error) {
	c.writes.Add(1)
	n := 0
	for _, e := range entries {
		n += len(e.Key) + len(e.Value)
	}
	c.bytes.Add(uint64(n))
	if err != nil {
		c.failed.Add(1)
	}
}

// Indexes of Gateway.groupWrites.
const (
	classicWrites  = 0
	consumerWrites = 1
)

// classicGroupNS is the system store namespace of classic groups
// (docs/design/consumer-groups.md §6): group id → the group's stored form
// as of its last completed rebalance (bridge/group/classic_state.go).
const classicGroupNS = "classic-groups"

// restoreClassicGroups restores every stored classic group this instance
// coordinates and does not hold.
func (g *Gateway) restoreClassicGroups(stored map[string][]byte) {
	for id, b := range stored {
		if g.lostGroup(id) || g.groups.Has(id) {
			continue // another instance's (docs/design/cluster.md §7), or live here
		}
		if err := g.groups.RestoreClassicGroup(id, b); err != nil {
			g.cfg.Logger.Warn("classic groups: a stored group does not load; its members rejoin", "group", id, "err", err)
		}
	}
}

// classicRestorePerGroup and classicRestoresPerSecond pace the reads of
// the stored classic groups for groups moved here (classicGroupReady): a
// group id triggers at most one read per classicRestorePerGroup, and the
// instance makes at most classicRestoresPerSecond, so a flood of requests
// naming unknown groups costs the store a bounded load.
const (
	classicRestorePerGroup   = 10 * time.Second
	classicRestoresPerSecond = 20
)

// classicGroupReady prepares group id for a classic group request. It
// reports false until the stored groups are loaded at start (the caller
// answers as Kafka's coordinator does while it loads). In a cluster, a
// request that names a member of a group this instance does not hold first
// restores every group it now coordinates and does not hold, as their last
// coordinators stored them (docs/design/cluster.md §7): one read serves
// every group a view change moved here, and the reads are paced
// (classicRestorePerGroup, classicRestoresPerSecond). A member naming a
// newer generation (generation; noGeneration when the request names none)
// than a group restored here and unchanged since has the store read once
// more for that group: its last coordinator completed a rebalance and
// stored it after this instance's read (ReplaceRestored). The reads run on
// the request's worker.
func (g *Gateway) classicGroupReady(id string, namesMember bool, generation int32) bool {
	if !g.cgLoaded.Load() {
		return false
	}
	if !namesMember || g.cfg.Placement == nil {
		return true
	}
	if g.groups.Has(id) {
		if generation > 0 && g.groups.RestoredBehind(id, generation) {
			g.rereadClassicGroup(id)
		}
		return true
	}
	now := time.Now()
	g.clRestoreMu.Lock()
	if g.clTried == nil || len(g.clTried) > 10000 {
		g.clTried = map[string]time.Time{} // bounded: a flood of unknown ids only costs reads
	}
	if at, ok := g.clTried[id]; ok && now.Sub(at) < classicRestorePerGroup {
		g.clRestoreMu.Unlock()
		return true
	}
	if now.Sub(g.clWindow) >= time.Second {
		g.clWindow, g.clWindowReads = now, 0
	}
	if g.clWindowReads >= classicRestoresPerSecond {
		g.clRestoreMu.Unlock()
		return true
	}
	g.clWindowReads++
	g.clTried[strings.Clone(id)] = now // id aliases the request
	g.clRestoreMu.Unlock()
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	stored, err := g.system.LoadSystem(ctx, classicGroupNS)
	if err != nil {
		g.cfg.Logger.Warn("classic groups: reading the stored groups failed", "err", err)
		return true
	}
	g.restoreClassicGroups(stored)
	return true
}

// noGeneration is a classic group request's generation when it names none
// (Kafka's NoGeneration).
const noGeneration int32 = -1

// rereadClassicGroup reads group id's stored form again and replaces the
// group restored here with it when it is newer (RestoredBehind: at most
// once per restored group).
func (g *Gateway) rereadClassicGroup(id string) {
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	stored, err := g.system.LoadSystem(ctx, classicGroupNS)
	if err != nil {
		g.cfg.Logger.Warn("classic groups: reading the stored groups failed", "err", err)
		return
	}
	if b := stored[id]; b != nil {
		if _, err := g.groups.ReplaceRestored(id, b); err != nil {
			g.cfg.Logger.Warn("classic groups: a stored group does not load", "group", id, "err", err)
		}
	}
}

// consumerGroupLoadInterval bounds how often one instance looks in the
// store for a group its members say exists but it does not have.
const consumerGroupLoadInterval = 10 * time.Second

// loadConsumerGroup looks group id up in the store, for a member that
// heartbeats with an epoch to a coordinator that does not know the group:
// after a coordinator move in a cluster, the new coordinator takes the
// group over as the old one stored it. It reports whether it loaded it.
func (g *Gateway) loadConsumerGroup(ctx context.Context, id string) bool {
	g.cgLoadMu.Lock()
	if g.cgLoadedAt == nil {
		g.cgLoadedAt = map[string]time.Time{}
	}
	if at, ok := g.cgLoadedAt[id]; ok && time.Since(at) < consumerGroupLoadInterval {
		g.cgLoadMu.Unlock()
		return false
	}
	g.cgLoadedAt[strings.Clone(id)] = time.Now() // id aliases the request
	if len(g.cgLoadedAt) > 10000 {
		clear(g.cgLoadedAt) // bounded: a flood of unknown ids only costs loads
	}
	g.cgLoadMu.Unlock()
	stored, v1, err := g.loadStoredConsumerGroups(ctx)
	if err != nil {
		return false
	}
	if sg, ok := stored[id]; ok {
		return g.groups.RestoreConsumerGroup(id, sg) == nil
	}
	if b := v1[id]; b != nil {
		g.restoreConsumerGroupV1(id, b)
		return g.groups.Has(id)
	}
	return false
}

// consumerRestoredBehind reports whether a heartbeat answered code is
// worth serving again: in a cluster, a member fenced for an epoch further
// on than the group restored here, whose last coordinator stored a change
// after this instance read the store. It reads the group's stored form
// again and replaces the group with it when it is newer
// (ConsumerRestoredBehind: at most once per restored group).
func (g *Gateway) consumerRestoredBehind(code int16, id, member string, epoch int32) bool {
	if code != int16(wire.FencedMemberEpoch) || epoch <= 0 || g.cfg.Placement == nil ||
		!g.groups.ConsumerRestoredBehind(id, member, epoch) {
		return false
	}
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	ns, err := g.system.LoadSystem(ctx, consumerGroupNS)
	if err != nil {
		return false
	}
	stored, _ := group.SplitConsumerGroups(ns)
	sg, ok := stored[id]
	if !ok {
		return false
	}
	ok, err = g.groups.ReplaceRestoredConsumer(id, sg)
	if err != nil {
		g.cfg.Logger.Warn("consumer groups: a stored group does not load", "group", id, "err", err)
	}
	return ok
}

// writeGroupMetrics writes the groups this instance coordinates, by
// protocol type and state, and the consumer-protocol rebalances.
func (g *Gateway) writeGroupMetrics(w io.Writer) {
	type key struct{ typ, state string }
	counts := map[key]uint64{}
	for _, l := range g.groups.List() {
		if !g.lostGroup(l.GroupID) {
			counts[key{l.Type, l.State}]++
		}
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return strings.Compare(a.typ+"/"+a.state, b.typ+"/"+b.state) })
	metric.Header(w, "kiggy_groups_by_state", "gauge", "Groups this instance coordinates, by type (classic, consumer) and state.")
	for _, k := range keys {
		fmt.Fprintf(w, "kiggy_groups_by_state{type=%q,state=%q} %d\n", k.typ, k.state, counts[k])
	}
	metric.Single(w, "kiggy_consumer_group_rebalances_total", "counter", "Group epoch bumps of consumer-protocol groups (KIP-848): a member joined, left, was fenced or changed its subscription, or a subscribed topic changed.", g.groups.ConsumerRebalances())
	types := [2]string{classicWrites: "classic", consumerWrites: "consumer"}
	for _, m := range []struct {
		name, help string
		v          func(*groupWriteCounts) uint64
	}{
		{"kiggy_group_store_writes_total", "Writes of groups to the system store, by group type (a write holds the changes of several groups).", func(c *groupWriteCounts) uint64 { return c.writes.Load() }},
		{"kiggy_group_store_bytes_total", "Bytes of keys and values the writes of groups to the system store held, by group type.", func(c *groupWriteCounts) uint64 { return c.bytes.Load() }},
		{"kiggy_group_store_failures_total", "Writes of groups to the system store that failed, by group type (logged; the groups work on).", func(c *groupWriteCounts) uint64 { return c.failed.Load() }},
	} {
		metric.Header(w, m.name, "counter", m.help)
		for i, typ := range types {
			fmt.Fprintf(w, "%s{type=%q} %d\n", m.name, typ, m.v(&g.groupWrites[i]))
		}
	}
}
