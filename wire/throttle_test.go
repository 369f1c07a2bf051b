package wire

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPutThrottleMatchesKmsg checks throttleFirst against kmsg, the codec
// oracle: for every API and version kiggy serves, PutThrottle writes the
// field exactly where kmsg encodes a response's throttle as the body's
// first four bytes.
func TestPutThrottleMatchesKmsg(t *testing.T) {
	const ms = 0x01020304
	for _, a := range APIs {
		for v := a.Min; v <= a.Max; v++ {
			r := kmsg.ResponseForKey(int16(a.Key))
			if r == nil {
				t.Fatalf("kmsg has no response for key %d", a.Key)
			}
			r.SetVersion(v)
			want := false
			if st, ok := r.(kmsg.SetThrottleResponse); ok {
				st.SetThrottle(ms)
				b := r.AppendTo(nil)
				want = len(b) >= 4 && binary.BigEndian.Uint32(b) == ms
			}
			body := make([]byte, 8)
			if got := PutThrottle(body, a.Key, v, ms); got != want {
				t.Errorf("%v v%d: PutThrottle = %v, kmsg has the throttle first: %v", a.Key, v, got, want)
			} else if got && binary.BigEndian.Uint32(body) != ms {
				t.Errorf("%v v%d: wrote %x", a.Key, v, body[:4])
			}
		}
	}
	if PutThrottle(make([]byte, 3), KeyFetch, 4, ms) || PutThrottle(make([]byte, 8), -1, 0, ms) || PutThrottle(make([]byte, 8), MaxAPIKey, 0, ms) {
		t.Error("PutThrottle wrote into a short body or for a key out of range")
	}
}
