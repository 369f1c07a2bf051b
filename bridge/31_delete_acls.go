// DeleteAcls (API key 31): versions 1–3 (wire.APIs).
//
// As Kafka's AclApis and its controller (docs/design/security.md §6),
// which deletes at most 10,000 ACLs a request; no known difference.

package bridge

import (
	"strconv"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDeleteAcls, (*Gateway).deleteAcls) }

// deleteAcls answers DeleteAcls v1–3 (AclApis.handleDeleteAcls): ALTER on
// the cluster, then per filter the ACLs it matched, each deleted from the
// system store and the index.
func (g *Gateway) deleteAcls(c *call) bool {
	var req wire.DeleteAclsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	if c.inline {
		// Storing an ACL re-indexes them all: a worker's job, not the
		// event loop's, whose other connections would wait.
		return g.offload(c)
	}
	resp := wire.DeleteAclsResponse{FilterResults: make([]wire.DeleteAclsFilterResult, len(req.Filters))}
	fail := func(code wire.ErrorCode, msg string) {
		for i := range resp.FilterResults {
			resp.FilterResults[i] = wire.DeleteAclsFilterResult{ErrorCode: code, ErrorMessage: wire.NullStringOf(msg)}
		}
	}
	switch {
	case g.acl.authz == nil:
		fail(wire.SecurityDisabled, "No Authorizer is configured.")
	case g.clusterCode(c, acl.OpAlter) != wire.NoError:
		fail(wire.ClusterAuthorizationFailed, msgClusterAuthFailed)
	default:
		g.acl.mu.Lock()
		g.syncACLsLocked() // what another gateway added is deleted too
		// Every filter matches what was held when the request came (an ACL
		// two filters match is in both results), deleted from the store
		// once and from the index together: one re-index a request.
		matches := make([][]acl.Binding, len(req.Filters))
		deleted := map[acl.Binding]bool{} // to delete, then deleted
		for i := range req.Filters {
			if f := aclFilter(&req.Filters[i]); f.Valid() {
				matches[i] = g.acl.authz.Describe(f)
				for _, b := range matches[i] {
					deleted[b] = false
				}
			}
		}
		if len(deleted) > maxRecordsPerRequest {
			// Kafka 4.4 AclControlManager: the ACLs one request removes
			// (each once, whichever filters match it) are at most
			// MAX_RECORDS_PER_USER_OP; past it the request deletes
			// nothing and every filter fails.
			fail(wire.InvalidRequest, "Cannot remove more than "+strconv.Itoa(maxRecordsPerRequest)+" acls in a single delete operation.")
			matches = nil
		}
		var gone []acl.Binding
		for i := range matches {
			out := &resp.FilterResults[i]
			if f := aclFilter(&req.Filters[i]); !f.Valid() {
				out.ErrorCode, out.ErrorMessage = wire.InvalidRequest, wire.NullStringOf("The filter contains UNKNOWN elements")
				continue
			}
			for _, b := range matches[i] {
				m := wire.DeleteAclsMatchingACL{ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName,
					PatternType: int8(b.PatternType), Principal: b.Principal, Host: b.Host,
					Operation: int8(b.Operation), Permission: int8(b.Permission)}
				if deleted[b] {
					out.MatchingACLs = append(out.MatchingACLs, m)
					continue
				}
				if err := g.system.PutSystem(g.ctx, aclNamespace, acl.Key(b), nil); err != nil {
					g.cfg.Logger.Warn("acl: deleting a stored ACL failed", "acl", b.String(), "err", err)
					m.ErrorCode, m.ErrorMessage = wire.UnknownServerError, wire.NullStringOf("deleting the ACL failed: "+err.Error())
				} else {
					gone, deleted[b] = append(gone, b), true
				}
				out.MatchingACLs = append(out.MatchingACLs, m)
			}
		}
		g.acl.authz.RemoveBindings(gone)
		g.acl.mu.Unlock()
		if len(gone) > 0 {
			g.noticeStateChange()
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
