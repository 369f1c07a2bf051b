package wire

// Shared helpers for the consume-side codec tests (Fetch, ListOffsets,
// FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, DescribeGroups, ListGroups,
// OffsetForLeaderEpoch). franz-go's kmsg is the independent oracle
// (docs/design/style.md habit 8):
//
//   - Requests: kmsg encodes a request with random contents (and, in a
//     second encoding from the same seed, unknown tagged fields on every
//     struct); we decode it; our decoded values are converted back to kmsg
//     and re-encoded, and must give exactly kmsg's bytes without the unknown
//     tags. Every field we decode is therefore checked for value, nullness
//     and position.
//   - Responses: we encode random contents; the same values converted to
//     kmsg must encode to the same bytes, and kmsg must read ours back and
//     re-encode them unchanged.
//
// Names carry a "cs" prefix so they cannot clash with the helpers of the
// other codec files in this package.

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// csKmsg is what the harness needs from a kmsg request or response.
type csKmsg interface {
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
	SetVersion(int16)
	IsFlexible() bool
}

// csVariants are the content shapes every codec is checked with.
var csVariants = []struct {
	name         string
	outer, inner int  // maximum counts of outer (topics, groups) and inner (partitions, members) arrays
	empty        bool // every array empty, every nullable null, every string ""
}{
	{"empty", 0, 0, true},
	{"small", 3, 4, false},
	{"many-partitions", 2, 400, false},
	{"many-topics", 150, 2, false},
	{"random", 6, 8, false},
}

// csReqAPI describes one request decoder for the oracle and fuzz tests.
type csReqAPI struct {
	name      string
	key       APIKey
	min, max  int16
	flexFrom  int16
	build     func(g *oracleGen, version int16, tags bool) csKmsg
	newDecode func() func(body []byte, version int16) (csKmsg, error)
}

// csRespAPI describes one response encoder for the oracle tests.
type csRespAPI struct {
	name     string
	key      APIKey
	min, max int16
	flexFrom int16
	// build returns our encoder for random contents and the same contents
	// as a kmsg response.
	build func(g *oracleGen, version int16) (enc func(dst []byte) []byte, want csKmsg)
	// empty returns a kmsg response to read into.
	empty func() csKmsg
}

// csRequestAPIs and csResponseAPIs are filled by each codec's test file
// through init, in key order at use.
var (
	csRequestAPIs  []csReqAPI
	csResponseAPIs []csRespAPI
)

func csRegisterRequest(a csReqAPI)   { csRequestAPIs = append(csRequestAPIs, a) }
func csRegisterResponse(a csRespAPI) { csResponseAPIs = append(csResponseAPIs, a) }

// csCheckRequest runs the request oracle for every version and variant of
// a, decoding everything into one reused decoder (so stale contents from a
// bigger earlier request must never leak) and also into a fresh one.
func csCheckRequest(t *testing.T, a csReqAPI) {
	t.Helper()
	reused := a.newDecode()
	for v := a.min; v <= a.max; v++ {
		for vi := range csVariants {
			for seed := uint64(1); seed <= 3; seed++ {
				withTags := a.build(newVariantGen(seed, vi), v, true)
				withTags.SetVersion(v)
				in := withTags.AppendTo(nil)
				plain := a.build(newVariantGen(seed, vi), v, false)
				plain.SetVersion(v)
				want := plain.AppendTo(nil)
				if v >= a.flexFrom && vi != 0 && bytes.Equal(in, want) {
					t.Fatalf("%s v%d %s: unknown tags were not encoded", a.name, v, csVariants[vi].name)
				}
				for _, dec := range []func([]byte, int16) (csKmsg, error){reused, a.newDecode()} {
					got, err := dec(in, v)
					if err != nil {
						t.Fatalf("%s v%d %s seed %d: decode: %v", a.name, v, csVariants[vi].name, seed, err)
					}
					got.SetVersion(v)
					if b := got.AppendTo(nil); !bytes.Equal(b, want) {
						t.Fatalf("%s v%d %s seed %d: decoded values re-encode differently\n got %x\nwant %x",
							a.name, v, csVariants[vi].name, seed, csHead(b), csHead(want))
					}
				}
				// Every strict prefix must fail, never panic; trailing
				// bytes are an error.
				dec := a.newDecode()
				for cut := 0; cut < len(in); cut += 1 + len(in)/97 {
					if _, err := dec(in[:cut], v); err == nil {
						t.Fatalf("%s v%d %s: %d-byte prefix of %d decoded without error", a.name, v, csVariants[vi].name, cut, len(in))
					}
				}
				if _, err := dec(append(in[:len(in):len(in)], 0), v); err == nil {
					t.Fatalf("%s v%d %s: trailing byte accepted", a.name, v, csVariants[vi].name)
				}
			}
		}
		if v == a.min {
			if _, err := a.newDecode()(nil, a.min-1); err == nil {
				t.Fatalf("%s: v%d (below range) accepted", a.name, a.min-1)
			}
		}
	}
	if _, err := a.newDecode()(nil, a.max+1); err == nil {
		t.Fatalf("%s: v%d (above range) accepted", a.name, a.max+1)
	}
}

// csCheckResponse runs the response oracle for every version and variant of a.
func csCheckResponse(t *testing.T, a csRespAPI) {
	t.Helper()
	for v := a.min; v <= a.max; v++ {
		for vi := range csVariants {
			for seed := uint64(1); seed <= 3; seed++ {
				enc, want := a.build(newVariantGen(seed, vi), v)
				want.SetVersion(v)
				wantB := want.AppendTo(nil)
				prefix := []byte("prefix")
				got := enc(append([]byte(nil), prefix...))
				if !bytes.HasPrefix(got, prefix) {
					t.Fatalf("%s v%d: encoder clobbered dst", a.name, v)
				}
				got = got[len(prefix):]
				if !bytes.Equal(got, wantB) {
					t.Fatalf("%s v%d %s seed %d: our bytes differ from kmsg's for the same values\n got %x\nwant %x",
						a.name, v, csVariants[vi].name, seed, csHead(got), csHead(wantB))
				}
				back := a.empty()
				back.SetVersion(v)
				if err := back.ReadFrom(got); err != nil {
					t.Fatalf("%s v%d %s: kmsg cannot read our response: %v", a.name, v, csVariants[vi].name, err)
				}
				if b := back.AppendTo(nil); !bytes.Equal(b, got) {
					t.Fatalf("%s v%d %s: kmsg read our response to different values", a.name, v, csVariants[vi].name)
				}
			}
		}
	}
}

// csHead shortens long byte dumps in failure messages.
func csHead(b []byte) []byte {
	if len(b) > 256 {
		return b[:256]
	}
	return b
}

func csFindReq(name string) csReqAPI {
	for _, a := range csRequestAPIs {
		if a.name == name {
			return a
		}
	}
	panic("no request API " + name)
}

func csFindResp(name string) csRespAPI {
	for _, a := range csResponseAPIs {
		if a.name == name {
			return a
		}
	}
	panic("no response API " + name)
}

// csEncodeRequest encodes a kmsg request built from seed and variant.
func csEncodeRequest(a csReqAPI, v int16, seed uint64, variant int, tags bool) []byte {
	k := a.build(newVariantGen(seed, variant), v, tags)
	k.SetVersion(v)
	return k.AppendTo(nil)
}

// TestConsumeAPIRows checks our rows in the APIs table against the codecs
// and kmsg: same range, and the flexible-from version is where kmsg's request
// and response turn flexible.
func TestConsumeAPIRows(t *testing.T) {
	resp := map[APIKey]csRespAPI{}
	for _, a := range csResponseAPIs {
		resp[a.key] = a
	}
	// The consume-side APIs: Fetch, ListOffsets, the group APIs,
	// DeleteGroups, OffsetDelete and DeleteRecords, the four SASL/SCRAM
	// APIs with DescribeClientQuotas and AlterClientQuotas
	// (wire/sasl_test.go), and the two KIP-848 group APIs; each must have
	// both a request and a response row.
	if len(csRequestAPIs) != 23 || len(resp) != 23 {
		t.Fatalf("%d request and %d response APIs registered, want 23", len(csRequestAPIs), len(resp))
	}
	for _, a := range csRequestAPIs {
		row, ok := LookupAPI(a.key)
		want := APIRange{a.key, a.min, a.max, a.flexFrom}
		if !ok || row != want {
			t.Errorf("%s: table row %+v, want %+v", a.name, row, want)
		}
		r := resp[a.key]
		if r.min != a.min || r.max != a.max || r.flexFrom != a.flexFrom {
			t.Errorf("%s: response range differs from request range", a.name)
		}
		for v := a.min; v <= a.max; v++ {
			kreq := a.build(newVariantGen(0, 0), v, false)
			kreq.SetVersion(v)
			_, kresp := r.build(newVariantGen(0, 0), v)
			kresp.SetVersion(v)
			if f := v >= a.flexFrom; Flexible(a.key, v) != f || kreq.IsFlexible() != f || kresp.IsFlexible() != f {
				t.Errorf("%s v%d: flexible: table %v, kmsg request %v, response %v", a.name, v, Flexible(a.key, v), kreq.IsFlexible(), kresp.IsFlexible())
			}
		}
	}
}

// TestConsumeThroughHeader frames a kmsg-encoded request of every API and
// version with a kmsg request header (v1, or v2 with tags when flexible)
// and parses it with ParseRequestHeader, then decodes the body.
func TestConsumeThroughHeader(t *testing.T) {
	for _, a := range csRequestAPIs {
		for v := a.min; v <= a.max; v++ {
			k := a.build(newVariantGen(5, 1), v, true)
			k.SetVersion(v)
			req, ok := k.(kmsg.Request)
			if !ok {
				t.Fatalf("%s: not a kmsg.Request", a.name)
			}
			frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("client")).AppendRequest(nil, req, 77)
			h, body, err := ParseRequestHeader(frame[4:])
			if err != nil || h.APIKey != a.key || h.APIVersion != v || h.CorrelationID != 77 || h.ClientID != NullStringOf("client") {
				t.Fatalf("%s v%d: header %+v, %v", a.name, v, h, err)
			}
			if _, err := a.newDecode()(body, v); err != nil {
				t.Fatalf("%s v%d: body after header: %v", a.name, v, err)
			}
		}
		if _, _, err := ParseRequestHeader(kmsg.NewRequestFormatter().AppendRequest(nil, csVersioned(a, a.max+1), 1)[4:]); err == nil {
			t.Errorf("%s: header of v%d accepted", a.name, a.max+1)
		}
	}
}

func csVersioned(a csReqAPI, v int16) kmsg.Request {
	k := a.build(newVariantGen(0, 0), v, false)
	k.SetVersion(v)
	return k.(kmsg.Request)
}
