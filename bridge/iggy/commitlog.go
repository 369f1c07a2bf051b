package iggy

// The commit log (docs/IGGY.md, "Committed offsets"): every Kafka commit the
// client accepts is also appended, before it is answered, to a topic of the
// reserved system stream (Config.SystemStream, default "__kiggy", never
// shown to Kafka clients), so what Iggy consumer offsets cannot hold — a
// commit of 0, one past the log end, the metadata string — survives a kiggy
// restart. The log is read back when the client opens, and with
// Config.CommitTail read on from there, so that commits made through other
// kiggy instances over the same stream are seen here too
// (docs/design/cluster.md §9). It is compacted in generations: when the
// current generation holds many more records than live commits, a "switch"
// record ends it, the live commits as of the switch are copied into the
// next generation, which becomes current once its "complete" record is
// written, and the generations before the one switched from are deleted.
// A commit that lands after a switch counts for nothing and is written
// again into the next generation before it is answered (docs/IGGY.md
// "Committed offsets").

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// DefaultSystemStream is the reserved Iggy stream of kiggy's own state.
const DefaultSystemStream = "__kiggy"

// Commit log record kinds and flags (docs/IGGY.md, "Committed offsets").
const (
	commitRecordVersion = 1
	kindCommit          = 1 // one commit (or its deletion)
	kindComplete        = 2 // the generation's copy of live commits is complete
	// kindSnapshot is a live commit copied into a new generation; it counts
	// only before the generation's first "complete" record (a slower second
	// copier's records after it would undo newer commits).
	kindSnapshot = 3
	// kindSwitch ends the generation: the records after the first one count
	// for nothing; the state at it continues in the next generation.
	kindSwitch = 4

	flagMemOnly = 1 << 0 // not held by the Iggy consumer offset
	flagDelete  = 1 << 1 // the commit was deleted (negative offset)
)

// Compaction thresholds: a generation is compacted at Open when it holds
// more than Config.compactMin records (default defaultCompactMin) and
// Config.compactRatio (default defaultCompactRatio) times its live commits.
const (
	defaultCompactMin   = 10_000
	defaultCompactRatio = 4
)

// worthCompacting reports whether a generation of records records with live
// live entries is over the compaction thresholds.
func (c *Config) worthCompacting(records, live int) bool {
	return records > c.compactMin && records > c.compactRatio*live
}

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
// [metadata u32+bytes], little-endian; a "complete" or "switch" record is
// its first three bytes.
func appendCommitRecord(b []byte, r commitRecord) []byte {
	b = append(b, commitRecordVersion, r.kind, r.flags)
	if r.kind == kindComplete || r.kind == kindSwitch {
		return b
	}
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
	if r.kind == kindSwitch {
		if len(p) != 0 || r.flags != 0 {
			return r, errBadCommitRecord
		}
		return r, nil
	}
	if (r.kind != kindCommit && r.kind != kindSnapshot) || len(p) < 14 {
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
// current generation. Its records are applied to Client.offsets.
type commitLog struct {
	sys *Client
	// mu guards the generation: a commit (append, check, apply) and a read
	// of the tail hold it shared, a move to the next generation exclusively.
	mu    sync.RWMutex
	gen   int
	topic string
	// Under Client.offMu: the offset after the last record read, the log
	// offset of the record each key's commit (or deletion) came from, so
	// that a record read late never overrides a newer commit, the records
	// read from the generation, the offset of its switch once read (-1
	// before) and when this instance first read it.
	next       int64
	at         map[offsetKey]int64
	records    int
	switchAt   int64
	switchSeen time.Time
	switchSent bool
}

// commitTopicPrefix names the generations of a Kafka stream's commit log:
// "offsets.<stream>.<generation>" (≤ 8 + 200 + 1 + 10 bytes).
func commitTopicPrefix(stream string) string { return "offsets." + stream + "." }

func (c *Client) commitTopic(gen int) string {
	return commitTopicPrefix(c.cfg.Stream) + strconv.Itoa(gen)
}

// genState is one generation read from its start.
type genState struct {
	offsets  map[offsetKey]memOffset
	at       map[offsetKey]int64
	next     int64
	records  int
	complete bool
	switchAt int64 // -1: no switch
}

// openCommitLog connects the system-stream client, finds the newest
// complete generation, loads it into c.offsets, finishes a switch found in
// it and compacts it if it grew large.
func (c *Client) openCommitLog(ctx context.Context) error {
	scfg := c.cfg
	scfg.Stream, scfg.PoolSize, scfg.system, scfg.SoleWriter = c.cfg.SystemStream, 2, true, false
	scfg.sharedTokens = c.tokens
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
	c.commits = &commitLog{sys: sys, at: map[offsetKey]int64{}, switchAt: -1}
	cl := c.commits
	cl.mu.Lock()
	err = c.findGeneration(ctx)
	cl.mu.Unlock()
	if err != nil {
		return err
	}
	c.log.Info("iggy: commit log loaded", "topic", cl.topic, "records", cl.records, "commits", len(c.offsets))
	if c.cfg.worthCompacting(cl.records, len(c.offsets)) {
		if err := c.compactCommits(ctx); err != nil {
			return err
		}
	}
	c.startTail()
	c.startCompactor()
	return nil
}

// generations lists the commit log's generations, newest first.
func (c *Client) generations(ctx context.Context) ([]int, error) {
	return c.topicGenerations(ctx, commitTopicPrefix(c.cfg.Stream))
}

// topicGenerations lists the generations of the system stream's topics
// named prefix + generation, newest first.
func (c *Client) topicGenerations(ctx context.Context, prefix string) ([]int, error) {
	topics, err := c.commits.sys.Topics(ctx)
	if err != nil {
		return nil, err
	}
	var gens []int
	for _, t := range topics {
		if rest, ok := strings.CutPrefix(t.Name, prefix); ok {
			if g, err := strconv.Atoi(rest); err == nil && g >= 0 && strconv.Itoa(g) == rest {
				gens = append(gens, g)
			}
		}
	}
	slices.Sort(gens)
	slices.Reverse(gens)
	return gens, nil
}

// findGeneration makes the newest complete generation current (creating
// generation 0 when there is none), following a switch found in it. A
// generation newer than it without its "complete" record is a switch in
// progress when the complete one ends in a switch (it is finished), else a
// compaction of an older kiggy cut short (it is deleted). The caller holds
// c.commits.mu exclusively.
func (c *Client) findGeneration(ctx context.Context) error {
	cl := c.commits
	gens, err := c.generations(ctx)
	if err != nil {
		return err
	}
	var newer []int
	for _, g := range gens {
		gs, err := c.readGeneration(ctx, g)
		if errors.Is(err, store.ErrUnknownTopic) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if !gs.complete {
			newer = append(newer, g)
			continue
		}
		c.install(g, gs)
		if gs.switchAt >= 0 {
			return c.moveOn(ctx, true)
		}
		for _, n := range newer {
			c.log.Warn("iggy: dropping an incomplete commit log generation", "topic", c.commitTopic(n))
			if err := cl.sys.DeleteTopic(ctx, c.commitTopic(n)); err != nil && !errors.Is(err, store.ErrUnknownTopic) {
				return err
			}
		}
		return nil
	}
	// No generation yet: start the first. Another instance may be starting
	// it at the same time: both write "complete", and the first counts.
	if err := c.writeGeneration(ctx, 0, nil); err != nil {
		return err
	}
	gs, err := c.readGeneration(ctx, 0)
	if err != nil {
		return err
	}
	c.install(0, gs)
	return nil
}

// readGeneration reads generation gen from its start: the copied commits
// before its first "complete" record, then the commits up to its first
// switch.
func (c *Client) readGeneration(ctx context.Context, gen int) (genState, error) {
	gs := genState{offsets: map[offsetKey]memOffset{}, at: map[offsetKey]int64{}, switchAt: -1}
	topic := c.commitTopic(gen)
	sys := c.commits.sys
	for {
		var n int
		wm, err := sys.Read(ctx, topic, 0, gs.next, 1<<20, func(m *message.Message) bool {
			n++
			gs.next = m.Offset + 1
			r, err := decodeCommitRecord(m.Payload)
			if err != nil {
				c.log.Warn("iggy: skipping a malformed commit log record", "topic", topic, "offset", m.Offset, "err", err)
				return true
			}
			gs.records++
			switch r.kind {
			case kindComplete:
				gs.complete = true
			case kindSwitch:
				if gs.complete {
					gs.switchAt = m.Offset
					return false
				}
			case kindSnapshot, kindCommit:
				if r.kind == kindSnapshot && gs.complete {
					break
				}
				k := offsetKey{r.group, r.topic, r.partition}
				if r.flags&flagDelete != 0 {
					delete(gs.offsets, k)
				} else {
					gs.offsets[k] = memOffset{offset: r.offset, metadata: r.metadata, memOnly: r.flags&flagMemOnly != 0}
				}
				gs.at[k] = m.Offset
			}
			return true
		})
		if err != nil {
			return gs, err
		}
		if gs.switchAt >= 0 || n == 0 || gs.next >= wm.High {
			return gs, nil
		}
	}
}

// install makes generation gen, read as gs, current. The caller holds
// c.commits.mu exclusively.
func (c *Client) install(gen int, gs genState) {
	cl := c.commits
	c.offMu.Lock()
	c.offsets = gs.offsets
	cl.gen, cl.topic = gen, c.commitTopic(gen)
	cl.at, cl.next, cl.records = gs.at, gs.next, gs.records
	cl.switchAt, cl.switchSent = gs.switchAt, false
	if gs.switchAt >= 0 {
		cl.switchSeen = time.Now()
	}
	c.offMu.Unlock()
}

// writeGeneration writes the live commits into generation gen (created if
// needed) as snapshot records, then its "complete" record; nothing when
// the generation is complete already (another instance copied first).
func (c *Client) writeGeneration(ctx context.Context, gen int, live map[offsetKey]memOffset) error {
	sys := c.commits.sys
	name := c.commitTopic(gen)
	if _, err := sys.CreateTopic(ctx, name, 1, store.TopicConfig{}); err != nil && !errors.Is(err, store.ErrTopicExists) {
		return err
	}
	if gs, err := c.readGeneration(ctx, gen); err != nil || gs.complete {
		return err
	}
	var chunk []commitRecord
	size := 0
	flush := func() error {
		_, err := c.appendSystem(ctx, name, func(b *message.Batch) {
			for _, r := range chunk {
				addRecord(b, r)
			}
		})
		chunk, size = chunk[:0], 0
		return err
	}
	for k, v := range live {
		r := commitRecord{kind: kindSnapshot, partition: k.partition, offset: v.offset, group: k.group, topic: k.topic, metadata: v.metadata}
		if v.memOnly {
			r.flags = flagMemOnly
		}
		chunk = append(chunk, r)
		if size += len(k.group) + len(k.topic) + len(v.metadata) + 32; size > 512<<10 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	chunk = append(chunk, commitRecord{kind: kindComplete})
	return flush()
}

// appendSystem appends the batch build makes to partition 0 of topic, a
// topic of the system stream (the commit log's or the system store's
// generations), and returns its base offset. An append every node refuses
// with nothing stored is sent again while the partition elects a primary
// (retryRefused): an Iggy 0.9 cluster whose replica 0 is down refuses a
// new topic's appends for about 5 s, and kiggy creates these topics itself,
// with no client to retry for it.
func (c *Client) appendSystem(ctx context.Context, topic string, build func(*message.Batch)) (int64, error) {
	var b message.Batch
	b.Reset(uint64(time.Now().UnixMicro()))
	build(&b)
	return c.commits.sys.Append(ctx, topic, 0, &b)
}

// moveOn follows the current generation's switch: it copies the commits as
// of the switch into the next generation unless that is complete already
// (only when write: otherwise it leaves the copy to the instance that
// wrote the switch for a while), makes the next generation current and,
// when it copied, deletes the generations before the one it switched from
// (with no CommitTail, that one too: no other instance reads it). The
// caller holds c.commits.mu exclusively.
func (c *Client) moveOn(ctx context.Context, write bool) error {
	cl := c.commits
	from := cl.gen
	next, err := c.readGeneration(ctx, from+1)
	if err != nil && !errors.Is(err, store.ErrUnknownTopic) {
		return err
	}
	wrote := false
	if !next.complete {
		if !write {
			return nil
		}
		// The commits as of the switch: generation from read again up to
		// it (this instance's memory may hold commits made after it).
		old, err := c.readGeneration(ctx, from)
		if err != nil {
			return err
		}
		if old.switchAt < 0 {
			return fmt.Errorf("iggy: commit log generation %d lost its switch record", from)
		}
		if err := c.writeGeneration(ctx, from+1, old.offsets); err != nil {
			return err
		}
		if next, err = c.readGeneration(ctx, from+1); err != nil {
			return err
		}
		wrote = true
	}
	c.install(from+1, next)
	c.log.Info("iggy: commit log switched to a new generation", "topic", cl.topic, "commits", len(next.offsets), "copied", wrote)
	if !wrote {
		return nil
	}
	gens, err := c.generations(ctx)
	if err != nil {
		return nil
	}
	for _, g := range gens {
		if g < from || (g == from && c.cfg.CommitTail <= 0) {
			if err := cl.sys.DeleteTopic(ctx, c.commitTopic(g)); err != nil && !errors.Is(err, store.ErrUnknownTopic) {
				c.log.Warn("iggy: could not delete an old commit log generation", "generation", g, "err", err)
			}
		}
	}
	if cl.switchAt >= 0 { // the new generation was switched from already
		return c.moveOn(ctx, write)
	}
	return nil
}

// compactCommits ends the current generation with a switch and moves on
// to the next. Two instances may do it at once: the first switch counts.
func (c *Client) compactCommits(ctx context.Context) error {
	cl := c.commits
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return c.compactCommitsLocked(ctx)
}

// errCommitLogShared: the commit log holds records this instance neither
// read nor wrote.
var errCommitLogShared = errors.New("iggy: another kiggy instance writes this commit log (run the instances with --cluster-membership)")

// compactCommitsAlone is compactCommits for an instance that does not read
// the log's tail (no Config.CommitTail), which does not see a switch
// another instance writes, nor its own commits landing after one: it
// compacts only while the generation holds nothing but what it read and
// wrote itself (its records, with no commit in flight), and
// errCommitLogShared otherwise, so that instances that share a commit log
// without --cluster-membership never compact it under each other (they
// compact it when they open it, as before).
func (c *Client) compactCommitsAlone(ctx context.Context) error {
	cl := c.commits
	cl.mu.Lock()
	defer cl.mu.Unlock()
	c.offMu.Lock()
	records := cl.records
	c.offMu.Unlock()
	wm, err := cl.sys.Read(ctx, cl.topic, 0, int64(records), 1, func(*message.Message) bool { return false })
	if err != nil {
		return err
	}
	if wm.High != int64(records) {
		return fmt.Errorf("%w: %s holds %d records, this instance read or wrote %d", errCommitLogShared, cl.topic, wm.High, records)
	}
	return c.compactCommitsLocked(ctx)
}

// compactCommitsLocked is compactCommits; the caller holds
// c.commits.mu exclusively.
func (c *Client) compactCommitsLocked(ctx context.Context) error {
	cl := c.commits
	if cl.switchAt < 0 {
		var b message.Batch
		b.Reset(uint64(time.Now().UnixMicro()))
		addRecord(&b, commitRecord{kind: kindSwitch})
		if _, err := cl.sys.Append(ctx, cl.topic, 0, &b); err != nil {
			return err
		}
		cl.switchSent = true
		c.log.Info("iggy: compacting the commit log", "topic", cl.topic, "records", cl.records)
		// Read up to the switch (or an earlier one of another instance).
		gs, err := c.readGeneration(ctx, cl.gen)
		if err != nil {
			return err
		}
		if gs.switchAt < 0 {
			return fmt.Errorf("iggy: the switch written into commit log generation %d is not there", cl.gen)
		}
		c.offMu.Lock()
		cl.switchAt = gs.switchAt
		c.offMu.Unlock()
	}
	return c.moveOn(ctx, true)
}

// reopen finds the newest generation again, after the current one was
// deleted under this instance (it fell behind by more than a generation).
func (c *Client) reopen(ctx context.Context) error {
	cl := c.commits
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if _, err := cl.sys.Topic(ctx, cl.topic); err == nil {
		return nil // another caller reopened it first
	}
	c.log.Warn("iggy: the commit log generation read was deleted; reading the newest", "topic", cl.topic)
	return c.findGeneration(ctx)
}

// addRecord appends r as one message of b.
func addRecord(b *message.Batch, r commitRecord) {
	b.Begin(b.Origin)
	b.Buf = appendCommitRecord(b.Buf, r)
	b.MarkHeaders()
	b.End()
}

// logCommit appends one commit to the log and then applies it to memory;
// the commit is answered only after it returns nil. With CommitTail, it
// first reads the log up to the commit's offset: a commit that landed after
// a switch counts for nothing and is written again into the next
// generation (docs/design/cluster.md §9).
func (c *Client) logCommit(ctx context.Context, r commitRecord) error {
	cl := c.commits
	if cl == nil {
		c.applyCommit(r, -1) // the system client itself keeps no log
		return nil
	}
	var b message.Batch
	for lostCount := 0; ; {
		if lostCount == 8 {
			return fmt.Errorf("iggy: commit log: the generation kept switching under the commit: %w", store.ErrUnavailable)
		}
		cl.mu.RLock()
		c.offMu.Lock()
		pending := cl.switchAt >= 0
		c.offMu.Unlock()
		if pending {
			cl.mu.RUnlock()
			if err := c.moveOnLocked(ctx); err != nil {
				return err
			}
			continue
		}
		b.Reset(uint64(time.Now().UnixMicro()))
		addRecord(&b, r)
		base, err := cl.sys.Append(ctx, cl.topic, 0, &b)
		if err == nil && c.cfg.CommitTail > 0 {
			err = c.readTail(ctx, base)
		}
		if errors.Is(err, store.ErrUnknownTopic) {
			// The generation was deleted: the commit may be gone with it.
			cl.mu.RUnlock()
			if err := c.reopen(ctx); err != nil {
				return err
			}
			lostCount++
			continue
		}
		if err != nil {
			cl.mu.RUnlock()
			return err
		}
		c.offMu.Lock()
		lost := cl.switchAt >= 0 && base > cl.switchAt
		c.offMu.Unlock()
		if lost {
			cl.mu.RUnlock()
			lostCount++
			continue
		}
		c.applyCommit(r, base)
		large := false
		if c.compactsCommitsAlone() {
			// With a tail, readTail counts the records it reads, this
			// one among them.
			c.offMu.Lock()
			cl.records++
			large = c.cfg.worthCompacting(cl.records, len(c.offsets))
			c.offMu.Unlock()
		}
		cl.mu.RUnlock()
		if large {
			c.kickCompactor()
		}
		return nil
	}
}

// moveOnLocked takes the generation lock and follows a pending switch.
func (c *Client) moveOnLocked(ctx context.Context) error {
	cl := c.commits
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.switchAt < 0 {
		return nil
	}
	return c.moveOn(ctx, true)
}

// applyCommit applies one commit record found at log offset at (-1 =
// unknown: applied as the newest) of the current generation to memory,
// unless a record further on already set the key or the record lies
// after the generation's switch. The strings may alias a request frame or
// a reply buffer: they are cloned.
func (c *Client) applyCommit(r commitRecord, at int64) {
	k := offsetKey{r.group, r.topic, r.partition}
	c.offMu.Lock()
	defer c.offMu.Unlock()
	if cl := c.commits; cl != nil && at >= 0 {
		if prev, ok := cl.at[k]; ok && prev >= at {
			return
		}
		if cl.switchAt >= 0 && at > cl.switchAt {
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

// switchHelpAfter is how long an instance that read a switch leaves the
// copy into the next generation to the instance that wrote it before it
// copies itself (the writer may have died).
const switchHelpAfter = time.Second

// startTail starts the commit log's reader when Config.CommitTail asks. It
// follows switches and, when the generation grew large, writes one.
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
				c.log.Warn("iggy: reading the commit log", "err", err)
			}
		}
	}()
}

// tailCommits applies the records appended to the commit log since the
// last read — commits made through other instances (docs/design/cluster.md
// §9), and this instance's own, which change nothing — then follows a
// switch read or compacts.
func (c *Client) tailCommits(ctx context.Context) error {
	cl := c.commits
	cl.mu.RLock()
	err := c.readTail(ctx, -1)
	c.offMu.Lock()
	pending, seen, mine := cl.switchAt >= 0, cl.switchSeen, cl.switchSent
	large := c.cfg.worthCompacting(cl.records, len(c.offsets))
	c.offMu.Unlock()
	cl.mu.RUnlock()
	switch {
	case errors.Is(err, store.ErrUnknownTopic):
		return c.reopen(ctx)
	case err != nil:
		return err
	case pending:
		cl.mu.Lock()
		defer cl.mu.Unlock()
		if cl.switchAt < 0 {
			return nil
		}
		return c.moveOn(ctx, mine || time.Since(seen) > switchHelpAfter)
	case large:
		return c.compactCommits(ctx)
	}
	return nil
}

// readTail reads the current generation from where the last read ended,
// up to its end or, when upTo ≥ 0, until past offset upTo, and stops at
// its switch. The caller holds c.commits.mu shared.
func (c *Client) readTail(ctx context.Context, upTo int64) error {
	cl := c.commits
	c.offMu.Lock()
	next, done := cl.next, cl.switchAt >= 0 || (upTo >= 0 && cl.next > upTo)
	c.offMu.Unlock()
	for !done {
		n, records, switchAt := 0, 0, int64(-1)
		wm, err := cl.sys.Read(ctx, cl.topic, 0, next, 1<<20, func(m *message.Message) bool {
			n++
			next = m.Offset + 1
			r, err := decodeCommitRecord(m.Payload)
			if err != nil {
				return true
			}
			records++
			switch r.kind {
			case kindCommit:
				c.applyCommit(r, m.Offset)
			case kindSwitch:
				switchAt = m.Offset
				return false
			}
			return true
		})
		if err != nil {
			return err
		}
		c.offMu.Lock()
		if next > cl.next {
			cl.records += records
			cl.next = next
		}
		if switchAt >= 0 && (cl.switchAt < 0 || switchAt < cl.switchAt) {
			cl.switchAt, cl.switchSeen = switchAt, time.Now()
		}
		done = cl.switchAt >= 0 || n == 0 || next >= wm.High || (upTo >= 0 && next > upTo)
		c.offMu.Unlock()
	}
	return nil
}

// SystemLog returns the client of the system stream (Config.SystemStream),
// where kiggy keeps its own logs, bridge/cluster's membership log among
// them (docs/design/cluster.md §2); nil when the client keeps no commit
// log.
func (c *Client) SystemLog() store.Log {
	if c.commits == nil {
		return nil
	}
	return c.commits.sys
}

// SyncCommits implements store.CommitSyncer: it reads the commit log up to
// its end now (with no CommitTail no other instance writes to it: nothing
// to read).
func (c *Client) SyncCommits(ctx context.Context) error {
	cl := c.commits
	if cl == nil || c.cfg.CommitTail <= 0 {
		return nil
	}
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	return c.readTail(ctx, -1)
}
