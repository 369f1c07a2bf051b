package wire

import "testing"

// txnFuzzAPIs are the transaction request decoders under FuzzTxnRequests
// (and the WriteTxnMarkers response decoder),
// in the admFuzzAPI form of FuzzAdminRequests: whatever we accept, kmsg must
// accept and read the same, fresh and into a struct primed with a rich
// request.
var txnFuzzAPIs = []txnFuzzAPI{
	{admFuzzAPI{"AddPartitionsToTxn", AddPartitionsToTxnMinVersion, AddPartitionsToTxnMaxVersion,
		admFuzzCheck((*AddPartitionsToTxnRequest).Decode, txnAddPartitionsToTxnRequestToKmsg, txnGenAddPartitionsToTxnRequest),
		admSeed(txnGenAddPartitionsToTxnRequest)}, txnFresh((*AddPartitionsToTxnRequest).Decode)},
	{admFuzzAPI{"AddOffsetsToTxn", AddOffsetsToTxnMinVersion, AddOffsetsToTxnMaxVersion,
		admFuzzCheck((*AddOffsetsToTxnRequest).Decode, txnAddOffsetsToTxnRequestToKmsg, txnGenAddOffsetsToTxnRequest),
		admSeed(txnGenAddOffsetsToTxnRequest)}, txnFresh((*AddOffsetsToTxnRequest).Decode)},
	{admFuzzAPI{"EndTxn", EndTxnMinVersion, EndTxnMaxVersion,
		admFuzzCheck((*EndTxnRequest).Decode, txnEndTxnRequestToKmsg, txnGenEndTxnRequest),
		admSeed(txnGenEndTxnRequest)}, txnFresh((*EndTxnRequest).Decode)},
	{admFuzzAPI{"TxnOffsetCommit", TxnOffsetCommitMinVersion, TxnOffsetCommitMaxVersion,
		admFuzzCheck((*TxnOffsetCommitRequest).Decode, txnTxnOffsetCommitRequestToKmsg, txnGenTxnOffsetCommitRequest),
		admSeed(txnGenTxnOffsetCommitRequest)}, txnFresh((*TxnOffsetCommitRequest).Decode)},
	{admFuzzAPI{"DescribeTransactions", DescribeTransactionsMinVersion, DescribeTransactionsMaxVersion,
		admFuzzCheck((*DescribeTransactionsRequest).Decode, txnDescribeTransactionsRequestToKmsg, txnGenDescribeTransactionsRequest),
		admSeed(txnGenDescribeTransactionsRequest)}, txnFresh((*DescribeTransactionsRequest).Decode)},
	{admFuzzAPI{"ListTransactions", ListTransactionsMinVersion, ListTransactionsMaxVersion,
		admFuzzCheck((*ListTransactionsRequest).Decode, txnListTransactionsRequestToKmsg, txnGenListTransactionsRequest),
		admSeed(txnGenListTransactionsRequest)}, txnFresh((*ListTransactionsRequest).Decode)},
	{admFuzzAPI{"WriteTxnMarkers", WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion,
		admFuzzCheck((*WriteTxnMarkersRequest).Decode, txnWriteTxnMarkersRequestToKmsg, txnGenWriteTxnMarkersRequest),
		admSeed(txnGenWriteTxnMarkersRequest)}, txnFresh((*WriteTxnMarkersRequest).Decode)},
	// The coordinator's client side decodes WriteTxnMarkers responses from
	// another instance: fuzzed the same way.
	{admFuzzAPI{"WriteTxnMarkersResponse", WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion,
		admFuzzCheck((*WriteTxnMarkersResponse).Decode, txnWriteTxnMarkersResponseToKmsg, txnGenWriteTxnMarkersResponse),
		admSeed(txnGenWriteTxnMarkersResponse)}, txnFresh((*WriteTxnMarkersResponse).Decode)},
}

// txnFuzzAPI is an admFuzzAPI with a decode into a fresh struct, to check
// the error of a refused version.
type txnFuzzAPI struct {
	admFuzzAPI
	decode func(body []byte, v int16) error
}

// txnFresh returns a decode into a fresh R.
func txnFresh[R any](decode func(*R, []byte, int16) error) func([]byte, int16) error {
	return func(body []byte, v int16) error {
		var r R
		return decode(&r, body, v)
	}
}

// FuzzTxnRequests feeds every transaction request decoder. Input: one byte
// selecting the API, one selecting the version (up to one past the highest,
// which must be refused), then the body. Decoders must never panic, and
// whatever they accept kmsg must accept and read the same. Seeds are
// kmsg-encoded requests of every API and version.
func FuzzTxnRequests(f *testing.F) {
	g := newOracleGen(0x7478)
	g.small = true
	for i := range txnFuzzAPIs {
		a := &txnFuzzAPIs[i]
		for v := a.lo; v <= a.hi; v++ {
			for added := 0; added < 2; {
				if in := append([]byte{byte(i), byte(v - a.lo)}, a.seed(g, v)...); len(in) <= admFuzzMaxLen {
					f.Add(in)
					added++
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 || len(data) > admFuzzMaxLen {
			return
		}
		a := &txnFuzzAPIs[int(data[0])%len(txnFuzzAPIs)]
		v := admFuzzVersion(&a.admFuzzAPI, data[1])
		a.check(t, data[2:], v)
		if v > a.hi {
			// admFuzzCheck only requires an error; the codec must say why.
			if err := a.decode(data[2:], v); err != ErrUnsupportedVersion {
				t.Fatalf("%s v%d: %v, want ErrUnsupportedVersion", a.name, v, err)
			}
		}
	})
}
