package bridge

import (
	"strings"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/batch"
)

// Compressed Fetch (docs/design/record-mapping.md §3.5,
// docs/design/kafka-protocol.md §5): Fetch serves a topic's batches in the
// codec its compression.type names; "producer" (the default) and
// "uncompressed" are served uncompressed, since the producer's codec is not
// stored.

// fetchCodec maps a topic's compression.type (TopicConfig.Compression) to
// the codec Fetch builds its batches with.
func fetchCodec(compression string) batch.Codec {
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

// codecTTL is how long a topic's codec is served from the cache before the
// backend is asked again: a compression.type change reaches Fetch within it.
const codecTTL = 2 * time.Second

// maxCachedCodecs bounds the cache; past it, it starts over.
const maxCachedCodecs = 4096

// topicCodecs caches each topic's Fetch codec, so a Fetch does not ask the
// backend (a round trip on Iggy) for every topic it reads. The zero value
// is ready.
type topicCodecs struct {
	mu sync.RWMutex
	m  map[string]cachedCodec
}

type cachedCodec struct {
	codec batch.Codec
	at    time.Time
}

// codec returns topic's Fetch codec, from the cache when fresh. A topic the
// backend cannot describe (unknown, unreachable) is served uncompressed:
// its read fails the same way anyway.
func (g *Gateway) topicCodec(topic string, now time.Time) batch.Codec {
	tc := &g.codecs
	tc.mu.RLock()
	e, ok := tc.m[topic]
	tc.mu.RUnlock()
	if ok && now.Sub(e.at) < codecTTL {
		return e.codec
	}
	codec := batch.NoCompression
	if info, err := g.store.Topic(g.ctx, topic); err == nil {
		codec = fetchCodec(info.Config.Compression)
	}
	tc.mu.Lock()
	if tc.m == nil || len(tc.m) >= maxCachedCodecs {
		tc.m = make(map[string]cachedCodec)
	}
	if _, ok := tc.m[topic]; ok {
		tc.m[topic] = cachedCodec{codec, now} // keeps the cloned key
	} else {
		tc.m[strings.Clone(topic)] = cachedCodec{codec, now} // topic aliases the request frame
	}
	tc.mu.Unlock()
	return codec
}
