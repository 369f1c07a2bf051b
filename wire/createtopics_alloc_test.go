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
// nothing (STYLE.md habit 7), in a classic and a flexible version.
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
	ct := admGenCreateTopicsResponse(newAdmGen(1), 7)
	buf := make([]byte, 0, 1<<20)
	if allocs := testing.AllocsPerRun(100, func() { buf = ct.AppendTo(buf[:0], 7) }); allocs != 0 {
		t.Errorf("CreateTopicsResponse.AppendTo allocates %.1f times", allocs)
	}
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
	r := admGenCreateTopicsResponse(newAdmGen(2), 7)
	buf := r.AppendTo(nil, 7)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = r.AppendTo(buf[:0], 7)
	}
}
