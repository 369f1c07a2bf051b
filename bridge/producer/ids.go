package producer

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/wire"
)

// IDs allocates producer ids as docs/design/record-mapping.md §6 decides:
// (instance_id << 47) | counter, the counter seeded from the wall clock in
// Unix ms (capped to 47 bits) so a restarted gateway does not hand out the
// same (id, epoch 0) pairs again; nothing persisted. A fresh id starts at
// epoch 0; Grant bumps the epoch of a known id (KIP-360). Init before use.
type IDs struct {
	high    int64
	counter atomic.Int64

	// epochs are the epochs Grant handed out, by producer id, so a KIP-360
	// bump continues from the right epoch.
	mu     sync.Mutex
	epochs map[int64]epochGrant
}

// epochGrant is an epoch InitProducerId returned, when, and whether it was
// a bump.
type epochGrant struct {
	epoch  int16
	bumped bool
	ms     int64
}

const counterBits = 47

// Init seeds the allocator of gateway instance.
func (p *IDs) Init(instance uint16) {
	// 16 instance bits above the 47 counter bits: bit 63 stays clear, so
	// ids are never negative.
	p.high = int64(instance) << counterBits
	p.counter.Store(time.Now().UnixMilli() & (1<<counterBits - 1))
	p.epochs = make(map[int64]epochGrant)
}

// firstCounter is the lowest counter any kiggy could have been seeded with:
// the Unix ms of 2026-01-01, before kiggy's first commit.
const firstCounter = 1767225600000

// counterSlack is how far past the wall clock (or this instance's counter)
// an issued id's counter may be: an instance that granted more than one id
// per millisecond since its start, clocks apart. One hour of ids.
const counterSlack = int64(time.Hour / time.Millisecond)

// Issued reports whether id may have been handed out by InitProducerId of
// any kiggy instance; nowMs is the wall clock in Unix ms. It needs no
// state: every instance's counter starts at the wall clock of its start
// and grows by one per grant, so an issued id's low 47 bits lie between
// firstCounter and about the wall clock, whatever its instance bits and
// across restarts and gateways. What it refuses (small ids such as 1, 2,
// 3, ..., ids far in the future, negative ones) no kiggy ever issued;
// what it cannot tell is an id forged inside the range, which the caps on
// producer states (Limits) bound instead.
//
// It must never refuse an id a real producer holds: the stock clients do
// not ask for a new id after UNKNOWN_PRODUCER_ID, they bump the epoch
// locally and keep the id (KIP-360; franz-go Client.producerID "if we had
// an ID, we can bump the epoch locally", the Java client's
// TransactionManager.bumpIdempotentProducerEpoch), so a refused id stays
// refused for that producer. Hence no check of the instance bits (an
// instance restarted under another --instance-id, another instance of a
// cluster) and the slack: only a clock that went back by more than the
// slack after ids were granted could make it refuse an issued id.
func (p *IDs) Issued(id int64, nowMs int64) bool {
	n := id & (1<<counterBits - 1)
	return id >= 0 && n >= firstCounter && n <= max(p.counter.Load(), nowMs)+counterSlack
}

// New returns a fresh producer id for a transactional id, whose epochs its
// transaction coordinator keeps (bridge/txn), or -1 when the counter space
// is spent.
func (p *IDs) New() int64 { return p.next() }

// next returns a fresh producer id, or -1 when the counter space is spent.
func (p *IDs) next() int64 {
	n := p.counter.Add(1)
	if n >= 1<<counterBits {
		return -1
	}
	return p.high | n
}

// maxGrants bounds the epochs remembered for KIP-360 bumps; past it a new
// id is remembered only once an old one expires, and a producer whose id is
// not remembered gets a fresh id instead of a bump (still correct: a fresh
// id fences nothing, but starts clean).
const maxGrants = 1 << 18

// Grant picks the id and epoch InitProducerId answers. id/epoch are the
// producer's current ones (-1 for a new producer, and before v3); version
// is the request's.
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
func (p *IDs) Grant(id int64, epoch int16, version int16) (int64, int16, wire.ErrorCode) {
	now := time.Now().UnixMilli()
	p.mu.Lock()
	defer p.mu.Unlock()
	if id >= 0 && epoch >= 0 {
		if gr, ok := p.epochs[id]; ok {
			switch {
			case epoch == gr.epoch-1 && gr.bumped:
				gr.ms = now
				p.epochs[id] = gr
				return id, gr.epoch, wire.NoError
			case epoch < gr.epoch:
				if version < 4 {
					return -1, -1, wire.InvalidProducerEpoch
				}
				return -1, -1, wire.ProducerFenced
			case epoch < math.MaxInt16:
				gr = epochGrant{epoch: epoch + 1, ms: now, bumped: true}
				p.epochs[id] = gr
				return id, gr.epoch, wire.NoError
			}
			delete(p.epochs, id) // epoch exhausted: a new id below
		}
	}
	next := p.next()
	if next < 0 {
		return -1, -1, wire.UnknownServerError
	}
	if len(p.epochs) < maxGrants {
		p.epochs[next] = epochGrant{epoch: 0, ms: now}
	}
	return next, 0, wire.NoError
}

// Expire forgets the grants made before limitMs (Unix ms), as producers
// idle as long expire from the windows.
func (p *IDs) Expire(limitMs int64) {
	p.mu.Lock()
	for id, g := range p.epochs {
		if g.ms < limitMs {
			delete(p.epochs, id)
		}
	}
	p.mu.Unlock()
}
