package bridge

import (
	"testing"
	"time"
)

// TestProducerExpiry: the registry expires idle producers in every window
// and drops a deleted topic's windows with their producers
// (bridge/producer tests the windows themselves).
func TestProducerExpiry(t *testing.T) {
	var ps producerStates
	ps.init(nil)
	pp := ps.partition("t", 0)
	pp.Record(1, 0, 0, 0, -1, 1_000)
	pp.Record(2, 0, 0, 0, -1, 1_000)
	pp.Record(2, 0, 1, 1, -1, 50_000)
	ps.expire(61_001, time.Minute)
	if ps.stats.Producers.Load() != 1 || ps.stats.Expired.Load() != 1 {
		t.Fatalf("after expiry: gauge %d, expired %d", ps.stats.Producers.Load(), ps.stats.Expired.Load())
	}
	ps.dropTopic("t")
	if ps.stats.Producers.Load() != 0 || len(ps.parts) != 0 {
		t.Fatalf("after dropTopic: gauge %d, %d partitions", ps.stats.Producers.Load(), len(ps.parts))
	}
}
