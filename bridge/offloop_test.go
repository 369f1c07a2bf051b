package bridge

import (
	"encoding/binary"
	"testing"

	"github.com/kiggy-io/kiggy/wire"
)

// TestOffLoop: the group coordinator's APIs are never served on an event
// loop; the data path and the rest stay eligible; a frame too short or a
// key out of range is left to the header decode, inline.
func TestOffLoop(t *testing.T) {
	frame := func(k int16) []byte { return binary.BigEndian.AppendUint16(nil, uint16(k)) }
	off := []wire.APIKey{wire.KeyOffsetCommit, wire.KeyOffsetFetch, wire.KeyJoinGroup, wire.KeyHeartbeat,
		wire.KeyLeaveGroup, wire.KeySyncGroup, wire.KeyDescribeGroups, wire.KeyListGroups, wire.KeyTxnOffsetCommit,
		wire.KeyDeleteGroups, wire.KeyOffsetDelete, wire.KeyConsumerGroupHeartbeat, wire.KeyConsumerGroupDescribe}
	for _, k := range off {
		if !offLoop(frame(int16(k))) {
			t.Errorf("API key %d may run on the event loop", k)
		}
	}
	for _, k := range []wire.APIKey{wire.KeyProduce, wire.KeyFetch, wire.KeyListOffsets, wire.KeyMetadata,
		wire.KeyFindCoordinator, wire.KeyAPIVersions, wire.KeyInitProducerID} {
		if offLoop(frame(int16(k))) {
			t.Errorf("API key %d is kept off the event loop", k)
		}
	}
	for _, f := range [][]byte{nil, {0}, frame(-1), frame(maxAPIKey), frame(32767)} {
		if offLoop(f) {
			t.Errorf("frame %x is kept off the event loop", f)
		}
	}
}
