// DeleteAcls (API key 31): versions 1–3 (wire.APIs).
//
// As Kafka's AclApis (docs/design/security.md §6); no known difference.

package bridge

import (
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
		for i := range req.Filters {
			f := aclFilter(&req.Filters[i])
			out := &resp.FilterResults[i]
			if !f.Valid() {
				out.ErrorCode, out.ErrorMessage = wire.InvalidRequest, wire.NullStringOf("The filter contains UNKNOWN elements")
				continue
			}
			for _, b := range g.acl.authz.Describe(f) {
				m := wire.DeleteAclsMatchingACL{ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName,
					PatternType: int8(b.PatternType), Principal: b.Principal, Host: b.Host,
					Operation: int8(b.Operation), Permission: int8(b.Permission)}
				if err := g.system.PutSystem(g.ctx, aclNamespace, acl.Key(b), nil); err != nil {
					g.cfg.Logger.Warn("acl: deleting a stored ACL failed", "acl", b.String(), "err", err)
					m.ErrorCode, m.ErrorMessage = wire.UnknownServerError, wire.NullStringOf("deleting the ACL failed: "+err.Error())
				} else {
					g.acl.authz.Remove(exactFilter(b))
					g.noticeStateChange()
				}
				out.MatchingACLs = append(out.MatchingACLs, m)
			}
		}
		g.acl.mu.Unlock()
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// exactFilter matches b alone.
func exactFilter(b acl.Binding) acl.Filter {
	return acl.Filter{ResourceType: b.ResourceType, ResourceName: b.ResourceName, HasName: true, PatternType: b.PatternType,
		Principal: b.Principal, HasPrincipal: true, Host: b.Host, HasHost: true, Operation: b.Operation, Permission: b.Permission}
}
