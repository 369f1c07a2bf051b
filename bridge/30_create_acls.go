// CreateAcls (API key 30): versions 1–3 (wire.APIs).
//
// As Kafka's AclApis (docs/design/security.md §6); ACLs are stored in the
// system store (in memory on the embedded log).

package bridge

import (
	"strings"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyCreateAcls, (*Gateway).createAcls) }

// createAcls answers CreateAcls v1–3 (AclApis.handleCreateAcls): ALTER on
// the cluster, then each creation on its own: INVALID_REQUEST (42) for an
// ACL that cannot be stored, else stored in the system store and indexed;
// an ACL that exists already succeeds without change.
func (g *Gateway) createAcls(c *call) bool {
	var req wire.CreateAclsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	if c.inline {
		// Storing an ACL re-indexes them all: a worker's job, not the
		// event loop's, whose other connections would wait.
		return g.offload(c)
	}
	resp := wire.CreateAclsResponse{Results: make([]wire.ACLResult, len(req.Creations))}
	fail := func(code wire.ErrorCode, msg string) {
		for i := range resp.Results {
			resp.Results[i] = wire.ACLResult{ErrorCode: code, ErrorMessage: wire.NullStringOf(msg)}
		}
	}
	switch {
	case g.acl.authz == nil:
		fail(wire.SecurityDisabled, "No Authorizer is configured.")
	case g.clusterCode(c, acl.OpAlter) != wire.NoError:
		fail(wire.ClusterAuthorizationFailed, msgClusterAuthFailed)
	default:
		g.acl.mu.Lock()
		g.syncACLsLocked()
		var added []acl.Binding // indexed together: one re-index a request
		for i, cr := range req.Creations {
			// Copies: the request's strings alias the frame.
			b := acl.Binding{
				ResourceType: acl.ResourceType(cr.ResourceType), ResourceName: strings.Clone(cr.ResourceName),
				PatternType: acl.PatternType(cr.PatternType), Principal: strings.Clone(cr.Principal),
				Host: strings.Clone(cr.Host), Operation: acl.Operation(cr.Operation), Permission: acl.Permission(cr.Permission),
			}
			if err := b.Validate(); err != nil {
				resp.Results[i] = wire.ACLResult{ErrorCode: wire.InvalidRequest, ErrorMessage: wire.NullStringOf(aclErrorMessage(err))}
				continue
			}
			if !g.acl.authz.Has(b) && !g.aclRoom(&resp.Results[i], len(added)) {
				continue // adminlimits.go
			}
			if err := g.system.PutSystem(g.ctx, aclNamespace, acl.Key(b), acl.Marshal(b)); err != nil {
				g.cfg.Logger.Warn("acl: storing an ACL failed", "acl", b.String(), "err", err)
				resp.Results[i] = wire.ACLResult{ErrorCode: wire.UnknownServerError, ErrorMessage: wire.NullStringOf("storing the ACL failed: " + err.Error())}
				continue
			}
			added = append(added, b)
		}
		g.acl.authz.Add(added...)
		g.acl.mu.Unlock()
		if len(added) > 0 {
			g.noticeStateChange()
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// aclErrorMessage is the text of a validation error without the package
// prefix, as Kafka's InvalidRequestException messages read.
func aclErrorMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "acl: ")
}
