package group

// The stored form of a consumer-protocol group (docs/design/consumer-groups.md
// §6): a head record and a record per member, of which a gateway writes
// those that changed after each change, and reads back at start or when it
// takes the group over, so that members keep their epochs and partitions
// across a restart or a coordinator move instead of rejoining from scratch.

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"
)

// storedGroupHead is a consumer group's head record (JSON, version 2): the
// group without its members, each of which has a record of its own
// (storedMemberRecord), so that a change writes what changed. Incarnation
// tells this group's member records from those a failed removal of an
// earlier group of the same id left; Members counts this group's.
type storedGroupHead struct {
	V               int    `json:"v"`
	Incarnation     uint64 `json:"incarnation"`
	Epoch           int32  `json:"epoch"`
	AssignmentEpoch int32  `json:"assignment_epoch"`
	Assignor        string `json:"assignor,omitempty"`
	SubsHash        uint64 `json:"subs_hash"`
	Members         int    `json:"members"`
}

// storedMemberRecord is one member's record: the member, its group's
// incarnation and its target assignment (absent: none).
type storedMemberRecord struct {
	storedMember
	Incarnation uint64        `json:"incarnation"`
	Target      *storedPartns `json:"target,omitempty"`
}

// storedGroup is a consumer group as a whole: the form version 1 stored,
// which RestoreConsumerGroupV1 reads, and what a version 2 group's records
// are gathered into to be restored.
type storedGroup struct {
	V               int                     `json:"v"`
	Epoch           int32                   `json:"epoch"`
	AssignmentEpoch int32                   `json:"assignment_epoch"`
	Assignor        string                  `json:"assignor,omitempty"`
	SubsHash        uint64                  `json:"subs_hash"`
	Members         []storedMember          `json:"members"`
	Target          map[string]storedPartns `json:"target"`
}

type storedMember struct {
	ID            string       `json:"id"`
	Epoch         int32        `json:"epoch"`
	PreviousEpoch int32        `json:"previous_epoch"`
	State         uint8        `json:"state"`
	InstanceID    *string      `json:"instance_id,omitempty"`
	RackID        *string      `json:"rack_id,omitempty"`
	ClientID      string       `json:"client_id,omitempty"`
	ClientHost    string       `json:"client_host,omitempty"`
	RebalanceMs   int64        `json:"rebalance_ms"`
	Names         []string     `json:"names,omitempty"`
	Regex         *string      `json:"regex,omitempty"`
	Assignor      string       `json:"assignor,omitempty"`
	Assigned      storedPartns `json:"assigned"`
	Revoking      storedPartns `json:"revoking,omitempty"`
	// Classic is set for a classic member (migration.go).
	Classic *storedClassic `json:"classic,omitempty"`
}

// storedClassic is a classic member's protocols and session timeout.
type storedClassic struct {
	Protocols []storedProtocol `json:"protocols"`
	SessionMs int64            `json:"session_ms"`
}

type storedProtocol struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata"`
}

// storedPartns is a partitionSet with hex topic ids.
type storedPartns map[string][]int32

func (s storedPartns) load() (partitionSet, error) {
	out := make(partitionSet, len(s))
	for k, ps := range s {
		b, err := hex.DecodeString(k)
		if err != nil || len(b) != 16 {
			return nil, errors.New("bad topic id " + k)
		}
		var id [16]byte
		copy(id[:], b)
		out[id] = slices.Clone(ps)
	}
	return out, nil
}

// DirtyConsumerGroups returns the changes of the consumer groups changed
// since the last call, in group id order (a group deleted before one of the
// same id was created comes first): each the records to put and to delete
// so that the store holds the group as it is now (its head when it changed,
// each member whose record changed, the removal of each member gone), a
// group deleted as the removal of every record it had. A group unloaded
// here (it moved to another coordinator) is left out: its stored form is
// the new coordinator's to change. The owner writes each change whole and
// reports a change it could not write (ConsumerGroupChange.Failed); with
// Config.AwaitStore it reports them stored (ConsumerGroupsStored) once
// written, or once writing failed, which releases the answers waiting for
// them.
func (c *Coordinator) DirtyConsumerGroups() []*ConsumerGroupChange {
	c.mu.Lock()
	dirty := c.cdirty
	c.cdirty = nil
	c.ctaken = c.cseq
	c.mu.Unlock()
	if len(dirty) == 0 {
		return nil
	}
	out := make([]*ConsumerGroupChange, 0, len(dirty))
	for cg := range dirty {
		cg.mu.Lock()
		switch {
		case cg.deleted:
			out = append(out, cg.removal())
		case !cg.dead:
			ch := cg.change()
			if ch.untouched != "" {
				cg.mu.Unlock()
				panic(ch.untouched) // checkTouched
			}
			if len(ch.Entries) > 0 {
				out = append(out, ch)
			}
		}
		cg.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b *ConsumerGroupChange) int {
		if n := strings.Compare(a.Group, b.Group); n != 0 {
			return n
		}
		if a.removes != b.removes {
			if a.removes {
				return -1
			}
			return 1
		}
		return 0
	})
	return out
}

// markDirty records that cg changed, for DirtyConsumerGroups, and wakes the
// writer (Config.ConsumerGroupChanged). Called with cg locked.
func (cg *cgroup) markDirty() {
	if checkTouched {
		cg.checkTouchedSinceMarked()
	}
	c := cg.c
	c.mu.Lock()
	if c.cdirty == nil {
		c.cdirty = map[*cgroup]struct{}{}
	}
	c.cdirty[cg] = struct{}{}
	c.cseq++
	cg.dirtySeq = c.cseq
	c.mu.Unlock()
	c.wakeWriter()
}

// change returns the records that bring the store from what it holds of
// cg (storedHead, storedMembers) to cg as it is, and takes them as stored;
// cg is locked. The members touched since the last change (all of them on
// a group new here) are encoded and compared by hash with the record last
// written: a write costs the store, and the writer, the members that
// changed, not the group.
func (cg *cgroup) change() *ConsumerGroupChange {
	ch := &ConsumerGroupChange{Group: cg.id, cg: cg}
	if cg.storedMembers == nil {
		cg.storedMembers = make(map[string]uint64, len(cg.members))
	}
	var buf []byte
	put := func(id string, m *cmember) {
		buf = cg.appendMemberRecord(buf[:0], m)
		if h := xxh3.Hash(buf); cg.storedMembers[id] != h {
			cg.storedMembers[id] = h
			ch.Entries = append(ch.Entries, StoreEntry{Key: ConsumerGroupMemberKey(cg.id, id), Value: slices.Clone(buf)})
		}
	}
	remove := func(id string) {
		delete(cg.storedMembers, id)
		ch.deleted = append(ch.deleted, id)
		ch.Entries = append(ch.Entries, StoreEntry{Key: ConsumerGroupMemberKey(cg.id, id)})
	}
	if cg.touchedAll {
		for id, m := range cg.members {
			put(id, m)
		}
		for id := range cg.storedMembers {
			if cg.members[id] == nil {
				remove(id)
			}
		}
	} else {
		for id := range cg.touched {
			if m := cg.members[id]; m != nil {
				put(id, m)
			} else if _, ok := cg.storedMembers[id]; ok {
				remove(id)
			}
		}
	}
	if checkTouched && !cg.touchedAll {
		ch.untouched = cg.checkUntouched()
	}
	cg.touchedAll = false
	clear(cg.touched)
	slices.SortFunc(ch.Entries, func(a, b StoreEntry) int { return strings.Compare(a.Key, b.Key) })
	head := cg.appendHead(nil)
	if h := xxh3.Hash(head); cg.storedHead != h {
		cg.storedHead = h
		ch.Entries = append(ch.Entries, StoreEntry{Key: ConsumerGroupHeadKey(cg.id), Value: head})
	}
	return ch
}

// checkTouched, set by this package's tests, has every change check that
// the members it did not encode (not touched) have the records last
// written (checkUntouched): a change to a member's record that does not
// touch it would never be stored.
var checkTouched bool

// checkUntouched returns why a member not touched since the last change
// has another record than the one last written, or is gone with its record
// still stored; "" when none is. cg is locked.
func (cg *cgroup) checkUntouched() string {
	for id, m := range cg.members {
		if _, ok := cg.touched[id]; !ok && xxh3.Hash(cg.appendMemberRecord(nil, m)) != cg.storedMembers[id] {
			return "group: member " + id + " of group " + cg.id + " changed without being touched"
		}
	}
	for id := range cg.storedMembers {
		if _, ok := cg.touched[id]; !ok && cg.members[id] == nil {
			return "group: member " + id + " of group " + cg.id + " left without being touched"
		}
	}
	return ""
}

// touchCheck is checkTouched's record of a group between two markDirty
// calls: each member's record at the last, and the members touched since.
// It checks every change a test makes, whether or not the test takes the
// changes for a store.
type touchCheck struct {
	records map[string]string
	touched map[string]struct{}
}

// checkTouchFailed is the first member record checkTouchedSinceMarked found
// changed without a touch; the package's TestMain fails on it.
var checkTouchFailed atomic.Pointer[string]

// checkTouchedSinceMarked compares every member's record with its record
// at the group's last markDirty: one that differs (or a member gone)
// without a touch since is recorded in checkTouchFailed. cg is locked.
func (cg *cgroup) checkTouchedSinceMarked() {
	tc := &cg.touchCheck
	records := make(map[string]string, len(cg.members))
	fail := func(msg string) {
		msg += "\n" + string(debug.Stack())
		checkTouchFailed.CompareAndSwap(nil, &msg)
	}
	for id, m := range cg.members {
		records[id] = string(cg.appendMemberRecord(nil, m))
		_, touched := tc.touched[id]
		if r, ok := tc.records[id]; ok && r != records[id] && !touched {
			fail("group: member " + id + " of group " + cg.id + " changed without being touched:\n" + r + "\n" + records[id])
		}
	}
	for id := range tc.records {
		if _, touched := tc.touched[id]; cg.members[id] == nil && !touched {
			fail("group: member " + id + " of group " + cg.id + " left without being touched")
		}
	}
	tc.records, tc.touched = records, nil
}

// removal returns the change that removes every record the store may hold
// of cg; cg is locked.
func (cg *cgroup) removal() *ConsumerGroupChange {
	ch := &ConsumerGroupChange{Group: cg.id, cg: cg, removes: true}
	ch.Entries = append(ch.Entries, StoreEntry{Key: ConsumerGroupHeadKey(cg.id)})
	for _, id := range slices.Sorted(maps.Keys(cg.storedMembers)) {
		ch.Entries = append(ch.Entries, StoreEntry{Key: ConsumerGroupMemberKey(cg.id, id)})
	}
	return ch
}

// StoreEntry is one record of the consumer groups' stored form: its key in
// the owner's namespace and its value, nil to delete it.
type StoreEntry struct {
	Key   string
	Value []byte
}

// ConsumerGroupChange is one consumer group's change to the store
// (DirtyConsumerGroups): Entries are written together, in order, or not at
// all.
type ConsumerGroupChange struct {
	// Group is the group id.
	Group string
	// Entries are the records to put (a value) and delete (nil).
	Entries []StoreEntry
	cg      *cgroup
	removes bool     // the removal of a deleted group
	deleted []string // members whose records the change deletes
	// untouched is what checkTouched found wrong, "" when nothing.
	untouched string
}

// Failed reports that the change could not be written: the store holds
// the group as before it, or as after it, so the group's next change
// writes every record it has and removes every record it may have had.
func (ch *ConsumerGroupChange) Failed() {
	cg := ch.cg
	cg.mu.Lock()
	defer cg.mu.Unlock()
	cg.storedHead = 0
	for id := range cg.storedMembers {
		cg.storedMembers[id] = 0
	}
	for _, id := range ch.deleted {
		cg.storedMembers[id] = 0
	}
	cg.touchAll()
}

// Removal returns the records that remove the group from the store, every
// one it may have there: the owner writes them instead of a change the
// store refuses (a record past its bounds), so that no older form of the
// group is restored. Its members rejoin after a restart or a move. Once
// they are written, Removed.
func (ch *ConsumerGroupChange) Removal() []StoreEntry {
	cg := ch.cg
	cg.mu.Lock()
	defer cg.mu.Unlock()
	r := cg.removal()
	for _, id := range ch.deleted {
		r.Entries = append(r.Entries, StoreEntry{Key: ConsumerGroupMemberKey(cg.id, id)})
	}
	return r.Entries
}

// Removed reports the Removal written: the store holds nothing of the
// group, and its next change writes every record.
func (ch *ConsumerGroupChange) Removed() {
	cg := ch.cg
	cg.mu.Lock()
	defer cg.mu.Unlock()
	cg.storedHead = 0
	clear(cg.storedMembers)
	cg.touchAll()
}

// ConsumerGroupHeadKey is the key of group id's head record: "h" and the
// id.
func ConsumerGroupHeadKey(id string) string { return "h" + id }

// ConsumerGroupMemberKey is the key of member's record in group id: "m",
// the id's length as a uvarint, the id and the member id.
func ConsumerGroupMemberKey(id, member string) string {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(id)+len(member))
	b = append(b, 'm')
	b = binary.AppendUvarint(b, uint64(len(id)))
	b = append(b, id...)
	return string(append(b, member...))
}

// StoredConsumerGroup is what the store holds of one consumer group: its
// head record and its members' records by member id.
type StoredConsumerGroup struct {
	Head    []byte
	Members map[string][]byte
}

// SplitConsumerGroups sorts a namespace of consumer-group records
// (ConsumerGroupHeadKey, ConsumerGroupMemberKey) by group: the groups with
// a head, and the keys of the records that belong to no group (malformed,
// or members of a group without a head), which nothing restores.
func SplitConsumerGroups(ns map[string][]byte) (map[string]StoredConsumerGroup, []string) {
	groups := map[string]StoredConsumerGroup{}
	for k, v := range ns {
		if id, ok := strings.CutPrefix(k, "h"); ok {
			s := groups[id]
			s.Head = v
			groups[id] = s
		}
	}
	var orphans []string
	for k, v := range ns {
		if strings.HasPrefix(k, "h") {
			continue
		}
		id, member, ok := SplitConsumerGroupMemberKey(k)
		s, found := groups[id]
		if !ok || !found {
			orphans = append(orphans, k)
			continue
		}
		if s.Members == nil {
			s.Members = map[string][]byte{}
			groups[id] = s
		}
		s.Members[member] = v
	}
	slices.Sort(orphans)
	return groups, orphans
}

// SplitConsumerGroupMemberKey parses a ConsumerGroupMemberKey.
func SplitConsumerGroupMemberKey(k string) (id, member string, ok bool) {
	if len(k) < 2 || k[0] != 'm' {
		return "", "", false
	}
	n, size := binary.Uvarint([]byte(k[1:min(len(k), 1+binary.MaxVarintLen64)]))
	if size <= 0 || n > uint64(len(k)-1-size) {
		return "", "", false
	}
	rest := k[1+size:]
	if id, member = rest[:n], rest[n:]; member == "" {
		return "", "", false
	}
	return id, member, true
}

// appendHead appends cg's head record: the group without its members, as
// encoding/json writes its storedHead (TestConsumerGroupEncodeSameAsJSON).
// cg is locked.
func (cg *cgroup) appendHead(b []byte) []byte {
	b = append(b, `{"v":2,"incarnation":`...)
	b = strconv.AppendUint(b, cg.incarnation, 10)
	b = append(b, `,"epoch":`...)
	b = strconv.AppendInt(b, int64(cg.epoch), 10)
	b = append(b, `,"assignment_epoch":`...)
	b = strconv.AppendInt(b, int64(cg.assignmentEpoch), 10)
	if cg.assignorName != "" {
		b = append(b, `,"assignor":`...)
		b = appendJSONString(b, cg.assignorName)
	}
	b = append(b, `,"subs_hash":`...)
	b = strconv.AppendUint(b, cg.subsHash, 10)
	b = append(b, `,"members":`...)
	b = strconv.AppendInt(b, int64(len(cg.members)), 10)
	return append(b, '}')
}

// appendMemberRecord appends m's record, as encoding/json writes its
// storedMemberRecord: the member, its group's incarnation and its target
// assignment. cg is locked.
func (cg *cgroup) appendMemberRecord(b []byte, m *cmember) []byte {
	b = appendStoredMember(b, m)
	b = b[:len(b)-1] // reopen the object
	b = append(b, `,"incarnation":`...)
	b = strconv.AppendUint(b, cg.incarnation, 10)
	if t, ok := cg.target[m.id]; ok {
		b = append(b, `,"target":`...)
		b = appendStoredPartitions(b, t)
	}
	return append(b, '}')
}

// appendStoredMember appends m as encoding/json writes its storedMember.
func appendStoredMember(b []byte, m *cmember) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, m.id)
	b = append(b, `,"epoch":`...)
	b = strconv.AppendInt(b, int64(m.epoch), 10)
	b = append(b, `,"previous_epoch":`...)
	b = strconv.AppendInt(b, int64(m.previousEpoch), 10)
	b = append(b, `,"state":`...)
	b = strconv.AppendUint(b, uint64(uint8(m.state)), 10)
	optional := func(b []byte, key, v string, has bool) []byte {
		if !has {
			return b
		}
		b = append(b, key...)
		return appendJSONString(b, v)
	}
	b = optional(b, `,"instance_id":`, m.instanceID, m.hasInstance)
	b = optional(b, `,"rack_id":`, m.rackID, m.hasRack)
	b = optional(b, `,"client_id":`, m.clientID, m.clientID != "")
	b = optional(b, `,"client_host":`, m.clientHost, m.clientHost != "")
	b = append(b, `,"rebalance_ms":`...)
	b = strconv.AppendInt(b, m.rebalance.Milliseconds(), 10)
	if len(m.names) > 0 {
		b = append(b, `,"names":[`...)
		for i, n := range m.names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, n)
		}
		b = append(b, ']')
	}
	b = optional(b, `,"regex":`, m.regex, m.hasRegex)
	b = optional(b, `,"assignor":`, m.assignor, m.assignor != "")
	b = append(b, `,"assigned":`...)
	b = appendStoredPartitions(b, m.assigned)
	if nonEmpty(m.revoking) {
		b = append(b, `,"revoking":`...)
		b = appendStoredPartitions(b, m.revoking)
	}
	if c := m.classic; c != nil {
		b = append(b, `,"classic":{"protocols":`...)
		if len(c.protocols) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, p := range c.protocols {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"name":`...)
				b = appendJSONString(b, p.Name)
				b = append(b, `,"metadata":`...)
				if p.Metadata == nil {
					b = append(b, "null"...)
				} else {
					b = append(b, '"')
					b = base64.StdEncoding.AppendEncode(b, p.Metadata)
					b = append(b, '"')
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, `,"session_ms":`...)
		b = strconv.AppendInt(b, c.session.Milliseconds(), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// nonEmpty reports whether s holds a partition (the stored form leaves
// out topics without one).
func nonEmpty(s partitionSet) bool {
	for _, ps := range s {
		if len(ps) > 0 {
			return true
		}
	}
	return false
}

// appendStoredPartitions appends s as encoding/json writes its
// storedPartns: topics by hex id, sorted, those without partitions left
// out.
func appendStoredPartitions(b []byte, s partitionSet) []byte {
	var small [4][16]byte
	ids := small[:0]
	for t, ps := range s {
		if len(ps) > 0 {
			ids = append(ids, t)
		}
	}
	slices.SortFunc(ids, compareIDs) // hex keeps the order of the bytes
	b = append(b, '{')
	for i, t := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = hex.AppendEncode(b, t[:])
		b = append(b, `":[`...)
		for j, p := range s[t] {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(p), 10)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendJSONString appends s quoted as encoding/json quotes it: a string
// of printable ASCII without a quote, backslash or HTML character as it
// is, any other through encoding/json itself (its escapes of HTML
// characters, U+2028, U+2029 and invalid UTF-8 are its own).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string: cannot fail
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// RestoreConsumerGroup loads consumer group id from what the store holds
// of it, unless the group is already loaded here (which then wins). Every
// member gets a fresh session: it has a session timeout to heartbeat to
// this coordinator.
func (c *Coordinator) RestoreConsumerGroup(id string, s StoredConsumerGroup) error {
	cg, err := c.decodeConsumerGroup(id, s)
	if err != nil {
		return err
	}
	if c.restoreConsumerGroup(cg) && len(cg.storedMembers) > len(cg.members) {
		cg.mu.Lock()
		cg.markDirty() // to remove the records of an earlier incarnation
		cg.mu.Unlock()
	}
	return nil
}

// RestoreConsumerGroupV1 loads consumer group id from the whole-group form
// earlier versions stored (version 1), as RestoreConsumerGroup, and marks
// it changed: the owner's next write stores it as records, after which the
// owner removes the old form.
func (c *Coordinator) RestoreConsumerGroupV1(id string, b []byte) error {
	var sg storedGroup
	if err := json.Unmarshal(b, &sg); err != nil {
		return err
	}
	if sg.V != 1 {
		return errors.New("consumer group " + id + ": stored form version not understood")
	}
	cg, err := c.buildConsumerGroup(id, &sg)
	if err != nil {
		return err
	}
	cg.incarnation = newIncarnation()
	cg.touchAll()
	if c.restoreConsumerGroup(cg) {
		cg.mu.Lock()
		cg.markDirty()
		cg.mu.Unlock()
	}
	return nil
}

// restoreConsumerGroup adds the restored group cg unless its id is taken
// here, and reports whether it did.
func (c *Coordinator) restoreConsumerGroup(cg *cgroup) bool {
	c.mu.Lock()
	if c.closed || c.cgroups[cg.id] != nil || c.groups[cg.id] != nil {
		c.mu.Unlock()
		return false
	}
	c.cgroups[cg.id] = cg
	c.mu.Unlock()
	cg.mu.Lock()
	cg.schedule(c.clock.now())
	cg.account()
	cg.mu.Unlock()
	return true
}

// decodeConsumerGroup builds consumer group id from its records. Member
// records of another incarnation of the group (left by a removal that
// failed) are not its own and are left out; the head names how many of
// its own there are.
func (c *Coordinator) decodeConsumerGroup(id string, s StoredConsumerGroup) (*cgroup, error) {
	var head storedGroupHead
	if err := json.Unmarshal(s.Head, &head); err != nil {
		return nil, err
	}
	if head.V != 2 {
		return nil, errors.New("consumer group " + id + ": stored form version not understood")
	}
	sg := storedGroup{V: 1, Epoch: head.Epoch, AssignmentEpoch: head.AssignmentEpoch, Assignor: head.Assignor,
		SubsHash: head.SubsHash, Target: map[string]storedPartns{}}
	hashes := make(map[string]uint64, len(s.Members))
	var stale []string
	for _, member := range slices.Sorted(maps.Keys(s.Members)) {
		b := s.Members[member]
		var r storedMemberRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, err
		}
		if r.Incarnation != head.Incarnation {
			hashes[member] = 0 // another group's: the next change removes it
			stale = append(stale, member)
			continue
		}
		if r.ID != member {
			return nil, errors.New("consumer group " + id + ": a member record under another member's key")
		}
		sg.Members = append(sg.Members, r.storedMember)
		if r.Target != nil {
			sg.Target[member] = *r.Target
		}
	}
	if len(sg.Members) != head.Members {
		return nil, errors.New("consumer group " + id + ": the head names " + strconv.Itoa(head.Members) +
			" members, the store holds " + strconv.Itoa(len(sg.Members)))
	}
	cg, err := c.buildConsumerGroup(id, &sg)
	if err != nil {
		return nil, err
	}
	// What the store holds decodes to cg: its records are cg's as this
	// version encodes them (they may be other bytes, of an earlier version).
	cg.incarnation = head.Incarnation
	cg.storedHead = xxh3.Hash(cg.appendHead(nil))
	for id, m := range cg.members {
		hashes[id] = xxh3.Hash(cg.appendMemberRecord(nil, m))
	}
	cg.storedMembers = hashes
	for _, id := range stale {
		cg.touch(id)
	}
	return cg, nil
}

// buildConsumerGroup builds consumer group id from sg, as restored: every
// member with a fresh session.
func (c *Coordinator) buildConsumerGroup(id string, sg *storedGroup) (*cgroup, error) {
	cg := &cgroup{c: c, id: strings.Clone(id), epoch: sg.Epoch, assignmentEpoch: sg.AssignmentEpoch,
		assignorName: sg.Assignor, subsHash: sg.SubsHash, members: map[string]*cmember{}, static: map[string]string{},
		target: map[string]partitionSet{}, owners: map[tp]string{}}
	now := c.clock.now()
	for _, sm := range sg.Members {
		if sm.ID == "" || cg.members[sm.ID] != nil {
			return nil, errors.New("consumer group " + id + ": bad member id")
		}
		assigned, err := sm.Assigned.load()
		if err != nil {
			return nil, err
		}
		revoking, err := sm.Revoking.load()
		if err != nil {
			return nil, err
		}
		m := &cmember{id: sm.ID, epoch: sm.Epoch, previousEpoch: sm.PreviousEpoch, state: memberState(sm.State),
			clientID: sm.ClientID, clientHost: sm.ClientHost, rebalance: time.Duration(sm.RebalanceMs) * time.Millisecond,
			names: sm.Names, assignor: sm.Assignor, sessionEnd: now.Add(c.consumerSessionTimeout())}
		if m.state > msUnreleasedPartitions {
			return nil, errors.New("consumer group " + id + ": bad member state")
		}
		if sm.InstanceID != nil {
			m.instanceID, m.hasInstance = *sm.InstanceID, true
			cg.static[m.instanceID] = m.id
		}
		if sm.RackID != nil {
			m.rackID, m.hasRack = *sm.RackID, true
		}
		if sm.Regex != nil {
			m.regex, m.hasRegex = *sm.Regex, true
			if m.re, err = compileTopicRegex(m.regex); err != nil {
				return nil, err
			}
		}
		if sm.Classic != nil {
			if len(sm.Classic.Protocols) == 0 {
				return nil, errors.New("consumer group " + id + ": a classic member without protocols")
			}
			m.classic = &classicInfo{session: time.Duration(sm.Classic.SessionMs) * time.Millisecond}
			for _, p := range sm.Classic.Protocols {
				m.classic.protocols = append(m.classic.protocols, Protocol(p))
			}
		}
		cg.members[m.id] = m
		cg.setAssigned(m, assigned, revoking)
		if m.state == msUnrevokedPartitions {
			m.revokeEnd = now.Add(m.rebalanceTimeout())
		}
	}
	for mid, sp := range sg.Target {
		set, err := sp.load()
		if err != nil {
			return nil, err
		}
		cg.target[mid] = set
	}
	// The stored form is the store's already.
	cg.restored, cg.changed = true, false
	return cg, nil
}

// ConsumerRestoredBehind reports, once per restored group, whether member
// names a newer member epoch than group id holds for it while the group is
// as it was restored: in a cluster, a change its last coordinator stored
// after this instance read the store (the view moved the group during it),
// so the store is worth reading again (ReplaceRestoredConsumer).
func (c *Coordinator) ConsumerRestoredBehind(id, member string, epoch int32) bool {
	c.mu.Lock()
	cg := c.cgroups[id]
	c.mu.Unlock()
	if cg == nil {
		return false
	}
	cg.mu.Lock()
	defer cg.mu.Unlock()
	m := cg.members[member]
	if !cg.restored || cg.reread || cg.dirtySeq != 0 || cg.dead || m == nil || epoch <= m.epoch {
		return false
	}
	cg.reread = true
	return true
}

// ReplaceRestoredConsumer replaces consumer group id, restored and
// unchanged since, with its stored form s when s is newer (a higher group
// epoch, or the same with a member further on), and reports whether it
// did.
func (c *Coordinator) ReplaceRestoredConsumer(id string, s StoredConsumerGroup) (bool, error) {
	ng, err := c.decodeConsumerGroup(id, s)
	if err != nil {
		return false, err
	}
	ng.reread = true
	c.mu.Lock()
	old := c.cgroups[id]
	c.mu.Unlock()
	if old == nil {
		return false, nil
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	if !old.restored || old.dirtySeq != 0 || old.dead || !ng.newerThan(old) {
		return false, nil
	}
	old.dead = true
	old.account()
	if old.timer != nil {
		old.timer.Stop()
		old.timer = nil
	}
	c.mu.Lock()
	replaced := !c.closed && c.cgroups[id] == old
	if replaced {
		c.cgroups[id] = ng
	}
	c.mu.Unlock()
	if replaced {
		ng.mu.Lock()
		ng.schedule(c.clock.now())
		ng.account()
		ng.mu.Unlock()
	}
	return replaced, nil
}

// newerThan reports whether cg, a stored form, is further on than old.
func (cg *cgroup) newerThan(old *cgroup) bool {
	if cg.epoch != old.epoch {
		return cg.epoch > old.epoch
	}
	for id, m := range cg.members {
		if o := old.members[id]; o != nil && m.epoch > o.epoch {
			return true
		}
	}
	return false
}

// newIncarnation returns a random incarnation for a new group's records.
func newIncarnation() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}
