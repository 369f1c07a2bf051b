package bridge

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/bridge/topicconfig"
)

// Topic configs live with the topic (docs/design/record-mapping.md §4):
// every override a client set is kept, normalized, in the system store's
// "topic-config" namespace (key = topic name, value = topicconfig.Values'
// encoding, version byte first); the ones Iggy has a field for
// (retention.ms, retention.bytes, flush.*) are also the backend topic's
// options. The gateway loads the namespace on first use and keeps a
// copy-on-write snapshot that Produce and Fetch read without a lock.

// Namespaces of the system store this file uses (log-start holds the log
// starts DeleteRecords sets, 21_delete_records.go).
const (
	nsTopicConfig = "topic-config"
	nsLogStart    = "log-start"
)

// topicSettings is what the hot paths need of one topic's overrides.
type topicSettings struct {
	overrides topicconfig.Values
	// maxMessageBytes is the topic's max.message.bytes, or -1 when unset.
	maxMessageBytes int64
	logAppendTime   bool
	compression     string
	// compact: cleanup.policy holds compact, so records need keys.
	compact bool
}

// topicState is the gateway's view of topic configs and log starts.
type topicState struct {
	mu     sync.Mutex // serializes loads and changes
	loaded bool
	// seen is the versions of the two namespaces the snapshots were read
	// at (sharedstate.go).
	seen [2]sharedVersion
	// snap maps topic → settings; replaced whole on every change.
	snap atomic.Pointer[map[string]*topicSettings]
	// starts maps a partition to the log start DeleteRecords set.
	starts atomic.Pointer[map[partKey]int64]
}

// partKey names a partition.
type partKey struct {
	topic     string
	partition int32
}

func settingsOf(v topicconfig.Values) *topicSettings {
	s := &topicSettings{overrides: v, maxMessageBytes: -1, logAppendTime: v.LogAppendTime(), compression: v.Get("compression.type"),
		compact: slices.Contains(topicconfig.ParseList(v.Get("cleanup.policy")), "compact")}
	if _, ok := v["max.message.bytes"]; ok {
		s.maxMessageBytes = v.Long("max.message.bytes")
	}
	return s
}

// loadTopicState reads both namespaces once; later calls return at once.
// A failed load is retried by the next call.
func (g *Gateway) loadTopicState(ctx context.Context) error {
	ts := &g.topicState
	if ts.snap.Load() != nil && ts.starts.Load() != nil {
		return nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.loaded {
		return nil
	}
	if err := g.readTopicState(ctx); err != nil {
		return err
	}
	ts.loaded = true
	return nil
}

// readTopicState reads both namespaces into fresh snapshots; the caller
// holds topicState.mu.
func (g *Gateway) readTopicState(ctx context.Context) error {
	ts := &g.topicState
	raw, err := g.system.LoadSystem(ctx, nsTopicConfig)
	if err != nil {
		return err
	}
	m := make(map[string]*topicSettings, len(raw))
	for k, b := range raw {
		v, err := topicconfig.Decode(b)
		if err != nil {
			continue // not ours to read: the topic keeps Kafka's defaults
		}
		m[k] = settingsOf(v)
	}
	rawStarts, err := g.system.LoadSystem(ctx, nsLogStart)
	if err != nil {
		return err
	}
	starts := make(map[partKey]int64, len(rawStarts))
	for k, b := range rawStarts {
		t, p, ok := strings.Cut(k, "/")
		n, err := strconv.ParseInt(p, 10, 32)
		if off, valid := decodeLogStart(b); ok && err == nil && valid {
			starts[partKey{t, int32(n)}] = off
		}
	}
	ts.snap.Store(&m)
	ts.starts.Store(&starts)
	return nil
}

// topicSettingsOf returns a topic's settings, nil when it has no overrides
// (or the store could not be read: Kafka's defaults then apply).
func (g *Gateway) topicSettingsOf(topic string) *topicSettings {
	p := g.topicState.snap.Load()
	if p == nil {
		// Not loaded at start (initTopicState): try again, briefly, so a
		// request never waits long on the system store.
		ctx, cancel := context.WithTimeout(g.ctx, time.Second)
		err := g.loadTopicState(ctx)
		cancel()
		if err != nil {
			return nil
		}
		p = g.topicState.snap.Load()
	}
	return (*p)[topic]
}

// initTopicState loads topic configs and log starts when the gateway starts,
// so no request pays for the first read (on Iggy it opens the system store's
// namespaces); when the store does not answer, it is retried in the
// background, and each request that needs the state meanwhile tries once.
func (g *Gateway) initTopicState() {
	var err error
	load := func() bool {
		ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
		defer cancel()
		err = g.loadTopicState(ctx)
		return err == nil
	}
	if !load() {
		g.cfg.Logger.Warn("topic configs: loading the stored topic configs and log starts failed; retrying", "err", err)
		g.retryInBackground(load)
	}
}

// topicCompression is the topic's compression.type ("producer" when unset):
// the codec Fetch serves its batches in (TopicConfig.Compression). The
// embedded log also returns it from Topic; on Iggy, which has no field for
// it, this is where Fetch finds it (fetchcompression.go).
func (g *Gateway) topicCompression(topic string) string {
	if s := g.topicSettingsOf(topic); s != nil {
		return s.compression
	}
	return "producer"
}

// topicOverrides returns a copy of a topic's overrides (empty when none),
// as of the store now where other gateways share it (sharedstate.go); if
// the store does not answer, as last read.
func (g *Gateway) topicOverrides(ctx context.Context, topic string) (topicconfig.Values, error) {
	if err := g.loadTopicState(ctx); err != nil {
		return nil, err
	}
	g.topicState.mu.Lock()
	_ = g.syncTopicState(ctx)
	g.topicState.mu.Unlock()
	out := topicconfig.Values{}
	if s := (*g.topicState.snap.Load())[topic]; s != nil {
		for k, v := range s.overrides {
			out[k] = v
		}
	}
	return out, nil
}

// putTopicOverrides stores a topic's overrides (none = delete the key).
func (g *Gateway) putTopicOverrides(ctx context.Context, topic string, v topicconfig.Values) error {
	if err := g.loadTopicState(ctx); err != nil {
		return err
	}
	ts := &g.topicState
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if err := g.syncTopicState(ctx); err != nil {
		return err
	}
	topic = strings.Clone(topic) // it may alias a request frame
	var enc []byte
	if len(v) > 0 {
		enc = v.Encode()
	}
	old := *ts.snap.Load()
	if _, had := old[topic]; !had && enc == nil {
		// Nothing stored here; clear what another instance may have left.
		if err := g.system.PutSystem(ctx, nsTopicConfig, topic, nil); err != nil {
			return err
		}
		g.noticeStateChange()
		return nil
	}
	if err := g.system.PutSystem(ctx, nsTopicConfig, topic, enc); err != nil {
		return err
	}
	g.noticeStateChange()
	m := make(map[string]*topicSettings, len(old)+1)
	for k, s := range old {
		m[k] = s
	}
	if enc == nil {
		delete(m, topic)
	} else {
		m[topic] = settingsOf(v)
	}
	ts.snap.Store(&m)
	return nil
}

// dropTopicState forgets a deleted topic's overrides and log starts.
func (g *Gateway) dropTopicState(ctx context.Context, topic string) error {
	g.fetchCache.DropTopic(topic)
	if err := g.putTopicOverrides(ctx, topic, nil); err != nil {
		return err
	}
	var parts []int32
	for k := range *g.topicState.starts.Load() {
		if k.topic == topic {
			parts = append(parts, k.partition)
		}
	}
	for _, p := range parts {
		if err := g.putLogStart(ctx, topic, p, -1); err != nil {
			return err
		}
	}
	return nil
}

// backendConfig maps overrides onto what the backend holds: retention (none
// when the policy has no delete: nothing of a compacted topic expires),
// durability from flush.*, the segment size, and the compression Fetch
// serves.
func backendConfig(v topicconfig.Values) store.TopicConfig {
	var cfg store.TopicConfig
	if !v.Compact() {
		// Unset, retention.ms is kiggy's default, forever (not Kafka's
		// 7 days: docs/LIMITS.md, "Topic configs").
		if s, set := v["retention.ms"]; set {
			if ms, _ := strconv.ParseInt(s, 10, 64); ms > 0 && ms <= math.MaxInt64/int64(time.Millisecond) {
				cfg.MessageExpiry = time.Duration(ms) * time.Millisecond
			}
		}
		if n := v.Long("retention.bytes"); n > 0 {
			cfg.MaxBytes = uint64(n)
		}
	}
	// Kafka's flush.* defaults (Long.MAX_VALUE) mean "the OS flushes". Iggy
	// fsyncs every write or none, so any shorter interval fsyncs every
	// write: never a weaker promise than asked (docs/IGGY.md, "Durability").
	_, fm := v["flush.messages"]
	_, fms := v["flush.ms"]
	if (fm && v.Long("flush.messages") < math.MaxInt64) || (fms && v.Long("flush.ms") < math.MaxInt64) {
		cfg.Durability = store.DurabilityFsync
	}
	if _, set := v["segment.bytes"]; set {
		cfg.SegmentBytes = v.Long("segment.bytes")
	}
	cfg.Compression = v.Get("compression.type")
	return cfg
}

// logStartKey is the "log-start" key of a partition.
func logStartKey(topic string, partition int32) string {
	return topic + "/" + strconv.Itoa(int(partition))
}

// logStartVersion is the first byte of a stored log start.
const logStartVersion = 1

func encodeLogStart(off int64) []byte {
	b := []byte{logStartVersion}
	return strconv.AppendInt(b, off, 10)
}

func decodeLogStart(b []byte) (int64, bool) {
	if len(b) < 2 || b[0] != logStartVersion {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b[1:]), 10, 64)
	return n, err == nil && n >= 0
}

// logStartOf returns the log start DeleteRecords set for a partition, 0
// when none (or the store could not be read).
func (g *Gateway) logStartOf(topic string, partition int32) int64 {
	p := g.topicState.starts.Load()
	if p == nil {
		if g.loadTopicState(g.ctx) != nil {
			return 0
		}
		p = g.topicState.starts.Load()
	}
	if len(*p) == 0 {
		return 0
	}
	return (*p)[partKey{topic, partition}]
}

// putLogStart stores a partition's log start, unless it is at or past off
// already; off < 0 deletes it.
func (g *Gateway) putLogStart(ctx context.Context, topic string, partition int32, off int64) error {
	if err := g.loadTopicState(ctx); err != nil {
		return err
	}
	ts := &g.topicState
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if err := g.syncTopicState(ctx); err != nil {
		return err
	}
	key := partKey{strings.Clone(topic), partition}
	old := *ts.starts.Load()
	cur, had := old[key]
	if !had && off < 0 || had && off >= 0 && off <= cur {
		// Nothing to delete, or another gateway has moved the start as far
		// (a log start never moves back).
		return nil
	}
	var enc []byte
	if off >= 0 {
		enc = encodeLogStart(off)
	}
	if err := g.system.PutSystem(ctx, nsLogStart, logStartKey(topic, partition), enc); err != nil {
		return err
	}
	g.noticeStateChange()
	m := make(map[partKey]int64, len(old)+1)
	for k, s := range old {
		m[k] = s
	}
	if off < 0 {
		delete(m, key)
	} else {
		m[key] = off
	}
	ts.starts.Store(&m)
	return nil
}

// watermarks returns a partition's watermarks with the log start
// DeleteRecords set applied.
func (g *Gateway) watermarks(ctx context.Context, topic string, partition int32) (store.Watermarks, error) {
	wm, err := g.store.Watermarks(ctx, topic, partition)
	if err == nil {
		g.applyLogStart(topic, partition, &wm)
	}
	return wm, err
}

// applyLogStart raises wm.LogStart to the stored log start (never above the
// high watermark: a backend that restarted the partition, an Iggy purge,
// keeps its own numbering).
func (g *Gateway) applyLogStart(topic string, partition int32, wm *store.Watermarks) {
	if ls := g.logStartOf(topic, partition); ls > wm.LogStart {
		wm.LogStart = min(ls, wm.High)
	}
}
