package iggytest

import (
	"encoding/binary"
	"sort"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/zeebo/xxh3"
)

// The in-memory data model. Every field is guarded by Server.mu.

type stream struct {
	id      uint32
	name    string
	created uint64
	topics  map[uint32]*topic
	byName  map[string]*topic
	// ghosts are deleted topics whose partitions still answer polls of a
	// topic that recycled their id (Config.StaleIncarnationPolls).
	ghosts map[uint32]ghost
}

// ghost is a deleted topic until the server would have torn it down.
type ghost struct {
	t     *topic
	until time.Time
}

type topic struct {
	id          uint32
	name        string
	created     uint64
	partitions  []*partition
	expiry      uint64 // message_expiry µs (u64 max = never)
	maxSize     uint64 // max_topic_size bytes (u64 max = unlimited)
	segmentSize uint64 // segment_size bytes (0 = the default, 1 GiB)
	compression uint8
	options     []byte // the explicit options TLV as the client sent it
	// The journal flush thresholds and fsync option (server defaults 1024
	// messages, 1 MiB, false): a partition's appends stay in its journal,
	// lost by Crash, until one threshold trips (docs/IGGY.md, "Durability").
	msgsToSave, sizeToSave uint64
	fsync                  bool
	explicit               map[string]bool // option keys the client sent
	groups                 map[uint32]*group
	groupByName            map[string]*group
	nextGroup              uint32
	balanced               uint32 // round-robin cursor for Balanced partitioning
}

// context is a partition's 0.12 context: its incarnation is its creation
// time, which changes when a deleted topic's ids are reused.
func (p *partition) context() proto.PartitionContext {
	return proto.PartitionContext{Incarnation: p.created}
}

type partition struct {
	id           uint32
	created      uint64
	records      []record
	next         uint64 // next offset to assign
	size         uint64
	flushed      int    // records[:flushed] are in the segment file
	journalMsgs  uint64 // messages appended since the last flush
	journalBytes uint64
	offsets      map[uint32]uint64 // single-consumer offsets by key
	groupOffsets map[uint32]uint64 // group offsets by group id
}

// record is one appended batch exactly as stored: batch header (partition,
// base offset and base timestamp stamped, checksum recomputed) and frames.
type record struct {
	base  uint64
	count uint32
	ts    uint64
	data  []byte
}

type group struct {
	id         uint32
	name       string
	members    []proto.ClientID // join order
	generation uint64
}

func (t *topic) messages() (n, size uint64) {
	for _, p := range t.partitions {
		n += p.next
		size += p.size
	}
	return n, size
}

// currentOffset is Iggy's current_offset: the last assigned offset, 0 when
// empty (§3.5 PartitionResponse).
func (p *partition) currentOffset() uint64 {
	if p.next == 0 {
		return 0
	}
	return p.next - 1
}

func newPartition(id uint32, now uint64) *partition {
	return &partition{id: id, created: now, offsets: map[uint32]uint64{}, groupOffsets: map[uint32]uint64{}}
}

// append stores a validated producer batch and returns its base offset.
// Like the server's commit, it then flushes the journal to the "segment
// file" when t's thresholds trip (core/partitions iggy_partition.rs
// commit_messages: count ≥ messages_required_to_save or bytes ≥
// size_of_messages_required_to_save, checked before the reply).
func (p *partition) append(h *xxh3.Hasher, t *topic, batch []byte, ts uint64) uint64 {
	data := append([]byte(nil), batch...)
	hdr := data[:proto.BatchHeaderSize]
	count := binary.LittleEndian.Uint32(hdr[proto.BatchMessageCount:])
	base := p.next
	binary.LittleEndian.PutUint64(hdr[proto.BatchPartitionID:], uint64(p.id))
	binary.LittleEndian.PutUint64(hdr[proto.BatchBaseOffset:], base)
	binary.LittleEndian.PutUint64(hdr[proto.BatchBaseTimestamp:], ts)
	binary.LittleEndian.PutUint64(hdr[proto.BatchChecksum:], proto.BatchChecksumOf(h, hdr, data[proto.BatchHeaderSize:]))
	p.records = append(p.records, record{base: base, count: count, ts: ts, data: data})
	p.next += uint64(count)
	p.size += uint64(len(data))
	p.journalMsgs += uint64(count)
	p.journalBytes += uint64(len(data))
	if p.journalMsgs >= t.msgsToSave || p.journalBytes >= t.sizeToSave {
		p.flush()
	}
	return base
}

// flush moves the journal to the segment file.
func (p *partition) flush() {
	p.flushed = len(p.records)
	p.journalMsgs, p.journalBytes = 0, 0
}

// crash drops what a crash of the server process loses: the journal's
// records not yet flushed. It returns how many messages were lost.
func (p *partition) crash() uint64 {
	var lost uint64
	for _, r := range p.records[p.flushed:] {
		lost += uint64(r.count)
		p.size -= uint64(len(r.data))
	}
	if p.flushed < len(p.records) {
		p.next = p.records[p.flushed].base
	}
	p.records = p.records[:p.flushed:p.flushed]
	p.journalMsgs, p.journalBytes = 0, 0
	return lost
}

// startForTimestamp returns the first offset whose record's base timestamp
// (the broker append time) is ≥ ts: the real server matches Timestamp polls
// on base_timestamp, not on the producer's origin timestamp.
func (p *partition) startForTimestamp(ts uint64) (uint64, bool) {
	i := sort.Search(len(p.records), func(i int) bool { return p.records[i].ts >= ts })
	if i == len(p.records) {
		return 0, false
	}
	return p.records[i].base, true
}

// read appends to dst the records holding up to count messages from offset
// start on, each sliced to the selected frames (a sliced record keeps its
// base_offset, so its first frame may have offset_delta > 0, as the real
// server's views do). It returns dst and the number of messages.
func (p *partition) read(h *xxh3.Hasher, dst []byte, start uint64, count uint32, limit int) ([]byte, uint32, uint64) {
	var n uint32
	var last uint64
	i := sort.Search(len(p.records), func(i int) bool { return p.records[i].base+uint64(p.records[i].count) > start })
	for ; i < len(p.records) && n < count; i++ {
		r := &p.records[i]
		frames := r.data[proto.BatchHeaderSize:]
		var selStart, selEnd = -1, 0
		var sel uint32
		for off := 0; off < len(frames); {
			f, err := message.ParseFrame(frames[off:])
			if err != nil {
				break
			}
			o := r.base + uint64(f.OffsetDelta)
			if o >= start && n+sel < count {
				if selStart < 0 {
					selStart = off
				}
				selEnd = off + f.Size
				sel++
				last = o
			}
			off += f.Size
		}
		if sel == 0 {
			continue
		}
		if len(dst)+proto.BatchHeaderSize+selEnd-selStart > limit && n > 0 {
			break
		}
		hdrAt := len(dst)
		dst = append(dst, r.data[:proto.BatchHeaderSize]...)
		dst = append(dst, frames[selStart:selEnd]...)
		hdr := dst[hdrAt : hdrAt+proto.BatchHeaderSize]
		binary.LittleEndian.PutUint64(hdr[proto.BatchLength:], uint64(proto.BatchHeaderSize+selEnd-selStart))
		binary.LittleEndian.PutUint32(hdr[proto.BatchMessageCount:], sel)
		binary.LittleEndian.PutUint64(hdr[proto.BatchChecksum:], proto.BatchChecksumOf(h, hdr, dst[hdrAt+proto.BatchHeaderSize:]))
		n += sel
	}
	return dst, n, last
}

// assignment returns the partitions a member owns: round-robin of the
// topic's partitions over the members in join order (§3.10).
func (g *group) assignment(client proto.ClientID, partitions int) []uint32 {
	idx := -1
	for i, m := range g.members {
		if m == client {
			idx = i
		}
	}
	if idx < 0 {
		return nil
	}
	out := []uint32{}
	for p := 0; p < partitions; p++ {
		if p%len(g.members) == idx {
			out = append(out, uint32(p))
		}
	}
	return out
}

func (g *group) owns(client proto.ClientID, partitions int, p uint32) bool {
	for _, q := range g.assignment(client, partitions) {
		if q == p {
			return true
		}
	}
	return false
}

func (g *group) remove(client proto.ClientID) bool {
	for i, m := range g.members {
		if m == client {
			g.members = append(g.members[:i], g.members[i+1:]...)
			g.generation++
			return true
		}
	}
	return false
}
