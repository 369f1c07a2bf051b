package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "LeaveGroup", key: KeyLeaveGroup, min: 0, max: 5, flexFrom: 4,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrLeaveGroupRequest()
			k.Group, k.MemberID = g.str(), g.str()
			for range g.nInner() { // v3+ batched members (KIP-345)
				m := kmsg.NewLeaveGroupRequestMember()
				m.MemberID, m.InstanceID, m.Reason = g.str(), g.ptr(), g.ptr()
				m.UnknownTags = g.tagsIf(tags)
				k.Members = append(k.Members, m)
			}
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r LeaveGroupRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrLeaveGroupRequest()
				k.Group, k.MemberID = r.Group, r.MemberID
				for _, m := range r.Members {
					km := kmsg.NewLeaveGroupRequestMember()
					km.MemberID, km.InstanceID, km.Reason = m.MemberID, ptrOf(m.InstanceID), ptrOf(m.Reason)
					k.Members = append(k.Members, km)
				}
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "LeaveGroup", key: KeyLeaveGroup, min: 0, max: 5, flexFrom: 4,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &LeaveGroupResponse{ThrottleMillis: g.i32(), ErrorCode: g.code()}
			k := kmsg.NewPtrLeaveGroupResponse()
			k.ThrottleMillis, k.ErrorCode = r.ThrottleMillis, int16(r.ErrorCode)
			for range g.nInner() {
				m := LeaveGroupResponseMember{MemberID: g.str(), InstanceID: g.ns(), ErrorCode: g.code()}
				r.Members = append(r.Members, m)
				km := kmsg.NewLeaveGroupResponseMember()
				km.MemberID, km.InstanceID, km.ErrorCode = m.MemberID, ptrOf(m.InstanceID), int16(m.ErrorCode)
				k.Members = append(k.Members, km)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrLeaveGroupResponse() },
	})
}

func TestLeaveGroupRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("LeaveGroup")) }
func TestLeaveGroupResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("LeaveGroup")) }

// TestLeaveGroupBatched checks the v3+ batched members as Java sends them
// on close, and that the v0–2 single member id is cleared from v3.
func TestLeaveGroupBatched(t *testing.T) {
	k := kmsg.NewPtrLeaveGroupRequest()
	k.Version = 5
	k.Group = "g"
	reason := "the consumer is being closed"
	inst := "static-1"
	k.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m1", Reason: &reason}, {MemberID: "m2", InstanceID: &inst}}
	r := LeaveGroupRequest{MemberID: "stale"}
	if err := r.Decode(k.AppendTo(nil), 5); err != nil {
		t.Fatal(err)
	}
	if r.MemberID != "" || len(r.Members) != 2 || r.Members[0].Reason != NullStringOf(reason) || r.Members[0].InstanceID.Valid ||
		r.Members[1].InstanceID != NullStringOf(inst) || r.Members[1].Reason.Valid {
		t.Fatalf("%+v", r)
	}
	k.Version = 1
	k.MemberID = "solo"
	if err := r.Decode(k.AppendTo(nil), 1); err != nil {
		t.Fatal(err)
	}
	if r.MemberID != "solo" || len(r.Members) != 0 {
		t.Fatalf("%+v", r)
	}
}
