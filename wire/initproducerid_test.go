package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (g *oracleGen) kmsgInitProducerIDRequest(v int16) *kmsg.InitProducerIDRequest {
	k := kmsg.NewPtrInitProducerIDRequest()
	k.Version = v
	k.TransactionalID = ptrOf(g.ns())
	k.TransactionTimeoutMillis = g.i32()
	if g.r.IntN(2) == 0 {
		k.ProducerID, k.ProducerEpoch = g.i64(), g.i16()
	}
	return k
}

func prodInitProducerIDMatches(ours *InitProducerIDRequest, k *kmsg.InitProducerIDRequest, v int16) bool {
	want := InitProducerIDRequest{nsOf(k.TransactionalID), k.TransactionTimeoutMillis, -1, -1}
	if v >= 3 {
		want.ProducerID, want.ProducerEpoch = k.ProducerID, k.ProducerEpoch
	}
	return *ours == want
}

func TestInitProducerIDRequestOracle(t *testing.T) {
	g := newOracleGen(22)
	var ours InitProducerIDRequest
	for v := int16(initProducerIDMinVersion); v <= initProducerIDMaxVersion; v++ {
		for range 50 {
			k := g.kmsgInitProducerIDRequest(v)
			plain := k.AppendTo(nil)
			if v >= 2 {
				g.unknownTags(&k.UnknownTags)
			}
			body := k.AppendTo(nil)
			if err := ours.Decode(body, v); err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
			if !prodInitProducerIDMatches(&ours, k, v) {
				t.Fatalf("v%d: ours %+v kmsg %+v", v, ours, k)
			}
			if got := ours.AppendTo(nil, v); !bytes.Equal(got, plain) {
				t.Fatalf("v%d: AppendTo %x, kmsg %x", v, got, plain)
			}
			prodCheckPrefixes(t, body, func(b []byte) error { return new(InitProducerIDRequest).Decode(b, v) })
		}
	}
	for _, v := range []int16{-1, 6} {
		if err := ours.Decode(nil, v); !errors.Is(err, ErrUnsupportedVersion) {
			t.Fatalf("v%d: %v", v, err)
		}
	}
}

func TestInitProducerIDResponseOracle(t *testing.T) {
	g := newOracleGen(2222)
	for v := int16(initProducerIDMinVersion); v <= initProducerIDMaxVersion; v++ {
		for range 20 {
			ours := InitProducerIDResponse{g.i32(), ErrorCode(g.i16()), g.i64(), g.i16()}
			buf := ours.AppendTo(nil, v)
			k := kmsg.NewPtrInitProducerIDResponse()
			k.Version = v
			if err := k.ReadFrom(buf); err != nil {
				t.Fatalf("v%d: kmsg: %v", v, err)
			}
			if k.ThrottleMillis != ours.ThrottleMillis || ErrorCode(k.ErrorCode) != ours.ErrorCode ||
				k.ProducerID != ours.ProducerID || k.ProducerEpoch != ours.ProducerEpoch {
				t.Fatalf("v%d: kmsg %+v ours %+v", v, k, ours)
			}
			if again := k.AppendTo(nil); !bytes.Equal(again, buf) {
				t.Fatalf("v%d: kmsg re-encode %x, ours %x", v, again, buf)
			}
		}
	}
}

func FuzzInitProducerIDRequest(f *testing.F) {
	g := newOracleGen(222)
	for v := int16(initProducerIDMinVersion); v <= initProducerIDMaxVersion+1; v++ {
		k := g.kmsgInitProducerIDRequest(v)
		if v >= 2 {
			g.unknownTags(&k.UnknownTags)
		}
		f.Add(k.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var r InitProducerIDRequest
		for v := int16(initProducerIDMinVersion) - 1; v <= initProducerIDMaxVersion+1; v++ {
			err := r.Decode(body, v)
			if v < initProducerIDMinVersion || v > initProducerIDMaxVersion {
				if !errors.Is(err, ErrUnsupportedVersion) {
					t.Fatalf("v%d: %v", v, err)
				}
				continue
			}
			if err != nil {
				continue
			}
			k := kmsg.NewPtrInitProducerIDRequest()
			k.Version = v
			if err := k.ReadFrom(body); err != nil || !prodInitProducerIDMatches(&r, k, v) {
				t.Fatalf("v%d: kmsg %+v %v, ours %+v", v, k, err, r)
			}
			var again InitProducerIDRequest
			if err := again.Decode(r.AppendTo(nil, v), v); err != nil || again != r {
				t.Fatalf("v%d: round trip %+v %v", v, again, err)
			}
		}
	})
}
