package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnGenListTransactionsRequest(g *oracleGen, _ int16) *kmsg.ListTransactionsRequest {
	r := kmsg.NewPtrListTransactionsRequest()
	r.StateFilters = g.strs(g.n(true))
	for range g.n(true) {
		r.ProducerIDFilters = append(r.ProducerIDFilters, g.i64())
	}
	r.DurationFilterMillis = g.i64()
	r.TransactionalIDPattern = g.ptr()
	r.UnknownTags = g.tags()
	return r
}

// txnI64 copies s the way kmsg decodes a non-nullable []int64: empty is nil.
func txnI64(s []int64) []int64 {
	if len(s) == 0 {
		return nil
	}
	return append([]int64(nil), s...)
}

func txnListTransactionsRequestToKmsg(r *ListTransactionsRequest, v int16) *kmsg.ListTransactionsRequest {
	k := kmsg.NewPtrListTransactionsRequest()
	k.Version = v
	k.StateFilters = txnStrs(r.StateFilters)
	k.ProducerIDFilters = txnI64(r.ProducerIDFilters)
	k.DurationFilterMillis = r.DurationFilterMillis
	k.TransactionalIDPattern = ptrOf(r.TransactionalIDPattern)
	return k
}

func TestListTransactionsRequestOracle(t *testing.T) {
	admRequestOracle(t, 66, ListTransactionsMinVersion, ListTransactionsMaxVersion,
		txnGenListTransactionsRequest, (*ListTransactionsRequest).Decode, txnListTransactionsRequestToKmsg)
	txnRequestRoundTrip(t, 166, ListTransactionsMinVersion, ListTransactionsMaxVersion,
		txnGenListTransactionsRequest, (*ListTransactionsRequest).Decode, (*ListTransactionsRequest).AppendTo, txnListTransactionsRequestToKmsg)
	txnVersionsRefused(t, ListTransactionsMinVersion, ListTransactionsMaxVersion, (*ListTransactionsRequest).Decode)
}

// TestListTransactionsRequestDefaults: DurationFilter reads -1 before v1 and
// TransactionalIdPattern null before v2, also into a struct that held them.
func TestListTransactionsRequestDefaults(t *testing.T) {
	k := kmsg.NewPtrListTransactionsRequest()
	k.Version = 2
	k.DurationFilterMillis = 5000
	k.TransactionalIDPattern = ptrOf(NullStringOf("app-.*"))
	var r ListTransactionsRequest
	if err := r.Decode(k.AppendTo(nil), 2); err != nil || r.DurationFilterMillis != 5000 || r.TransactionalIDPattern != NullStringOf("app-.*") {
		t.Fatalf("v2: %+v %v", r, err)
	}
	k.Version = 1
	if err := r.Decode(k.AppendTo(nil), 1); err != nil || r.DurationFilterMillis != 5000 || r.TransactionalIDPattern.Valid {
		t.Fatalf("v1: %+v %v", r, err)
	}
	k.Version = 0
	if err := r.Decode(k.AppendTo(nil), 0); err != nil || r.DurationFilterMillis != -1 || r.TransactionalIDPattern.Valid {
		t.Fatalf("v0: %+v %v", r, err)
	}
}

func txnGenListTransactionsResponse(g *oracleGen, _ int16) *ListTransactionsResponse {
	r := &ListTransactionsResponse{ThrottleMillis: g.i32(), ErrorCode: g.code(), UnknownStateFilters: g.strs(g.n(true))}
	for range g.n(true) {
		r.TransactionStates = append(r.TransactionStates, ListTransactionsState{
			TransactionalID: g.str(), ProducerID: g.i64(), TransactionState: g.str(),
		})
	}
	return r
}

func txnListTransactionsResponseToKmsg(r *ListTransactionsResponse) *kmsg.ListTransactionsResponse {
	k := kmsg.NewPtrListTransactionsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	k.ErrorCode = int16(r.ErrorCode)
	k.UnknownStateFilters = txnStrs(r.UnknownStateFilters)
	for _, s := range r.TransactionStates {
		ks := kmsg.NewListTransactionsResponseTransactionState()
		ks.TransactionalID = s.TransactionalID
		ks.ProducerID = s.ProducerID
		ks.TransactionState = s.TransactionState
		k.TransactionStates = append(k.TransactionStates, ks)
	}
	return k
}

func TestListTransactionsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1066, ListTransactionsMinVersion, ListTransactionsMaxVersion,
		txnGenListTransactionsResponse, (*ListTransactionsResponse).AppendTo, txnListTransactionsResponseToKmsg)
	txnResponseRead(t, 2066, ListTransactionsMinVersion, ListTransactionsMaxVersion,
		txnGenListTransactionsResponse, (*ListTransactionsResponse).AppendTo, txnListTransactionsResponseToKmsg, nil)
}
