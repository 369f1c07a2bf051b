// DescribeAcls (API key 29): versions 1–3 (wire.APIs); v0 was removed by
// KIP-896.
//
// As Kafka's AclApis (docs/design/security.md §6); on the embedded log the
// ACLs are kept in memory (docs/LIMITS.md).

package bridge

import (
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeAcls, (*Gateway).describeAcls) }

// describeAcls answers DescribeAcls v1–3 (AclApis.handleDescribeAcls):
// DESCRIBE on the cluster, then every ACL the filter matches, grouped by
// resource pattern.
func (g *Gateway) describeAcls(c *call) bool {
	var req wire.DescribeAclsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	var resp wire.DescribeAclsResponse
	f := aclFilter(&req.Filter)
	switch {
	case g.acl.authz == nil:
		resp.ErrorCode, resp.ErrorMessage = wire.SecurityDisabled, wire.NullStringOf(msgSecurityDisabled)
	case g.clusterCode(c, acl.OpDescribe) != wire.NoError:
		resp.ErrorCode, resp.ErrorMessage = wire.ClusterAuthorizationFailed, wire.NullStringOf(msgClusterAuthFailed)
	case !f.Valid():
		resp.ErrorCode, resp.ErrorMessage = wire.InvalidRequest, wire.NullStringOf("The filter contains UNKNOWN elements")
	default:
		g.syncACLsForAdmin()
		for _, b := range g.acl.authz.Describe(f) {
			n := len(resp.Resources)
			if n == 0 || !samePattern(&resp.Resources[n-1], &b) {
				resp.Resources = append(resp.Resources, wire.DescribeAclsResource{
					ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName, PatternType: int8(b.PatternType)})
				n++
			}
			r := &resp.Resources[n-1]
			r.ACLs = append(r.ACLs, wire.ACLDescription{Principal: b.Principal, Host: b.Host,
				Operation: int8(b.Operation), Permission: int8(b.Permission)})
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

func samePattern(r *wire.DescribeAclsResource, b *acl.Binding) bool {
	return r.ResourceType == int8(b.ResourceType) && r.PatternType == int8(b.PatternType) && r.ResourceName == b.ResourceName
}
