package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "ListGroups", key: KeyListGroups, min: 0, max: 5, flexFrom: 3,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrListGroupsRequest()
			k.StatesFilter = g.strs(g.nInner())
			k.TypesFilter = g.strs(g.nInner())
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r ListGroupsRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrListGroupsRequest()
				k.StatesFilter = append([]string(nil), r.StatesFilter...)
				k.TypesFilter = append([]string(nil), r.TypesFilter...)
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "ListGroups", key: KeyListGroups, min: 0, max: 5, flexFrom: 3,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &ListGroupsResponse{ThrottleMillis: g.i32(), ErrorCode: g.code()}
			k := kmsg.NewPtrListGroupsResponse()
			k.ThrottleMillis, k.ErrorCode = r.ThrottleMillis, int16(r.ErrorCode)
			for range g.nOuter() {
				gr := ListGroupsResponseGroup{Group: g.str(), ProtocolType: g.str(), GroupState: g.str(), GroupType: g.str()}
				r.Groups = append(r.Groups, gr)
				kg := kmsg.NewListGroupsResponseGroup()
				kg.Group, kg.ProtocolType, kg.GroupState, kg.GroupType = gr.Group, gr.ProtocolType, gr.GroupState, gr.GroupType
				k.Groups = append(k.Groups, kg)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrListGroupsResponse() },
	})
}

func TestListGroupsRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("ListGroups")) }
func TestListGroupsResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("ListGroups")) }
