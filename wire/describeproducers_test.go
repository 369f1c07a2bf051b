package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func admGenDescribeProducersRequest(g *oracleGen, _ int16) *kmsg.DescribeProducersRequest {
	r := kmsg.NewPtrDescribeProducersRequest()
	for range g.n(true) {
		t := kmsg.NewDescribeProducersRequestTopic()
		t.Topic = g.str()
		t.Partitions = g.int32s()
		t.UnknownTags = g.tags()
		r.Topics = append(r.Topics, t)
	}
	r.UnknownTags = g.tags()
	return r
}

func admDescribeProducersRequestToKmsg(r *DescribeProducersRequest, v int16) *kmsg.DescribeProducersRequest {
	k := kmsg.NewPtrDescribeProducersRequest()
	k.Version = v
	for _, t := range r.Topics {
		kt := kmsg.NewDescribeProducersRequestTopic()
		kt.Topic = t.Topic
		kt.Partitions = admI32(t.Partitions)
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestDescribeProducersRequestOracle(t *testing.T) {
	admRequestOracle(t, 61, describeProducersMin, describeProducersMax,
		admGenDescribeProducersRequest, (*DescribeProducersRequest).Decode, admDescribeProducersRequestToKmsg)
}

func admGenDescribeProducersResponse(g *oracleGen, _ int16) *DescribeProducersResponse {
	r := &DescribeProducersResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		t := DescribeProducersResponseTopic{Topic: g.str()}
		for range g.n(false) {
			p := DescribeProducersResponsePartition{Partition: g.i32(), ErrorCode: ErrorCode(g.i16()), ErrorMessage: g.ns()}
			for range g.n(true) {
				p.ActiveProducers = append(p.ActiveProducers, DescribeProducersActiveProducer{
					ProducerID: int64(g.r.Uint64()), ProducerEpoch: g.i32(), LastSequence: g.i32(),
					LastTimestamp: int64(g.r.Uint64()), CoordinatorEpoch: g.i32(), CurrentTxnStartOffset: int64(g.r.Uint64()),
				})
			}
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func admDescribeProducersResponseToKmsg(r *DescribeProducersResponse) *kmsg.DescribeProducersResponse {
	k := kmsg.NewPtrDescribeProducersResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, t := range r.Topics {
		kt := kmsg.NewDescribeProducersResponseTopic()
		kt.Topic = t.Topic
		for _, p := range t.Partitions {
			kp := kmsg.NewDescribeProducersResponseTopicPartition()
			kp.Partition = p.Partition
			kp.ErrorCode = int16(p.ErrorCode)
			kp.ErrorMessage = ptrOf(p.ErrorMessage)
			for _, a := range p.ActiveProducers {
				ka := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ka.ProducerID, ka.ProducerEpoch, ka.LastSequence = a.ProducerID, a.ProducerEpoch, a.LastSequence
				ka.LastTimestamp, ka.CoordinatorEpoch, ka.CurrentTxnStartOffset = a.LastTimestamp, a.CoordinatorEpoch, a.CurrentTxnStartOffset
				kp.ActiveProducers = append(kp.ActiveProducers, ka)
			}
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestDescribeProducersResponseOracle(t *testing.T) {
	admResponseOracle(t, 1061, describeProducersMin, describeProducersMax,
		admGenDescribeProducersResponse, (*DescribeProducersResponse).AppendTo, admDescribeProducersResponseToKmsg)
}
