// Package txn is kiggy's Kafka transaction coordinator
// (docs/design/transactions.md): the state of every transactional id,
// its transitions as Kafka's TransactionCoordinator makes them, kept in
// the gateway's system store before they are answered, and, per
// partition, what read_committed consumers need: the last stable offset
// and the index of aborted transactions (index.go).
//
// The coordinator writes the commit and abort markers itself, through the
// Backend the gateway gives it, and completes a transaction before
// EndTxn is answered. A transaction stays prepared with markers still to
// write only when a marker's append failed (EndTxn is answered anyway:
// the outcome is decided, as Kafka answers once it is prepared; the
// client's retry, the next InitProducerId or Tick completes it) or the
// gateway crashed (Recover completes it).
package txn

import (
	"encoding/binary"
	"errors"
)

// State is a transaction's state (Kafka's TransactionState).
type State uint8

// States. Empty: an id with no transaction yet (after InitProducerId);
// Ongoing: partitions or offsets added; PrepareCommit/PrepareAbort: EndTxn
// decided, markers being written; CompleteCommit/CompleteAbort: markers
// written, the id ready for its next transaction.
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"}

// String returns Kafka's name of the state, as DescribeTransactions and
// ListTransactions report it.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState reads a state by Kafka's name; ok=false when unknown.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// Partition is a partition in a transaction, with the partition's high
// watermark when it was added: no record of the transaction lies below it,
// so it is the transaction's first offset there for the last stable offset
// and the aborted index (a lower bound of Kafka's first offset; see
// docs/design/transactions.md §3).
type Partition struct {
	Topic     string
	Partition int32
	First     int64
}

// Offset is a consumer offset committed inside a transaction
// (TxnOffsetCommit), made visible when the transaction commits.
type Offset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// GroupOffsets are the offsets a transaction commits for one group.
type GroupOffsets struct {
	Group   string
	Offsets []Offset
}

// Txn is one transactional id's state, as persisted.
type Txn struct {
	ID         string
	ProducerID int64
	Epoch      int16
	// LastEpoch is the epoch before InitProducerId's last bump, -1 when
	// none: a KIP-360 retry of that bump (its answer lost) names it and
	// gets the current epoch again (TransactionMetadata.lastProducerEpoch).
	LastEpoch int16
	TimeoutMs int32
	State     State
	// StartMs is when the transaction became Ongoing; UpdateMs when the
	// state last changed (Unix ms, the gateway's clock).
	StartMs, UpdateMs int64
	Partitions        []Partition
	Groups            []GroupOffsets
}

// hasPartition reports whether t holds topic/partition.
func (t *Txn) hasPartition(topic string, partition int32) bool {
	for i := range t.Partitions {
		if t.Partitions[i].Partition == partition && t.Partitions[i].Topic == topic {
			return true
		}
	}
	return false
}

// group returns t's offsets of group, adding the group when absent.
func (t *Txn) group(name string) *GroupOffsets {
	for i := range t.Groups {
		if t.Groups[i].Group == name {
			return &t.Groups[i]
		}
	}
	t.Groups = append(t.Groups, GroupOffsets{Group: name})
	return &t.Groups[len(t.Groups)-1]
}

// clone returns a deep copy of t.
func (t *Txn) clone() Txn {
	c := *t
	c.Partitions = append([]Partition(nil), t.Partitions...)
	c.Groups = make([]GroupOffsets, len(t.Groups))
	for i, g := range t.Groups {
		c.Groups[i] = GroupOffsets{Group: g.Group, Offsets: append([]Offset(nil), g.Offsets...)}
	}
	return c
}

// stateVersion is the persisted layout's version byte: 2 since the last
// epoch; Decode still reads version 1 (no last epoch: -1).
const stateVersion = 2

// ErrCorrupt is a persisted value that does not decode.
var ErrCorrupt = errors.New("txn: corrupt persisted state")

// Encode returns t's persisted form: little-endian, version u8 (2),
// producer id i64, epoch i16, last epoch i16 (not in version 1), timeout
// i32, state u8, start and update ms i64, the partitions (u32 count;
// topic u16-length string, partition i32, first offset i64), then the
// groups (u32 count; group string, u32 offset count; topic string,
// partition i32, offset i64, leader epoch i32, metadata string). The id
// is the system-store key, not in the value.
func (t *Txn) Encode() []byte {
	b := make([]byte, 0, 64+len(t.Partitions)*32)
	b = append(b, stateVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.ProducerID))
	b = binary.LittleEndian.AppendUint16(b, uint16(t.Epoch))
	b = binary.LittleEndian.AppendUint16(b, uint16(t.LastEpoch))
	b = binary.LittleEndian.AppendUint32(b, uint32(t.TimeoutMs))
	b = append(b, byte(t.State))
	b = binary.LittleEndian.AppendUint64(b, uint64(t.StartMs))
	b = binary.LittleEndian.AppendUint64(b, uint64(t.UpdateMs))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(t.Partitions)))
	for _, p := range t.Partitions {
		b = appendString(b, p.Topic)
		b = binary.LittleEndian.AppendUint32(b, uint32(p.Partition))
		b = binary.LittleEndian.AppendUint64(b, uint64(p.First))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(t.Groups)))
	for _, g := range t.Groups {
		b = appendString(b, g.Group)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(g.Offsets)))
		for _, o := range g.Offsets {
			b = appendString(b, o.Topic)
			b = binary.LittleEndian.AppendUint32(b, uint32(o.Partition))
			b = binary.LittleEndian.AppendUint64(b, uint64(o.Offset))
			b = binary.LittleEndian.AppendUint32(b, uint32(o.LeaderEpoch))
			b = appendString(b, o.Metadata)
		}
	}
	return b
}

// Decode reads a persisted Txn of id id; trailing bytes, a truncation, an
// unknown version or state are ErrCorrupt.
func Decode(id string, v []byte) (Txn, error) {
	d := decoder{b: v}
	t := Txn{ID: id}
	version := d.u8()
	if version != 1 && version != stateVersion {
		return Txn{}, ErrCorrupt
	}
	t.ProducerID = int64(d.u64())
	t.Epoch = int16(d.u16())
	t.LastEpoch = -1
	if version >= 2 {
		t.LastEpoch = int16(d.u16())
	}
	t.TimeoutMs = int32(d.u32())
	t.State = State(d.u8())
	t.StartMs = int64(d.u64())
	t.UpdateMs = int64(d.u64())
	n := d.count(14)
	for range n {
		t.Partitions = append(t.Partitions, Partition{Topic: d.str(), Partition: int32(d.u32()), First: int64(d.u64())})
	}
	n = d.count(6)
	for range n {
		g := GroupOffsets{Group: d.str()}
		m := d.count(20) // topic and metadata lengths 2+2, partition 4, offset 8, leader epoch 4
		for range m {
			g.Offsets = append(g.Offsets, Offset{Topic: d.str(), Partition: int32(d.u32()), Offset: int64(d.u64()),
				LeaderEpoch: int32(d.u32()), Metadata: d.str()})
		}
		t.Groups = append(t.Groups, g)
	}
	if d.bad || len(d.b) != 0 || int(t.State) >= len(stateNames) || t.ProducerID < 0 || t.Epoch < 0 || t.LastEpoch < -1 {
		return Txn{}, ErrCorrupt
	}
	return t, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// decoder reads little-endian fields, remembering a truncation in bad.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) take(n int) []byte {
	if d.bad || len(d.b) < n {
		d.bad = true
		return make([]byte, n)
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() uint8   { return d.take(1)[0] }
func (d *decoder) u16() uint16 { return binary.LittleEndian.Uint16(d.take(2)) }
func (d *decoder) u32() uint32 { return binary.LittleEndian.Uint32(d.take(4)) }
func (d *decoder) u64() uint64 { return binary.LittleEndian.Uint64(d.take(8)) }
func (d *decoder) str() string { return string(d.take(int(d.u16()))) }

// count reads a u32 element count whose elements take at least min bytes
// each, refusing a count the rest of the value cannot hold (so a corrupt
// count cannot make Decode allocate for it).
func (d *decoder) count(min int) int {
	n := int(d.u32())
	if d.bad || n > len(d.b)/min {
		d.bad = true
		return 0
	}
	return n
}
