// ApiVersions (API key 18): versions 0–4 (wire.APIs).
//
// Advertises exactly the APIs that have both a wire.APIs row and a handler
// (Produce from v0, as Kafka 4 does: docs/design/kafka-protocol.md §2.3, §3).

package bridge

import "github.com/kiggy-io/kiggy/wire"

func init() { handle(wire.KeyAPIVersions, (*Gateway).apiVersions) }

// apiVersions answers ApiVersions (docs/design/kafka-protocol.md §3).
func (g *Gateway) apiVersions(c *call) bool {
	v := c.hdr.APIVersion
	if v > g.apiMax {
		// KIP-511: an unsupported (too new) ApiVersions version gets a v0
		// body with UNSUPPORTED_VERSION and our range for key 18, under
		// response header v0; the client retries with our max.
		g.metrics.errors[wire.KeyAPIVersions].CountError(wire.UnsupportedVersion)
		buf := c.req.ResponseBuffer()
		buf = wire.AppendResponseHeader(buf, wire.KeyAPIVersions, 0, c.hdr.CorrelationID)
		c.req.Respond(wire.AppendAPIVersionsUnsupported(buf, g.apiMin, g.apiMax))
		return false
	}
	st := c.state
	resp := &st.apiVersionsResp
	*resp = wire.APIVersionsResponse{APIKeys: g.advertised}
	if !decodeOrClose(c, &st.apiVersionsReq) {
		return false
	}
	// KIP-511: Kafka validates the v3+ software name and version and answers
	// INVALID_REQUEST if either does not match its pattern.
	if !st.apiVersionsReq.Valid(v) {
		resp.ErrorCode = wire.InvalidRequest
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}
