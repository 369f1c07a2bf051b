package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "Heartbeat", key: KeyHeartbeat, min: 0, max: 4, flexFrom: 4,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrHeartbeatRequest()
			k.Group, k.Generation, k.MemberID, k.InstanceID = g.str(), g.i32(), g.str(), g.ptr()
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r HeartbeatRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrHeartbeatRequest()
				k.Group, k.Generation, k.MemberID, k.InstanceID = r.Group, r.Generation, r.MemberID, ptrOf(r.InstanceID)
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "Heartbeat", key: KeyHeartbeat, min: 0, max: 4, flexFrom: 4,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &HeartbeatResponse{ThrottleMillis: g.i32(), ErrorCode: g.code()}
			k := kmsg.NewPtrHeartbeatResponse()
			k.ThrottleMillis, k.ErrorCode = r.ThrottleMillis, int16(r.ErrorCode)
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrHeartbeatResponse() },
	})
}

func TestHeartbeatRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("Heartbeat")) }
func TestHeartbeatResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("Heartbeat")) }
