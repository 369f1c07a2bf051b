package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "OffsetDelete", key: KeyOffsetDelete, min: offsetDeleteMin, max: offsetDeleteMax, flexFrom: offsetDeleteFlexible,
		build: func(g *oracleGen, _ int16, _ bool) csKmsg {
			k := kmsg.NewPtrOffsetDeleteRequest()
			k.Group = g.str()
			for range g.nOuter() {
				t := kmsg.NewOffsetDeleteRequestTopic()
				t.Topic = g.str()
				for range g.nInner() {
					p := kmsg.NewOffsetDeleteRequestTopicPartition()
					p.Partition = g.i32()
					t.Partitions = append(t.Partitions, p)
				}
				k.Topics = append(k.Topics, t)
			}
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r OffsetDeleteRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrOffsetDeleteRequest()
				k.Group = r.Group
				for _, t := range r.Topics {
					kt := kmsg.NewOffsetDeleteRequestTopic()
					kt.Topic = t.Topic
					for _, p := range t.Partitions {
						kp := kmsg.NewOffsetDeleteRequestTopicPartition()
						kp.Partition = p
						kt.Partitions = append(kt.Partitions, kp)
					}
					k.Topics = append(k.Topics, kt)
				}
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "OffsetDelete", key: KeyOffsetDelete, min: offsetDeleteMin, max: offsetDeleteMax, flexFrom: offsetDeleteFlexible,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &OffsetDeleteResponse{ErrorCode: g.code(), ThrottleMillis: g.i32()}
			k := kmsg.NewPtrOffsetDeleteResponse()
			k.ErrorCode, k.ThrottleMillis = int16(r.ErrorCode), r.ThrottleMillis
			for range g.nOuter() {
				t := OffsetDeleteResponseTopic{Topic: g.str()}
				kt := kmsg.NewOffsetDeleteResponseTopic()
				kt.Topic = t.Topic
				for range g.nInner() {
					p := OffsetDeleteResponsePartition{Partition: g.i32(), ErrorCode: g.code()}
					t.Partitions = append(t.Partitions, p)
					kp := kmsg.NewOffsetDeleteResponseTopicPartition()
					kp.Partition, kp.ErrorCode = p.Partition, int16(p.ErrorCode)
					kt.Partitions = append(kt.Partitions, kp)
				}
				r.Topics = append(r.Topics, t)
				k.Topics = append(k.Topics, kt)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrOffsetDeleteResponse() },
	})
}

func TestOffsetDeleteRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("OffsetDelete")) }
func TestOffsetDeleteResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("OffsetDelete")) }
