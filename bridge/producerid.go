package bridge

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/wire"
)

// producerIDs allocates producer ids as docs/design/record-mapping.md §6 decides:
// (instance_id << 47) | counter, the counter seeded from the wall clock in
// Unix ms (capped to 47 bits) so a restarted gateway does not hand out the
// same (id, epoch 0) pairs again; nothing persisted. A fresh id starts at
// epoch 0; grantProducer bumps the epoch of a known id (KIP-360).
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

// initProducerID answers InitProducerId for idempotent producers only
// (transactions are refused): a fresh id at epoch 0, or, when a producer
// sends its current id and epoch (v3+, KIP-360), the same id at the next
// epoch (docs/design/record-mapping.md §6).
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
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = g.grantProducer(req.ProducerID, req.ProducerEpoch, c.hdr.APIVersion)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// maxGrants bounds the epochs remembered for KIP-360 bumps; past it a new
// id is remembered only once an old one expires, and a producer whose id is
// not remembered gets a fresh id instead of a bump (still correct: a fresh
// id fences nothing, but starts clean).
const maxGrants = 1 << 18

// grantProducer picks the id and epoch InitProducerId answers. id/epoch are
// the producer's current ones (-1 for a new producer, and before v3).
//
// A bump is granted for an id this gateway handed out (or bumped) within the
// producer id expiration: the current epoch gets epoch+1; the epoch just
// before a bump gets the bumped epoch again (the retry of a bump whose
// answer was lost); an older one is fenced, PRODUCER_FENCED from v4 and
// INVALID_PRODUCER_EPOCH before (KafkaApis.handleInitProducerIdRequest). An
// epoch above what was granted (a producer that bumped locally, as the Java
// idempotent producer does) is bumped from there. An unknown id, or an
// epoch at its maximum, gets a fresh id at epoch 0, as Kafka answers every
// idempotent producer (TransactionCoordinator.handleInitProducerId).
func (g *Gateway) grantProducer(id int64, epoch int16, version int16) (int64, int16, wire.ErrorCode) {
	ps := &g.producers
	now := time.Now().UnixMilli()
	ps.epochMu.Lock()
	defer ps.epochMu.Unlock()
	if id >= 0 && epoch >= 0 {
		if gr, ok := ps.epochs[id]; ok {
			switch {
			case epoch == gr.epoch-1 && gr.bumped:
				gr.ms = now
				ps.epochs[id] = gr
				return id, gr.epoch, wire.NoError
			case epoch < gr.epoch:
				if version < 4 {
					return -1, -1, wire.InvalidProducerEpoch
				}
				return -1, -1, wire.ProducerFenced
			case epoch < math.MaxInt16:
				gr = epochGrant{epoch: epoch + 1, ms: now, bumped: true}
				ps.epochs[id] = gr
				return id, gr.epoch, wire.NoError
			}
			delete(ps.epochs, id) // epoch exhausted: a new id below
		}
	}
	next := g.producerIDs.next()
	if next < 0 {
		return -1, -1, wire.UnknownServerError
	}
	if len(ps.epochs) < maxGrants {
		ps.epochs[next] = epochGrant{epoch: 0, ms: now}
	}
	return next, 0, wire.NoError
}
