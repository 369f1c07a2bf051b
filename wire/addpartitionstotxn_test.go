package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnGenAddPartitionsToTxnRequest(g *oracleGen, _ int16) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.TransactionalID = g.str()
	r.ProducerID = g.i64()
	r.ProducerEpoch = g.i16()
	for range g.n(true) {
		t := kmsg.NewAddPartitionsToTxnRequestTopic()
		t.Topic = g.str()
		t.Partitions = g.int32s()
		t.UnknownTags = g.tags()
		r.Topics = append(r.Topics, t)
	}
	r.UnknownTags = g.tags()
	return r
}

func txnAddPartitionsToTxnRequestToKmsg(r *AddPartitionsToTxnRequest, v int16) *kmsg.AddPartitionsToTxnRequest {
	k := kmsg.NewPtrAddPartitionsToTxnRequest()
	k.Version = v
	k.TransactionalID = r.TransactionalID
	k.ProducerID = r.ProducerID
	k.ProducerEpoch = r.ProducerEpoch
	for _, t := range r.Topics {
		kt := kmsg.NewAddPartitionsToTxnRequestTopic()
		kt.Topic = t.Topic
		kt.Partitions = admI32(t.Partitions)
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestAddPartitionsToTxnRequestOracle(t *testing.T) {
	admRequestOracle(t, 24, AddPartitionsToTxnMinVersion, AddPartitionsToTxnMaxVersion,
		txnGenAddPartitionsToTxnRequest, (*AddPartitionsToTxnRequest).Decode, txnAddPartitionsToTxnRequestToKmsg)
	txnRequestRoundTrip(t, 124, AddPartitionsToTxnMinVersion, AddPartitionsToTxnMaxVersion,
		txnGenAddPartitionsToTxnRequest, (*AddPartitionsToTxnRequest).Decode, (*AddPartitionsToTxnRequest).AppendTo, txnAddPartitionsToTxnRequestToKmsg)
	txnVersionsRefused(t, AddPartitionsToTxnMinVersion, AddPartitionsToTxnMaxVersion, (*AddPartitionsToTxnRequest).Decode)
}

// TestAddPartitionsToTxnBrokerVersionsRefused: the brokers' batched form
// (v4, v5), which kmsg encodes, is refused rather than misread.
func TestAddPartitionsToTxnBrokerVersionsRefused(t *testing.T) {
	for v := int16(4); v <= 5; v++ {
		k := kmsg.NewPtrAddPartitionsToTxnRequest()
		k.Version = v
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID = "txn"
		k.Transactions = append(k.Transactions, tx)
		var r AddPartitionsToTxnRequest
		if err := r.Decode(k.AppendTo(nil), v); err != ErrUnsupportedVersion {
			t.Fatalf("v%d: %v, want ErrUnsupportedVersion", v, err)
		}
	}
}

func txnGenAddPartitionsToTxnResponse(g *oracleGen, _ int16) *AddPartitionsToTxnResponse {
	r := &AddPartitionsToTxnResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		t := AddPartitionsToTxnResponseTopic{Topic: g.str()}
		for range g.n(true) {
			t.Partitions = append(t.Partitions, AddPartitionsToTxnResponsePartition{Partition: g.i32(), ErrorCode: g.code()})
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func txnAddPartitionsToTxnResponseToKmsg(r *AddPartitionsToTxnResponse) *kmsg.AddPartitionsToTxnResponse {
	k := kmsg.NewPtrAddPartitionsToTxnResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, t := range r.Topics {
		kt := kmsg.NewAddPartitionsToTxnResponseTopic()
		kt.Topic = t.Topic
		for _, p := range t.Partitions {
			kp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			kp.Partition = p.Partition
			kp.ErrorCode = int16(p.ErrorCode)
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestAddPartitionsToTxnResponseOracle(t *testing.T) {
	admResponseOracle(t, 1024, AddPartitionsToTxnMinVersion, AddPartitionsToTxnMaxVersion,
		txnGenAddPartitionsToTxnResponse, (*AddPartitionsToTxnResponse).AppendTo, txnAddPartitionsToTxnResponseToKmsg)
	txnResponseRead(t, 2024, AddPartitionsToTxnMinVersion, AddPartitionsToTxnMaxVersion,
		txnGenAddPartitionsToTxnResponse, (*AddPartitionsToTxnResponse).AppendTo, txnAddPartitionsToTxnResponseToKmsg, nil)
}
