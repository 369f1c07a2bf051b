package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// WriteTxnMarkers (key 27) is the one transaction API whose request and
// response both go both ways (the coordinator encodes requests and decodes
// responses, the gateway the reverse), so both are checked like requests:
// kmsg encodes, we decode (fresh and reused, truncated, extended), and our
// AppendTo of what we decoded gives kmsg's bytes exactly.

func txnGenWriteTxnMarkersRequest(g *oracleGen, _ int16) *kmsg.WriteTxnMarkersRequest {
	r := kmsg.NewPtrWriteTxnMarkersRequest()
	for range g.n(true) {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID = g.i64()
		m.ProducerEpoch = g.i16()
		m.Committed = g.bool()
		for range g.n(true) {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = g.str()
			t.Partitions = g.int32s()
			t.UnknownTags = g.tags()
			m.Topics = append(m.Topics, t)
		}
		m.CoordinatorEpoch = g.i32()
		m.UnknownTags = g.tags()
		r.Markers = append(r.Markers, m)
	}
	r.UnknownTags = g.tags()
	return r
}

func txnWriteTxnMarkersRequestToKmsg(r *WriteTxnMarkersRequest, v int16) *kmsg.WriteTxnMarkersRequest {
	k := kmsg.NewPtrWriteTxnMarkersRequest()
	k.Version = v
	for _, m := range r.Markers {
		km := kmsg.NewWriteTxnMarkersRequestMarker()
		km.ProducerID = m.ProducerID
		km.ProducerEpoch = m.ProducerEpoch
		km.Committed = m.TransactionResult
		for _, t := range m.Topics {
			kt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			kt.Topic = t.Name
			kt.Partitions = admI32(t.PartitionIndexes)
			km.Topics = append(km.Topics, kt)
		}
		km.CoordinatorEpoch = m.CoordinatorEpoch
		k.Markers = append(k.Markers, km)
	}
	return k
}

func TestWriteTxnMarkersRequestOracle(t *testing.T) {
	admRequestOracle(t, 27, WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion,
		txnGenWriteTxnMarkersRequest, (*WriteTxnMarkersRequest).Decode, txnWriteTxnMarkersRequestToKmsg)
	txnRequestRoundTrip(t, 127, WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion,
		txnGenWriteTxnMarkersRequest, (*WriteTxnMarkersRequest).Decode, (*WriteTxnMarkersRequest).AppendTo, txnWriteTxnMarkersRequestToKmsg)
	txnVersionsRefused(t, WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion, (*WriteTxnMarkersRequest).Decode)
}

func txnGenWriteTxnMarkersResponse(g *oracleGen, _ int16) *kmsg.WriteTxnMarkersResponse {
	r := kmsg.NewPtrWriteTxnMarkersResponse()
	for range g.n(true) {
		m := kmsg.NewWriteTxnMarkersResponseMarker()
		m.ProducerID = g.i64()
		for range g.n(true) {
			t := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			t.Topic = g.str()
			for range g.n(true) {
				p := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				p.Partition = g.i32()
				p.ErrorCode = int16(g.code())
				p.UnknownTags = g.tags()
				t.Partitions = append(t.Partitions, p)
			}
			t.UnknownTags = g.tags()
			m.Topics = append(m.Topics, t)
		}
		m.UnknownTags = g.tags()
		r.Markers = append(r.Markers, m)
	}
	r.UnknownTags = g.tags()
	return r
}

func txnWriteTxnMarkersResponseToKmsg(r *WriteTxnMarkersResponse, v int16) *kmsg.WriteTxnMarkersResponse {
	k := kmsg.NewPtrWriteTxnMarkersResponse()
	k.Version = v
	for _, m := range r.Markers {
		km := kmsg.NewWriteTxnMarkersResponseMarker()
		km.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			kt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			kt.Topic = t.Name
			for _, p := range t.Partitions {
				kp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				kp.Partition = p.PartitionIndex
				kp.ErrorCode = int16(p.ErrorCode)
				kt.Partitions = append(kt.Partitions, kp)
			}
			km.Topics = append(km.Topics, kt)
		}
		k.Markers = append(k.Markers, km)
	}
	return k
}

func TestWriteTxnMarkersResponseOracle(t *testing.T) {
	admRequestOracle(t, 1027, WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion,
		txnGenWriteTxnMarkersResponse, (*WriteTxnMarkersResponse).Decode, txnWriteTxnMarkersResponseToKmsg)
	txnRequestRoundTrip(t, 2027, WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion,
		txnGenWriteTxnMarkersResponse, (*WriteTxnMarkersResponse).Decode, (*WriteTxnMarkersResponse).AppendTo, txnWriteTxnMarkersResponseToKmsg)
	txnVersionsRefused(t, WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion, (*WriteTxnMarkersResponse).Decode)
}

// TestWriteTxnMarkersKmsgEncodes: what we encode from values we built (not
// decoded) is what kmsg encodes for the same values, at both versions.
func TestWriteTxnMarkersKmsgEncodes(t *testing.T) {
	req := &WriteTxnMarkersRequest{Markers: []WriteTxnMarker{
		{ProducerID: 7, ProducerEpoch: 3, TransactionResult: true, CoordinatorEpoch: 11,
			Topics: []WriteTxnMarkerTopic{{Name: "a", PartitionIndexes: []int32{0, 2}}, {Name: "b"}}},
		{ProducerID: -1, ProducerEpoch: -1},
	}}
	resp := &WriteTxnMarkersResponse{Markers: []WriteTxnMarkerResult{
		{ProducerID: 7, Topics: []WriteTxnMarkerTopicResult{{Name: "a", Partitions: []WriteTxnMarkerPartitionResult{
			{PartitionIndex: 0}, {PartitionIndex: 2, ErrorCode: NotLeaderOrFollower}}}}},
		{ProducerID: 8},
	}}
	for v := WriteTxnMarkersMinVersion; v <= WriteTxnMarkersMaxVersion; v++ {
		admCheckResponse(t, req.AppendTo(nil, v), txnWriteTxnMarkersRequestToKmsg(req, v), v)
		admCheckResponse(t, resp.AppendTo(nil, v), txnWriteTxnMarkersResponseToKmsg(resp, v), v)
	}
}
