package wire

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// csFuzzAPIs are the request APIs in key order; the fuzz input's first byte
// picks one.
func csFuzzAPIs() []csReqAPI {
	apis := slices.Clone(csRequestAPIs)
	slices.SortFunc(apis, func(a, b csReqAPI) int { return int(a.key) - int(b.key) })
	return apis
}

// FuzzConsumeRequests feeds every consume-side request decoder arbitrary
// bytes: data[0] picks the API (in key order), data[1] the version within
// its range, the rest is the body. Decoding must never panic. When we accept
// a body:
//   - kmsg must accept it too and read the same values (unknown tags, which
//     we skip, aside);
//   - our values re-encoded by kmsg must decode to the same values again.
func FuzzConsumeRequests(f *testing.F) {
	apis := csFuzzAPIs()
	for i, a := range apis {
		for v := a.min; v <= a.max; v++ {
			for _, variant := range []int{0, 1} {
				body := csEncodeRequest(a, v, 1, variant, v >= a.flexFrom)
				f.Add(append([]byte{byte(i), byte(v - a.min)}, body...))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		a := apis[int(data[0])%len(apis)]
		v := a.min + int16(int(data[1])%int(a.max-a.min+1))
		body := data[2:]
		ours, err := a.newDecode()(body, v)
		if err != nil {
			return
		}
		ours.SetVersion(v)
		b2 := ours.AppendTo(nil)

		theirs := a.build(newVariantGen(0, 0), v, false)
		reflect.ValueOf(theirs).Elem().SetZero() // kmsg reads into existing slices
		theirs.SetVersion(v)
		if err := theirs.ReadFrom(body); err != nil {
			t.Fatalf("%s v%d: we accept a body kmsg rejects (%v): %x", a.name, v, err, body)
		}
		csNormalizeKmsg(theirs)
		if b := theirs.AppendTo(nil); !bytes.Equal(b, b2) {
			t.Fatalf("%s v%d: kmsg reads other values than we do\n ours %x\nkmsg %x", a.name, v, b2, b)
		}

		again, err := a.newDecode()(b2, v)
		if err != nil {
			t.Fatalf("%s v%d: our values re-encoded do not decode: %v", a.name, v, err)
		}
		again.SetVersion(v)
		if b3 := again.AppendTo(nil); !bytes.Equal(b2, b3) {
			t.Fatalf("%s v%d: decode/encode not stable", a.name, v)
		}
	})
}

// csNormalizeKmsg clears what kmsg keeps and we skip: unknown tags on every
// struct, and the Fetch tags kmsg knows that are replica-only above our
// versions.
func csNormalizeKmsg(m csKmsg) {
	csClearTags(reflect.ValueOf(m).Elem())
	if f, ok := m.(*kmsg.FetchRequest); ok {
		f.ReplicaState.ID, f.ReplicaState.Epoch = -1, -1
		for i := range f.Topics {
			for j := range f.Topics[i].Partitions {
				p := &f.Topics[i].Partitions[j]
				p.ReplicaDirectoryID, p.HighWatermark = [16]byte{}, 9223372036854775807
			}
		}
	}
}

var csTagsType = reflect.TypeFor[kmsg.Tags]()

func csClearTags(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == csTagsType {
			v.Set(reflect.Zero(csTagsType))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				csClearTags(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			csClearTags(v.Index(i))
		}
	}
}
