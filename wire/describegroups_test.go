package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "DescribeGroups", key: KeyDescribeGroups, min: 0, max: 5, flexFrom: 5,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrDescribeGroupsRequest()
			k.Groups = g.strs(g.nOuter())
			k.IncludeAuthorizedOperations = g.bool()
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r DescribeGroupsRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrDescribeGroupsRequest()
				k.Groups = append([]string(nil), r.Groups...)
				k.IncludeAuthorizedOperations = r.IncludeAuthorizedOperations
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "DescribeGroups", key: KeyDescribeGroups, min: 0, max: 5, flexFrom: 5,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &DescribeGroupsResponse{ThrottleMillis: g.i32()}
			k := kmsg.NewPtrDescribeGroupsResponse()
			k.ThrottleMillis = r.ThrottleMillis
			for range g.nOuter() {
				gr := DescribeGroupsResponseGroup{ErrorCode: g.code(), Group: g.str(), State: g.str(), ProtocolType: g.str(), Protocol: g.str()}
				kg := kmsg.NewDescribeGroupsResponseGroup()
				kg.ErrorCode, kg.Group, kg.State, kg.ProtocolType, kg.Protocol = int16(gr.ErrorCode), gr.Group, gr.State, gr.ProtocolType, gr.Protocol
				for range g.nInner() {
					m := DescribeGroupsResponseGroupMember{MemberID: g.str(), InstanceID: g.ns(), ClientID: g.str(), ClientHost: g.str(), ProtocolMetadata: g.bytes(), MemberAssignment: g.bytes()}
					gr.Members = append(gr.Members, m)
					km := kmsg.NewDescribeGroupsResponseGroupMember()
					km.MemberID, km.InstanceID, km.ClientID, km.ClientHost = m.MemberID, ptrOf(m.InstanceID), m.ClientID, m.ClientHost
					km.ProtocolMetadata, km.MemberAssignment = m.ProtocolMetadata, m.MemberAssignment
					kg.Members = append(kg.Members, km)
				}
				gr.AuthorizedOperations = g.i32()
				kg.AuthorizedOperations = gr.AuthorizedOperations
				r.Groups = append(r.Groups, gr)
				k.Groups = append(k.Groups, kg)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrDescribeGroupsResponse() },
	})
}

func TestDescribeGroupsRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("DescribeGroups")) }
func TestDescribeGroupsResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("DescribeGroups")) }
