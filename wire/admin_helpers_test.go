package wire

// Shared helpers for the admin codec tests (CreateTopics, DeleteTopics,
// CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
// DescribeCluster, DescribeProducers, DescribeTopicPartitions). franz-go's kmsg is the independent oracle (docs/design/style.md
// habit 8): requests are encoded by kmsg and decoded by us, our responses
// are decoded by kmsg. Names carry an "adm" prefix so they cannot clash with
// the helpers of the other codec files in this package.

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// admStripTags zeroes every kmsg.Tags field reachable from v (a pointer), so
// a kmsg struct decoded from bytes carrying unknown tags compares equal to
// one built from our decode, which skips them.
func admStripTags(v any) {
	admStrip(reflect.ValueOf(v))
}

var admTagsType = reflect.TypeFor[kmsg.Tags]()

func admStrip(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			admStrip(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == admTagsType {
			v.Set(reflect.Zero(admTagsType))
			return
		}
		for i := range v.NumField() {
			admStrip(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			admStrip(v.Index(i))
		}
	}
}

// admMsg is the part of kmsg's Request and Response interfaces the oracle
// uses.
type admMsg interface {
	SetVersion(int16)
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
}

// admKmsgDecode decodes body with kmsg at version v into a fresh message of
// m's type, with unknown tags stripped.
func admKmsgDecode[T any, P interface {
	*T
	admMsg
}](body []byte, v int16) (P, error) {
	p := P(new(T))
	p.SetVersion(v)
	if err := p.ReadFrom(body); err != nil {
		return nil, err
	}
	admStripTags(p)
	return p, nil
}

// admCheckEqual fails with both values printed when got and want differ.
func admCheckEqual(t testing.TB, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, admDump(got), admDump(want))
	}
}

// admDump prints a value with pointers followed, for failure messages.
func admDump(v any) string {
	var b strings.Builder
	admDumpTo(&b, reflect.ValueOf(v))
	return b.String()
}

func admDumpTo(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString("&")
		admDumpTo(b, v.Elem())
	case reflect.Struct:
		if v.Type() == admTagsType {
			b.WriteString("{tags}")
			return
		}
		b.WriteString(v.Type().Name() + "{")
		for i := range v.NumField() {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(v.Type().Field(i).Name + ":")
			admDumpTo(b, v.Field(i))
		}
		b.WriteString("}")
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString("[")
		for i := range v.Len() {
			if i > 0 {
				b.WriteString(" ")
			}
			admDumpTo(b, v.Index(i))
		}
		b.WriteString("]")
	default:
		if v.CanInterface() {
			fmt.Fprintf(b, "%q", fmt.Sprint(v.Interface()))
		} else {
			b.WriteString(v.String())
		}
	}
}

// admCheckResponse checks an encoded response against kmsg: our bytes must
// equal kmsg's encoding of the same values (want, built by the caller at
// version v), and kmsg must decode our bytes and re-encode them unchanged.
func admCheckResponse[T any, P interface {
	*T
	admMsg
}](t testing.TB, ours []byte, want P, v int16) {
	t.Helper()
	want.SetVersion(v)
	exp := want.AppendTo(nil)
	if !bytes.Equal(ours, exp) {
		t.Fatalf("v%d: our bytes differ from kmsg's\n ours %x\n kmsg %x\n values %s", v, ours, exp, admDump(want))
	}
	got, err := admKmsgDecode[T, P](ours, v)
	if err != nil {
		t.Fatalf("v%d: kmsg cannot decode our bytes: %v\n%x", v, err, ours)
	}
	if again := got.AppendTo(nil); !bytes.Equal(again, ours) {
		t.Fatalf("v%d: kmsg decode+encode changed our bytes\n ours %x\n kmsg %x", v, ours, again)
	}
}

// admIters is how many random messages each oracle test tries per version.
const admIters = 150

// admRequestOracle checks one request decoder against kmsg for every version
// in [lo, hi]: admIters random requests per version (with unknown tags when
// flexible) are encoded by kmsg and decoded by us, into a fresh struct and
// into one reused across all of them; toKmsg of each result must equal
// kmsg's own decode of the same bytes. The first few bodies are also
// checked to fail, never panic, when truncated anywhere or extended by one
// byte.
func admRequestOracle[T any, P interface {
	*T
	admMsg
}, R any](t *testing.T, seed uint64, lo, hi int16,
	gen func(g *oracleGen, v int16) P,
	decode func(r *R, body []byte, v int16) error,
	toKmsg func(r *R, v int16) P,
) {
	t.Helper()
	g := newOracleGen(seed)
	var reused, scratch R
	for v := lo; v <= hi; v++ {
		for i := range admIters {
			req := gen(g, v)
			req.SetVersion(v)
			body := req.AppendTo(nil)
			want, err := admKmsgDecode[T, P](body, v)
			if err != nil {
				t.Fatalf("v%d #%d: kmsg cannot decode its own request: %v", v, i, err)
			}
			var fresh R
			if err := decode(&fresh, body, v); err != nil {
				t.Fatalf("v%d #%d: decode: %v\n%x", v, i, err, body)
			}
			admCheckEqual(t, fmt.Sprintf("v%d #%d fresh", v, i), toKmsg(&fresh, v), want)
			if err := decode(&reused, body, v); err != nil {
				t.Fatalf("v%d #%d: decode into reused struct: %v", v, i, err)
			}
			admCheckEqual(t, fmt.Sprintf("v%d #%d reused", v, i), toKmsg(&reused, v), want)

			if i < 8 && len(body) < 1<<13 {
				for cut := range len(body) {
					if err := decode(&scratch, body[:cut], v); err == nil {
						t.Fatalf("v%d #%d: body truncated to %d of %d bytes decoded without error", v, i, cut, len(body))
					}
				}
				if err := decode(&scratch, append(body[:len(body):len(body)], 0), v); err == nil {
					t.Fatalf("v%d #%d: body with a trailing byte decoded without error", v, i)
				}
			}
		}
	}
	for _, v := range []int16{lo - 1, hi + 1, -1, 0x7fff} {
		if err := decode(&scratch, nil, v); err == nil {
			t.Errorf("version %d outside [%d, %d] accepted", v, lo, hi)
		}
	}
}

// admResponseOracle checks one response encoder against kmsg for every
// version in [lo, hi] with admIters random responses per version, and checks
// that AppendTo appends after existing bytes.
func admResponseOracle[T any, P interface {
	*T
	admMsg
}, R any](t *testing.T, seed uint64, lo, hi int16,
	gen func(g *oracleGen, v int16) *R,
	appendTo func(r *R, dst []byte, v int16) []byte,
	toKmsg func(r *R) P,
) {
	t.Helper()
	g := newOracleGen(seed)
	for v := lo; v <= hi; v++ {
		for range admIters {
			r := gen(g, v)
			ours := appendTo(r, nil, v)
			admCheckResponse[T, P](t, ours, toKmsg(r), v)
			pre := []byte("prefix")
			if got := appendTo(r, pre, v); !bytes.Equal(got[:len(pre)], pre) || !bytes.Equal(got[len(pre):], ours) {
				t.Fatalf("v%d: AppendTo after a prefix differs", v)
			}
		}
	}
}

// admI32 copies s the way kmsg decodes a non-nullable []int32: empty is nil.
func admI32(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return append([]int32(nil), s...)
}

// TestAdminAPIRows checks the admin rows of APIs against the codecs'
// version constants and kmsg's flexible versions, for requests and
// responses.
func TestAdminAPIRows(t *testing.T) {
	rows := []struct {
		key              APIKey
		lo, hi, flexFrom int16
		req              kmsg.Request
	}{
		{KeyCreateTopics, createTopicsMin, createTopicsMax, createTopicsFlexible, new(kmsg.CreateTopicsRequest)},
		{KeyDeleteTopics, deleteTopicsMin, deleteTopicsMax, deleteTopicsFlexible, new(kmsg.DeleteTopicsRequest)},
		{KeyCreatePartitions, createPartitionsMin, createPartitionsMax, createPartitionsFlexible, new(kmsg.CreatePartitionsRequest)},
		{KeyDescribeAcls, aclsMin, aclsMax, aclsFlexible, new(kmsg.DescribeACLsRequest)},
		{KeyCreateAcls, aclsMin, aclsMax, aclsFlexible, new(kmsg.CreateACLsRequest)},
		{KeyDeleteAcls, aclsMin, aclsMax, aclsFlexible, new(kmsg.DeleteACLsRequest)},
		{KeyDescribeConfigs, describeConfigsMin, describeConfigsMax, describeConfigsFlexible, new(kmsg.DescribeConfigsRequest)},
		{KeyAlterConfigs, alterConfigsMin, alterConfigsMax, alterConfigsFlexible, new(kmsg.AlterConfigsRequest)},
		{KeyIncrementalAlterConfigs, incrementalAlterConfigsMin, incrementalAlterConfigsMax, incrementalAlterConfigsFlexible, new(kmsg.IncrementalAlterConfigsRequest)},
		{KeyDescribeCluster, describeClusterMin, describeClusterMax, describeClusterFlexible, new(kmsg.DescribeClusterRequest)},
		{KeyDescribeProducers, describeProducersMin, describeProducersMax, describeProducersFlexible, new(kmsg.DescribeProducersRequest)},
		{KeyDescribeTopicPartitions, describeTopicPartitionsMin, describeTopicPartitionsMax, describeTopicPartitionsFlexible, new(kmsg.DescribeTopicPartitionsRequest)},
	}
	for _, r := range rows {
		got, ok := LookupAPI(r.key)
		if want := (APIRange{r.key, r.lo, r.hi, r.flexFrom}); !ok || got != want {
			t.Errorf("key %d: row %+v (found %v), want %+v", r.key, got, ok, want)
		}
		if int16(r.key) != r.req.Key() || r.hi > r.req.MaxVersion() {
			t.Errorf("key %d: kmsg key %d max %d", r.key, r.req.Key(), r.req.MaxVersion())
		}
		resp := r.req.ResponseKind()
		for v := r.lo; v <= r.hi; v++ {
			r.req.SetVersion(v)
			resp.SetVersion(v)
			if f := Flexible(r.key, v); f != r.req.IsFlexible() || f != resp.IsFlexible() {
				t.Errorf("key %d v%d: Flexible %v, kmsg request %v response %v", r.key, v, f, r.req.IsFlexible(), resp.IsFlexible())
			}
		}
	}
	for i := 1; i < len(APIs); i++ {
		if APIs[i-1].Key >= APIs[i].Key {
			t.Errorf("APIs not sorted by key at %d: %d then %d", i, APIs[i-1].Key, APIs[i].Key)
		}
	}
}
