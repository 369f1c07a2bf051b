package iggy

// Tail checks (docs/IGGY.md, "The tail window"). Without Config.SoleWriter
// a partition's exact high watermark is trusted for externalRecheck after
// the poll that told it: other writers may append. Rather than poll each
// partition of a topic when that runs out, one GetTopic tells the ends of
// them all, and each partition Iggy holds at least as much of as is cached
// is renewed, its high watermark raised to Iggy's end, as a poll sent at the
// same moment would have renewed it (the same rule: what Iggy said plus this
// client's appends confirmed since, unless one of unknown outcome came in
// between). A partition another writer appended to thus gets a high
// watermark past its readers, whose next Read polls. A Read past half the recheck
// starts the topic's check in the background, so a consumer at the tail
// rarely waits for one; a Read past the recheck waits for the topic's check
// rather than poll, and polls only when the check could not renew its
// partition: another writer appended, Iggy holds fewer messages than are
// cached, the check failed, or the client routes some partitions to other
// nodes (routes.go), whose ends the metadata primary may not know.

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Tail check tuning.
const (
	// tailCheckers is how many GetTopic checks run at once.
	tailCheckers = 2
	// tailCheckTimeout bounds one check; a Read waiting for it then polls.
	tailCheckTimeout = 2 * time.Second
)

// topicCheck is one GetTopic check of a topic's exact high watermarks, in
// flight; done is closed when it has renewed what it could.
type topicCheck struct {
	topic string
	done  chan struct{}
}

// checkSnap is what a check remembers of a partition when it is sent.
type checkSnap struct {
	p      *partCache
	unsure uint64 // p.unsure
	end    uint64 // cachedEnd(p)
}

// tailCheckLocked returns topic's check in flight, starting one if none is;
// nil when none can run (a partition is routed, or the checkers are
// behind): the caller polls. Under mu.
func (rc *readCache) tailCheckLocked(topic string) *topicCheck {
	if rc.c.routes.n.Load() != 0 {
		return nil
	}
	if chk := rc.checks[topic]; chk != nil {
		return chk
	}
	chk := &topicCheck{topic: strings.Clone(topic), done: make(chan struct{})}
	select {
	case rc.checkq <- chk:
	default:
		return nil
	}
	if rc.checks == nil {
		rc.checks = map[string]*topicCheck{}
	}
	rc.checks[chk.topic] = chk
	return chk
}

// checker runs the topics' checks (started with the read-ahead workers).
func (rc *readCache) checker() {
	defer rc.c.wg.Done()
	for {
		select {
		case <-rc.ctx.Done():
			return
		case chk := <-rc.checkq:
			rc.check(chk)
			rc.mu.Lock()
			if rc.checks[chk.topic] == chk {
				delete(rc.checks, chk.topic)
			}
			rc.mu.Unlock()
			close(chk.done)
		}
	}
}

// check asks Iggy for the ends of chk's topic and renews each cached
// partition whose end is at least what was cached when it was sent: its
// high watermark is then exact as of the check's sending.
func (rc *readCache) check(chk *topicCheck) {
	c := rc.c
	e, ok := c.cached(chk.topic)
	if !ok {
		return
	}
	rc.mu.Lock()
	snaps := make([]checkSnap, e.partitions) // by partition; p nil when not cached
	cached := 0
	for i := range e.partitions {
		if p := rc.parts.get(chk.topic, i); p != nil && !p.dead {
			snaps[i] = checkSnap{p: p, unsure: p.unsure, end: rc.cachedEnd(p)}
			cached++
		}
	}
	sentAt := time.Now()
	rc.mu.Unlock()
	if cached == 0 {
		return
	}
	rc.checksSent.Add(1)
	ctx, cancel := context.WithTimeout(rc.ctx, tailCheckTimeout)
	defer cancel()
	d, ok, err := c.lookupTopic(ctx, chk.topic)
	if err != nil || !ok || c.routes.n.Load() != 0 {
		return // gone, or partly led elsewhere: the Reads poll
	}
	if now := d.entry(); now.id != e.id || now.created != e.created || !slices.Equal(now.incarnations, e.incarnations) {
		return // recreated, or a partition was: the next poll's fence judges
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, pi := range d.partitions {
		if uint64(pi.id) >= uint64(len(snaps)) {
			continue
		}
		s := snaps[pi.id]
		if s.p == nil || s.p.dead {
			continue
		}
		p := s.p
		high := watermarksOf(pi).High
		if uint64(high) < s.end || p.unsure != s.unsure || !sentAt.After(p.verified) {
			// Fewer messages than were cached (a purge? the next poll
			// judges), an append of unknown outcome since, or a poll
			// told more since.
			continue
		}
		p.high = max(p.high, high)
		p.exact, p.verified = true, sentAt
		rc.checkRenewals.Add(1)
	}
}
