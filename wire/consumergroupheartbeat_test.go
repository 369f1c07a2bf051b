package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KIP-848 group APIs against kmsg, every version (docs/design/adding-an-api.md §1).
func init() {
	csRegisterRequest(csReqAPI{
		name: "ConsumerGroupHeartbeat", key: KeyConsumerGroupHeartbeat, min: 0, max: 1, flexFrom: 0,
		build: func(g *oracleGen, v int16, tags bool) csKmsg {
			k := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			k.Group, k.MemberID, k.MemberEpoch = g.str(), g.str(), g.i32()
			k.InstanceID, k.RackID = g.ptr(), g.ptr()
			k.RebalanceTimeoutMillis = g.i32()
			if g.bool() {
				k.SubscribedTopicNames = g.strs(g.nInner())
			}
			if v >= 1 {
				k.SubscribedTopicRegex = g.ptr()
			}
			k.ServerAssignor = g.ptr()
			if g.bool() {
				k.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				for range g.nOuter() {
					t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
					t.TopicID, t.Partitions = g.uuid(), g.int32s()
					t.UnknownTags = g.tagsIf(tags)
					k.Topics = append(k.Topics, t)
				}
			}
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r ConsumerGroupHeartbeatRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				k.Group, k.MemberID, k.MemberEpoch = r.Group, r.MemberID, r.MemberEpoch
				k.InstanceID, k.RackID = ptrOf(r.InstanceID), ptrOf(r.RackID)
				k.RebalanceTimeoutMillis = r.RebalanceTimeoutMillis
				if r.HasSubscribedTopicNames {
					k.SubscribedTopicNames = append([]string{}, r.SubscribedTopicNames...)
				}
				k.SubscribedTopicRegex, k.ServerAssignor = ptrOf(r.SubscribedTopicRegex), ptrOf(r.ServerAssignor)
				if r.HasTopics {
					k.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
					for _, t := range r.Topics {
						kt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
						kt.TopicID, kt.Partitions = t.TopicID, append([]int32{}, t.Partitions...)
						k.Topics = append(k.Topics, kt)
					}
				}
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "ConsumerGroupHeartbeat", key: KeyConsumerGroupHeartbeat, min: 0, max: 1, flexFrom: 0,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &ConsumerGroupHeartbeatResponse{ThrottleMillis: g.i32(), ErrorCode: g.code(), ErrorMessage: g.ns(),
				MemberID: g.ns(), MemberEpoch: g.i32(), HeartbeatIntervalMillis: g.i32()}
			k := kmsg.NewPtrConsumerGroupHeartbeatResponse()
			k.ThrottleMillis, k.ErrorCode, k.ErrorMessage = r.ThrottleMillis, int16(r.ErrorCode), ptrOf(r.ErrorMessage)
			k.MemberID, k.MemberEpoch, k.HeartbeatIntervalMillis = ptrOf(r.MemberID), r.MemberEpoch, r.HeartbeatIntervalMillis
			if g.bool() {
				r.HasAssignment = true
				a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
				for range g.nOuter() {
					t := ConsumerGroupHeartbeatTopic{TopicID: g.uuid(), Partitions: g.int32s()}
					r.Assignment = append(r.Assignment, t)
					kt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
					kt.TopicID, kt.Partitions = t.TopicID, t.Partitions
					a.Topics = append(a.Topics, kt)
				}
				k.Assignment = &a
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrConsumerGroupHeartbeatResponse() },
	})
	csRegisterRequest(csReqAPI{
		name: "ConsumerGroupDescribe", key: KeyConsumerGroupDescribe, min: 0, max: 1, flexFrom: 0,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrConsumerGroupDescribeRequest()
			k.Groups = g.strs(g.nOuter())
			k.IncludeAuthorizedOperations = g.bool()
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r ConsumerGroupDescribeRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrConsumerGroupDescribeRequest()
				k.Groups = append([]string(nil), r.Groups...)
				k.IncludeAuthorizedOperations = r.IncludeAuthorizedOperations
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "ConsumerGroupDescribe", key: KeyConsumerGroupDescribe, min: 0, max: 1, flexFrom: 0,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &ConsumerGroupDescribeResponse{ThrottleMillis: g.i32()}
			k := kmsg.NewPtrConsumerGroupDescribeResponse()
			k.ThrottleMillis = r.ThrottleMillis
			assignment := func() ([]ConsumerGroupDescribeTopic, kmsg.Assignment) {
				var ours []ConsumerGroupDescribeTopic
				ka := kmsg.NewAssignment()
				for range g.upTo(3) { // bounded: members × topics × partitions
					t := ConsumerGroupDescribeTopic{TopicID: g.uuid(), Topic: g.str(), Partitions: g.int32s()}
					ours = append(ours, t)
					kt := kmsg.NewAssignmentTopicPartition()
					kt.TopicID, kt.Topic, kt.Partitions = t.TopicID, t.Topic, t.Partitions
					ka.TopicPartitions = append(ka.TopicPartitions, kt)
				}
				return ours, ka
			}
			for range g.nOuter() {
				gr := ConsumerGroupDescribeGroup{ErrorCode: g.code(), ErrorMessage: g.ns(), Group: g.str(), State: g.str(),
					Epoch: g.i32(), AssignmentEpoch: g.i32(), AssignorName: g.str()}
				kg := kmsg.NewConsumerGroupDescribeResponseGroup()
				kg.ErrorCode, kg.ErrorMessage, kg.Group, kg.State = int16(gr.ErrorCode), ptrOf(gr.ErrorMessage), gr.Group, gr.State
				kg.Epoch, kg.AssignmentEpoch, kg.AssignorName = gr.Epoch, gr.AssignmentEpoch, gr.AssignorName
				for range g.nInner() {
					m := ConsumerGroupDescribeMember{MemberID: g.str(), InstanceID: g.ns(), RackID: g.ns(), MemberEpoch: g.i32(),
						ClientID: g.str(), ClientHost: g.str(), SubscribedTopicNames: g.strs(g.upTo(3)), SubscribedTopicRegex: g.ns(), MemberType: -1}
					km := kmsg.NewConsumerGroupDescribeResponseGroupMember()
					var a, ta kmsg.Assignment
					m.Assignment, a = assignment()
					m.TargetAssignment, ta = assignment()
					if v >= 1 {
						m.MemberType = g.i8()
					}
					km.MemberID, km.InstanceID, km.RackID, km.MemberEpoch = m.MemberID, ptrOf(m.InstanceID), ptrOf(m.RackID), m.MemberEpoch
					km.ClientID, km.ClientHost, km.SubscribedTopics, km.SubscribedTopicRegex = m.ClientID, m.ClientHost, m.SubscribedTopicNames, ptrOf(m.SubscribedTopicRegex)
					km.Assignment, km.TargetAssignment, km.MemberType = a, ta, m.MemberType
					gr.Members = append(gr.Members, m)
					kg.Members = append(kg.Members, km)
				}
				gr.AuthorizedOperations = g.i32()
				kg.AuthorizedOperations = gr.AuthorizedOperations
				r.Groups = append(r.Groups, gr)
				k.Groups = append(k.Groups, kg)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrConsumerGroupDescribeResponse() },
	})
}

func TestConsumerGroupHeartbeatRequestOracle(t *testing.T) {
	csCheckRequest(t, csFindReq("ConsumerGroupHeartbeat"))
}
func TestConsumerGroupHeartbeatResponseOracle(t *testing.T) {
	csCheckResponse(t, csFindResp("ConsumerGroupHeartbeat"))
}
func TestConsumerGroupDescribeRequestOracle(t *testing.T) {
	csCheckRequest(t, csFindReq("ConsumerGroupDescribe"))
}
func TestConsumerGroupDescribeResponseOracle(t *testing.T) {
	csCheckResponse(t, csFindResp("ConsumerGroupDescribe"))
}
