package bridge

import "github.com/kiggy-io/kiggy/batch"

// Compressed Fetch (docs/design/record-mapping.md §3.5,
// docs/design/kafka-protocol.md §5): Fetch serves a topic's batches in the
// codec its compression.type names; "producer" (the default) and
// "uncompressed" are served uncompressed, since the producer's codec is not
// stored.

// fetchCompression maps a topic's compression.type (TopicConfig.Compression) to
// the codec Fetch builds its batches with.
func fetchCompression(compression string) batch.Codec {
	switch compression {
	case "gzip":
		return batch.Gzip
	case "snappy":
		return batch.Snappy
	case "lz4":
		return batch.LZ4
	case "zstd":
		return batch.Zstd
	}
	return batch.NoCompression // "", "producer", "uncompressed"
}

// fetchCompressionOf returns topic's Fetch compression from its compression.type, held
// with its other configs in the gateway's topic state (topicstate.go), so a
// change applies to the next Fetch.
func (g *Gateway) fetchCompressionOf(topic string) batch.Codec {
	return fetchCompression(g.topicCompression(topic))
}
