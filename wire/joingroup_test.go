package wire

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "JoinGroup", key: KeyJoinGroup, min: 0, max: 9, flexFrom: 6,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrJoinGroupRequest()
			k.Group = g.str()
			k.SessionTimeoutMillis = g.i32()
			k.RebalanceTimeoutMillis = g.i32()
			k.MemberID = g.str()
			k.InstanceID = g.ptr()
			k.ProtocolType = g.str()
			for range g.nInner() {
				p := kmsg.NewJoinGroupRequestProtocol()
				p.Name = g.str()
				p.Metadata = g.bytes()
				p.UnknownTags = g.tagsIf(tags)
				k.Protocols = append(k.Protocols, p)
			}
			k.Reason = g.ptr()
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r JoinGroupRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrJoinGroupRequest()
				k.Group, k.SessionTimeoutMillis, k.RebalanceTimeoutMillis = r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis
				k.MemberID, k.InstanceID, k.ProtocolType = r.MemberID, ptrOf(r.InstanceID), r.ProtocolType
				for _, p := range r.Protocols {
					kp := kmsg.NewJoinGroupRequestProtocol()
					kp.Name, kp.Metadata = p.Name, p.Metadata
					k.Protocols = append(k.Protocols, kp)
				}
				k.Reason = ptrOf(r.Reason)
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "JoinGroup", key: KeyJoinGroup, min: 0, max: 9, flexFrom: 6,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &JoinGroupResponse{
				ThrottleMillis: g.i32(), ErrorCode: g.code(), Generation: g.i32(), ProtocolType: g.ns(), Protocol: g.ns(),
				LeaderID: g.str(), SkipAssignment: g.bool(), MemberID: g.str(),
			}
			k := kmsg.NewPtrJoinGroupResponse()
			k.ThrottleMillis, k.ErrorCode, k.Generation = r.ThrottleMillis, int16(r.ErrorCode), r.Generation
			k.ProtocolType, k.Protocol = ptrOf(r.ProtocolType), ptrOf(r.Protocol)
			k.LeaderID, k.SkipAssignment, k.MemberID = r.LeaderID, r.SkipAssignment, r.MemberID
			for range g.nInner() {
				m := JoinGroupResponseMember{MemberID: g.str(), InstanceID: g.ns(), ProtocolMetadata: g.bytes()}
				if g.r.IntN(6) == 0 {
					m.ProtocolMetadata = nil // non-nullable: written as empty
				}
				r.Members = append(r.Members, m)
				km := kmsg.NewJoinGroupResponseMember()
				km.MemberID, km.InstanceID, km.ProtocolMetadata = m.MemberID, ptrOf(m.InstanceID), m.ProtocolMetadata
				k.Members = append(k.Members, km)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrJoinGroupResponse() },
	})
}

func TestJoinGroupRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("JoinGroup")) }
func TestJoinGroupResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("JoinGroup")) }

// TestJoinGroupProtocols checks that protocol metadata bytes come through
// verbatim, as a Java consumer offering two assignors sends them.
func TestJoinGroupProtocols(t *testing.T) {
	sub := []byte{0, 3, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	for v := int16(0); v <= 9; v++ {
		k := kmsg.NewPtrJoinGroupRequest()
		k.Version = v
		k.Group, k.SessionTimeoutMillis, k.RebalanceTimeoutMillis, k.ProtocolType = "g", 45000, 300000, "consumer"
		k.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: sub}, {Name: "cooperative-sticky", Metadata: sub[:10]}}
		var r JoinGroupRequest
		if err := r.Decode(k.AppendTo(nil), v); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(r.Protocols) != 2 || r.Protocols[0].Name != "range" || !bytes.Equal(r.Protocols[0].Metadata, sub) ||
			r.Protocols[1].Name != "cooperative-sticky" || !bytes.Equal(r.Protocols[1].Metadata, sub[:10]) {
			t.Fatalf("v%d: protocols %+v", v, r.Protocols)
		}
		if want := int32(300000); v == 0 {
			if r.RebalanceTimeoutMillis != -1 {
				t.Fatalf("v0: RebalanceTimeoutMillis = %d, want -1 (absent)", r.RebalanceTimeoutMillis)
			}
		} else if r.RebalanceTimeoutMillis != want {
			t.Fatalf("v%d: RebalanceTimeoutMillis = %d", v, r.RebalanceTimeoutMillis)
		}
	}
}

// TestJoinGroupResponseNullProtocol checks that a null Protocol is written
// as "" before v7, where the field is not nullable.
func TestJoinGroupResponseNullProtocol(t *testing.T) {
	for v := int16(0); v <= 9; v++ {
		r := &JoinGroupResponse{Generation: 1}
		k := kmsg.NewPtrJoinGroupResponse()
		k.Version = v
		if err := k.ReadFrom(r.AppendTo(nil, v)); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if v < 7 && (k.Protocol == nil || *k.Protocol != "") || v >= 7 && k.Protocol != nil {
			t.Fatalf("v%d: Protocol = %v", v, k.Protocol)
		}
	}
}
