package iggy

// The commit log (docs/IGGY.md, "Committed offsets"): every Kafka commit the
// client accepts is also appended, before it is answered, to a topic of the
// reserved system stream (Config.SystemStream, default "__kiggy", never
// shown to Kafka clients), so what Iggy consumer offsets cannot hold — a
// commit of 0, one past the log end, the metadata string — survives a kiggy
// restart. The log is read back when the client opens, and with
// Config.CommitTail read on from there, so that commits made through other
// kiggy instances over the same stream are seen here too
// (docs/design/cluster.md §9). Without CommitTail it is compacted at open: when it holds many more records than live commits, the live commits
// are copied into the next generation topic, which becomes current once its
// "complete" record is written, and the old generation is deleted.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/message"
)

// DefaultSystemStream is the reserved Iggy stream of kiggy's own state.
const DefaultSystemStream = "__kiggy"

// Commit log record kinds and flags (docs/IGGY.md, "Committed offsets").
const (
	commitRecordVersion = 1
	kindCommit          = 1 // one commit (or its deletion)
	kindComplete        = 2 // the generation's copy of live commits is complete

	flagMemOnly = 1 << 0 // not held by the Iggy consumer offset
	flagDelete  = 1 << 1 // the commit was deleted (negative offset)
)

// compaction thresholds: a generation is compacted at Open when it holds more
// than compactMin records and compactRatio times its live commits (variables
// so that tests can lower them).
var (
	compactMin   = 10_000
	compactRatio = 4
)

// commitRecord is one decoded commit log record.
type commitRecord struct {
	kind      uint8
	flags     uint8
	partition int32
	offset    int64
	group     string
	topic     string
	metadata  string
}

// appendCommitRecord encodes r: [version u8][kind u8][flags u8]
// [partition i32][offset i64][group u16+bytes][topic u16+bytes]
// [metadata u32+bytes], little-endian.
func appendCommitRecord(b []byte, r commitRecord) []byte {
	b = append(b, commitRecordVersion, r.kind, r.flags)
	b = binary.LittleEndian.AppendUint32(b, uint32(r.partition))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.offset))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.group)))
	b = append(b, r.group...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.topic)))
	b = append(b, r.topic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.metadata)))
	return append(b, r.metadata...)
}

// errBadCommitRecord is a record the decoder cannot read.
var errBadCommitRecord = errors.New("iggy: malformed commit log record")

// decodeCommitRecord decodes one record; it never panics.
func decodeCommitRecord(p []byte) (commitRecord, error) {
	var r commitRecord
	if len(p) < 3 || p[0] != commitRecordVersion {
		return r, errBadCommitRecord
	}
	r.kind, r.flags = p[1], p[2]
	p = p[3:]
	if r.kind == kindComplete {
		return r, nil
	}
	if r.kind != kindCommit || len(p) < 14 {
		return r, errBadCommitRecord
	}
	r.partition = int32(binary.LittleEndian.Uint32(p))
	r.offset = int64(binary.LittleEndian.Uint64(p[4:]))
	p = p[12:]
	str := func(n int) (string, bool) {
		if n > len(p) {
			return "", false
		}
		s := string(p[:n])
		p = p[n:]
		return s, true
	}
	var ok bool
	n := int(binary.LittleEndian.Uint16(p))
	p = p[2:]
	if r.group, ok = str(n); !ok || len(p) < 2 {
		return r, errBadCommitRecord
	}
	n = int(binary.LittleEndian.Uint16(p))
	p = p[2:]
	if r.topic, ok = str(n); !ok || len(p) < 4 {
		return r, errBadCommitRecord
	}
	n = int(binary.LittleEndian.Uint32(p))
	p = p[4:]
	if r.metadata, ok = str(n); !ok || len(p) != 0 {
		return r, errBadCommitRecord
	}
	return r, nil
}

// commitLog is the client's commit log: the system-stream client and the
// current generation's topic. Its records are applied to Client.offsets.
type commitLog struct {
	sys   *Client
	topic string
	// Under Client.offMu: the offset after the last record read, and the
	// log offset of the record each key's commit (or deletion) came from,
	// so that a record read late never overrides a newer commit.
	next int64
	at   map[offsetKey]int64
}

// commitTopicPrefix names the generations of a Kafka stream's commit log:
// "offsets.<stream>.<generation>" (≤ 8 + 200 + 1 + 10 bytes).
func commitTopicPrefix(stream string) string { return "offsets." + stream + "." }

// openCommitLog connects the system-stream client, finds the newest
// complete generation, loads it into c.offsets and compacts it if it grew
// large.
func (c *Client) openCommitLog(ctx context.Context) error {
	scfg := c.cfg
	scfg.Stream, scfg.PoolSize, scfg.system = c.cfg.SystemStream, 2, true
	if c.cfg.CommitTail > 0 {
		// A cluster member: the membership log's heartbeats and reads share
		// this client with the commits and their tail
		// (docs/design/cluster.md §2); a heartbeat must not queue behind a
		// burst of commits.
		scfg.PoolSize = 4
	}
	sys, err := Open(ctx, scfg)
	if err != nil {
		return fmt.Errorf("iggy: system stream %q: %w", c.cfg.SystemStream, err)
	}
	c.commits = &commitLog{sys: sys, at: map[offsetKey]int64{}}
	prefix := commitTopicPrefix(c.cfg.Stream)
	topics, err := sys.Topics(ctx)
	if err != nil {
		return err
	}
	var gens []int
	for _, t := range topics {
		if g, err := strconv.Atoi(strings.TrimPrefix(t.Name, prefix)); err == nil && strings.HasPrefix(t.Name, prefix) && g >= 0 {
			gens = append(gens, g)
		}
	}
	// Newest first; an incomplete generation is a compaction cut short.
	for i := 1; i < len(gens); i++ {
		for j := i; j > 0 && gens[j] > gens[j-1]; j-- {
			gens[j], gens[j-1] = gens[j-1], gens[j]
		}
	}
	for _, g := range gens {
		name := prefix + strconv.Itoa(g)
		records, live, complete, err := c.loadCommits(ctx, name)
		if err != nil {
			return err
		}
		if !complete {
			c.log.Warn("iggy: dropping an incomplete commit log generation", "topic", name)
			if err := sys.DeleteTopic(ctx, name); err != nil && !errors.Is(err, bridge.ErrUnknownTopic) {
				return err
			}
			continue
		}
		c.commits.topic = name
		c.log.Info("iggy: commit log loaded", "topic", name, "records", records, "commits", live)
		if c.cfg.CommitTail <= 0 && records > compactMin && records > compactRatio*live {
			return c.compactCommits(ctx, g+1, gens)
		}
		c.startTail()
		return nil
	}
	// No generation yet: start the first.
	if err := c.compactCommits(ctx, 0, gens); err != nil {
		return err
	}
	if c.cfg.CommitTail > 0 {
		// Another instance may have started the same generation at the
		// same time: read what is there.
		if _, _, _, err := c.loadCommits(ctx, c.commits.topic); err != nil {
			return err
		}
	}
	c.startTail()
	return nil
}

// loadCommits reads a generation from its start into c.offsets (replacing
// what was there) and reports its record and live-commit counts and whether
// its "complete" record is there.
func (c *Client) loadCommits(ctx context.Context, topic string) (records, live int, complete bool, err error) {
	loaded := map[offsetKey]memOffset{}
	at := map[offsetKey]int64{}
	sys := c.commits.sys
	var next int64
	for {
		var n int
		wm, err := sys.Read(ctx, topic, 0, next, 1<<20, func(m *message.Message) bool {
			n++
			next = m.Offset + 1
			r, err := decodeCommitRecord(m.Payload)
			if err != nil {
				c.log.Warn("iggy: skipping a malformed commit log record", "topic", topic, "offset", m.Offset, "err", err)
				return true
			}
			records++
			switch {
			case r.kind == kindComplete:
				complete = true
			case r.flags&flagDelete != 0:
				delete(loaded, offsetKey{r.group, r.topic, r.partition})
				at[offsetKey{r.group, r.topic, r.partition}] = m.Offset
			default:
				loaded[offsetKey{r.group, r.topic, r.partition}] = memOffset{offset: r.offset, metadata: r.metadata, memOnly: r.flags&flagMemOnly != 0}
				at[offsetKey{r.group, r.topic, r.partition}] = m.Offset
			}
			return true
		})
		if err != nil {
			return 0, 0, false, err
		}
		if n == 0 || next >= wm.High {
			break
		}
	}
	c.offMu.Lock()
	c.offsets = loaded
	c.commits.at, c.commits.next = at, next
	c.offMu.Unlock()
	return records, len(loaded), complete, nil
}

// compactCommits writes every live commit into generation gen, marks it
// complete, makes it current and deletes the older generations.
func (c *Client) compactCommits(ctx context.Context, gen int, old []int) error {
	sys := c.commits.sys
	name := commitTopicPrefix(c.cfg.Stream) + strconv.Itoa(gen)
	if _, err := sys.CreateTopic(ctx, name, 1, bridge.TopicConfig{}); err != nil && !errors.Is(err, bridge.ErrTopicExists) {
		return err
	}
	c.offMu.Lock()
	live := make([]commitRecord, 0, len(c.offsets))
	for k, v := range c.offsets {
		r := commitRecord{kind: kindCommit, partition: k.partition, offset: v.offset, group: k.group, topic: k.topic, metadata: v.metadata}
		if v.memOnly {
			r.flags = flagMemOnly
		}
		live = append(live, r)
	}
	c.offMu.Unlock()
	var b message.Batch
	flush := func() error {
		if b.Count == 0 {
			return nil
		}
		_, err := sys.Append(ctx, name, 0, &b)
		return err
	}
	b.Reset(uint64(time.Now().UnixMicro()))
	for _, r := range live {
		addRecord(&b, r)
		if b.Size() > 512<<10 {
			if err := flush(); err != nil {
				return err
			}
			b.Reset(uint64(time.Now().UnixMicro()))
		}
	}
	addRecord(&b, commitRecord{kind: kindComplete})
	if err := flush(); err != nil {
		return err
	}
	c.commits.topic = name
	c.offMu.Lock()
	c.commits.at, c.commits.next = map[offsetKey]int64{}, 0 // re-read by the tail: its own copies
	c.offMu.Unlock()
	for _, g := range old {
		if g < gen {
			if err := sys.DeleteTopic(ctx, commitTopicPrefix(c.cfg.Stream)+strconv.Itoa(g)); err != nil && !errors.Is(err, bridge.ErrUnknownTopic) {
				c.log.Warn("iggy: could not delete an old commit log generation", "generation", g, "err", err)
			}
		}
	}
	c.log.Info("iggy: commit log compacted", "topic", name, "commits", len(live))
	return nil
}

// addRecord appends r as one message of b.
func addRecord(b *message.Batch, r commitRecord) {
	b.Begin(b.Origin)
	b.Buf = appendCommitRecord(b.Buf, r)
	b.MarkHeaders()
	b.End()
}

// logCommit appends one commit to the log and then applies it to memory;
// the commit is answered only after it returns nil.
func (c *Client) logCommit(ctx context.Context, r commitRecord) error {
	cl := c.commits
	if cl == nil {
		c.applyCommit(r, -1) // the system client itself keeps no log
		return nil
	}
	var b message.Batch
	b.Reset(uint64(time.Now().UnixMicro()))
	addRecord(&b, r)
	base, err := cl.sys.Append(ctx, cl.topic, 0, &b)
	if err != nil {
		return err
	}
	c.applyCommit(r, base)
	return nil
}

// applyCommit applies one commit record found at log offset at (-1 =
// unknown: applied as the newest) to memory, unless a record further on
// already set the key. The strings may alias a request frame or a reply
// buffer: they are cloned.
func (c *Client) applyCommit(r commitRecord, at int64) {
	k := offsetKey{r.group, r.topic, r.partition}
	c.offMu.Lock()
	defer c.offMu.Unlock()
	if cl := c.commits; cl != nil && at >= 0 {
		if prev, ok := cl.at[k]; ok && prev >= at {
			return
		}
		k.group, k.topic = strings.Clone(k.group), strings.Clone(k.topic)
		cl.at[k] = at
	} else {
		k.group, k.topic = strings.Clone(k.group), strings.Clone(k.topic)
	}
	if r.flags&flagDelete != 0 {
		delete(c.offsets, k)
		return
	}
	c.offsets[k] = memOffset{offset: r.offset, metadata: strings.Clone(r.metadata), memOnly: r.flags&flagMemOnly != 0}
}

// startTail starts the commit log's reader when Config.CommitTail asks.
func (c *Client) startTail() {
	if c.cfg.CommitTail <= 0 {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(c.cfg.CommitTail)
		defer t.Stop()
		for {
			select {
			case <-c.done:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
			err := c.tailCommits(ctx)
			cancel()
			if err != nil && !c.closed.Load() {
				c.log.Warn("iggy: reading the commit log", "topic", c.commits.topic, "err", err)
			}
		}
	}()
}

// tailCommits applies the records appended to the commit log since the
// last read: commits made through other instances (docs/design/cluster.md
// §9), and this instance's own, which change nothing.
func (c *Client) tailCommits(ctx context.Context) error {
	cl := c.commits
	c.offMu.Lock()
	next := cl.next
	c.offMu.Unlock()
	for {
		n := 0
		wm, err := cl.sys.Read(ctx, cl.topic, 0, next, 1<<20, func(m *message.Message) bool {
			n++
			next = m.Offset + 1
			if r, err := decodeCommitRecord(m.Payload); err == nil && r.kind == kindCommit {
				c.applyCommit(r, m.Offset)
			}
			return true
		})
		if err != nil {
			return err
		}
		c.offMu.Lock()
		cl.next = max(cl.next, next)
		c.offMu.Unlock()
		if n == 0 || next >= wm.High {
			return nil
		}
	}
}

// SystemLog returns the client of the system stream (Config.SystemStream),
// where kiggy keeps its own logs, bridge/cluster's membership log among
// them (docs/design/cluster.md §2); nil when the client keeps no commit
// log.
func (c *Client) SystemLog() bridge.Log {
	if c.commits == nil {
		return nil
	}
	return c.commits.sys
}
