package nullbroker

import (
	"net"
	"testing"

	"github.com/kiggy-io/kiggy/wire"
)

// FuzzHandle feeds arbitrary request frames to one connection's handler:
// nothing may panic, and a response, when there is one, must carry its own
// size prefix.
func FuzzHandle(f *testing.F) {
	f.Add(produceFrame(f, 1, -1, "t", 0, 3))
	f.Add(produceFrame(f, 2, 0, "topic", 1, 1))
	f.Add(apiVersionsFrame(3, 3))
	f.Add(apiVersionsFrame(4, 0))
	f.Add(apiVersionsFrame(5, 77))
	f.Add(wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.KeyMetadata, APIVersion: 12, CorrelationID: 6}))
	f.Add((&wire.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1}).AppendTo(
		wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.KeyInitProducerID, APIVersion: 5, CorrelationID: 7}), 5))
	s := New(Config{Partitions: 3})
	f.Fuzz(func(t *testing.T, frame []byte) {
		cs := newConnState(s, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9092})
		resp, err := cs.handle(frame)
		if err != nil && resp != nil {
			t.Fatal("response returned with an error")
		}
		if resp != nil {
			if len(resp) < 8 {
				t.Fatalf("response of %d bytes", len(resp))
			}
			if got := int(uint32(resp[0])<<24 | uint32(resp[1])<<16 | uint32(resp[2])<<8 | uint32(resp[3])); got != len(resp)-4 {
				t.Fatalf("size prefix %d, frame %d", got, len(resp)-4)
			}
		}
	})
}
