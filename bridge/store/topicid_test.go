package store

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestTopicID: whatever the input, the id is a version 4, variant 2 UUID
// that is none of Kafka's reserved ids and whose base64 form (Uuid.toString)
// does not start with "-"; shaping twice changes nothing.
func TestTopicID(t *testing.T) {
	inputs := [][16]byte{{}, {15: 1}, {0: 0xf8}, {0: 0xfb, 6: 0xff, 8: 0xff}}
	for i := range 256 {
		var b [16]byte
		for j := range b {
			b[j] = byte(i * (j + 7))
		}
		b[0] = byte(i)
		inputs = append(inputs, b)
	}
	for _, in := range inputs {
		id := TopicID(in)
		if id == ([16]byte{}) || id == ([16]byte{15: 1}) {
			t.Fatalf("%x: reserved id %x", in, id)
		}
		if id[6]>>4 != 4 || id[8]>>6 != 2 {
			t.Fatalf("%x: %x is not a version 4 variant 2 UUID", in, id)
		}
		if s := base64.RawURLEncoding.EncodeToString(id[:]); strings.HasPrefix(s, "-") {
			t.Fatalf("%x: %s starts with -", in, s)
		}
		if TopicID(id) != id {
			t.Fatalf("%x: shaping %x again changed it", in, id)
		}
	}
}
