//go:build !race

package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// admAllocCreateTopicsBody is a CreateTopics request with assignments,
// configs (one null value) and unknown tags, as kmsg encodes it.
func admAllocCreateTopicsBody(v int16) []byte {
	k := kmsg.NewPtrCreateTopicsRequest()
	k.Version = v
	k.ValidateOnly = true
	val := "compact"
	var tags kmsg.Tags
	tags.Set(7, []byte{1, 2, 3})
	for _, name := range []string{"orders", "payments", "audit"} {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = name
		t.NumPartitions, t.ReplicationFactor = -1, -1
		t.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{
			{Partition: 0, Replicas: []int32{1, 2, 3}}, {Partition: 1, Replicas: []int32{2, 3, 1}, UnknownTags: tags},
		}
		t.Configs = []kmsg.CreateTopicsRequestTopicConfig{
			{Name: "cleanup.policy", Value: &val}, {Name: "retention.ms", Value: nil},
		}
		t.UnknownTags = tags
		k.Topics = append(k.Topics, t)
	}
	k.UnknownTags = tags
	return k.AppendTo(nil)
}

// TestCreateTopicsDecodeAllocs: decoding into a reused struct allocates
// nothing (docs/design/style.md habit 7), in a classic and a flexible version.
func TestCreateTopicsDecodeAllocs(t *testing.T) {
	for _, v := range []int16{4, 7} {
		body := admAllocCreateTopicsBody(v)
		var r CreateTopicsRequest
		if err := r.Decode(body, v); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if err := r.Decode(body, v); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("v%d: Decode into a reused struct allocates %.1f times", v, allocs)
		}
		if len(r.Topics) != 3 || r.Topics[2].Configs[1].Value.Valid || len(r.Topics[1].ReplicaAssignment[1].Replicas) != 3 {
			t.Fatalf("v%d: decoded %+v", v, r)
		}
	}
}

// TestAdminResponseAppendAllocs: encoding into a buffer with room allocates
// nothing.
func TestAdminResponseAppendAllocs(t *testing.T) {
	g := newOracleGen(1)
	buf := make([]byte, 0, 1<<20)
	check := func(name string, appendTo func([]byte) []byte) {
		t.Helper()
		if allocs := testing.AllocsPerRun(20, func() { buf = appendTo(buf[:0]) }); allocs != 0 {
			t.Errorf("%s.AppendTo allocates %.1f times", name, allocs)
		}
	}
	ct := admGenCreateTopicsResponse(g, 7)
	check("CreateTopicsResponse", func(b []byte) []byte { return ct.AppendTo(b, 7) })
	dt := admGenDeleteTopicsResponse(g, 6)
	check("DeleteTopicsResponse", func(b []byte) []byte { return dt.AppendTo(b, 6) })
	cp := admGenCreatePartitionsResponse(g, 3)
	check("CreatePartitionsResponse", func(b []byte) []byte { return cp.AppendTo(b, 3) })
	dc := admGenDescribeConfigsResponse(g, 4)
	check("DescribeConfigsResponse", func(b []byte) []byte { return dc.AppendTo(b, 4) })
	ac := AlterConfigsResponse{Resources: admGenAlterConfigsResults(g)}
	check("AlterConfigsResponse", func(b []byte) []byte { return ac.AppendTo(b, 2) })
	iac := IncrementalAlterConfigsResponse{Resources: admGenAlterConfigsResults(g)}
	check("IncrementalAlterConfigsResponse", func(b []byte) []byte { return iac.AppendTo(b, 1) })
	dcl := admGenDescribeClusterResponse(g, 2)
	check("DescribeClusterResponse", func(b []byte) []byte { return dcl.AppendTo(b, 2) })
	dp := admGenDescribeProducersResponse(g, 0)
	check("DescribeProducersResponse", func(b []byte) []byte { return dp.AppendTo(b, 0) })
	dtp := admGenDescribeTopicPartitionsResponse(g, 0)
	check("DescribeTopicPartitionsResponse", func(b []byte) []byte { return dtp.AppendTo(b, 0) })
}

func BenchmarkCreateTopicsDecode(b *testing.B) {
	body := admAllocCreateTopicsBody(7)
	var r CreateTopicsRequest
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := r.Decode(body, 7); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCreateTopicsResponseAppend(b *testing.B) {
	r := admGenCreateTopicsResponse(newOracleGen(2), 7)
	buf := r.AppendTo(nil, 7)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = r.AppendTo(buf[:0], 7)
	}
}

// admAllocDecoder decodes kmsg-generated bodies of every version into one
// reused struct and requires the second decode of each to allocate nothing.
func admAllocDecoder[P interface{ admMsg }, R any](t *testing.T, name string, lo, hi int16,
	gen func(*oracleGen, int16) P, decode func(*R, []byte, int16) error) {
	t.Helper()
	g := newOracleGen(7)
	var r R
	for v := lo; v <= hi; v++ {
		for range 5 {
			k := gen(g, v)
			k.SetVersion(v)
			body := k.AppendTo(nil)
			if err := decode(&r, body, v); err != nil {
				t.Fatalf("%s v%d: %v", name, v, err)
			}
			if allocs := testing.AllocsPerRun(20, func() { _ = decode(&r, body, v) }); allocs != 0 {
				t.Errorf("%s v%d: Decode into a reused struct allocates %.1f times", name, v, allocs)
			}
		}
	}
}

// TestAdminDecodeAllocs: every admin decoder, every version, reuses its
// struct without allocating once it has seen a body of the same shape.
func TestAdminDecodeAllocs(t *testing.T) {
	admAllocDecoder(t, "CreateTopics", createTopicsMin, createTopicsMax, admGenCreateTopicsRequest, (*CreateTopicsRequest).Decode)
	admAllocDecoder(t, "DeleteTopics", deleteTopicsMin, deleteTopicsMax, admGenDeleteTopicsRequest, (*DeleteTopicsRequest).Decode)
	admAllocDecoder(t, "CreatePartitions", createPartitionsMin, createPartitionsMax, admGenCreatePartitionsRequest, (*CreatePartitionsRequest).Decode)
	admAllocDecoder(t, "DescribeConfigs", describeConfigsMin, describeConfigsMax, admGenDescribeConfigsRequest, (*DescribeConfigsRequest).Decode)
	admAllocDecoder(t, "AlterConfigs", alterConfigsMin, alterConfigsMax, admGenAlterConfigsRequest, (*AlterConfigsRequest).Decode)
	admAllocDecoder(t, "IncrementalAlterConfigs", incrementalAlterConfigsMin, incrementalAlterConfigsMax, admGenIncrementalAlterConfigsRequest, (*IncrementalAlterConfigsRequest).Decode)
	admAllocDecoder(t, "DescribeCluster", describeClusterMin, describeClusterMax, admGenDescribeClusterRequest, (*DescribeClusterRequest).Decode)
	admAllocDecoder(t, "DescribeProducers", describeProducersMin, describeProducersMax, admGenDescribeProducersRequest, (*DescribeProducersRequest).Decode)
	admAllocDecoder(t, "DescribeTopicPartitions", describeTopicPartitionsMin, describeTopicPartitionsMax, admGenDescribeTopicPartitionsRequest, (*DescribeTopicPartitionsRequest).Decode)
}
