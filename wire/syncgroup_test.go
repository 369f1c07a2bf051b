package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "SyncGroup", key: KeySyncGroup, min: 0, max: 5, flexFrom: 4,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrSyncGroupRequest()
			k.Group, k.Generation, k.MemberID = g.str(), g.i32(), g.str()
			k.InstanceID, k.ProtocolType, k.Protocol = g.ptr(), g.ptr(), g.ptr()
			for range g.nInner() {
				a := kmsg.NewSyncGroupRequestGroupAssignment()
				a.MemberID, a.MemberAssignment = g.str(), g.bytes()
				a.UnknownTags = g.tagsIf(tags)
				k.GroupAssignment = append(k.GroupAssignment, a)
			}
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r SyncGroupRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrSyncGroupRequest()
				k.Group, k.Generation, k.MemberID = r.Group, r.Generation, r.MemberID
				k.InstanceID, k.ProtocolType, k.Protocol = ptrOf(r.InstanceID), ptrOf(r.ProtocolType), ptrOf(r.Protocol)
				for _, a := range r.GroupAssignment {
					ka := kmsg.NewSyncGroupRequestGroupAssignment()
					ka.MemberID, ka.MemberAssignment = a.MemberID, a.MemberAssignment
					k.GroupAssignment = append(k.GroupAssignment, ka)
				}
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "SyncGroup", key: KeySyncGroup, min: 0, max: 5, flexFrom: 4,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &SyncGroupResponse{ThrottleMillis: g.i32(), ErrorCode: g.code(), ProtocolType: g.ns(), Protocol: g.ns(), MemberAssignment: g.bytes()}
			k := kmsg.NewPtrSyncGroupResponse()
			k.ThrottleMillis, k.ErrorCode = r.ThrottleMillis, int16(r.ErrorCode)
			k.ProtocolType, k.Protocol, k.MemberAssignment = ptrOf(r.ProtocolType), ptrOf(r.Protocol), r.MemberAssignment
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrSyncGroupResponse() },
	})
}

func TestSyncGroupRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("SyncGroup")) }
func TestSyncGroupResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("SyncGroup")) }
