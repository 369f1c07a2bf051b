package mapping

import (
	"encoding/binary"

	"github.com/kiggy-io/kiggy/bridge/message"
)

// Producer is the idempotent-producer stamp the gateway writes on the first
// message of every idempotent batch it stores (docs/MAPPING.md, "Producer
// stamp"), so a restarted gateway can rebuild each partition's
// duplicate-detection window from the log itself. It is per batch, not per
// record: Count messages starting at the stamped one came from one Kafka
// batch whose sequences are BaseSequence … BaseSequence+Count-1.
type Producer struct {
	ID           int64
	Epoch        int16
	BaseSequence int32
	Count        int32
	// Transactional: the batch was written in a Kafka transaction (its
	// records are visible to read_committed consumers only once the
	// transaction's commit marker follows; Control). Stamped with layout 2.
	Transactional bool
}

// ProducerSize is the layout-1 stamp's value size: version u8 (1), producer
// id i64, epoch i16, base sequence i32, record count i32, all
// little-endian. Layout 2 (a transactional batch) appends a flags u8
// (ProducerSizeFlags).
const (
	ProducerSize      = 1 + 8 + 2 + 4 + 4
	ProducerSizeFlags = ProducerSize + 1
)

// Stamp layout versions (the value's first byte): 1 for an idempotent
// batch, 2 with a flags byte (bit 0: transactional).
const (
	producerVersion      = 1
	producerVersionFlags = 2
	producerFlagTxn      = 0x01
)

// size is the stamp's value size.
func (p *Producer) size() int {
	if p.Transactional {
		return ProducerSizeFlags
	}
	return ProducerSize
}

// appendHeader appends the stamp as a kafka.producer header (String key,
// Raw value).
func (p *Producer) appendHeader(dst []byte) []byte {
	dst = append(dst, message.KindString)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(keyProducer)))
	dst = append(dst, keyProducer...)
	dst = append(dst, message.KindRaw)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(p.size()))
	if p.Transactional {
		dst = append(dst, producerVersionFlags)
	} else {
		dst = append(dst, producerVersion)
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(p.ID))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(p.Epoch))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(p.BaseSequence))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(p.Count))
	if p.Transactional {
		dst = append(dst, producerFlagTxn)
	}
	return dst
}

// FindProducer returns the producer stamp of a stored message, if it has
// one. Only gateway-written messages (kafka.v = 1) count: a native Iggy
// client's header of the same name is just a header. A stamp of another
// layout version or with impossible values is ignored, so an unreadable
// stamp costs deduplication of that one batch, never a failure. It does not
// allocate.
func FindProducer(headers []byte) (Producer, bool) {
	var stamp []byte
	gateway := false
	for block := headers; len(block) > 0; {
		h, rest, err := message.NextHeader(block)
		if err != nil {
			return Producer{}, false
		}
		block = rest
		if h.KeyKind != message.KindString {
			continue
		}
		switch string(h.Key) {
		case keyVersion:
			gateway = len(h.Value) == 1 && h.Value[0] == 1
		case keyProducer:
			if h.ValueKind == message.KindRaw {
				stamp = h.Value
			}
		}
	}
	if !gateway {
		return Producer{}, false
	}
	return parseProducer(stamp)
}

// parseProducer reads a stamp's value: layout 1, or layout 2 with its
// flags byte (unknown flag bits are refused, as a later layout would be).
func parseProducer(stamp []byte) (Producer, bool) {
	var txn bool
	switch {
	case len(stamp) == ProducerSize && stamp[0] == producerVersion:
	case len(stamp) == ProducerSizeFlags && stamp[0] == producerVersionFlags && stamp[ProducerSize]&^producerFlagTxn == 0:
		txn = stamp[ProducerSize]&producerFlagTxn != 0
	default:
		return Producer{}, false
	}
	p := Producer{
		ID:            int64(binary.LittleEndian.Uint64(stamp[1:])),
		Epoch:         int16(binary.LittleEndian.Uint16(stamp[9:])),
		BaseSequence:  int32(binary.LittleEndian.Uint32(stamp[11:])),
		Count:         int32(binary.LittleEndian.Uint32(stamp[15:])),
		Transactional: txn,
	}
	if p.ID < 0 || p.Epoch < 0 || p.BaseSequence < 0 || p.Count < 1 {
		return Producer{}, false
	}
	return p, true
}
