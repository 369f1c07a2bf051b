package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "OffsetFetch", key: KeyOffsetFetch, min: 1, max: 10, flexFrom: 6,
		build: func(g *oracleGen, v int16, tags bool) csKmsg {
			k := kmsg.NewPtrOffsetFetchRequest()
			if v <= 7 {
				k.Group = g.str()
				// Topics: "nullableVersions": "2-7"; null = all topics.
				if v >= 2 && g.r.IntN(3) == 0 {
					k.Topics = nil
				} else {
					k.Topics = []kmsg.OffsetFetchRequestTopic{}
					for range g.nOuter() {
						t := kmsg.NewOffsetFetchRequestTopic()
						t.Topic, t.Partitions = g.str(), g.int32s()
						t.UnknownTags = g.tagsIf(tags)
						k.Topics = append(k.Topics, t)
					}
				}
			} else {
				for range g.nOuter() { // v8+ batched groups (KIP-709)
					gr := kmsg.NewOffsetFetchRequestGroup()
					gr.Group, gr.MemberID, gr.MemberEpoch = g.str(), g.ptr(), g.i32()
					if g.r.IntN(3) != 0 {
						gr.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
						for range g.nOuter() {
							t := kmsg.NewOffsetFetchRequestGroupTopic()
							t.Topic, t.TopicID, t.Partitions = g.str(), g.uuid(), g.int32s()
							t.UnknownTags = g.tagsIf(tags)
							gr.Topics = append(gr.Topics, t)
						}
					}
					gr.UnknownTags = g.tagsIf(tags)
					k.Groups = append(k.Groups, gr)
				}
			}
			k.RequireStable = g.bool()
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r OffsetFetchRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrOffsetFetchRequest()
				k.Group = r.Group
				if r.Topics != nil {
					k.Topics = []kmsg.OffsetFetchRequestTopic{}
				}
				for _, t := range r.Topics {
					kt := kmsg.NewOffsetFetchRequestTopic()
					kt.Topic, kt.Partitions = t.Topic, append([]int32(nil), t.Partitions...)
					k.Topics = append(k.Topics, kt)
				}
				for _, gr := range r.Groups {
					kg := kmsg.NewOffsetFetchRequestGroup()
					kg.Group, kg.MemberID, kg.MemberEpoch = gr.Group, ptrOf(gr.MemberID), gr.MemberEpoch
					if gr.Topics != nil {
						kg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
					}
					for _, t := range gr.Topics {
						kt := kmsg.NewOffsetFetchRequestGroupTopic()
						kt.Topic, kt.TopicID, kt.Partitions = t.Topic, t.TopicID, append([]int32(nil), t.Partitions...)
						kg.Topics = append(kg.Topics, kt)
					}
					k.Groups = append(k.Groups, kg)
				}
				k.RequireStable = r.RequireStable
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "OffsetFetch", key: KeyOffsetFetch, min: 1, max: 10, flexFrom: 6,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &OffsetFetchResponse{ThrottleMillis: g.i32()}
			k := kmsg.NewPtrOffsetFetchResponse()
			k.ThrottleMillis = r.ThrottleMillis
			topics := func() ([]OffsetFetchResponseTopic, []kmsg.OffsetFetchResponseTopic, []kmsg.OffsetFetchResponseGroupTopic) {
				var ours []OffsetFetchResponseTopic
				var old []kmsg.OffsetFetchResponseTopic
				var grp []kmsg.OffsetFetchResponseGroupTopic
				for range g.nOuter() {
					t := OffsetFetchResponseTopic{Topic: g.str()}
					kt := kmsg.NewOffsetFetchResponseTopic()
					gt := kmsg.NewOffsetFetchResponseGroupTopic()
					kt.Topic, gt.Topic = t.Topic, t.Topic
					if v >= 10 { // by id in Groups only
						t.TopicID = g.uuid()
						gt.TopicID = t.TopicID
					}
					for range g.nInner() {
						p := OffsetFetchResponseTopicPartition{Partition: g.i32(), Offset: g.i64(), LeaderEpoch: g.i32(), Metadata: g.ns(), ErrorCode: g.code()}
						t.Partitions = append(t.Partitions, p)
						kp := kmsg.NewOffsetFetchResponseTopicPartition()
						kp.Partition, kp.Offset, kp.LeaderEpoch, kp.Metadata, kp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, ptrOf(p.Metadata), int16(p.ErrorCode)
						kt.Partitions = append(kt.Partitions, kp)
						gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, ptrOf(p.Metadata), int16(p.ErrorCode)
						gt.Partitions = append(gt.Partitions, gp)
					}
					ours, old, grp = append(ours, t), append(old, kt), append(grp, gt)
				}
				return ours, old, grp
			}
			r.Topics, k.Topics, _ = topics()
			r.ErrorCode = g.code()
			k.ErrorCode = int16(r.ErrorCode)
			for range g.nOuter() {
				gr := OffsetFetchResponseGroup{Group: g.str()}
				kg := kmsg.NewOffsetFetchResponseGroup()
				kg.Group = gr.Group
				gr.Topics, _, kg.Topics = topics()
				gr.ErrorCode = g.code()
				kg.ErrorCode = int16(gr.ErrorCode)
				r.Groups = append(r.Groups, gr)
				k.Groups = append(k.Groups, kg)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrOffsetFetchResponse() },
	})
}

func TestOffsetFetchRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("OffsetFetch")) }
func TestOffsetFetchResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("OffsetFetch")) }

// TestOffsetFetchNullTopics checks null (all topics) against empty (none)
// in both layouts, and that a reused request keeps telling them apart.
func TestOffsetFetchNullTopics(t *testing.T) {
	var r OffsetFetchRequest
	for round := range 3 {
		for v := int16(2); v <= 9; v++ {
			k := kmsg.NewPtrOffsetFetchRequest()
			k.Version = v
			k.Group = "g"
			k.Topics = nil
			k.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "a"}, {Group: "b", Topics: []kmsg.OffsetFetchRequestGroupTopic{}}}
			if round == 1 {
				k.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{1, 2}}}
				k.Groups[0].Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{1}}}
			}
			if err := r.Decode(k.AppendTo(nil), v); err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
			if v <= 7 {
				if (round != 1) != (r.Topics == nil) || len(r.Groups) != 0 {
					t.Fatalf("round %d v%d: Topics %v", round, v, r.Topics)
				}
				continue
			}
			if r.Group != "" || r.Topics != nil || len(r.Groups) != 2 || (round != 1) != (r.Groups[0].Topics == nil) ||
				r.Groups[1].Topics == nil || len(r.Groups[1].Topics) != 0 {
				t.Fatalf("round %d v%d: %+v", round, v, r)
			}
		}
	}
	// v1: Topics is not nullable.
	k := kmsg.NewPtrOffsetFetchRequest()
	k.Version = 1
	b := k.AppendTo(nil)
	b[len(b)-4], b[len(b)-3], b[len(b)-2], b[len(b)-1] = 0xff, 0xff, 0xff, 0xff
	if err := r.Decode(b, 1); err == nil {
		t.Fatal("v1 null topics accepted")
	}
}
