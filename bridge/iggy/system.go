package iggy

// The system store (docs/design/record-mapping.md §7, docs/IGGY.md "kiggy's
// own state"): kiggy's own state — SCRAM credentials, ACLs, topic configs
// Iggy has no field for, log start offsets — kept as namespaces of key →
// value entries in the reserved system stream, beside the commit log. Each
// namespace of each Kafka stream is a log of put and delete records in a
// topic "state.<stream>.<namespace>.<generation>" of one partition. A
// namespace is read when it is first used and caught up from its tail on
// every later load, so changes made through another kiggy instance show up
// at the next load. A namespace nobody has written has no topic: reading it
// creates nothing in Iggy (it reads as empty until a write creates its
// generation 0), so a gateway that only reads a namespace, as every gateway
// reads the SCRAM credentials, never creates topics, not even in the middle
// of an Iggy cluster's failover. It is compacted when it is first read: when
// it holds many more records than live keys, the live entries are copied into
// the next generation, which becomes current once its "complete" record is
// written.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
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
)

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
// [value u32+bytes], little-endian; a "complete" record is its first two
// bytes.
func appendStateRecord(b []byte, r stateRecord) []byte {
	b = append(b, stateRecordVersion, r.kind)
	if r.kind == stateComplete {
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
	if r.kind == stateComplete {
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

// systemState is the client's system store: the namespaces read so far.
type systemState struct {
	mu sync.Mutex
	ns map[string]*stateNamespace
}

// stateNamespace is one namespace: its current generation's topic, the next
// offset to read from it, and the live entries.
type stateNamespace struct {
	name string
	// topic is the current generation's topic; "" while the namespace has
	// none (nobody wrote it): it reads as empty, and its first write creates
	// generation 0.
	topic   string
	gen     int
	next    int64
	records int
	entries map[string][]byte
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
	st, err := c.stateNamespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
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
	st, err := c.stateNamespace(ctx, ns)
	if err != nil {
		return 0, err
	}
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
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
// or refuses whole (docs/IGGY.md "kiggy's own state").
func (c *Client) PutSystemAll(ctx context.Context, ns string, entries []store.SystemEntry) error {
	if len(entries) == 0 {
		return nil
	}
	records := make([]stateRecord, len(entries))
	var b message.Batch
	b.Reset(uint64(time.Now().UnixMicro()))
	for i, e := range entries {
		if len(e.Key) == 0 || len(e.Key) > maxStateKey || len(e.Value) > maxStateValue {
			return fmt.Errorf("iggy: system store entry %q: key of 1..%d bytes and value of at most %d bytes: %w", e.Key, maxStateKey, maxStateValue, store.ErrTooLarge)
		}
		records[i] = stateRecord{kind: statePut, key: e.Key, value: e.Value}
		if e.Value == nil {
			records[i].kind = stateDelete
		}
		addStateRecord(&b, records[i])
	}
	st, err := c.stateNamespace(ctx, ns)
	if err != nil {
		return err
	}
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	if st.topic == "" {
		// The namespace's first write (here) creates it.
		fresh, err := c.openStateNamespace(ctx, ns, true)
		if err != nil {
			return err
		}
		// Its own creation is no change; what another instance wrote
		// first, read just now, is.
		fresh.changes += st.changes
		*st = *fresh
	}
	// Apply what other instances wrote first, so this change lands after them
	// here as it does in the log.
	if err := c.catchUpState(ctx, st); err != nil {
		return err
	}
	sys := c.commits.sys
	base, err := sys.Append(ctx, st.topic, 0, &b)
	if err != nil {
		return err
	}
	if base != st.next {
		// Another instance appended between the catch-up above and this
		// append: read from where this instance stopped, its records and
		// then these, in the log's order, rather than skip past them.
		// The change is written whatever the read does: a failed read
		// leaves st.next where it stopped, for the next catch-up.
		if _, err := c.readState(ctx, st); err != nil {
			c.log.Warn("iggy: reading the system store after a write failed", "topic", st.topic, "err", err)
		}
		return nil
	}
	changes := st.changes
	for _, r := range records {
		st.apply(r)
	}
	st.changes = changes // this client's own write: its caller knows of it
	st.records += len(records)
	st.next = base + int64(len(records))
	return nil
}

// stateNamespace returns namespace ns, opening it on first use.
func (c *Client) stateNamespace(ctx context.Context, ns string) (*stateNamespace, error) {
	if !validNamespace(ns) {
		return nil, fmt.Errorf("iggy: system store namespace %q: want 1..32 of [a-z0-9-]", ns)
	}
	if c.commits == nil {
		return nil, errNoSystemStream
	}
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	if st := c.state.ns[ns]; st != nil {
		return st, nil
	}
	st, err := c.openStateNamespace(ctx, ns, false)
	if err != nil {
		return nil, err
	}
	if c.state.ns == nil {
		c.state.ns = map[string]*stateNamespace{}
	}
	c.state.ns[ns] = st
	return st, nil
}

// openStateNamespace finds the newest complete generation of ns, loads it,
// and compacts it if it grew large. A namespace without one is created
// (generation 0) when create is set, and is otherwise returned without a
// topic: a look costs one listing of the system stream's topics.
func (c *Client) openStateNamespace(ctx context.Context, ns string, create bool) (*stateNamespace, error) {
	sys := c.commits.sys
	prefix := stateTopicPrefix(c.cfg.Stream, ns)
	topics, err := sys.Topics(ctx)
	if err != nil {
		return nil, err
	}
	var gens []int
	for _, t := range topics {
		if rest, ok := strings.CutPrefix(t.Name, prefix); ok {
			if g, err := strconv.Atoi(rest); err == nil && g >= 0 {
				gens = append(gens, g)
			}
		}
	}
	slices.Sort(gens)
	slices.Reverse(gens) // newest first
	for i, g := range gens {
		st := &stateNamespace{name: ns, topic: prefix + strconv.Itoa(g), gen: g, entries: map[string][]byte{}}
		complete, err := c.readState(ctx, st)
		if err != nil {
			return nil, err
		}
		if !complete && i == len(gens)-1 {
			// The oldest generation left, incomplete: a creation cut short (its
			// "complete" record refused or never sent), as an Iggy
			// cluster's failover can leave one. It is completed in place,
			// not dropped and created again: a topic created in every
			// attempt is what a cluster mid-failover copes with worst.
			if !create {
				return &stateNamespace{name: ns, entries: map[string][]byte{}}, nil
			}
			var b message.Batch
			b.Reset(uint64(time.Now().UnixMicro()))
			addStateRecord(&b, stateRecord{kind: stateComplete})
			if _, err := sys.Append(ctx, st.topic, 0, &b); err != nil {
				return nil, err
			}
			if _, err := c.readState(ctx, st); err != nil {
				return nil, err
			}
			return st, nil
		}
		if !complete {
			// A compaction cut short: its older generation is still there.
			c.log.Warn("iggy: dropping an incomplete system store generation", "topic", st.topic)
			if err := sys.DeleteTopic(ctx, st.topic); err != nil && !errors.Is(err, store.ErrUnknownTopic) {
				return nil, err
			}
			continue
		}
		if c.cfg.worthCompacting(st.records, len(st.entries)) {
			return c.compactState(ctx, st, g+1, gens)
		}
		return st, nil
	}
	if !create {
		return &stateNamespace{name: ns, entries: map[string][]byte{}}, nil
	}
	return c.compactState(ctx, &stateNamespace{name: ns, entries: map[string][]byte{}}, 0, gens)
}

// catchUpState applies the records appended to st's topic since it was last
// read (by other instances). When another instance compacted the namespace
// into a newer generation and deleted this one, it reopens the namespace.
// The caller holds c.state.mu.
func (c *Client) catchUpState(ctx context.Context, st *stateNamespace) error {
	if st.topic != "" {
		_, err := c.readState(ctx, st)
		if !errors.Is(err, store.ErrUnknownTopic) {
			return err
		}
	}
	// No topic yet (another instance may have written the namespace since),
	// or its generation is gone: look again.
	fresh, err := c.openStateNamespace(ctx, st.name, false)
	if err != nil {
		return err
	}
	if fresh.topic == "" && st.topic == "" {
		return nil // still nobody's written it
	}
	fresh.changes = st.changes + 1
	*st = *fresh
	return nil
}

// readState applies st's topic from st.next to its end and reports whether
// a "complete" record was among what it read or is already known.
func (c *Client) readState(ctx context.Context, st *stateNamespace) (complete bool, err error) {
	sys := c.commits.sys
	for {
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
			if r.kind == stateComplete {
				complete = true
				return true
			}
			st.apply(r)
			return true
		})
		if err != nil {
			return false, err
		}
		if n == 0 || st.next >= wm.High {
			return complete, nil
		}
	}
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

// compactState writes st's live entries into generation gen of its
// namespace, marks it complete, makes it current and deletes the older
// generations.
func (c *Client) compactState(ctx context.Context, st *stateNamespace, gen int, old []int) (*stateNamespace, error) {
	sys := c.commits.sys
	prefix := stateTopicPrefix(c.cfg.Stream, st.name)
	name := prefix + strconv.Itoa(gen)
	if _, err := sys.CreateTopic(ctx, name, 1, store.TopicConfig{}); err != nil && !errors.Is(err, store.ErrTopicExists) {
		return nil, err
	}
	var b message.Batch
	flush := func() error {
		if b.Count == 0 {
			return nil
		}
		_, err := sys.Append(ctx, name, 0, &b)
		b.Reset(uint64(time.Now().UnixMicro()))
		return err
	}
	b.Reset(uint64(time.Now().UnixMicro()))
	for _, k := range slices.Sorted(maps.Keys(st.entries)) {
		addStateRecord(&b, stateRecord{kind: statePut, key: k, value: st.entries[k]})
		if b.Size() > 512<<10 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	addStateRecord(&b, stateRecord{kind: stateComplete})
	if err := flush(); err != nil {
		return nil, err
	}
	for _, g := range old {
		if g < gen {
			if err := sys.DeleteTopic(ctx, prefix+strconv.Itoa(g)); err != nil && !errors.Is(err, store.ErrUnknownTopic) {
				c.log.Warn("iggy: could not delete an old system store generation", "generation", g, "err", err)
			}
		}
	}
	// Read the new generation back from its start: it holds the entries
	// just written and anything another instance appended meanwhile.
	fresh := &stateNamespace{name: st.name, topic: name, gen: gen, entries: map[string][]byte{}}
	if _, err := c.readState(ctx, fresh); err != nil {
		return nil, err
	}
	c.log.Info("iggy: system store compacted", "topic", name, "entries", len(fresh.entries))
	return fresh, nil
}

// addStateRecord appends r as one message of b.
func addStateRecord(b *message.Batch, r stateRecord) {
	b.Begin(b.Origin)
	b.Buf = appendStateRecord(b.Buf, r)
	b.MarkHeaders()
	b.End()
}
