package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "FindCoordinator", key: KeyFindCoordinator, min: 0, max: 6, flexFrom: 3,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrFindCoordinatorRequest()
			k.CoordinatorKey = g.str()
			k.CoordinatorType = g.i8()
			k.CoordinatorKeys = g.strs(g.nInner()) // v4+ batched keys (KIP-699)
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r FindCoordinatorRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrFindCoordinatorRequest()
				k.CoordinatorKey = r.CoordinatorKey
				k.CoordinatorType = r.CoordinatorType
				k.CoordinatorKeys = append([]string(nil), r.CoordinatorKeys...)
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "FindCoordinator", key: KeyFindCoordinator, min: 0, max: 6, flexFrom: 3,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &FindCoordinatorResponse{ThrottleMillis: g.i32(), ErrorCode: g.code(), ErrorMessage: g.ns(), NodeID: g.i32(), Host: g.str(), Port: g.i32()}
			k := kmsg.NewPtrFindCoordinatorResponse()
			k.ThrottleMillis, k.ErrorCode, k.ErrorMessage = r.ThrottleMillis, int16(r.ErrorCode), ptrOf(r.ErrorMessage)
			k.NodeID, k.Host, k.Port = r.NodeID, r.Host, r.Port
			for range g.nInner() {
				c := FindCoordinatorResponseCoordinator{Key: g.str(), NodeID: g.i32(), Host: g.str(), Port: g.i32(), ErrorCode: g.code(), ErrorMessage: g.ns()}
				r.Coordinators = append(r.Coordinators, c)
				kc := kmsg.NewFindCoordinatorResponseCoordinator()
				kc.Key, kc.NodeID, kc.Host, kc.Port, kc.ErrorCode, kc.ErrorMessage = c.Key, c.NodeID, c.Host, c.Port, int16(c.ErrorCode), ptrOf(c.ErrorMessage)
				k.Coordinators = append(k.Coordinators, kc)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrFindCoordinatorResponse() },
	})
}

func TestFindCoordinatorRequestOracle(t *testing.T) { csCheckRequest(t, csFindReq("FindCoordinator")) }
func TestFindCoordinatorResponseOracle(t *testing.T) {
	csCheckResponse(t, csFindResp("FindCoordinator"))
}

// TestFindCoordinatorBatched checks the v4+ batched form as Java sends it.
func TestFindCoordinatorBatched(t *testing.T) {
	k := kmsg.NewPtrFindCoordinatorRequest()
	k.Version = 6
	k.CoordinatorKey = "ignored from v4"
	k.CoordinatorKeys = []string{"group-a", "group-b", ""}
	var r FindCoordinatorRequest
	r.CoordinatorKey = "stale"
	if err := r.Decode(k.AppendTo(nil), 6); err != nil {
		t.Fatal(err)
	}
	if r.CoordinatorKey != "" || r.CoordinatorType != CoordinatorTypeGroup || len(r.CoordinatorKeys) != 3 || r.CoordinatorKeys[1] != "group-b" {
		t.Fatalf("%+v", r)
	}
	k.Version = 0
	k.CoordinatorType = 1 // not on the wire at v0
	if err := r.Decode(k.AppendTo(nil), 0); err != nil {
		t.Fatal(err)
	}
	if r.CoordinatorKey != "ignored from v4" || r.CoordinatorType != CoordinatorTypeGroup || len(r.CoordinatorKeys) != 0 {
		t.Fatalf("%+v", r)
	}
}
