package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "DeleteGroups", key: KeyDeleteGroups, min: 0, max: 3, flexFrom: 2,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrDeleteGroupsRequest()
			k.Groups = g.strs(g.nOuter())
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r DeleteGroupsRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrDeleteGroupsRequest()
				k.Groups = append([]string(nil), r.Groups...)
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "DeleteGroups", key: KeyDeleteGroups, min: 0, max: 3, flexFrom: 2,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &DeleteGroupsResponse{ThrottleMillis: g.i32()}
			k := kmsg.NewPtrDeleteGroupsResponse()
			k.ThrottleMillis = r.ThrottleMillis
			for range g.nOuter() {
				res := DeleteGroupsResponseResult{Group: g.str(), ErrorCode: g.code(), ErrorMessage: g.ns()}
				if v < 3 {
					res.ErrorMessage = NullString{} // not on the wire before v3
				}
				r.Results = append(r.Results, res)
				kg := kmsg.NewDeleteGroupsResponseGroup()
				kg.Group, kg.ErrorCode, kg.ErrorMessage = res.Group, int16(res.ErrorCode), ptrOf(res.ErrorMessage)
				k.Groups = append(k.Groups, kg)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrDeleteGroupsResponse() },
	})
}

func TestDeleteGroupsRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("DeleteGroups")) }
func TestDeleteGroupsResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("DeleteGroups")) }
