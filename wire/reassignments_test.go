package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// admNullableInt32s copies s the way kmsg decodes a nullable []int32:
// null is nil, empty is empty.
func admNullableInt32s(s []int32) []int32 {
	if s == nil {
		return nil
	}
	return append([]int32{}, s...)
}

func admGenElectLeadersRequest(g *oracleGen, v int16) *kmsg.ElectLeadersRequest {
	r := kmsg.NewPtrElectLeadersRequest()
	if v >= 1 {
		r.ElectionType = g.i8()
	}
	if g.r.IntN(4) != 0 { // else null: every partition
		r.Topics = []kmsg.ElectLeadersRequestTopic{}
		for range g.n(true) {
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic = g.str()
			t.Partitions = g.int32s()
			t.UnknownTags = g.tags()
			r.Topics = append(r.Topics, t)
		}
	}
	r.TimeoutMillis = g.i32()
	r.UnknownTags = g.tags()
	return r
}

func admElectLeadersRequestToKmsg(r *ElectLeadersRequest, v int16) *kmsg.ElectLeadersRequest {
	k := kmsg.NewPtrElectLeadersRequest()
	k.Version = v
	k.ElectionType = r.ElectionType
	k.TimeoutMillis = r.TimeoutMillis
	if r.Topics != nil {
		k.Topics = []kmsg.ElectLeadersRequestTopic{}
	}
	for _, t := range r.Topics {
		kt := kmsg.NewElectLeadersRequestTopic()
		kt.Topic, kt.Partitions = t.Topic, admI32(t.Partitions)
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestElectLeadersRequestOracle(t *testing.T) {
	admRequestOracle(t, 43, electLeadersMin, electLeadersMax,
		admGenElectLeadersRequest, (*ElectLeadersRequest).Decode, admElectLeadersRequestToKmsg)
}

func admGenPartitionResults(g *oracleGen) []PartitionResult {
	var ps []PartitionResult
	for range g.n(true) {
		ps = append(ps, PartitionResult{Partition: g.i32(), ErrorCode: g.code(), ErrorMessage: g.ns()})
	}
	return ps
}

func admGenElectLeadersResponse(g *oracleGen, _ int16) *ElectLeadersResponse {
	r := &ElectLeadersResponse{ThrottleMillis: g.i32(), ErrorCode: g.code()}
	for range g.n(false) {
		r.Topics = append(r.Topics, TopicResults{Topic: g.str(), Partitions: admGenPartitionResults(g)})
	}
	return r
}

func admElectLeadersResponseToKmsg(r *ElectLeadersResponse) *kmsg.ElectLeadersResponse {
	k := kmsg.NewPtrElectLeadersResponse()
	k.ThrottleMillis, k.ErrorCode = r.ThrottleMillis, int16(r.ErrorCode)
	for _, t := range r.Topics {
		kt := kmsg.NewElectLeadersResponseTopic()
		kt.Topic = t.Topic
		for _, p := range t.Partitions {
			kp := kmsg.NewElectLeadersResponseTopicPartition()
			kp.Partition, kp.ErrorCode, kp.ErrorMessage = p.Partition, int16(p.ErrorCode), ptrOf(p.ErrorMessage)
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestElectLeadersResponseOracle(t *testing.T) {
	admResponseOracle(t, 1043, electLeadersMin, electLeadersMax,
		admGenElectLeadersResponse, (*ElectLeadersResponse).AppendTo, admElectLeadersResponseToKmsg)
}

func admGenAlterReassignmentsRequest(g *oracleGen, v int16) *kmsg.AlterPartitionAssignmentsRequest {
	r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	r.TimeoutMillis = g.i32()
	if v >= 1 {
		r.AllowReplicationFactorChange = g.bool()
	}
	for range g.n(true) {
		t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		t.Topic = g.str()
		for range g.n(true) {
			p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			p.Partition = g.i32()
			if g.r.IntN(3) != 0 { // else null: cancel
				p.Replicas = append([]int32{}, g.int32s()...)
			}
			p.UnknownTags = g.tags()
			t.Partitions = append(t.Partitions, p)
		}
		t.UnknownTags = g.tags()
		r.Topics = append(r.Topics, t)
	}
	r.UnknownTags = g.tags()
	return r
}

func admAlterReassignmentsRequestToKmsg(r *AlterPartitionReassignmentsRequest, v int16) *kmsg.AlterPartitionAssignmentsRequest {
	k := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	k.Version = v
	k.TimeoutMillis = r.TimeoutMillis
	k.AllowReplicationFactorChange = r.AllowReplicationFactorChange
	for _, t := range r.Topics {
		kt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		kt.Topic = t.Topic
		for _, p := range t.Partitions {
			kp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			kp.Partition, kp.Replicas = p.Partition, admNullableInt32s(p.Replicas)
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestAlterPartitionReassignmentsRequestOracle(t *testing.T) {
	admRequestOracle(t, 45, alterReassignmentsMin, alterReassignmentsMax,
		admGenAlterReassignmentsRequest, (*AlterPartitionReassignmentsRequest).Decode, admAlterReassignmentsRequestToKmsg)
}

// TestAlterPartitionReassignmentsDefault: v0 has no
// AllowReplicationFactorChange; it reads as its default, true.
func TestAlterPartitionReassignmentsDefault(t *testing.T) {
	k := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	k.Version = 0
	r := AlterPartitionReassignmentsRequest{AllowReplicationFactorChange: false}
	if err := r.Decode(k.AppendTo(nil), 0); err != nil || !r.AllowReplicationFactorChange {
		t.Fatalf("v0: %v, AllowReplicationFactorChange %v", err, r.AllowReplicationFactorChange)
	}
}

func admGenAlterReassignmentsResponse(g *oracleGen, _ int16) *AlterPartitionReassignmentsResponse {
	r := &AlterPartitionReassignmentsResponse{ThrottleMillis: g.i32(), AllowReplicationFactorChange: g.bool(), ErrorCode: g.code(), ErrorMessage: g.ns()}
	for range g.n(false) {
		r.Topics = append(r.Topics, TopicResults{Topic: g.str(), Partitions: admGenPartitionResults(g)})
	}
	return r
}

func admAlterReassignmentsResponseToKmsg(r *AlterPartitionReassignmentsResponse) *kmsg.AlterPartitionAssignmentsResponse {
	k := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	k.ThrottleMillis, k.AllowReplicationFactorChange = r.ThrottleMillis, r.AllowReplicationFactorChange
	k.ErrorCode, k.ErrorMessage = int16(r.ErrorCode), ptrOf(r.ErrorMessage)
	for _, t := range r.Topics {
		kt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		kt.Topic = t.Topic
		for _, p := range t.Partitions {
			kp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			kp.Partition, kp.ErrorCode, kp.ErrorMessage = p.Partition, int16(p.ErrorCode), ptrOf(p.ErrorMessage)
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestAlterPartitionReassignmentsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1045, alterReassignmentsMin, alterReassignmentsMax,
		admGenAlterReassignmentsResponse, (*AlterPartitionReassignmentsResponse).AppendTo, admAlterReassignmentsResponseToKmsg)
}

func admGenListReassignmentsRequest(g *oracleGen, _ int16) *kmsg.ListPartitionReassignmentsRequest {
	r := kmsg.NewPtrListPartitionReassignmentsRequest()
	r.TimeoutMillis = g.i32()
	if g.r.IntN(4) != 0 { // else null: every partition
		r.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{}
		for range g.n(true) {
			t := kmsg.NewListPartitionReassignmentsRequestTopic()
			t.Topic = g.str()
			t.Partitions = g.int32s()
			t.UnknownTags = g.tags()
			r.Topics = append(r.Topics, t)
		}
	}
	r.UnknownTags = g.tags()
	return r
}

func admListReassignmentsRequestToKmsg(r *ListPartitionReassignmentsRequest, v int16) *kmsg.ListPartitionReassignmentsRequest {
	k := kmsg.NewPtrListPartitionReassignmentsRequest()
	k.Version = v
	k.TimeoutMillis = r.TimeoutMillis
	if r.Topics != nil {
		k.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{}
	}
	for _, t := range r.Topics {
		kt := kmsg.NewListPartitionReassignmentsRequestTopic()
		kt.Topic, kt.Partitions = t.Topic, admI32(t.Partitions)
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestListPartitionReassignmentsRequestOracle(t *testing.T) {
	admRequestOracle(t, 46, listReassignmentsMin, listReassignmentsMax,
		admGenListReassignmentsRequest, (*ListPartitionReassignmentsRequest).Decode, admListReassignmentsRequestToKmsg)
}

func admGenListReassignmentsResponse(g *oracleGen, _ int16) *ListPartitionReassignmentsResponse {
	r := &ListPartitionReassignmentsResponse{ThrottleMillis: g.i32(), ErrorCode: g.code(), ErrorMessage: g.ns()}
	for range g.n(false) {
		t := OngoingTopicReassignment{Topic: g.str()}
		for range g.n(true) {
			t.Partitions = append(t.Partitions, OngoingPartitionReassignment{Partition: g.i32(),
				Replicas: g.int32s(), AddingReplicas: g.int32s(), RemovingReplicas: g.int32s()})
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func admListReassignmentsResponseToKmsg(r *ListPartitionReassignmentsResponse) *kmsg.ListPartitionReassignmentsResponse {
	k := kmsg.NewPtrListPartitionReassignmentsResponse()
	k.ThrottleMillis, k.ErrorCode, k.ErrorMessage = r.ThrottleMillis, int16(r.ErrorCode), ptrOf(r.ErrorMessage)
	for _, t := range r.Topics {
		kt := kmsg.NewListPartitionReassignmentsResponseTopic()
		kt.Topic = t.Topic
		for _, p := range t.Partitions {
			kp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			kp.Partition, kp.Replicas, kp.AddingReplicas, kp.RemovingReplicas = p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestListPartitionReassignmentsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1046, listReassignmentsMin, listReassignmentsMax,
		admGenListReassignmentsResponse, (*ListPartitionReassignmentsResponse).AppendTo, admListReassignmentsResponseToKmsg)
}
