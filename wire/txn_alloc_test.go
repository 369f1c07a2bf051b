//go:build !race

package wire

import "testing"

// TestTxnDecodeAllocs: every transaction request decoder, every version,
// reuses its struct without allocating once it has seen a body of the same
// shape (docs/design/style.md habit 7).
func TestTxnDecodeAllocs(t *testing.T) {
	admAllocDecoder(t, "AddPartitionsToTxn", AddPartitionsToTxnMinVersion, AddPartitionsToTxnMaxVersion, txnGenAddPartitionsToTxnRequest, (*AddPartitionsToTxnRequest).Decode)
	admAllocDecoder(t, "AddOffsetsToTxn", AddOffsetsToTxnMinVersion, AddOffsetsToTxnMaxVersion, txnGenAddOffsetsToTxnRequest, (*AddOffsetsToTxnRequest).Decode)
	admAllocDecoder(t, "EndTxn", EndTxnMinVersion, EndTxnMaxVersion, txnGenEndTxnRequest, (*EndTxnRequest).Decode)
	admAllocDecoder(t, "TxnOffsetCommit", TxnOffsetCommitMinVersion, TxnOffsetCommitMaxVersion, txnGenTxnOffsetCommitRequest, (*TxnOffsetCommitRequest).Decode)
	admAllocDecoder(t, "DescribeTransactions", DescribeTransactionsMinVersion, DescribeTransactionsMaxVersion, txnGenDescribeTransactionsRequest, (*DescribeTransactionsRequest).Decode)
	admAllocDecoder(t, "ListTransactions", ListTransactionsMinVersion, ListTransactionsMaxVersion, txnGenListTransactionsRequest, (*ListTransactionsRequest).Decode)
	admAllocDecoder(t, "WriteTxnMarkers", WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion, txnGenWriteTxnMarkersRequest, (*WriteTxnMarkersRequest).Decode)
	admAllocDecoder(t, "WriteTxnMarkersResponse", WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion, txnGenWriteTxnMarkersResponse, (*WriteTxnMarkersResponse).Decode)
}

// TestTxnResponseAppendAllocs: encoding each transaction response, at every
// version, into a buffer with room allocates nothing.
func TestTxnResponseAppendAllocs(t *testing.T) {
	g := newOracleGen(3)
	buf := make([]byte, 0, 1<<20)
	check := func(name string, lo, hi int16, appendTo func([]byte, int16) []byte) {
		t.Helper()
		for v := lo; v <= hi; v++ {
			if allocs := testing.AllocsPerRun(20, func() { buf = appendTo(buf[:0], v) }); allocs != 0 {
				t.Errorf("%s.AppendTo v%d allocates %.1f times", name, v, allocs)
			}
		}
	}
	ap := txnGenAddPartitionsToTxnResponse(g, AddPartitionsToTxnMaxVersion)
	check("AddPartitionsToTxnResponse", AddPartitionsToTxnMinVersion, AddPartitionsToTxnMaxVersion, ap.AppendTo)
	ao := txnGenAddOffsetsToTxnResponse(g, AddOffsetsToTxnMaxVersion)
	check("AddOffsetsToTxnResponse", AddOffsetsToTxnMinVersion, AddOffsetsToTxnMaxVersion, ao.AppendTo)
	et := txnGenEndTxnResponse(g, EndTxnMaxVersion)
	check("EndTxnResponse", EndTxnMinVersion, EndTxnMaxVersion, et.AppendTo)
	tc := txnGenTxnOffsetCommitResponse(g, TxnOffsetCommitMaxVersion)
	check("TxnOffsetCommitResponse", TxnOffsetCommitMinVersion, TxnOffsetCommitMaxVersion, tc.AppendTo)
	dt := txnGenDescribeTransactionsResponse(g, DescribeTransactionsMaxVersion)
	check("DescribeTransactionsResponse", DescribeTransactionsMinVersion, DescribeTransactionsMaxVersion, dt.AppendTo)
	lt := txnGenListTransactionsResponse(g, ListTransactionsMaxVersion)
	check("ListTransactionsResponse", ListTransactionsMinVersion, ListTransactionsMaxVersion, lt.AppendTo)
	var wreq WriteTxnMarkersRequest
	if err := wreq.Decode(txnGenWriteTxnMarkersRequest(g, 0).AppendTo(nil), 0); err != nil {
		t.Fatal(err)
	}
	check("WriteTxnMarkersRequest", WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion, wreq.AppendTo)
	var wresp WriteTxnMarkersResponse
	if err := wresp.Decode(txnGenWriteTxnMarkersResponse(g, 0).AppendTo(nil), 0); err != nil {
		t.Fatal(err)
	}
	check("WriteTxnMarkersResponse", WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion, wresp.AppendTo)
}
