package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestApiVersionsRequestOracle(t *testing.T) {
	g := newOracleGen(18)
	var ours APIVersionsRequest
	for v := int16(apiVersionsMinVersion); v <= apiVersionsMaxVersion; v++ {
		for range 50 {
			k := kmsg.NewPtrApiVersionsRequest()
			k.Version = v
			if v >= 3 {
				k.ClientSoftwareName = g.str()
				k.ClientSoftwareVersion = g.str()
			}
			plain := k.AppendTo(nil)
			if v >= 3 {
				g.unknownTags(&k.UnknownTags)
			}
			body := k.AppendTo(nil)
			if err := ours.Decode(body, v); err != nil {
				t.Fatalf("v%d: %v (%x)", v, err, body)
			}
			if ours.ClientSoftwareName != k.ClientSoftwareName || ours.ClientSoftwareVersion != k.ClientSoftwareVersion {
				t.Fatalf("v%d: got %+v want %q %q", v, ours, k.ClientSoftwareName, k.ClientSoftwareVersion)
			}
			if got := ours.AppendTo(nil, v); !bytes.Equal(got, plain) {
				t.Fatalf("v%d: AppendTo %x, kmsg %x", v, got, plain)
			}
			prodCheckPrefixes(t, body, func(b []byte) error { return new(APIVersionsRequest).Decode(b, v) })
		}
	}
	// KIP-511: a version we do not serve is not parsed.
	if err := ours.Decode([]byte{0xff}, 5); err != ErrUnsupportedVersion {
		t.Fatalf("v5: %v", err)
	}
	if err := ours.Decode(nil, -1); err != ErrUnsupportedVersion {
		t.Fatalf("v-1: %v", err)
	}
}

func TestApiVersionsResponseOracle(t *testing.T) {
	g := newOracleGen(1818)
	var buf []byte
	for v := int16(apiVersionsMinVersion); v <= apiVersionsMaxVersion; v++ {
		for range 50 {
			ours := APIVersionsResponse{ErrorCode: ErrorCode(g.i16()), ThrottleMillis: g.i32()}
			for range g.n(true) {
				ours.APIKeys = append(ours.APIKeys, APIVersionsKey{APIKey(g.i16()), g.i16(), g.i16()})
			}
			buf = ours.AppendTo(buf[:0], v)
			k := kmsg.NewPtrApiVersionsResponse()
			k.Version = v
			if err := k.ReadFrom(buf); err != nil {
				t.Fatalf("v%d: kmsg: %v", v, err)
			}
			if ErrorCode(k.ErrorCode) != ours.ErrorCode || len(k.ApiKeys) != len(ours.APIKeys) {
				t.Fatalf("v%d: kmsg read %+v from %+v", v, k, ours)
			}
			for i, e := range k.ApiKeys {
				if (APIVersionsKey{APIKey(e.ApiKey), e.MinVersion, e.MaxVersion}) != ours.APIKeys[i] {
					t.Fatalf("v%d: key %d: %+v vs %+v", v, i, e, ours.APIKeys[i])
				}
			}
			wantThrottle := ours.ThrottleMillis
			if v < 1 {
				wantThrottle = 0
			}
			if k.ThrottleMillis != wantThrottle || k.FinalizedFeaturesEpoch != -1 || len(k.SupportedFeatures) != 0 {
				t.Fatalf("v%d: throttle %d epoch %d features %v", v, k.ThrottleMillis, k.FinalizedFeaturesEpoch, k.SupportedFeatures)
			}
			// kmsg re-encodes to the same bytes: nothing trailing, nothing missing.
			if again := k.AppendTo(nil); !bytes.Equal(again, buf) {
				t.Fatalf("v%d: kmsg re-encode %x, ours %x", v, again, buf)
			}
		}
	}
}

// prodReadHex reads a golden .hex file: hex digits, whitespace ignored, '#'
// comments to the end of the line.
func prodReadHex(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for line := range strings.SplitSeq(string(raw), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

func TestApiVersionsGolden(t *testing.T) {
	t.Run("v4 request", func(t *testing.T) {
		frame := prodReadHex(t, "testdata/golden/apiversions_v4_request.hex")
		if int(int32(frame[0])<<24|int32(frame[1])<<16|int32(frame[2])<<8|int32(frame[3])) != len(frame)-4 {
			t.Fatalf("size prefix does not match %d bytes", len(frame)-4)
		}
		h, body, err := ParseRequestHeader(frame[4:])
		if err != nil {
			t.Fatal(err)
		}
		if h != (RequestHeader{APIKey: KeyAPIVersions, APIVersion: 4, CorrelationID: 0, ClientID: NullStringOf("producer-1")}) {
			t.Fatalf("header %+v", h)
		}
		var req APIVersionsRequest
		if err := req.Decode(body, h.APIVersion); err != nil {
			t.Fatal(err)
		}
		if req.ClientSoftwareName != "apache-kafka-java" || req.ClientSoftwareVersion != "4.0.0" || !req.Valid(4) {
			t.Fatalf("body %+v", req)
		}
		// Encoding the same request reproduces the bytes.
		out := AppendRequestHeader(nil, h)
		out = req.AppendTo(out, 4)
		if !bytes.Equal(out, frame[4:]) {
			t.Fatalf("re-encoded %x\nwant        %x", out, frame[4:])
		}
	})
	t.Run("KIP-511 v0 error response", func(t *testing.T) {
		want := prodReadHex(t, "testdata/golden/apiversions_unsupported_response.hex")
		out, at := ReserveInt32(nil)
		out = AppendResponseHeader(out, KeyAPIVersions, 5, 0)
		out = AppendAPIVersionsUnsupported(out, 0, 4)
		PutInt32(out, at, int32(len(out)-4))
		if !bytes.Equal(out, want) {
			t.Fatalf("got  %x\nwant %x", out, want)
		}
		// It is exactly what kmsg (and so franz-go's fallback) reads as v0,
		// and what our v0 encoder writes for the same content.
		k := kmsg.NewPtrApiVersionsResponse()
		k.Version = 0
		if err := k.ReadFrom(out[8:]); err != nil || k.ErrorCode != 35 || len(k.ApiKeys) != 1 ||
			k.ApiKeys[0].ApiKey != 18 || k.ApiKeys[0].MinVersion != 0 || k.ApiKeys[0].MaxVersion != 4 {
			t.Fatalf("kmsg: %+v %v", k, err)
		}
		r := APIVersionsResponse{ErrorCode: UnsupportedVersion, APIKeys: []APIVersionsKey{{KeyAPIVersions, 0, 4}}}
		if got := r.AppendTo(nil, 0); !bytes.Equal(got, out[8:]) {
			t.Fatalf("v0 encoder %x", got)
		}
	})
}

var prodSoftwareRE = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func TestValidClientSoftware(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"apache-kafka-java", true}, {"4.0.0", true}, {"librdkafka", true}, {"kgo", true},
		{"sarama", true}, {"v1.22.3-rc.1", true}, {"a", true}, {"9", true}, {"a.b", true},
		{"", false}, {"-", false}, {".", false}, {"a-", false}, {"-a", false}, {"a.", false},
		{".a", false}, {"a b", false}, {"a_b", false}, {"ä", false}, {"a\x00b", false}, {"a/b", false},
	} {
		if got := ValidClientSoftware(tc.s); got != tc.want {
			t.Errorf("ValidClientSoftware(%q) = %v", tc.s, got)
		}
		if prodSoftwareRE.MatchString(tc.s) != tc.want {
			t.Errorf("regexp disagrees on %q", tc.s)
		}
	}
	// Exhaustive over short strings of a small alphabet, against regexp.
	const alphabet = "aZ9-._ \xff"
	var rec func(prefix string, depth int)
	rec = func(prefix string, depth int) {
		if ValidClientSoftware(prefix) != prodSoftwareRE.MatchString(prefix) {
			t.Fatalf("disagree on %q", prefix)
		}
		if depth == 0 {
			return
		}
		for i := range len(alphabet) {
			rec(prefix+alphabet[i:i+1], depth-1)
		}
	}
	rec("", 4)

	r := APIVersionsRequest{ClientSoftwareName: "kgo", ClientSoftwareVersion: "bad version"}
	if r.Valid(3) || !r.Valid(2) {
		t.Fatal("Valid ignores version or value")
	}
}

func FuzzApiVersionsRequest(f *testing.F) {
	for v := int16(0); v <= 5; v++ {
		k := kmsg.NewPtrApiVersionsRequest()
		k.Version = v
		k.ClientSoftwareName, k.ClientSoftwareVersion = "apache-kafka-java", "4.0.0"
		f.Add(k.AppendTo(nil))
	}
	f.Add([]byte{1, 1, 1, 0x80})
	f.Fuzz(func(t *testing.T, body []byte) {
		var r APIVersionsRequest
		for v := int16(-1); v <= apiVersionsMaxVersion+1; v++ {
			err := r.Decode(body, v)
			if v < apiVersionsMinVersion || v > apiVersionsMaxVersion {
				if !errors.Is(err, ErrUnsupportedVersion) {
					t.Fatalf("v%d: %v", v, err)
				}
				continue
			}
			if err != nil {
				continue
			}
			_ = r.Valid(v)
			// Whatever we accept, kmsg accepts with the same content.
			k := kmsg.NewPtrApiVersionsRequest()
			k.Version = v
			if err := k.ReadFrom(body); err != nil || k.ClientSoftwareName != r.ClientSoftwareName || k.ClientSoftwareVersion != r.ClientSoftwareVersion {
				t.Fatalf("v%d: kmsg %+v %v, ours %+v", v, k, err, r)
			}
			// And our encoding of it decodes to the same.
			var again APIVersionsRequest
			if err := again.Decode(r.AppendTo(nil, v), v); err != nil || again != r {
				t.Fatalf("v%d: round trip %+v %v", v, again, err)
			}
		}
	})
}
