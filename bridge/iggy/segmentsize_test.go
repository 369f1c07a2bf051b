package iggy

import "testing"

// TestSegmentSize: Kafka's segment.bytes becomes an Iggy segment_size the
// server takes: a 512-byte multiple (rounded up) within 1 MiB..1 GiB.
func TestSegmentSize(t *testing.T) {
	for _, c := range []struct {
		kafka int64
		want  uint64
	}{
		{0, 0},
		{-1, 0},
		{1 << 20, 1 << 20},
		{1<<20 + 1, 1<<20 + 512},
		{2_000_000, 2_000_384},
		{52_428_800, 52_428_800}, // Kafka Streams' repartition topics
		{1 << 30, 1 << 30},
		{1<<31 - 1, 1 << 30}, // Kafka's largest: Iggy's largest
		{1000, 1 << 20},      // below Iggy's smallest (Kafka refuses it first)
	} {
		if got := segmentSize(c.kafka); got != c.want {
			t.Errorf("segmentSize(%d) = %d, want %d", c.kafka, got, c.want)
		}
	}
}
