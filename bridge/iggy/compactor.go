package iggy

// The compactor: a gateway that does not read its commit log's tail (no
// Config.CommitTail: not one of several instances of a cluster over one
// stream) compacts its commit log as it grows, not only when it opens it,
// so that a long-lived gateway's log stays within Config.compactRatio times
// its live commits (docs/IGGY.md "Committed offsets"). Such a gateway would
// not see another instance's switch, nor its own commits landing after one,
// so it compacts only while the log holds nothing but what it read at open
// and wrote since (compactCommitsAlone). With a tail, the tail reader
// compacts the log (tailCommits), with a switch the others follow.

import (
	"context"
	"errors"
	"time"
)

// compactRetryAfter is how long the compactor waits after a compaction
// failed before it tries again.
const compactRetryAfter = 10 * time.Second

// compactsCommitsAlone reports whether this client compacts its commit log
// while it runs: it keeps one and does not read its tail.
func (c *Client) compactsCommitsAlone() bool {
	return c.commits != nil && c.cfg.CommitTail <= 0 && !c.cfg.noCompactor
}

// startCompactor starts the compactor when compactsCommitsAlone.
func (c *Client) startCompactor() {
	if !c.compactsCommitsAlone() {
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

// compactGrown compacts the commit log if it grew worth compacting; false
// when that failed.
func (c *Client) compactGrown() bool {
	c.offMu.Lock()
	large := c.cfg.worthCompacting(c.commits.records, len(c.offsets))
	c.offMu.Unlock()
	if !large || c.commitLogShared {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.cfg.RequestTimeout)
	defer cancel()
	switch err := c.compactCommitsAlone(ctx); {
	case errors.Is(err, errCommitLogShared):
		// For good: the other instance may write on at any time.
		c.commitLogShared = true
		c.log.Warn("iggy: not compacting the commit log while running", "err", err)
	case err != nil && !c.closed.Load():
		c.log.Warn("iggy: compacting the commit log failed", "err", err)
		return false
	}
	return true
}
