package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "ListOffsets", key: KeyListOffsets, min: 1, max: 10, flexFrom: 6,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrListOffsetsRequest()
			k.ReplicaID = g.i32()
			k.IsolationLevel = g.i8()
			for range g.nOuter() {
				t := kmsg.NewListOffsetsRequestTopic()
				t.Topic = g.str()
				for range g.nInner() {
					p := kmsg.NewListOffsetsRequestTopicPartition()
					p.Partition = g.i32()
					p.CurrentLeaderEpoch = g.i32()
					p.Timestamp = g.i64()
					p.UnknownTags = g.tagsIf(tags)
					t.Partitions = append(t.Partitions, p)
				}
				t.UnknownTags = g.tagsIf(tags)
				k.Topics = append(k.Topics, t)
			}
			k.TimeoutMillis = g.i32()
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r ListOffsetsRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrListOffsetsRequest()
				k.ReplicaID = r.ReplicaID
				k.IsolationLevel = r.IsolationLevel
				for _, t := range r.Topics {
					kt := kmsg.NewListOffsetsRequestTopic()
					kt.Topic = t.Topic
					for _, p := range t.Partitions {
						kp := kmsg.NewListOffsetsRequestTopicPartition()
						kp.Partition, kp.CurrentLeaderEpoch, kp.Timestamp = p.Partition, p.CurrentLeaderEpoch, p.Timestamp
						kt.Partitions = append(kt.Partitions, kp)
					}
					k.Topics = append(k.Topics, kt)
				}
				k.TimeoutMillis = r.TimeoutMillis
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "ListOffsets", key: KeyListOffsets, min: 1, max: 10, flexFrom: 6,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &ListOffsetsResponse{ThrottleMillis: g.i32()}
			k := kmsg.NewPtrListOffsetsResponse()
			k.ThrottleMillis = r.ThrottleMillis
			for range g.nOuter() {
				t := ListOffsetsResponseTopic{Topic: g.str()}
				kt := kmsg.NewListOffsetsResponseTopic()
				kt.Topic = t.Topic
				for range g.nInner() {
					p := ListOffsetsResponseTopicPartition{Partition: g.i32(), ErrorCode: g.code(), Timestamp: g.i64(), Offset: g.i64(), LeaderEpoch: g.i32()}
					t.Partitions = append(t.Partitions, p)
					kp := kmsg.NewListOffsetsResponseTopicPartition()
					kp.Partition, kp.ErrorCode, kp.Timestamp, kp.Offset, kp.LeaderEpoch = p.Partition, int16(p.ErrorCode), p.Timestamp, p.Offset, p.LeaderEpoch
					kt.Partitions = append(kt.Partitions, kp)
				}
				r.Topics = append(r.Topics, t)
				k.Topics = append(k.Topics, kt)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrListOffsetsResponse() },
	})
}

func TestListOffsetsRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("ListOffsets")) }
func TestListOffsetsResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("ListOffsets")) }

func TestListOffsetsRequestDefaults(t *testing.T) {
	k := kmsg.NewPtrListOffsetsRequest()
	k.Version = 1
	k.IsolationLevel, k.TimeoutMillis = 1, 5
	k.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 1, CurrentLeaderEpoch: 4, Timestamp: -2}}}}
	var r ListOffsetsRequest
	if err := r.Decode(k.AppendTo(nil), 1); err != nil {
		t.Fatal(err)
	}
	if p := r.Topics[0].Partitions[0]; r.IsolationLevel != 0 || r.TimeoutMillis != 30000 || p.CurrentLeaderEpoch != -1 || p.Timestamp != -2 {
		t.Fatalf("absent fields not defaulted: %+v", r)
	}
}
