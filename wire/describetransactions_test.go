package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnGenDescribeTransactionsRequest(g *oracleGen, _ int16) *kmsg.DescribeTransactionsRequest {
	r := kmsg.NewPtrDescribeTransactionsRequest()
	r.TransactionalIDs = g.strs(g.n(true))
	r.UnknownTags = g.tags()
	return r
}

// txnStrs copies s the way kmsg decodes a non-nullable []string: empty is
// nil.
func txnStrs(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}

func txnDescribeTransactionsRequestToKmsg(r *DescribeTransactionsRequest, v int16) *kmsg.DescribeTransactionsRequest {
	k := kmsg.NewPtrDescribeTransactionsRequest()
	k.Version = v
	k.TransactionalIDs = txnStrs(r.TransactionalIDs)
	return k
}

func TestDescribeTransactionsRequestOracle(t *testing.T) {
	admRequestOracle(t, 65, DescribeTransactionsMinVersion, DescribeTransactionsMaxVersion,
		txnGenDescribeTransactionsRequest, (*DescribeTransactionsRequest).Decode, txnDescribeTransactionsRequestToKmsg)
	txnRequestRoundTrip(t, 165, DescribeTransactionsMinVersion, DescribeTransactionsMaxVersion,
		txnGenDescribeTransactionsRequest, (*DescribeTransactionsRequest).Decode, (*DescribeTransactionsRequest).AppendTo, txnDescribeTransactionsRequestToKmsg)
	txnVersionsRefused(t, DescribeTransactionsMinVersion, DescribeTransactionsMaxVersion, (*DescribeTransactionsRequest).Decode)
}

func txnGenDescribeTransactionsResponse(g *oracleGen, _ int16) *DescribeTransactionsResponse {
	r := &DescribeTransactionsResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		s := DescribeTransactionsState{
			ErrorCode: g.code(), TransactionalID: g.str(), State: g.str(), TimeoutMillis: g.i32(),
			StartTimeMillis: g.i64(), ProducerID: g.i64(), ProducerEpoch: g.i16(),
		}
		for range g.n(false) {
			s.Topics = append(s.Topics, DescribeTransactionsTopic{Topic: g.str(), Partitions: g.int32s()})
		}
		r.TransactionStates = append(r.TransactionStates, s)
	}
	return r
}

func txnDescribeTransactionsResponseToKmsg(r *DescribeTransactionsResponse) *kmsg.DescribeTransactionsResponse {
	k := kmsg.NewPtrDescribeTransactionsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, s := range r.TransactionStates {
		ks := kmsg.NewDescribeTransactionsResponseTransactionState()
		ks.ErrorCode = int16(s.ErrorCode)
		ks.TransactionalID = s.TransactionalID
		ks.State = s.State
		ks.TimeoutMillis = s.TimeoutMillis
		ks.StartTimestamp = s.StartTimeMillis
		ks.ProducerID = s.ProducerID
		ks.ProducerEpoch = s.ProducerEpoch
		for _, t := range s.Topics {
			kt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			kt.Topic = t.Topic
			kt.Partitions = admI32(t.Partitions)
			ks.Topics = append(ks.Topics, kt)
		}
		k.TransactionStates = append(k.TransactionStates, ks)
	}
	return k
}

func TestDescribeTransactionsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1065, DescribeTransactionsMinVersion, DescribeTransactionsMaxVersion,
		txnGenDescribeTransactionsResponse, (*DescribeTransactionsResponse).AppendTo, txnDescribeTransactionsResponseToKmsg)
	txnResponseRead(t, 2065, DescribeTransactionsMinVersion, DescribeTransactionsMaxVersion,
		txnGenDescribeTransactionsResponse, (*DescribeTransactionsResponse).AppendTo, txnDescribeTransactionsResponseToKmsg, nil)
}
