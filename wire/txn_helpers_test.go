package wire

// Shared helpers for the transaction codec tests (AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn, TxnOffsetCommit, DescribeTransactions,
// ListTransactions). They build on the admin oracle helpers
// (admRequestOracle, admResponseOracle): kmsg encodes requests that we
// decode, and decodes the responses we encode.

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnRequestRoundTrip checks a request's client-side AppendTo for every
// version in [lo, hi]: a kmsg-encoded request decoded by us and re-encoded
// by AppendTo must give exactly kmsg's bytes for the same values (unknown
// tags stripped), and decoding those bytes must read the same values again.
func txnRequestRoundTrip[T any, P interface {
	*T
	admMsg
}, R any](t *testing.T, seed uint64, lo, hi int16,
	gen func(g *oracleGen, v int16) P,
	decode func(r *R, body []byte, v int16) error,
	appendTo func(r *R, dst []byte, v int16) []byte,
	toKmsg func(r *R, v int16) P,
) {
	t.Helper()
	g := newOracleGen(seed)
	for v := lo; v <= hi; v++ {
		for i := range 50 {
			req := gen(g, v)
			req.SetVersion(v)
			body := req.AppendTo(nil)
			want, err := admKmsgDecode[T, P](body, v)
			if err != nil {
				t.Fatalf("v%d #%d: kmsg cannot decode its own request: %v", v, i, err)
			}
			var r R
			if err := decode(&r, body, v); err != nil {
				t.Fatalf("v%d #%d: decode: %v", v, i, err)
			}
			ours := appendTo(&r, nil, v)
			if exp := want.AppendTo(nil); !bytes.Equal(ours, exp) {
				t.Fatalf("v%d #%d: AppendTo differs from kmsg\n ours %x\n kmsg %x", v, i, ours, exp)
			}
			var again R
			if err := decode(&again, ours, v); err != nil {
				t.Fatalf("v%d #%d: decode of our AppendTo: %v", v, i, err)
			}
			admCheckEqual(t, fmt.Sprintf("v%d #%d round trip", v, i), toKmsg(&again, v), want)
			pre := []byte("prefix")
			if got := appendTo(&r, pre, v); !bytes.Equal(got[:len(pre)], pre) || !bytes.Equal(got[len(pre):], ours) {
				t.Fatalf("v%d: AppendTo after a prefix differs", v)
			}
		}
	}
}

// txnResponseRead checks that kmsg reads back the values of a response we
// encoded: decode ours with kmsg at v and compare with toKmsg(r), built with
// only the fields v carries (the generators leave the others at kmsg's
// defaults).
func txnResponseRead[T any, P interface {
	*T
	admMsg
}, R any](t *testing.T, seed uint64, lo, hi int16,
	gen func(g *oracleGen, v int16) *R,
	appendTo func(r *R, dst []byte, v int16) []byte,
	toKmsg func(r *R) P,
	normalize func(P),
) {
	t.Helper()
	g := newOracleGen(seed)
	for v := lo; v <= hi; v++ {
		for i := range 50 {
			r := gen(g, v)
			got, err := admKmsgDecode[T, P](appendTo(r, nil, v), v)
			if err != nil {
				t.Fatalf("v%d #%d: kmsg cannot decode our bytes: %v", v, i, err)
			}
			want := toKmsg(r)
			want.SetVersion(v)
			if normalize != nil {
				normalize(got)
				normalize(want)
			}
			admCheckEqual(t, fmt.Sprintf("v%d #%d kmsg read", v, i), got, want)
		}
	}
}

// txnVersionsRefused checks that decode refuses every version outside
// [lo, hi] with ErrUnsupportedVersion.
func txnVersionsRefused[R any](t *testing.T, lo, hi int16, decode func(*R, []byte, int16) error) {
	t.Helper()
	var r R
	for _, v := range []int16{lo - 1, hi + 1, hi + 2, -1, 0x7fff} {
		if v >= lo && v <= hi {
			continue
		}
		if err := decode(&r, []byte{0, 0, 0, 0, 0, 0, 0, 0}, v); err != ErrUnsupportedVersion {
			t.Errorf("version %d outside [%d, %d]: %v, want ErrUnsupportedVersion", v, lo, hi, err)
		}
	}
}

// TestTxnAPIConstants checks the transaction APIs' keys, version bounds and
// first flexible versions against kmsg (requests and responses). The rows
// of APIs are added by the gateway with the handlers; once there, each must
// match the codec's constants.
func TestTxnAPIConstants(t *testing.T) {
	rows := []struct {
		key              APIKey
		lo, hi, flexFrom int16
		req              kmsg.Request
	}{
		{KeyAddPartitionsToTxn, AddPartitionsToTxnMinVersion, AddPartitionsToTxnMaxVersion, AddPartitionsToTxnFlexible, new(kmsg.AddPartitionsToTxnRequest)},
		{KeyAddOffsetsToTxn, AddOffsetsToTxnMinVersion, AddOffsetsToTxnMaxVersion, AddOffsetsToTxnFlexible, new(kmsg.AddOffsetsToTxnRequest)},
		{KeyEndTxn, EndTxnMinVersion, EndTxnMaxVersion, EndTxnFlexible, new(kmsg.EndTxnRequest)},
		{KeyTxnOffsetCommit, TxnOffsetCommitMinVersion, TxnOffsetCommitMaxVersion, TxnOffsetCommitFlexible, new(kmsg.TxnOffsetCommitRequest)},
		{KeyDescribeTransactions, DescribeTransactionsMinVersion, DescribeTransactionsMaxVersion, DescribeTransactionsFlexible, new(kmsg.DescribeTransactionsRequest)},
		{KeyListTransactions, ListTransactionsMinVersion, ListTransactionsMaxVersion, ListTransactionsFlexible, new(kmsg.ListTransactionsRequest)},
		{KeyWriteTxnMarkers, WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion, WriteTxnMarkersFlexible, new(kmsg.WriteTxnMarkersRequest)},
	}
	for _, r := range rows {
		if int16(r.key) != r.req.Key() || r.hi > r.req.MaxVersion() || r.lo < 0 || r.lo > r.hi {
			t.Errorf("%v: key %d [%d, %d], kmsg key %d max %d", r.key, r.key, r.lo, r.hi, r.req.Key(), r.req.MaxVersion())
		}
		if got, ok := LookupAPI(r.key); ok && got != (APIRange{r.key, r.lo, r.hi, r.flexFrom}) {
			t.Errorf("%v: APIs row %+v, codec [%d, %d] flexible from %d", r.key, got, r.lo, r.hi, r.flexFrom)
		}
		if r.key.String() == "API_"+strconv.Itoa(int(r.key)) {
			t.Errorf("key %d has no name", r.key)
		}
		resp := r.req.ResponseKind()
		for v := r.lo; v <= r.hi; v++ {
			r.req.SetVersion(v)
			resp.SetVersion(v)
			if f := v >= r.flexFrom; f != r.req.IsFlexible() || f != resp.IsFlexible() {
				t.Errorf("%v v%d: flexible %v, kmsg request %v response %v", r.key, v, f, r.req.IsFlexible(), resp.IsFlexible())
			}
		}
	}
}
