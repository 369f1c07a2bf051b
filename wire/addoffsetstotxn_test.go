package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnGenAddOffsetsToTxnRequest(g *oracleGen, _ int16) *kmsg.AddOffsetsToTxnRequest {
	r := kmsg.NewPtrAddOffsetsToTxnRequest()
	r.TransactionalID = g.str()
	r.ProducerID = g.i64()
	r.ProducerEpoch = g.i16()
	r.Group = g.str()
	r.UnknownTags = g.tags()
	return r
}

func txnAddOffsetsToTxnRequestToKmsg(r *AddOffsetsToTxnRequest, v int16) *kmsg.AddOffsetsToTxnRequest {
	k := kmsg.NewPtrAddOffsetsToTxnRequest()
	k.Version = v
	k.TransactionalID = r.TransactionalID
	k.ProducerID = r.ProducerID
	k.ProducerEpoch = r.ProducerEpoch
	k.Group = r.Group
	return k
}

func TestAddOffsetsToTxnRequestOracle(t *testing.T) {
	admRequestOracle(t, 25, AddOffsetsToTxnMinVersion, AddOffsetsToTxnMaxVersion,
		txnGenAddOffsetsToTxnRequest, (*AddOffsetsToTxnRequest).Decode, txnAddOffsetsToTxnRequestToKmsg)
	txnRequestRoundTrip(t, 125, AddOffsetsToTxnMinVersion, AddOffsetsToTxnMaxVersion,
		txnGenAddOffsetsToTxnRequest, (*AddOffsetsToTxnRequest).Decode, (*AddOffsetsToTxnRequest).AppendTo, txnAddOffsetsToTxnRequestToKmsg)
	txnVersionsRefused(t, AddOffsetsToTxnMinVersion, AddOffsetsToTxnMaxVersion, (*AddOffsetsToTxnRequest).Decode)
}

func txnGenAddOffsetsToTxnResponse(g *oracleGen, _ int16) *AddOffsetsToTxnResponse {
	return &AddOffsetsToTxnResponse{ThrottleMillis: g.i32(), ErrorCode: g.code()}
}

func txnAddOffsetsToTxnResponseToKmsg(r *AddOffsetsToTxnResponse) *kmsg.AddOffsetsToTxnResponse {
	k := kmsg.NewPtrAddOffsetsToTxnResponse()
	k.ThrottleMillis = r.ThrottleMillis
	k.ErrorCode = int16(r.ErrorCode)
	return k
}

func TestAddOffsetsToTxnResponseOracle(t *testing.T) {
	admResponseOracle(t, 1025, AddOffsetsToTxnMinVersion, AddOffsetsToTxnMaxVersion,
		txnGenAddOffsetsToTxnResponse, (*AddOffsetsToTxnResponse).AppendTo, txnAddOffsetsToTxnResponseToKmsg)
	txnResponseRead(t, 2025, AddOffsetsToTxnMinVersion, AddOffsetsToTxnMaxVersion,
		txnGenAddOffsetsToTxnResponse, (*AddOffsetsToTxnResponse).AppendTo, txnAddOffsetsToTxnResponseToKmsg, nil)
}
