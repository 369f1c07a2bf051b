package producer

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kiggy-io/kiggy/wire"
)

// Limits decides whether a producer id's first batch to a partition may
// create a producer state there (docs/LIMITS.md "Idempotent producers"):
// the id must be one InitProducerId could have handed out (IDs.Issued),
// and the states held, in total and by the batch's principal, must be
// under their caps. Kafka 4.4 has no such bound: a broker creates a state
// for any producer id (ProducerAppendInfo.checkSequence accepts any
// sequence of an unknown producer), and KIP-936 ("Throttle number of
// active PIDs", under discussion) proposes to reject unseen PIDs of a
// principal past a quota. kiggy refuses rather than evicts: an evicted
// state would let a retry of its producer's last batches be stored twice
// (the duplicate window is the state), and a flood of new ids would evict
// the states of the producers that were there first. Refusing keeps every
// admitted producer's exactly-once window; the cost falls on new producer
// ids while the caps are reached, until states expire
// (--producer-id-expiration).
//
// The caps are checked before the append and a state is counted once its
// batch is recorded, so first batches appending concurrently on different
// partitions may pass a cap by one state each.
type Limits struct {
	// IDs, when set, refuses ids it never issued (IDs.Issued).
	IDs *IDs
	// Max is the cap on states in total (Stats.Producers); 0 = none.
	Max int64
	// PerPrincipal is the cap on the states of one principal; 0 = none.
	PerPrincipal int64
	// Now returns the wall clock in Unix ms.
	Now func() int64

	// mu guards owners; it is taken under a window's lock and takes no
	// other lock.
	mu     sync.Mutex
	owners map[principal]*owner

	refused [numReasons]atomic.Uint64
}

// Reason is why a producer id's first batch was refused.
type Reason int

// The reasons, the label values of kiggy_producer_ids_refused_total.
const (
	ReasonNeverIssued  Reason = iota // an id InitProducerId never handed out
	ReasonLimit                      // the total cap on states
	ReasonPrincipalCap               // the principal's cap on states
	numReasons
)

// String is the reason's metric label.
func (r Reason) String() string {
	return [...]string{"never_issued", "limit", "principal_limit"}[r]
}

// Reasons lists every reason, for the metrics.
func Reasons() []Reason { return []Reason{ReasonNeverIssued, ReasonLimit, ReasonPrincipalCap} }

// Refused is how many first batches were refused for r.
func (l *Limits) Refused(r Reason) uint64 {
	if l == nil {
		return 0
	}
	return l.refused[r].Load()
}

// principal is who sent a batch: Kafka's principal type and name.
type principal struct{ typ, name string }

// owner counts the states of one principal. Owners are kept for the
// gateway's life: principals come from authentication (users, certificate
// subjects), not from a client's choice.
type owner struct {
	states atomic.Int64
}

// ownerOf returns the owner of b's principal, creating it.
func (l *Limits) ownerOf(b *Batch) *owner {
	k := principal{b.PrincipalType, b.PrincipalName}
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.owners[k]
	if o == nil {
		if l.owners == nil {
			l.owners = make(map[principal]*owner)
		}
		o = new(owner)
		// The names may alias a request frame.
		l.owners[principal{strings.Clone(k.typ), strings.Clone(k.name)}] = o
	}
	return o
}

// admit decides whether b, whose producer has no state in the window, may
// create one, with held states in total. The code refusing it:
// UNKNOWN_PRODUCER_ID (59) for an id never issued, THROTTLING_QUOTA_EXCEEDED
// (89) at a cap.
func (l *Limits) admit(b *Batch, held int64) wire.ErrorCode {
	if l == nil {
		return wire.NoError
	}
	if l.IDs != nil && !l.IDs.Issued(b.ID, l.Now()) {
		// Kafka 4.4's brokers create a state for any producer id
		// (ProducerAppendInfo.checkSequence throws only
		// OutOfOrderSequenceException) and no longer answer
		// UNKNOWN_PRODUCER_ID to Produce (KIP-360), but it is the code that
		// says what happened (Errors.java: "the broker could not locate
		// the producer metadata associated with the producerId in
		// question"), and the clients handle it without failing: the Java
		// client "For the idempotent producer, always retry
		// UNKNOWN_PRODUCER_ID errors ... request a bump of the epoch"
		// (TransactionManager.canRetry, once the response carries a log
		// start offset: the gateway answers 0, with -1 it retries as is),
		// franz-go's sink "failing the producer ID and resetting all
		// sequence numbers". Both then bump the epoch locally and keep the
		// id, so the code is only for ids no client was given (IDs.Issued
		// never refuses one kiggy issued). INVALID_PRODUCER_ID_MAPPING (49)
		// is about a transactional id's mapping, and
		// OUT_OF_ORDER_SEQUENCE_NUMBER (45) would claim a gap the producer
		// never made.
		l.refused[ReasonNeverIssued].Add(1)
		return wire.UnknownProducerID
	}
	if l.Max > 0 && held >= l.Max {
		// KIP-936 answers a principal past its quota with a throttle; the
		// code is retriable for the Java client
		// (ThrottlingQuotaExceededException extends RetriableException)
		// and franz-go, so the producer retries until delivery.timeout.ms
		// and succeeds once states expire or the cap is raised.
		l.refused[ReasonLimit].Add(1)
		return wire.ThrottlingQuotaExceeded
	}
	if l.PerPrincipal > 0 && l.ownerOf(b).states.Load() >= l.PerPrincipal {
		l.refused[ReasonPrincipalCap].Add(1)
		return wire.ThrottlingQuotaExceeded
	}
	return wire.NoError
}

// owned returns the owner a new state of b is counted against, or nil
// when no per-principal cap applies.
func (l *Limits) owned(b *Batch) *owner {
	if l == nil || l.PerPrincipal <= 0 {
		return nil
	}
	return l.ownerOf(b)
}
