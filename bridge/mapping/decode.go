package mapping

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"

	"github.com/kiggy-io/kiggy/bridge/message"
)

// Decoder maps stored messages back to Kafka records (docs/design/record-mapping.md §3).
// It reuses its header scratch space; it is not safe for concurrent use.
type Decoder struct {
	headers []Header
	kinds   []byte
}

// Decode fills r from m. r's slices alias m (and r.Headers the Decoder's
// scratch): valid until the next Decode or until m's buffers go away.
// ErrUnmappable means the message cannot be presented (§3.6).
func (d *Decoder) Decode(m *message.Message, r *Record) error {
	d.headers = d.headers[:0]
	d.kinds = d.kinds[:0]
	*r = Record{}
	var mk markers
	if err := d.scan(m.Headers, &mk); err != nil {
		return err
	}
	// §3.2: the kafka.v switch.
	if !mk.gateway {
		d.headers = d.headers[:0]
		return d.decodeForeign(m, r)
	}
	if !bytes.Equal(mk.version, one) {
		return ErrUnmappable
	}
	if mk.stamp != nil {
		r.Stamp, _ = parseProducer(mk.stamp) // an unreadable stamp is no stamp (FindProducer)
	}
	if mk.control != nil {
		// A transaction marker: nothing else of the message is a record.
		d.headers = d.headers[:0]
		c, ok := parseControl(mk.control)
		if !ok {
			return ErrUnmappable
		}
		r.Control, r.IsControl = c, true
		r.TimestampMs = nativeTimestamp(m)
		return nil
	}
	if mk.envelope != nil {
		if !bytes.Equal(mk.envelope, one) {
			return ErrUnmappable
		}
		d.headers = d.headers[:0]
		if err := d.decodeEnvelope(m.Payload, r); err != nil {
			return err
		}
	} else if err := d.decodeFields(m, &mk, r); err != nil {
		return err
	}
	return decodeTimestamp(m, mk.ts, mk.tsKind, r)
}

// markers are what scan found in a message's header block: the gateway's
// kafka.* headers (§3.2) and whether two kafka.h.* keys map to one name.
type markers struct {
	version, key, value, ts, envelope, stamp, control []byte
	tsKind                                            byte
	gateway, dup                                      bool
}

// scan finds the gateway markers, and the kafka.h.* headers a gateway
// message surfaces (into d.headers), in one pass over the block.
func (d *Decoder) scan(block []byte, mk *markers) error {
	for len(block) > 0 {
		h, rest, err := message.NextHeader(block)
		if err != nil {
			// §3.1: an unreadable block is refused, never served as header-less.
			return ErrUnmappable
		}
		block = rest
		if len(h.Key) >= len(prefixH) && string(h.Key[:len(prefixH)]) == prefixH {
			// Only kafka.h.* keys surface, prefix stripped; stored sorted.
			name := h.Key[len(prefixH):]
			for i := range d.headers {
				if bytes.Equal(d.headers[i].Key, name) {
					// Two stored keys map to one name: this mapping writes
					// only String keys, so the message is not ours (§3.4).
					mk.dup = true
				}
			}
			d.headers = append(d.headers, Header{Key: name, Value: h.Value})
			continue
		}
		if h.KeyKind != message.KindString {
			continue
		}
		switch string(h.Key) {
		case keyVersion:
			mk.version, mk.gateway = h.Value, true
		case keyKey:
			mk.key = h.Value
		case keyValue:
			mk.value = h.Value
		case keyTS:
			mk.ts, mk.tsKind = h.Value, h.ValueKind
		case keyEnvelope:
			mk.envelope = h.Value
		case keyProducer:
			if h.ValueKind == message.KindRaw {
				mk.stamp = h.Value
			}
		case keyControl:
			mk.control = h.Value
		}
	}
	return nil
}

// decodeFields presents a gateway message stored without an envelope: the
// key from its header, the value from the payload or a null/empty marker,
// the kafka.h.* headers.
func (d *Decoder) decodeFields(m *message.Message, mk *markers, r *Record) error {
	r.Key = mk.key
	switch {
	case mk.value == nil:
		r.Value = m.Payload
	case bytes.Equal(mk.value, markerNull):
		r.Value = nil
	case bytes.Equal(mk.value, markerEmpty):
		r.Value = m.Payload[:0]
	default:
		return ErrUnmappable
	}
	if mk.dup {
		return ErrUnmappable
	}
	r.Headers = d.headers
	return nil
}

// decodeTimestamp sets r's timestamp (§3.4 step 3): the stored kafka.ts
// (-1: the message's own), or the message's own without one.
func decodeTimestamp(m *message.Message, ts []byte, kind byte, r *Record) error {
	if ts == nil {
		r.TimestampMs = nativeTimestamp(m)
		return nil
	}
	if kind != message.KindInt64 || len(ts) != 8 {
		return ErrUnmappable
	}
	v := int64(binary.LittleEndian.Uint64(ts))
	switch {
	case v == -1:
		r.TimestampMs = int64(m.Timestamp / 1000)
	case v >= 0:
		r.TimestampMs = v
	default:
		return ErrUnmappable
	}
	return nil
}

// decodeForeign presents a message written by a native Iggy client (§3.3):
// null key, the payload as value, every header with a UTF-8 key by name.
func (d *Decoder) decodeForeign(m *message.Message, r *Record) error {
	r.Value = m.Payload
	r.TimestampMs = nativeTimestamp(m)
	for block := m.Headers; len(block) > 0; {
		h, rest, _ := message.NextHeader(block)
		block = rest
		if !utf8.Valid(h.Key) {
			continue
		}
		dup := -1
		for i := range d.headers {
			if bytes.Equal(d.headers[i].Key, h.Key) {
				dup = i
				break
			}
		}
		if dup >= 0 {
			// Same bytes, different kinds: the later in (kind, bytes) order survives.
			if h.KeyKind > d.kinds[dup] {
				d.headers[dup].Value = h.Value
				d.kinds[dup] = h.KeyKind
			}
			continue
		}
		d.headers = append(d.headers, Header{Key: h.Key, Value: h.Value})
		d.kinds = append(d.kinds, h.KeyKind)
	}
	r.Headers = d.headers
	return nil
}

// nativeTimestamp is origin/1000, or the server timestamp when origin is 0.
func nativeTimestamp(m *message.Message) int64 {
	if m.OriginTimestamp != 0 {
		return int64(m.OriginTimestamp / 1000)
	}
	return int64(m.Timestamp / 1000)
}

// decodeEnvelope parses the §2.6 layout strictly: truncation, an impossible
// header count, a non-UTF-8 name or trailing bytes are refused.
func (d *Decoder) decodeEnvelope(p []byte, r *Record) error {
	if len(p) < 1 {
		return ErrUnmappable
	}
	flags := p[0]
	if flags&^3 != 0 {
		return ErrUnmappable
	}
	p = p[1:]
	var ok bool
	var k, v []byte
	if k, p, ok = takeLen(p); !ok {
		return ErrUnmappable
	}
	if v, p, ok = takeLen(p); !ok {
		return ErrUnmappable
	}
	if flags&1 != 0 {
		r.Key = k
	} else if len(k) != 0 {
		return ErrUnmappable
	}
	if flags&2 != 0 {
		r.Value = v
	} else if len(v) != 0 {
		return ErrUnmappable
	}
	if len(p) < 4 {
		return ErrUnmappable
	}
	n := uint64(binary.LittleEndian.Uint32(p))
	p = p[4:]
	if n > uint64(len(p))/9 {
		return ErrUnmappable
	}
	for range n {
		var name, val []byte
		if name, p, ok = takeLen(p); !ok || !utf8.Valid(name) {
			return ErrUnmappable
		}
		if len(p) < 1 {
			return ErrUnmappable
		}
		present := p[0]
		p = p[1:]
		if val, p, ok = takeLen(p); !ok {
			return ErrUnmappable
		}
		switch present {
		case 0:
			if len(val) != 0 {
				return ErrUnmappable
			}
			val = nil
		case 1:
		default:
			return ErrUnmappable
		}
		d.headers = append(d.headers, Header{Key: name, Value: val})
	}
	if len(p) != 0 {
		return ErrUnmappable
	}
	r.Headers = d.headers
	return nil
}

// takeLen reads a u32 LE length and that many bytes; the result is non-nil
// (possibly empty) on success.
func takeLen(p []byte) (b, rest []byte, ok bool) {
	if len(p) < 4 {
		return nil, nil, false
	}
	n := uint64(binary.LittleEndian.Uint32(p))
	p = p[4:]
	if n > uint64(len(p)) {
		return nil, nil, false
	}
	return p[:n:n], p[n:], true
}
