// DescribeCluster (API key 60): versions 0–2 (wire.APIs), always flexible.
//
// The brokers and controller Metadata answers; the cluster's authorized
// operations when asked for (KIP-430).

package bridge

import (
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeCluster, (*Gateway).describeCluster) }

// describeCluster answers DescribeCluster v0–2 (consistent with Metadata).
func (g *Gateway) describeCluster(c *call) bool {
	as := &c.state.admin
	req := &as.clusterReq
	if !decodeOrClose(c, req) {
		return false
	}
	brokers, controller := g.metadataBrokers(c, nil)
	resp := wire.DescribeClusterResponse{EndpointType: 1, ClusterID: g.cfg.ClusterID, ControllerID: controller,
		ClusterAuthorizedOperations: authorizedOperationsUnknown}
	for _, b := range brokers {
		resp.Brokers = append(resp.Brokers, wire.DescribeClusterResponseBroker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
	}
	if code := g.clusterCode(c, acl.OpDescribe); code != wire.NoError { // KafkaApis: DESCRIBE on the cluster
		resp = wire.DescribeClusterResponse{EndpointType: req.EndpointType, ErrorCode: code, ErrorMessage: wire.NullStringOf(msgClusterAuthFailed),
			ClusterAuthorizedOperations: authorizedOperationsUnknown}
	} else {
		resp.ClusterAuthorizedOperations = g.authorizedOperationsIf(req.IncludeClusterAuthorizedOperations, c, acl.ResourceCluster, acl.ClusterName)
	}
	if resp.ErrorCode == wire.NoError && req.EndpointType == 2 {
		// KIP-919: controllers are asked of controllers; kiggy has none apart.
		resp.ErrorCode, resp.ErrorMessage = wire.UnsupportedEndpointType, wire.NullStringOf("kiggy serves only the brokers endpoint type")
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
