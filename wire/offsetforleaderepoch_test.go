package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "OffsetForLeaderEpoch", key: KeyOffsetForLeaderEpoch, min: 2, max: 4, flexFrom: 4,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrOffsetForLeaderEpochRequest()
			k.ReplicaID = g.i32()
			for range g.nOuter() {
				t := kmsg.NewOffsetForLeaderEpochRequestTopic()
				t.Topic = g.str()
				for range g.nInner() {
					p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
					p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = g.i32(), g.i32(), g.i32()
					p.UnknownTags = g.tagsIf(tags)
					t.Partitions = append(t.Partitions, p)
				}
				t.UnknownTags = g.tagsIf(tags)
				k.Topics = append(k.Topics, t)
			}
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r OffsetForLeaderEpochRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrOffsetForLeaderEpochRequest()
				k.ReplicaID = r.ReplicaID
				for _, t := range r.Topics {
					kt := kmsg.NewOffsetForLeaderEpochRequestTopic()
					kt.Topic = t.Topic
					for _, p := range t.Partitions {
						kp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
						kp.Partition, kp.CurrentLeaderEpoch, kp.LeaderEpoch = p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch
						kt.Partitions = append(kt.Partitions, kp)
					}
					k.Topics = append(k.Topics, kt)
				}
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "OffsetForLeaderEpoch", key: KeyOffsetForLeaderEpoch, min: 2, max: 4, flexFrom: 4,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &OffsetForLeaderEpochResponse{ThrottleMillis: g.i32()}
			k := kmsg.NewPtrOffsetForLeaderEpochResponse()
			k.ThrottleMillis = r.ThrottleMillis
			for range g.nOuter() {
				t := OffsetForLeaderEpochResponseTopic{Topic: g.str()}
				kt := kmsg.NewOffsetForLeaderEpochResponseTopic()
				kt.Topic = t.Topic
				for range g.nInner() {
					p := OffsetForLeaderEpochResponseTopicPartition{ErrorCode: g.code(), Partition: g.i32(), LeaderEpoch: g.i32(), EndOffset: g.i64()}
					t.Partitions = append(t.Partitions, p)
					kp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
					kp.ErrorCode, kp.Partition, kp.LeaderEpoch, kp.EndOffset = int16(p.ErrorCode), p.Partition, p.LeaderEpoch, p.EndOffset
					kt.Partitions = append(kt.Partitions, kp)
				}
				r.Topics = append(r.Topics, t)
				k.Topics = append(k.Topics, kt)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrOffsetForLeaderEpochResponse() },
	})
}

func TestOffsetForLeaderEpochRequestOracle(t *testing.T) {
	csCheckRequest(t, csFindReq("OffsetForLeaderEpoch"))
}
func TestOffsetForLeaderEpochResponseOracle(t *testing.T) {
	csCheckResponse(t, csFindResp("OffsetForLeaderEpoch"))
}

func TestOffsetForLeaderEpochReplicaDefault(t *testing.T) {
	k := kmsg.NewPtrOffsetForLeaderEpochRequest()
	k.Version, k.ReplicaID = 2, -1
	r := OffsetForLeaderEpochRequest{ReplicaID: 5}
	if err := r.Decode(k.AppendTo(nil), 2); err != nil || r.ReplicaID != -2 {
		t.Fatalf("v2 ReplicaID = %d (want -2, absent), %v", r.ReplicaID, err)
	}
}
