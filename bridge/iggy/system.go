package iggy

// The system store (docs/design/record-mapping.md §7, docs/IGGY.md "kiggy's
// own state"): kiggy's own state — SCRAM credentials, ACLs, topic configs
// Iggy has no field for, log start offsets, consumer groups — kept as
// namespaces of key → value entries in the reserved system stream, beside
// the commit log. Each namespace of each Kafka stream is a log of put and
// delete records in a topic "state.<stream>.<namespace>.<generation>" of one
// partition. A namespace is read when it is first used and caught up from
// its tail on every later load, so changes made through another kiggy
// instance show up at the next load. A namespace nobody has written has no
// topic: reading it creates nothing in Iggy (it reads as empty until a
// write creates its generation 0), so a gateway that only reads a
// namespace, as every gateway reads the SCRAM credentials, never creates a
// topic, nor writes anything, not even in the middle of an Iggy cluster's
// failover: only writes and compactions write.
//
// It is compacted in generations, the way the commit log is, safely with
// several instances writing: when a generation holds many more records than
// live keys, a "switch" record ends it (records after the first switch count
// for nothing), and the instance that creates the next generation's topic
// copies the entries as of the switch into it, then its "complete" record;
// the others wait for that before they write again, and take the copy over
// (switching the unfinished generation too) if it does not come. A write
// that lands after a switch is written again into the next generation.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

var _ store.SystemStore = (*Client)(nil)

// System store record kinds.
const (
	stateRecordVersion = 1
	statePut           = 1
	stateDelete        = 2
	stateComplete      = 3
	// stateSwitch ends a generation: the records after the first one
	// count for nothing, and its state as of the switch continues in the
	// next generation (in the one after, when the next was switched
	// before it was complete: a copy given up).
	stateSwitch = 4
)

// stateTakeoverAfter is how long an instance waits for another's copy into
// a new generation to complete before it gives the copy up and makes its
// own (the copier may have died).
const stateTakeoverAfter = 5 * time.Second

// Limits on what one entry may hold: keys are names (a topic and a
// partition, a mechanism and a user), values small encoded records.
const (
	maxStateKey   = 1 << 12
	maxStateValue = 1 << 20
)

// errBadStateRecord is a record the decoder cannot read.
var errBadStateRecord = errors.New("iggy: malformed system store record")

// errNoSystemStream: the client was opened without the system stream.
var errNoSystemStream = errors.New("iggy: this client has no system stream")

// stateRecord is one decoded system store record.
type stateRecord struct {
	kind  uint8
	key   string
	value []byte
}

// appendStateRecord encodes r: [version u8][kind u8][key u16+bytes]
// [value u32+bytes], little-endian; a "complete" or "switch" record is its
// first two bytes.
func appendStateRecord(b []byte, r stateRecord) []byte {
	b = append(b, stateRecordVersion, r.kind)
	if r.kind == stateComplete || r.kind == stateSwitch {
		return b
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.key)))
	b = append(b, r.key...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.value)))
	return append(b, r.value...)
}

// decodeStateRecord decodes one record; it never panics. The value is a
// copy.
func decodeStateRecord(p []byte) (stateRecord, error) {
	var r stateRecord
	if len(p) < 2 || p[0] != stateRecordVersion {
		return r, errBadStateRecord
	}
	r.kind, p = p[1], p[2:]
	if r.kind == stateComplete || r.kind == stateSwitch {
		if len(p) != 0 {
			return r, errBadStateRecord
		}
		return r, nil
	}
	if (r.kind != statePut && r.kind != stateDelete) || len(p) < 2 {
		return r, errBadStateRecord
	}
	n := int(binary.LittleEndian.Uint16(p))
	p = p[2:]
	if n > len(p) || len(p)-n < 4 {
		return r, errBadStateRecord
	}
	r.key, p = string(p[:n]), p[n:]
	n = int(binary.LittleEndian.Uint32(p))
	p = p[4:]
	if n != len(p) || (r.kind == stateDelete && n != 0) {
		return r, errBadStateRecord
	}
	if r.kind == statePut {
		r.value = append(make([]byte, 0, n), p...)
	}
	return r, nil
}

// systemState is the client's system store: the namespaces read so far,
// each behind a lock of its own, so a namespace whose write waits on Iggy
// (a refused append waited out, a compaction's copy, a takeover) keeps no
// other namespace's readers and writers waiting.
type systemState struct {
	mu    sync.Mutex // guards slots, never held across Iggy requests
	slots map[string]*namespaceSlot
}

// namespaceSlot holds one namespace: st, nil until it is opened, is read
// and changed only with mu held, which is held across the Iggy requests
// made for it.
type namespaceSlot struct {
	mu sync.Mutex
	st *stateNamespace
}

// stateNamespace is one namespace: its current generation's topic, the next
// offset to read from it, and the live entries.
type stateNamespace struct {
	name string
	// topic is the current generation's topic; "" while the namespace has
	// no complete generation (nobody wrote it): it reads as empty, and
	// its first write makes generation 0 (putState, moveOnState from
	// generation -1).
	topic   string
	gen     int
	next    int64
	records int
	entries map[string][]byte
	// complete: the generation's "complete" record was read (its copied
	// entries are all there). switched: its first switch was read, at
	// switchAt; entries are its state as of the switch, and nothing after
	// it is read.
	complete, switched bool
	switchAt           int64
	// changes counts the puts and deletes read from the log (other
	// instances' and, after a race, this client's own) and the reopenings
	// (catchUpState): SystemVersion. A write of this client's that it
	// applies without reading does not count: the caller that made it
	// updates its own view.
	changes uint64
}

// stateTopicPrefix names the generations of a namespace:
// "state.<stream>.<namespace>.<generation>".
func stateTopicPrefix(stream, ns string) string { return "state." + stream + "." + ns + "." }

// validNamespace: namespaces are short names of [a-z0-9-].
func validNamespace(ns string) bool {
	if ns == "" || len(ns) > 32 {
		return false
	}
	for _, ch := range ns {
		if (ch < 'a' || ch > 'z') && (ch < '0' || ch > '9') && ch != '-' {
			return false
		}
	}
	return true
}

// LoadSystem implements store.SystemStore: the namespace's live entries, as
// of its tail now (changes made through other instances included).
func (c *Client) LoadSystem(ctx context.Context, ns string) (map[string][]byte, error) {
	st, unlock, err := c.lockNamespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.catchUpState(ctx, st); err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(st.entries))
	for k, v := range st.entries {
		out[k] = slices.Clone(v)
	}
	return out, nil
}

// SystemVersion implements store.SystemVersions: it reads what other
// instances appended to the namespace and returns how many changes it has
// read (stateNamespace.changes), which is all a caller needs to tell
// whether to load it again. Nothing appended costs one Iggy poll that
// returns nothing.
func (c *Client) SystemVersion(ctx context.Context, ns string) (uint64, error) {
	st, unlock, err := c.lockNamespace(ctx, ns)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := c.catchUpState(ctx, st); err != nil {
		return 0, err
	}
	return st.changes, nil
}

// PutSystem implements store.SystemStore: the change is appended to the
// namespace's log (a written Iggy record, docs/IGGY.md "Durability") before
// it returns.
func (c *Client) PutSystem(ctx context.Context, ns, key string, value []byte) error {
	return c.PutSystemAll(ctx, ns, []store.SystemEntry{{Key: key, Value: value}})
}

// PutSystemAll implements store.SystemStore: the changes are appended to
// the namespace's log as one batch, in one SendMessages, which Iggy accepts
// or refuses whole (docs/IGGY.md "kiggy's own state"). A batch that lands
// after a switch counts for nothing and is appended again into the next
// generation before PutSystemAll returns.
func (c *Client) PutSystemAll(ctx context.Context, ns string, entries []store.SystemEntry) error {
	if len(entries) == 0 {
		return nil
	}
	records := make([]stateRecord, len(entries))
	for i, e := range entries {
		if len(e.Key) == 0 || len(e.Key) > maxStateKey || len(e.Value) > maxStateValue {
			return fmt.Errorf("iggy: system store entry %q: key of 1..%d bytes and value of at most %d bytes: %w", e.Key, maxStateKey, maxStateValue, store.ErrTooLarge)
		}
		records[i] = stateRecord{kind: statePut, key: e.Key, value: e.Value}
		if e.Value == nil {
			records[i].kind = stateDelete
		}
	}
	st, unlock, err := c.lockNamespace(ctx, ns)
	if err != nil {
		return err
	}
	defer unlock()
	for lost := 0; ; lost++ {
		if lost == 8 {
			return fmt.Errorf("iggy: system store namespace %s: the generation kept switching under the write: %w", ns, store.ErrUnavailable)
		}
		counted, err := c.putState(ctx, st, records)
		if err != nil {
			return err
		}
		if counted {
			break
		}
	}
	if c.cfg.worthCompacting(st.records, len(st.entries)) {
		c.kickCompactor()
	}
	return nil
}

// putState appends records to st's current generation, first moving on
// past a switch. counted is false when the append landed after a switch
// or in a generation deleted meanwhile: it counts for nothing (or may
// not), and the caller appends it again. The caller holds st's lock.
func (c *Client) putState(ctx context.Context, st *stateNamespace, records []stateRecord) (counted bool, err error) {
	// Apply what other instances wrote first, so this change lands after
	// them here as it does in the log.
	if err := c.catchUpState(ctx, st); err != nil {
		return false, err
	}
	if st.switched {
		if err := c.moveOnState(ctx, st, true); err != nil {
			return false, err
		}
	}
	if c.cfg.beforeStateAppend != nil {
		c.cfg.beforeStateAppend(st.topic)
	}
	base, err := c.appendState(ctx, st.topic, records)
	if errors.Is(err, store.ErrUnknownTopic) {
		c.stateRewrites.Add(1)
		return false, c.reopenState(ctx, st)
	}
	if err != nil {
		return false, err
	}
	if base == st.next {
		// Nothing between what this instance had read and its records:
		// no switch before them.
		changes := st.changes
		for _, r := range records {
			st.apply(r)
		}
		st.changes = changes // this client's own write: its caller knows of it
		st.records += len(records)
		st.next = base + int64(len(records))
		return true, nil
	}
	// Another instance appended between the catch-up above and this
	// append: read from where this instance stopped, its records and then
	// these, in the log's order, rather than skip past them, and find
	// whether a switch came first.
	switch _, err := c.readState(ctx, st); {
	case errors.Is(err, store.ErrUnknownTopic):
		return false, c.reopenState(ctx, st)
	case err != nil:
		return false, fmt.Errorf("iggy: reading the system store after a write: %w", unavailable(err))
	}
	if st.switched && st.switchAt < base {
		c.stateRewrites.Add(1)
		return false, nil
	}
	return true, nil
}

// lockNamespace returns namespace ns, opened on first use, with its lock
// held: the caller calls unlock when done with it.
func (c *Client) lockNamespace(ctx context.Context, ns string) (st *stateNamespace, unlock func(), err error) {
	if !validNamespace(ns) {
		return nil, nil, fmt.Errorf("iggy: system store namespace %q: want 1..32 of [a-z0-9-]", ns)
	}
	if c.commits == nil {
		return nil, nil, errNoSystemStream
	}
	c.state.mu.Lock()
	slot := c.state.slots[ns]
	if slot == nil {
		if c.state.slots == nil {
			c.state.slots = map[string]*namespaceSlot{}
		}
		slot = &namespaceSlot{}
		c.state.slots[ns] = slot
	}
	c.state.mu.Unlock()
	slot.mu.Lock()
	if slot.st == nil {
		if slot.st, err = c.openStateNamespace(ctx, ns); err != nil {
			slot.mu.Unlock()
			return nil, nil, err
		}
		if c.cfg.worthCompacting(slot.st.records, len(slot.st.entries)) {
			c.kickCompactor()
		}
	}
	return slot.st, slot.mu.Unlock, nil
}

// openedNamespaces returns the slots of the namespaces opened so far.
func (c *Client) openedNamespaces() []*namespaceSlot {
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	slots := make([]*namespaceSlot, 0, len(c.state.slots))
	for _, slot := range c.state.slots {
		slots = append(slots, slot)
	}
	return slots
}

// newStateGeneration returns generation gen of namespace ns, not read yet.
func (c *Client) newStateGeneration(ns string, gen int) *stateNamespace {
	return &stateNamespace{name: ns, topic: stateTopicPrefix(c.cfg.Stream, ns) + strconv.Itoa(gen), gen: gen,
		entries: map[string][]byte{}, switchAt: -1}
}

// openStateNamespace reads the newest complete generation of ns (up to its
// switch, when it has one: its successor's copy is then under way). A
// namespace without one is returned without a topic, as generation -1,
// switched from: the first write makes generation 0. A look costs one
// listing of the system stream's topics.
func (c *Client) openStateNamespace(ctx context.Context, ns string) (*stateNamespace, error) {
	gens, err := c.stateGenerations(ctx, ns)
	if err != nil {
		return nil, err
	}
	var newer []int
	for _, g := range gens {
		st := c.newStateGeneration(ns, g)
		if _, err := c.readState(ctx, st); errors.Is(err, store.ErrUnknownTopic) {
			continue // deleted meanwhile
		} else if err != nil {
			return nil, err
		}
		if !st.complete {
			newer = append(newer, g)
			continue
		}
		if !st.switched {
			// An incomplete generation after one never switched from:
			// a compaction of an earlier version cut short (they wrote
			// no switch), its older generation still there.
			for _, n := range newer {
				topic := stateTopicPrefix(c.cfg.Stream, ns) + strconv.Itoa(n)
				c.log.Warn("iggy: dropping an incomplete system store generation", "topic", topic)
				if err := c.commits.sys.DeleteTopic(ctx, topic); err != nil && !errors.Is(err, store.ErrUnknownTopic) {
					return nil, err
				}
			}
			return st, nil
		}
		return st, c.moveOnState(ctx, st, false)
	}
	// No generation yet: generation 0 is the copy of an empty namespace,
	// made by whichever instance's write creates its topic first.
	st := c.newStateGeneration(ns, -1)
	st.topic, st.complete, st.switched = "", true, true
	return st, nil
}

// stateGenerations lists the generations of namespace ns there are,
// newest first.
func (c *Client) stateGenerations(ctx context.Context, ns string) ([]int, error) {
	return c.topicGenerations(ctx, stateTopicPrefix(c.cfg.Stream, ns))
}

// catchUpState applies the records appended to st's topic since it was last
// read (by other instances), and follows a switch to the next generation
// once that is complete. When another instance compacted the namespace and
// deleted st's generation, it reopens the namespace. The caller holds st's
// lock.
func (c *Client) catchUpState(ctx context.Context, st *stateNamespace) error {
	if st.topic == "" {
		// Nobody had written the namespace: look whether another
		// instance has since.
		fresh, err := c.openStateNamespace(ctx, st.name)
		if err != nil || fresh.topic == "" {
			return err
		}
		fresh.changes = st.changes + 1
		*st = *fresh
		return nil
	}
	_, err := c.readState(ctx, st)
	if errors.Is(err, store.ErrUnknownTopic) {
		return c.reopenState(ctx, st)
	}
	if err != nil || !st.switched {
		return err
	}
	return c.moveOnState(ctx, st, false)
}

// reopenState reads the namespace again from its newest generation.
func (c *Client) reopenState(ctx context.Context, st *stateNamespace) error {
	fresh, err := c.openStateNamespace(ctx, st.name)
	if err != nil {
		return err
	}
	fresh.changes = st.changes + 1
	*st = *fresh
	return nil
}

// readState applies st's topic from st.next to its end, or to its first
// switch, and reports whether a "complete" record was among what it read
// or is already known. Records after the switch count for nothing.
func (c *Client) readState(ctx context.Context, st *stateNamespace) (complete bool, err error) {
	sys := c.commits.sys
	for !st.switched {
		var n int
		wm, err := sys.Read(ctx, st.topic, 0, st.next, 1<<20, func(m *message.Message) bool {
			n++
			st.next = m.Offset + 1
			r, err := decodeStateRecord(m.Payload)
			if err != nil {
				c.log.Warn("iggy: skipping a malformed system store record", "topic", st.topic, "offset", m.Offset, "err", err)
				return true
			}
			st.records++
			switch r.kind {
			case stateComplete:
				st.complete = true
			case stateSwitch:
				st.switched, st.switchAt = true, m.Offset
				return false
			default:
				st.apply(r)
			}
			return true
		})
		if err != nil {
			return false, err
		}
		if n == 0 || st.next >= wm.High {
			break
		}
	}
	return st.complete, nil
}

// apply records one put or delete.
func (st *stateNamespace) apply(r stateRecord) {
	st.changes++
	switch r.kind {
	case statePut:
		st.entries[r.key] = r.value
	case stateDelete:
		delete(st.entries, r.key)
	}
}

// compactState ends st's generation with a switch and moves on to the
// next, copying the entries into it unless another instance does. The
// caller holds st's lock.
func (c *Client) compactState(ctx context.Context, st *stateNamespace) error {
	if err := c.catchUpState(ctx, st); err != nil || st.switched {
		return err // switched: another instance's compaction, under way
	}
	if err := c.appendStateMark(ctx, st.topic, stateSwitch); err != nil {
		return err
	}
	// Read up to the switch (or an earlier one of another instance).
	if _, err := c.readState(ctx, st); err != nil {
		return err
	}
	if !st.switched {
		return fmt.Errorf("iggy: the switch written into %s is not there", st.topic)
	}
	return c.moveOnState(ctx, st, true)
}

// appendStateMark appends one "complete" or "switch" record to topic.
func (c *Client) appendStateMark(ctx context.Context, topic string, kind uint8) error {
	_, err := c.appendState(ctx, topic, []stateRecord{{kind: kind}})
	return err
}

// appendState appends records to topic as one batch and returns the base
// offset (appendSystem).
func (c *Client) appendState(ctx context.Context, topic string, records []stateRecord) (int64, error) {
	return c.appendSystem(ctx, topic, func(b *message.Batch) {
		for _, r := range records {
			addStateRecord(b, r)
		}
	})
}

// moveOnState follows st's switch: it makes the next complete generation
// current, with its state read in full. With write, it makes sure there is
// one: the instance whose CreateTopic of the next generation succeeds
// copies st's entries as of the switch into it, then its "complete"
// record, and deletes the generations before it; the others wait for that
// (for stateTakeoverAfter at most, then they switch the unfinished
// generation too and go on to the one after). Without write (a read, an
// open) it only looks: with no complete next generation, st stays as of
// its switch, which is the namespace's state until one is complete, as
// nothing is written meanwhile. The caller holds st's lock.
func (c *Client) moveOnState(ctx context.Context, st *stateNamespace, write bool) error {
	from := st
	var waitingSince time.Time
	for next := from.gen + 1; ; {
		cand := c.newStateGeneration(st.name, next)
		_, err := c.readState(ctx, cand)
		switch {
		case errors.Is(err, store.ErrUnknownTopic):
			gens, err := c.stateGenerations(ctx, st.name)
			if err != nil {
				return err
			}
			if later := slices.IndexFunc(gens, func(g int) bool { return g <= next }); later != 0 && len(gens) > 0 {
				// Generations after next exist: next was made and
				// deleted (complete, by the copier of a later one,
				// which holds its state; or incomplete, dropped by an
				// earlier version's open, and holding nothing). Go on
				// to the first of them.
				if later < 0 {
					later = len(gens)
				}
				next, waitingSince = gens[later-1], time.Time{}
				continue
			}
			if !write {
				return nil
			}
			if err := c.claimStateGeneration(ctx, cand, from.entries, gens); err != nil {
				return err
			}
			continue // read it back
		case err != nil:
			return err
		case cand.complete && cand.switched && write:
			// Switched from already: its state as of its switch goes on.
			from, next, waitingSince = cand, next+1, time.Time{}
			continue
		case cand.complete:
			if st.topic == "" {
				// Made by this write (puts of others read with it
				// count): the namespace's creation is no change.
				cand.changes += st.changes
			} else {
				cand.changes = st.changes + 1
			}
			*st = *cand
			return nil
		case cand.switched:
			// Switched before it was complete: a copy given up. The
			// state as of from's switch goes on in the one after.
			next, waitingSince = next+1, time.Time{}
			continue
		}
		// A copy under way.
		if !write {
			return nil
		}
		if waitingSince.IsZero() {
			waitingSince = time.Now()
		}
		if time.Since(waitingSince) >= c.stateTakeoverAfter() {
			c.log.Warn("iggy: a system store generation's copy did not complete; giving it up", "topic", cand.topic, "after", time.Since(waitingSince).Round(time.Millisecond))
			if err := c.appendStateMark(ctx, cand.topic, stateSwitch); err != nil && !errors.Is(err, store.ErrUnknownTopic) {
				return err
			}
			waitingSince = time.Time{}
			continue
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return unavailable(err)
		}
	}
}

// stateTakeoverAfter is Config.stateTakeover, or stateTakeoverAfter.
func (c *Client) stateTakeoverAfter() time.Duration {
	if c.cfg.stateTakeover > 0 {
		return c.cfg.stateTakeover
	}
	return stateTakeoverAfter
}

// claimStateGeneration creates gen's topic and, when this instance created
// it (not another first), copies entries into it, then its "complete"
// record, and deletes the generations before it (gens: those there were).
func (c *Client) claimStateGeneration(ctx context.Context, gen *stateNamespace, entries map[string][]byte, gens []int) error {
	sys := c.commits.sys
	if _, err := sys.CreateTopic(ctx, gen.topic, 1, store.TopicConfig{}); errors.Is(err, store.ErrTopicExists) {
		return nil
	} else if err != nil {
		return err
	}
	if err := c.copyState(ctx, gen.topic, entries); err != nil {
		// Give the copy up at once rather than have the next try wait
		// for it (best effort: the next try gives it up otherwise).
		if serr := c.appendStateMark(ctx, gen.topic, stateSwitch); serr != nil {
			c.log.Debug("iggy: giving up a failed system store copy failed too", "topic", gen.topic, "err", serr)
		}
		return err
	}
	for _, g := range gens {
		if g < gen.gen {
			if err := sys.DeleteTopic(ctx, stateTopicPrefix(c.cfg.Stream, gen.name)+strconv.Itoa(g)); err != nil && !errors.Is(err, store.ErrUnknownTopic) {
				c.log.Warn("iggy: could not delete an old system store generation", "generation", g, "err", err)
			}
		}
	}
	c.log.Info("iggy: system store compacted", "topic", gen.topic, "entries", len(entries))
	return nil
}

// copyState appends entries to topic as puts, in batches of about 512 KiB,
// then a "complete" record.
func (c *Client) copyState(ctx context.Context, topic string, entries map[string][]byte) error {
	var batch []stateRecord
	size := 0
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		batch = append(batch, stateRecord{kind: statePut, key: k, value: entries[k]})
		if size += len(k) + len(entries[k]); size > 512<<10 {
			if _, err := c.appendState(ctx, topic, batch); err != nil {
				return err
			}
			batch, size = batch[:0], 0
		}
	}
	_, err := c.appendState(ctx, topic, append(batch, stateRecord{kind: stateComplete}))
	return err
}

// addStateRecord appends r as one message of b.
func addStateRecord(b *message.Batch, r stateRecord) {
	b.Begin(b.Origin)
	b.Buf = appendStateRecord(b.Buf, r)
	b.MarkHeaders()
	b.End()
}
