package iggy

// The compactor: a gateway that is the only writer of its system stream
// (no Config.CommitTail: not one of several instances over one stream)
// compacts its commit log and its system store namespaces as they grow, not
// only when it opens them, so that a long-lived gateway's logs stay within
// Config.compactRatio times their live entries (docs/IGGY.md "kiggy's own
// state"). With several instances the commit log is compacted by its tail
// reader (tailCommits), with a switch the others follow; a system store
// namespace only when an instance opens it (its compaction deletes the old
// generation, which another instance may still be appending to).

import (
	"context"
	"time"
)

// compactRetryAfter is how long the compactor waits after a compaction
// failed before it tries again.
const compactRetryAfter = 10 * time.Second

// compactsAlone reports whether this client compacts its logs while it
// runs: it keeps a commit log, and no other instance writes its stream.
func (c *Client) compactsAlone() bool {
	return c.commits != nil && c.cfg.CommitTail <= 0 && !c.cfg.noCompactor
}

// startCompactor starts the compactor when compactsAlone.
func (c *Client) startCompactor() {
	if !c.compactsAlone() {
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

// compactGrown compacts the commit log and each system store namespace
// opened so far that grew worth compacting; false when one failed.
func (c *Client) compactGrown() bool {
	ok := true
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.cfg.RequestTimeout)
	defer cancel()
	c.offMu.Lock()
	large := c.cfg.worthCompacting(c.commits.records, len(c.offsets))
	c.offMu.Unlock()
	if large {
		if err := c.compactCommits(ctx); err != nil && !c.closed.Load() {
			c.log.Warn("iggy: compacting the commit log failed", "err", err)
			ok = false
		}
	}
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	for _, st := range c.state.ns {
		if !c.cfg.worthCompacting(st.records, len(st.entries)) {
			continue
		}
		fresh, err := c.compactState(ctx, st, st.gen+1, []int{st.gen})
		if err != nil {
			if !c.closed.Load() {
				c.log.Warn("iggy: compacting a system store namespace failed", "topic", st.topic, "err", err)
			}
			ok = false
			continue
		}
		// The entries are the same: callers of SystemVersion need not
		// load the namespace again.
		fresh.changes = st.changes
		*st = *fresh
	}
	return ok
}
