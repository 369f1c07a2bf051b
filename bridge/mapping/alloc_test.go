//go:build !race

package mapping

import (
	"testing"

	"github.com/kiggy-io/kiggy/bridge/message"
)

func TestAllocsEncodeDecode(t *testing.T) {
	recs := []Record{
		{Key: []byte("key"), Value: make([]byte, 1024), TimestampMs: 1_700_000_000_000,
			Headers: []Header{{Key: []byte("b"), Value: []byte("2")}, {Key: []byte("a"), Value: []byte("1")}}},
		{Value: make([]byte, 100), TimestampMs: 1_700_000_000_001},
		{Key: []byte{}, Value: nil, TimestampMs: 0, Headers: []Header{{Key: []byte("n")}}},
	}
	var b message.Batch
	var e Encoder
	var d Decoder
	var out Record
	run := func() {
		b.Reset(1_700_000_000_000_000)
		for i := range recs {
			if err := e.Append(&b, &recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		frames := b.Frames()
		for len(frames) > 0 {
			f, _ := message.ParseFrame(frames)
			m := message.Message{Payload: f.Payload, Headers: f.Headers, OriginTimestamp: 1}
			if err := d.Decode(&m, &out); err != nil {
				t.Fatal(err)
			}
			frames = frames[f.Size:]
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("encode+decode allocates %.1f per batch, want 0", n)
	}
}
