package group

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSubscriptionTopics reads the topics of ConsumerProtocolSubscription
// v0–3 as kmsg encodes them, and refuses what does not parse.
func TestSubscriptionTopics(t *testing.T) {
	for v := int16(0); v <= 3; v++ {
		m := kmsg.NewConsumerMemberMetadata()
		m.Version = v
		m.Topics = []string{"a", "bb", ""}
		m.UserData = []byte("x")
		b := m.AppendTo(nil)
		got, ok := subscriptionTopics(b)
		if !ok || !slices.Equal(got, m.Topics) {
			t.Errorf("v%d: got %q %v, want %q", v, got, ok, m.Topics)
		}
		for n := range 7 {
			if _, ok := subscriptionTopics(b[:n]); ok && n < 6 {
				t.Errorf("v%d: %d bytes parse", v, n)
			}
		}
	}
	if _, ok := subscriptionTopics([]byte{0xff, 0xff, 0, 0, 0, 0}); ok {
		t.Error("a negative version parses")
	}
	if _, ok := subscriptionTopics([]byte{0, 0, 0, 0, 0, 1, 0, 5, 'a'}); ok {
		t.Error("a topic longer than the data parses")
	}
}
