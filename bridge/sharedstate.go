package bridge

// Shared state: what gateways on one system store (on one Iggy, in a
// cluster or not) change for each other — ACLs, SCRAM credentials, client
// quotas, topic configs and log starts (docs/design/cluster.md §10). Each
// gateway keeps a view of each namespace in memory, serves its hot paths
// from it, and keeps it current three ways:
//
//   - its own changes update the view as they are stored;
//   - every Config.StateRefresh the refresher asks the store whether
//     another gateway changed a namespace (store.SystemVersions: one Iggy
//     poll that returns nothing when none did) and reads only those that
//     changed; in a cluster (store.StateNotifier) it also does so, and
//     lists the topics, as soon as another instance's notice says it
//     changed something, and this gateway sends one after each change it
//     stores (noticeStateChange);
//   - an admin request that reads or changes a namespace first brings the
//     view up to date the same way, so a change made through one gateway is
//     seen at once by admin requests through any other (and an
//     incremental change starts from the newest state, not a stale one);
//     a SCRAM lookup that finds no credential does too (sasl.go).

import (
	"context"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// DefaultStateRefresh is Config.StateRefresh's default.
const DefaultStateRefresh = time.Second

// topicListInterval is how often the refresher also lists the backend's
// topics again (topicids.go): another gateway or an Iggy client may have
// deleted or re-created one.
const topicListInterval = 5 * time.Second

// sharedVersion is the store's version of a namespace (store.SystemVersions)
// that a view was read at; the zero value is "unknown".
type sharedVersion struct {
	v     uint64
	valid bool
}

// sharesSystem reports whether other gateways may write this gateway's
// system store: every store but the in-memory one it makes for itself.
func (g *Gateway) sharesSystem() bool {
	_, mem := g.system.(*memSystem)
	return !mem
}

// changedSince reports whether namespace ns may have changed since seen,
// and the version to record once the caller has read it. A store that
// cannot tell (no store.SystemVersions) may always have changed.
func (g *Gateway) changedSince(ctx context.Context, ns string, seen sharedVersion) (bool, sharedVersion, error) {
	sv, ok := g.system.(store.SystemVersions)
	if !ok {
		return true, sharedVersion{}, nil
	}
	v, err := sv.SystemVersion(ctx, ns)
	if err != nil {
		return false, seen, err
	}
	now := sharedVersion{v: v, valid: true}
	return now != seen, now, nil
}

// startStateRefresh starts the refresher where other gateways may write the
// system store.
func (g *Gateway) startStateRefresh() {
	if !g.sharesSystem() {
		return
	}
	g.wg.Add(1)
	go g.refreshSharedState()
}

// noticeStateChange tells the other instances of a cluster that this
// gateway stored a change to the shared state or to the topics, after it is
// stored (store.StateNotifier); elsewhere it does nothing.
func (g *Gateway) noticeStateChange() {
	if n, ok := g.cfg.Placement.(store.StateNotifier); ok {
		n.NoticeStateChange()
	}
}

// refreshSharedState brings the shared views up to date every
// Config.StateRefresh, and at once when another instance's notice arrives,
// until the gateway closes.
func (g *Gateway) refreshSharedState() {
	defer g.wg.Done()
	every := g.cfg.StateRefresh
	t := time.NewTicker(every)
	defer t.Stop()
	var notices <-chan struct{}
	if n, ok := g.cfg.Placement.(store.StateNotifier); ok {
		notices = n.StateNotices()
	}
	listEvery := max(1, int(topicListInterval/every))
	failing := false
	for tick := 1; ; {
		list := false
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
			list = tick%listEvery == 0
			tick++
		case <-notices:
			// Another instance changed the shared state or the topics.
			list = true
		}
		ctx, cancel := context.WithTimeout(g.ctx, max(min(every, 10*time.Second), time.Second))
		err := g.syncSharedState(ctx)
		if list {
			_, _ = g.listTopics(ctx)
		}
		cancel()
		switch {
		case err != nil && !failing && g.ctx.Err() == nil:
			g.cfg.Logger.Warn("shared state: reading the system store failed; the last view stays until it answers", "err", err)
			failing = true
		case err == nil && failing:
			g.cfg.Logger.Info("shared state: the system store answers again")
			failing = false
		}
	}
}

// syncSharedState brings every shared view up to date; it returns the
// first error (the views it could not read keep their last state).
func (g *Gateway) syncSharedState(ctx context.Context) error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	if g.acl.authz != nil {
		g.acl.mu.Lock()
		keep(g.syncACLs(ctx))
		g.acl.mu.Unlock()
	}
	if g.sasl.server.Scram != nil {
		keep(g.sasl.scram.reload(ctx))
	}
	g.adminRefused.quotaMu.Lock()
	keep(g.syncQuotas(ctx))
	g.adminRefused.quotaMu.Unlock()
	ts := &g.topicState
	ts.mu.Lock()
	if ts.loaded {
		keep(g.syncTopicState(ctx))
	}
	ts.mu.Unlock()
	return first
}

// syncQuotas reads the stored client quotas again if another gateway
// changed them. The caller holds g.adminRefused.quotaMu.
func (g *Gateway) syncQuotas(ctx context.Context) error {
	if !g.sharesSystem() {
		return nil
	}
	changed, v, err := g.changedSince(ctx, quotaNamespace, g.quotaSeen)
	if err != nil || !changed {
		return err
	}
	if err := g.reloadQuotas(ctx); err != nil {
		return err
	}
	g.quotaSeen = v
	return nil
}

// syncQuotasForAdmin is syncQuotas before a client quota admin request; a
// store that does not answer leaves the quotas as last read. The caller
// holds g.adminRefused.quotaMu.
func (g *Gateway) syncQuotasForAdmin() {
	ctx, cancel := context.WithTimeout(g.ctx, 5*time.Second)
	defer cancel()
	if err := g.syncQuotas(ctx); err != nil {
		g.cfg.Logger.Warn("client quotas: reading the stored quotas failed; answering from the last read", "err", err)
	}
}

// syncTopicState reads topic configs and log starts again if another
// gateway changed them. The caller holds topicState.mu.
func (g *Gateway) syncTopicState(ctx context.Context) error {
	if !g.sharesSystem() {
		return nil
	}
	ts := &g.topicState
	c1, v1, err := g.changedSince(ctx, nsTopicConfig, ts.seen[0])
	if err != nil {
		return err
	}
	c2, v2, err := g.changedSince(ctx, nsLogStart, ts.seen[1])
	if err != nil || !c1 && !c2 {
		return err
	}
	if err := g.readTopicState(ctx); err != nil {
		return err
	}
	ts.seen = [2]sharedVersion{v1, v2}
	return nil
}
