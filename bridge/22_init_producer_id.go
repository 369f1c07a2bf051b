// InitProducerId (API key 22): versions 0–5 (wire.APIs).
//
// Differs from Kafka: idempotent producers only; a transactional id is
// refused (docs/design/record-mapping.md §6).

package bridge

import "github.com/kiggy-io/kiggy/wire"

func init() { handle(wire.KeyInitProducerID, (*Gateway).initProducerID) }

// initProducerID answers InitProducerId for idempotent producers only
// (transactions are refused): a fresh id at epoch 0, or, when a producer
// sends its current id and epoch (v3+, KIP-360), the same id at the next
// epoch (docs/design/record-mapping.md §6; producer.IDs.Grant).
func (g *Gateway) initProducerID(c *call) bool {
	st := c.state
	req := &st.initPIDReq
	if !decodeOrClose(c, req) {
		return false
	}
	resp := wire.InitProducerIDResponse{ProducerID: -1, ProducerEpoch: -1}
	switch {
	case req.TransactionalID.Valid && req.TransactionalID.S != "":
		// Transactions are not supported; an empty id counts as absent.
		resp.ErrorCode = wire.TransactionalIDAuthFailed
	case !g.canIdempotentWrite(c):
		// KafkaApis.handleInitProducerIdRequest: IDEMPOTENT_WRITE on the
		// cluster, or WRITE on any topic (KIP-679).
		resp.ErrorCode = wire.ClusterAuthorizationFailed
	default:
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = g.producerIDs.Grant(req.ProducerID, req.ProducerEpoch, c.hdr.APIVersion)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
