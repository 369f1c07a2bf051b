package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func admGenDescribeClusterRequest(g *oracleGen, _ int16) *kmsg.DescribeClusterRequest {
	r := kmsg.NewPtrDescribeClusterRequest()
	r.IncludeClusterAuthorizedOperations = g.bool()
	r.EndpointType = g.i8()
	r.IncludeFencedBrokers = g.bool()
	r.UnknownTags = g.tags()
	return r
}

func admDescribeClusterRequestToKmsg(r *DescribeClusterRequest, v int16) *kmsg.DescribeClusterRequest {
	k := kmsg.NewPtrDescribeClusterRequest()
	k.Version = v
	k.IncludeClusterAuthorizedOperations = r.IncludeClusterAuthorizedOperations
	k.EndpointType = r.EndpointType
	k.IncludeFencedBrokers = r.IncludeFencedBrokers
	return k
}

// TestDescribeClusterRequestOracle also covers v0 decoding EndpointType as
// the schema default 1: kmsg's decode applies the same default.
func TestDescribeClusterRequestOracle(t *testing.T) {
	admRequestOracle(t, 60, describeClusterMin, describeClusterMax,
		admGenDescribeClusterRequest, (*DescribeClusterRequest).Decode, admDescribeClusterRequestToKmsg)
}

func admGenDescribeClusterResponse(g *oracleGen, _ int16) *DescribeClusterResponse {
	r := &DescribeClusterResponse{
		ThrottleMillis:              g.i32(),
		ErrorCode:                   ErrorCode(g.i16()),
		ErrorMessage:                g.ns(),
		EndpointType:                g.i8(),
		ClusterID:                   g.str(),
		ControllerID:                g.i32(),
		ClusterAuthorizedOperations: g.i32(),
	}
	for range g.n(true) {
		r.Brokers = append(r.Brokers, DescribeClusterResponseBroker{
			NodeID: g.i32(), Host: g.str(), Port: g.i32(), Rack: g.ns(), IsFenced: g.bool(),
		})
	}
	return r
}

func admDescribeClusterResponseToKmsg(r *DescribeClusterResponse) *kmsg.DescribeClusterResponse {
	k := kmsg.NewPtrDescribeClusterResponse()
	k.ThrottleMillis = r.ThrottleMillis
	k.ErrorCode = int16(r.ErrorCode)
	k.ErrorMessage = ptrOf(r.ErrorMessage)
	k.EndpointType = r.EndpointType
	k.ClusterID = r.ClusterID
	k.ControllerID = r.ControllerID
	k.ClusterAuthorizedOperations = r.ClusterAuthorizedOperations
	for _, b := range r.Brokers {
		kb := kmsg.NewDescribeClusterResponseBroker()
		kb.NodeID = b.NodeID
		kb.Host = b.Host
		kb.Port = b.Port
		kb.Rack = ptrOf(b.Rack)
		kb.IsFenced = b.IsFenced
		k.Brokers = append(k.Brokers, kb)
	}
	return k
}

func TestDescribeClusterResponseOracle(t *testing.T) {
	admResponseOracle(t, 1060, describeClusterMin, describeClusterMax,
		admGenDescribeClusterResponse, (*DescribeClusterResponse).AppendTo, admDescribeClusterResponseToKmsg)
}
