package bridge

import (
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/wire"
)

// producerIDs allocates producer ids as docs/design/record-mapping.md §6 decides:
// (instance_id << 47) | counter, the counter seeded from the wall clock in
// Unix ms (capped to 47 bits) so a restarted gateway does not hand out the
// same (id, epoch 0) pairs again; epoch always 0; nothing persisted.
type producerIDs struct {
	high    int64
	counter atomic.Int64
}

const producerCounterBits = 47

func (p *producerIDs) init(instance uint16) {
	// 16 instance bits above the 47 counter bits: bit 63 stays clear, so
	// ids are never negative.
	p.high = int64(instance) << producerCounterBits
	p.counter.Store(time.Now().UnixMilli() & (1<<producerCounterBits - 1))
}

// next returns a fresh producer id, or -1 when the counter space is spent.
func (p *producerIDs) next() int64 {
	n := p.counter.Add(1)
	if n >= 1<<producerCounterBits {
		return -1
	}
	return p.high | n
}

// initProducerID answers InitProducerId: allocate-only, idempotent
// producers only (docs/design/record-mapping.md §6).
func (g *Gateway) initProducerID(c *call) bool {
	st := c.state
	req := &st.initPIDReq
	if !decodeOrClose(c, req) {
		return false
	}
	resp := wire.InitProducerIDResponse{ProducerId: -1, ProducerEpoch: -1}
	switch {
	case req.TransactionalId.Valid && req.TransactionalId.S != "":
		// Transactions are not supported; an empty id counts as absent.
		resp.ErrorCode = wire.TransactionalIDAuthFailed
	default:
		if id := g.producerIDs.next(); id < 0 {
			resp.ErrorCode = wire.UnknownServerError
		} else {
			resp.ProducerId, resp.ProducerEpoch = id, 0
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}
