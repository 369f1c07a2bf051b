package iggy

// The compactor compacts the system store's namespaces (system.go) as they
// grow, not only when they are opened, and the commit log of a gateway that
// does not read its tail (no Config.CommitTail; with it the tail reader
// compacts the commit log, tailCommits) while no other instance has written
// that (compactCommitsAlone). So a long-lived gateway's logs stay within
// Config.compactRatio times their live entries (docs/IGGY.md "kiggy's own
// state"). A switch record ends a generation, and a write that lands after
// it counts for nothing and is written again into the next, by the system
// store's writers and by the commit log's tail readers.

import (
	"context"
	"errors"
	"time"
)

// compactRetryAfter is how long the compactor waits after a compaction
// failed before it tries again.
const compactRetryAfter = 10 * time.Second

// compactsCommitsAlone reports whether this client compacts its commit log
// while it runs: it keeps one, and no other instance writes its stream.
func (c *Client) compactsCommitsAlone() bool {
	return c.commits != nil && c.cfg.CommitTail <= 0 && !c.cfg.noCompactor
}

// startCompactor starts the compactor of a client that keeps a commit log.
func (c *Client) startCompactor() {
	if c.commits == nil || c.cfg.noCompactor {
		return
	}
	c.compactKick = make(chan struct{}, 1)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			select {
			case <-c.done:
				return
			case <-c.compactKick:
			}
			if !c.compactGrown() {
				select {
				case <-c.done:
					return
				case <-time.After(compactRetryAfter):
				}
			}
		}
	}()
}

// kickCompactor wakes the compactor, when it runs, without waiting.
func (c *Client) kickCompactor() {
	if c.compactKick == nil {
		return
	}
	select {
	case c.compactKick <- struct{}{}:
	default:
	}
}

// compactGrown compacts the commit log (alone) and each system store
// namespace opened so far that grew worth compacting; false when one
// failed.
func (c *Client) compactGrown() bool {
	ok := true
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.cfg.RequestTimeout)
	defer cancel()
	if c.compactsCommitsAlone() {
		c.offMu.Lock()
		large := c.cfg.worthCompacting(c.commits.records, len(c.offsets))
		c.offMu.Unlock()
		if large && !c.commitLogShared {
			switch err := c.compactCommitsAlone(ctx); {
			case errors.Is(err, errCommitLogShared):
				c.commitLogShared = true // for good: the other instance may write on at any time
				c.log.Warn("iggy: not compacting the commit log while running", "err", err)
			case err != nil && !c.closed.Load():
				c.log.Warn("iggy: compacting the commit log failed", "err", err)
				ok = false
			}
		}
	}
	for _, slot := range c.openedNamespaces() {
		if !c.compactNamespace(ctx, slot) {
			ok = false
		}
	}
	return ok
}

// compactNamespace compacts one opened namespace if it grew worth
// compacting, with its lock held (its readers and writers wait, no other
// namespace's); false when that failed.
func (c *Client) compactNamespace(ctx context.Context, slot *namespaceSlot) bool {
	slot.mu.Lock()
	defer slot.mu.Unlock()
	st := slot.st
	if st == nil || !c.cfg.worthCompacting(st.records, len(st.entries)) {
		return true
	}
	if err := c.compactState(ctx, st); err != nil {
		if !c.closed.Load() {
			c.log.Warn("iggy: compacting a system store namespace failed", "topic", st.topic, "err", err)
		}
		return false
	}
	return true
}
