package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnGenEndTxnRequest(g *oracleGen, _ int16) *kmsg.EndTxnRequest {
	r := kmsg.NewPtrEndTxnRequest()
	r.TransactionalID = g.str()
	r.ProducerID = g.i64()
	r.ProducerEpoch = g.i16()
	r.Commit = g.bool()
	r.UnknownTags = g.tags()
	return r
}

func txnEndTxnRequestToKmsg(r *EndTxnRequest, v int16) *kmsg.EndTxnRequest {
	k := kmsg.NewPtrEndTxnRequest()
	k.Version = v
	k.TransactionalID = r.TransactionalID
	k.ProducerID = r.ProducerID
	k.ProducerEpoch = r.ProducerEpoch
	k.Commit = r.Committed
	return k
}

func TestEndTxnRequestOracle(t *testing.T) {
	admRequestOracle(t, 26, EndTxnMinVersion, EndTxnMaxVersion,
		txnGenEndTxnRequest, (*EndTxnRequest).Decode, txnEndTxnRequestToKmsg)
	txnRequestRoundTrip(t, 126, EndTxnMinVersion, EndTxnMaxVersion,
		txnGenEndTxnRequest, (*EndTxnRequest).Decode, (*EndTxnRequest).AppendTo, txnEndTxnRequestToKmsg)
	txnVersionsRefused(t, EndTxnMinVersion, EndTxnMaxVersion, (*EndTxnRequest).Decode)
}

// txnGenEndTxnResponse fills the fields version v carries; ProducerID and
// ProducerEpoch stay at their schema default (-1) before v5.
func txnGenEndTxnResponse(g *oracleGen, v int16) *EndTxnResponse {
	r := &EndTxnResponse{ThrottleMillis: g.i32(), ErrorCode: g.code(), ProducerID: -1, ProducerEpoch: -1}
	if v >= 5 {
		r.ProducerID, r.ProducerEpoch = g.i64(), g.i16()
	}
	return r
}

func txnEndTxnResponseToKmsg(r *EndTxnResponse) *kmsg.EndTxnResponse {
	k := kmsg.NewPtrEndTxnResponse()
	k.ThrottleMillis = r.ThrottleMillis
	k.ErrorCode = int16(r.ErrorCode)
	k.ProducerID = r.ProducerID
	k.ProducerEpoch = r.ProducerEpoch
	return k
}

func TestEndTxnResponseOracle(t *testing.T) {
	admResponseOracle(t, 1026, EndTxnMinVersion, EndTxnMaxVersion,
		txnGenEndTxnResponse, (*EndTxnResponse).AppendTo, txnEndTxnResponseToKmsg)
	txnResponseRead(t, 2026, EndTxnMinVersion, EndTxnMaxVersion,
		txnGenEndTxnResponse, (*EndTxnResponse).AppendTo, txnEndTxnResponseToKmsg, nil)
}
