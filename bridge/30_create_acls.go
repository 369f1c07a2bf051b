// CreateAcls (API key 30): versions 1–3 (wire.APIs).
//
// As Kafka's AclApis and its controller (docs/design/security.md §6), which
// stores at most 10,000 new ACLs a request; ACLs are stored in the system
// store (in memory on the embedded log).

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
		bs := make([]acl.Binding, len(req.Creations))
		invalid := make([]error, len(req.Creations))
		fresh := map[acl.Binding]bool{} // valid, distinct, not held
		for i, cr := range req.Creations {
			// Copies: the request's strings alias the frame.
			b := acl.Binding{
				ResourceType: acl.ResourceType(cr.ResourceType), ResourceName: strings.Clone(cr.ResourceName),
				PatternType: acl.PatternType(cr.PatternType), Principal: strings.Clone(cr.Principal),
				Host: strings.Clone(cr.Host), Operation: acl.Operation(cr.Operation), Permission: acl.Permission(cr.Permission),
			}
			bs[i] = b
			if invalid[i] = b.Validate(); invalid[i] == nil && !g.acl.authz.Has(b) {
				fresh[b] = true
			}
		}
		if len(fresh) > maxRecordsPerRequest {
			// Kafka 4.4 AclControlManager.createAcls: the records of a
			// request's new ACLs are at most MAX_RECORDS_PER_USER_OP; past
			// it every creation fails, the invalid ones too, and nothing is
			// stored.
			fail(wire.PolicyViolation, "Unable to perform excessively large batch operation.")
		} else {
			g.storeACLsLocked(bs, invalid, resp.Results)
		}
		g.acl.mu.Unlock()
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// storeACLsLocked stores and indexes bs, answering each in results: an
// invalid one (its error in invalid) INVALID_REQUEST, a new one past
// --max-acls POLICY_VIOLATION. The caller holds g.acl.mu.
func (g *Gateway) storeACLsLocked(bs []acl.Binding, invalid []error, results []wire.ACLResult) {
	var added []acl.Binding // indexed together: one re-index a request
	for i, b := range bs {
		if err := invalid[i]; err != nil {
			results[i] = wire.ACLResult{ErrorCode: wire.InvalidRequest, ErrorMessage: wire.NullStringOf(aclErrorMessage(err))}
			continue
		}
		if !g.acl.authz.Has(b) && !g.aclRoom(&results[i], len(added)) {
			continue // adminlimits.go
		}
		if err := g.system.PutSystem(g.ctx, aclNamespace, acl.Key(b), acl.Marshal(b)); err != nil {
			g.cfg.Logger.Warn("acl: storing an ACL failed", "acl", b.String(), "err", err)
			results[i] = wire.ACLResult{ErrorCode: wire.UnknownServerError, ErrorMessage: wire.NullStringOf("storing the ACL failed: " + err.Error())}
			continue
		}
		added = append(added, b)
	}
	g.acl.authz.Add(added...)
	if len(added) > 0 {
		g.noticeStateChange()
	}
}

// aclErrorMessage is the text of a validation error without the package
// prefix, as Kafka's InvalidRequestException messages read.
func aclErrorMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "acl: ")
}
