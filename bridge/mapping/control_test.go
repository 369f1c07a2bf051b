package mapping

import (
	"bytes"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
)

// decodeFirst decodes the first frame of b.
func decodeFirst(t testing.TB, b *message.Batch) (Record, error) {
	t.Helper()
	f, err := message.ParseFrame(b.Frames())
	if err != nil {
		t.Fatalf("ParseFrame: %v", err)
	}
	var d Decoder
	var r Record
	err = d.Decode(&message.Message{Payload: f.Payload, Headers: f.Headers, OriginTimestamp: b.Origin + uint64(f.TimestampDelta)}, &r)
	return r, err
}

// TestControlGolden: a transaction marker is one message, payload 0x00,
// headers kafka.control (16 bytes: version 1, producer id, epoch, type,
// coordinator epoch) and kafka.v, and decodes as a control record only.
func TestControlGolden(t *testing.T) {
	var b message.Batch
	b.Reset(1_700_000_000_000_000)
	AppendControl(&b, Control{ProducerID: 7, ProducerEpoch: 2, Commit: true, CoordinatorEpoch: 3}, 1_700_000_000_000_000)
	f, err := message.ParseFrame(b.Frames())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Payload, []byte{0}) {
		t.Fatalf("payload %x, want 00", f.Payload)
	}
	want := unhex(t, "02 0d000000 6b61666b612e636f6e74726f6c 01 10000000 01 0700000000000000 0200 01 03000000"+
		" 02 07000000 6b61666b612e76 01 01000000 01")
	if !bytes.Equal(f.Headers, want) {
		t.Fatalf("headers\n %x\nwant\n %x", f.Headers, want)
	}
	r, err := decodeFirst(t, &b)
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsControl || r.Control != (Control{ProducerID: 7, ProducerEpoch: 2, Commit: true, CoordinatorEpoch: 3}) ||
		r.Key != nil || r.Value != nil || len(r.Headers) != 0 || r.TimestampMs != 1_700_000_000_000 {
		t.Fatalf("decoded %+v", r)
	}
}

// TestControlRefused: a kafka.control value of another layout, type or
// with negative fields makes the message unmappable, never a record.
func TestControlRefused(t *testing.T) {
	good := unhex(t, "01 0700000000000000 0200 01 03000000")
	for name, v := range map[string][]byte{
		"short":          good[:15],
		"long":           append(append([]byte(nil), good...), 0),
		"layout 2":       append([]byte{2}, good[1:]...),
		"type 2":         append(append(append([]byte(nil), good[:11]...), 2), good[12:]...),
		"negative id":    unhex(t, "01 ffffffffffffffff 0200 01 03000000"),
		"negative epoch": unhex(t, "01 0700000000000000 ffff 00 03000000"),
	} {
		var b message.Batch
		b.Reset(1)
		b.Begin(1)
		b.AppendPayload(0)
		b.MarkHeaders()
		b.AppendHeader(message.KindString, keyControl, message.KindRaw, v)
		b.AppendHeader(message.KindString, keyVersion, message.KindRaw, one)
		b.End()
		if r, err := decodeFirst(t, &b); err != ErrUnmappable {
			t.Errorf("%s: Decode = %+v, %v; want ErrUnmappable", name, r, err)
		}
	}
}

// TestTransactionalStamp: a transactional batch's stamp is layout 2 (the
// layout-1 value and a flags byte 0x01); Decode and FindProducer read it,
// and layout 1 stays byte for byte what it was.
func TestTransactionalStamp(t *testing.T) {
	p := Producer{ID: 7, Epoch: 0, BaseSequence: 5, Count: 3, Transactional: true}
	want := unhex(t, "02 0e000000 6b61666b612e70726f6475636572 01 14000000 02 0700000000000000 0000 05000000 03000000 01")
	if got := p.appendHeader(nil); !bytes.Equal(got, want) {
		t.Fatalf("stamp header = %x, want %x", got, want)
	}
	fr, b := encodeOne(t, &Record{Value: []byte("v"), TimestampMs: 1, Producer: &p})
	if q, ok := FindProducer(fr.Headers); !ok || q != p {
		t.Fatalf("FindProducer = %+v %v, want %+v", q, ok, p)
	}
	r, err := decodeFirst(t, b)
	if err != nil || r.Stamp != p || r.IsControl || string(r.Value) != "v" {
		t.Fatalf("Decode = %+v %v", r, err)
	}
	for name, v := range map[string][]byte{
		"unknown flag":   unhex(t, "02 0700000000000000 0000 05000000 03000000 03"),
		"layout 2 short": unhex(t, "02 0700000000000000 0000 05000000 03000000"),
		"layout 1 long":  unhex(t, "01 0700000000000000 0000 05000000 03000000 01"),
	} {
		if q, ok := parseProducer(v); ok {
			t.Errorf("%s: parseProducer = %+v, want refused", name, q)
		}
	}
}

// FuzzDecodeControl: any kafka.control value either decodes to a marker
// that AppendControl writes back identically, or makes the message
// unmappable; nothing panics.
func FuzzDecodeControl(f *testing.F) {
	f.Add(unhex(f, "01 0700000000000000 0200 01 03000000"))
	f.Add(unhex(f, "01 0000000000000000 0000 00 00000000"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, v []byte) {
		var b message.Batch
		b.Reset(1)
		b.Begin(1)
		b.AppendPayload(0)
		b.MarkHeaders()
		b.AppendHeader(message.KindString, keyControl, message.KindRaw, v)
		b.AppendHeader(message.KindString, keyVersion, message.KindRaw, one)
		b.End()
		r, err := decodeFirst(t, &b)
		if err != nil {
			return
		}
		if !r.IsControl {
			t.Fatalf("a kafka.control message decoded as a record: %+v", r)
		}
		var again message.Batch
		again.Reset(1)
		AppendControl(&again, r.Control, 1)
		r2, err := decodeFirst(t, &again)
		if err != nil || r2.Control != r.Control {
			t.Fatalf("marker %+v read back as %+v (%v)", r.Control, r2.Control, err)
		}
	})
}
