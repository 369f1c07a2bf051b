package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "OffsetCommit", key: KeyOffsetCommit, min: 2, max: 10, flexFrom: 8,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrOffsetCommitRequest()
			k.Group, k.Generation, k.MemberID, k.InstanceID = g.str(), g.i32(), g.str(), g.ptr()
			k.RetentionTimeMillis = g.i64()
			for range g.nOuter() {
				t := kmsg.NewOffsetCommitRequestTopic()
				t.Topic, t.TopicID = g.str(), g.uuid()
				for range g.nInner() {
					p := kmsg.NewOffsetCommitRequestTopicPartition()
					p.Partition, p.Offset, p.Timestamp, p.LeaderEpoch, p.Metadata = g.i32(), g.i64(), g.i64(), g.i32(), g.ptr()
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
			var r OffsetCommitRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrOffsetCommitRequest()
				k.Group, k.Generation, k.MemberID, k.InstanceID = r.Group, r.Generation, r.MemberID, ptrOf(r.InstanceID)
				k.RetentionTimeMillis = r.RetentionTimeMillis
				for _, t := range r.Topics {
					kt := kmsg.NewOffsetCommitRequestTopic()
					kt.Topic, kt.TopicID = t.Topic, t.TopicID
					for _, p := range t.Partitions {
						kp := kmsg.NewOffsetCommitRequestTopicPartition()
						kp.Partition, kp.Offset, kp.LeaderEpoch, kp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, ptrOf(p.Metadata)
						kt.Partitions = append(kt.Partitions, kp)
					}
					k.Topics = append(k.Topics, kt)
				}
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "OffsetCommit", key: KeyOffsetCommit, min: 2, max: 10, flexFrom: 8,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &OffsetCommitResponse{ThrottleMillis: g.i32()}
			k := kmsg.NewPtrOffsetCommitResponse()
			k.ThrottleMillis = r.ThrottleMillis
			for range g.nOuter() {
				t := OffsetCommitResponseTopic{Topic: g.str(), TopicID: g.uuid()}
				kt := kmsg.NewOffsetCommitResponseTopic()
				kt.Topic, kt.TopicID = t.Topic, t.TopicID
				for range g.nInner() {
					p := OffsetCommitResponseTopicPartition{Partition: g.i32(), ErrorCode: g.code()}
					t.Partitions = append(t.Partitions, p)
					kp := kmsg.NewOffsetCommitResponseTopicPartition()
					kp.Partition, kp.ErrorCode = p.Partition, int16(p.ErrorCode)
					kt.Partitions = append(kt.Partitions, kp)
				}
				r.Topics = append(r.Topics, t)
				k.Topics = append(k.Topics, kt)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrOffsetCommitResponse() },
	})
}

func TestOffsetCommitRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("OffsetCommit")) }
func TestOffsetCommitResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("OffsetCommit")) }

func TestOffsetCommitRequestDefaults(t *testing.T) {
	k := kmsg.NewPtrOffsetCommitRequest()
	k.Version = 5
	inst := "i"
	k.Group, k.InstanceID, k.RetentionTimeMillis = "g", &inst, 77
	k.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 9, LeaderEpoch: 3}}}}
	r := OffsetCommitRequest{InstanceID: NullStringOf("stale"), RetentionTimeMillis: 5}
	if err := r.Decode(k.AppendTo(nil), 5); err != nil {
		t.Fatal(err)
	}
	if p := r.Topics[0].Partitions[0]; r.InstanceID.Valid || r.RetentionTimeMillis != -1 || p.LeaderEpoch != -1 || p.Offset != 9 || p.Metadata.Valid {
		t.Fatalf("absent fields not defaulted: %+v %+v", r, p)
	}
	k.Version = 4
	if err := r.Decode(k.AppendTo(nil), 4); err != nil || r.RetentionTimeMillis != 77 {
		t.Fatalf("v4 RetentionTimeMillis = %d, %v", r.RetentionTimeMillis, err)
	}
}
