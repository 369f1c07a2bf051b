package mapping

import (
	"encoding/binary"

	"github.com/kiggy-io/kiggy/bridge/message"
)

// Control is a Kafka transaction marker (a control record): the end of one
// producer's transaction in one partition, committed or aborted
// (docs/MAPPING.md, "Transaction markers"). Fetch serves it as a control
// batch of one record, as Kafka stores it: key (version 0, type), value
// (version 0, coordinator epoch).
type Control struct {
	ProducerID    int64
	ProducerEpoch int16
	// Commit is the marker's type: COMMIT (1) when set, ABORT (0) when not.
	Commit bool
	// CoordinatorEpoch is the epoch of the transaction coordinator that
	// wrote it.
	CoordinatorEpoch int32
}

// ControlSize is the kafka.control value size: version u8 (1), producer id
// i64, producer epoch i16, type u8 (0 abort, 1 commit), coordinator epoch
// i32, all little-endian.
const ControlSize = 1 + 8 + 2 + 1 + 4

// controlVersion is the kafka.control layout version.
const controlVersion = 1

// AppendControl appends c to b as one message: the one-byte payload 0x00
// (Iggy refuses empty payloads) and the headers kafka.control and
// kafka.v, in sorted order, at origin timestamp origin (µs).
func AppendControl(b *message.Batch, c Control, origin uint64) {
	b.Begin(origin)
	b.AppendPayload(placeholder...)
	b.MarkHeaders()
	var v [ControlSize]byte
	v[0] = controlVersion
	binary.LittleEndian.PutUint64(v[1:], uint64(c.ProducerID))
	binary.LittleEndian.PutUint16(v[9:], uint16(c.ProducerEpoch))
	if c.Commit {
		v[11] = 1
	}
	binary.LittleEndian.PutUint32(v[12:], uint32(c.CoordinatorEpoch))
	b.AppendHeader(message.KindString, keyControl, message.KindRaw, v[:])
	b.AppendHeader(message.KindString, keyVersion, message.KindRaw, one)
	b.End()
}

// parseControl reads a kafka.control value; a value of another layout or
// with impossible fields is not a marker.
func parseControl(v []byte) (Control, bool) {
	if len(v) != ControlSize || v[0] != controlVersion || v[11] > 1 {
		return Control{}, false
	}
	c := Control{
		ProducerID:       int64(binary.LittleEndian.Uint64(v[1:])),
		ProducerEpoch:    int16(binary.LittleEndian.Uint16(v[9:])),
		Commit:           v[11] == 1,
		CoordinatorEpoch: int32(binary.LittleEndian.Uint32(v[12:])),
	}
	if c.ProducerID < 0 || c.ProducerEpoch < 0 || c.CoordinatorEpoch < 0 {
		return Control{}, false
	}
	return c, true
}
