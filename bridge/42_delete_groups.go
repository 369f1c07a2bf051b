// DeleteGroups (API key 42): versions 0–3 (wire.APIs).
//
// As Kafka's group coordinator; a group known only by its committed offsets
// counts as an empty group (see deleteGroups).

package bridge

import (
	"errors"
	"slices"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDeleteGroups, (*Gateway).deleteGroups) }

// deleteGroups answers DeleteGroups v0–3 as Kafka's group coordinator
// does: a group with members is NON_EMPTY_GROUP (68), an unknown one
// GROUP_ID_NOT_FOUND (69), and an empty one is deleted together with its
// committed offsets. A group the coordinator does not know but that has
// committed offsets (left in Iggy by an earlier gateway process, or written
// by a simple consumer that never joined) counts as an empty group, as Kafka
// deletes an Empty group it loaded from __consumer_offsets.
func (g *Gateway) deleteGroups(c *call) bool {
	gs := &c.state.group
	req := &gs.deleteReq
	if !decodeOrClose(c, req) {
		return false
	}
	resp := &gs.deleteResp
	resp.Results = resp.Results[:0]
	for i, id := range req.Groups {
		if slices.Contains(req.Groups[:i], id) {
			continue // KafkaApis.handleDeleteGroupsRequest: groupsNames.distinct
		}
		code := g.groupCode(c, acl.OpDelete, id) // KafkaApis: DELETE on each group
		if code == wire.NoError && id != "" && g.notCoordinator(id) {
			code = wire.NotCoordinator // docs/design/cluster.md §7
		}
		if code == wire.NoError {
			code = g.deleteGroup(id)
		}
		resp.Results = append(resp.Results, wire.DeleteGroupsResponseResult{Group: id, ErrorCode: code})
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// deleteGroup deletes one group and its committed offsets.
func (g *Gateway) deleteGroup(id string) wire.ErrorCode {
	if id == "" {
		return wire.InvalidGroupID // GroupCoordinator.isValidGroupId
	}
	code := wire.ErrorCode(g.groups.Delete(id))
	if code != wire.NoError && code != wire.GroupIDNotFound {
		return code // NON_EMPTY_GROUP, or COORDINATOR_NOT_AVAILABLE on shutdown
	}
	n, err := g.deleteCommitted(id)
	switch {
	case err != nil:
		// docs/design/record-mapping.md §5: retriable storage failures are
		// COORDINATOR_LOAD_IN_PROGRESS; a retry finds what is left.
		g.cfg.Logger.Warn("delete group offsets", "group", id, "err", err)
		return wire.CoordinatorLoadInProgress
	case n > 0:
		return wire.NoError
	}
	return code
}

// deleteCommitted deletes every committed offset of group id through
// Log.CommitOffset with a negative offset, and returns how many it deleted.
// The coordinator does not record which partitions a group committed, and
// Log cannot list them, so every partition of every topic is looked up, as
// OffsetFetch does for "all topics": one Log call per partition, which is
// fine for an admin request.
func (g *Gateway) deleteCommitted(id string) (int, error) {
	topics, err := g.store.Topics(g.ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range topics {
		for p := range t.Partitions {
			_, _, ok, err := g.store.FetchOffset(g.ctx, id, t.Name, p)
			switch {
			case errors.Is(err, store.ErrInvalidGroup):
				return n, nil // an id the backend cannot key offsets by has none
			case err != nil:
				return n, err
			case !ok:
				continue
			}
			if err := g.store.CommitOffset(g.ctx, id, t.Name, p, -1, ""); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
