package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "DeleteRecords", key: KeyDeleteRecords, min: deleteRecordsMin, max: deleteRecordsMax, flexFrom: deleteRecordsFlexible,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrDeleteRecordsRequest()
			for range g.nOuter() {
				t := kmsg.NewDeleteRecordsRequestTopic()
				t.Topic = g.str()
				for range g.nInner() {
					p := kmsg.NewDeleteRecordsRequestTopicPartition()
					p.Partition, p.Offset = g.i32(), g.i64()
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
			var r DeleteRecordsRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrDeleteRecordsRequest()
				k.TimeoutMillis = r.TimeoutMillis
				for _, t := range r.Topics {
					kt := kmsg.NewDeleteRecordsRequestTopic()
					kt.Topic = t.Topic
					for _, p := range t.Partitions {
						kp := kmsg.NewDeleteRecordsRequestTopicPartition()
						kp.Partition, kp.Offset = p.Partition, p.Offset
						kt.Partitions = append(kt.Partitions, kp)
					}
					k.Topics = append(k.Topics, kt)
				}
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "DeleteRecords", key: KeyDeleteRecords, min: deleteRecordsMin, max: deleteRecordsMax, flexFrom: deleteRecordsFlexible,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &DeleteRecordsResponse{ThrottleMillis: g.i32()}
			k := kmsg.NewPtrDeleteRecordsResponse()
			k.ThrottleMillis = r.ThrottleMillis
			for range g.nOuter() {
				t := DeleteRecordsResponseTopic{Topic: g.str()}
				kt := kmsg.NewDeleteRecordsResponseTopic()
				kt.Topic = t.Topic
				for range g.nInner() {
					p := DeleteRecordsResponsePartition{Partition: g.i32(), LowWatermark: g.i64(), ErrorCode: g.code()}
					t.Partitions = append(t.Partitions, p)
					kp := kmsg.NewDeleteRecordsResponseTopicPartition()
					kp.Partition, kp.LowWatermark, kp.ErrorCode = p.Partition, p.LowWatermark, int16(p.ErrorCode)
					kt.Partitions = append(kt.Partitions, kp)
				}
				r.Topics = append(r.Topics, t)
				k.Topics = append(k.Topics, kt)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrDeleteRecordsResponse() },
	})
}

func TestDeleteRecordsRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("DeleteRecords")) }
func TestDeleteRecordsResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("DeleteRecords")) }
