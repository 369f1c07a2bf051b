package wire

import (
	"reflect"
	"slices"
	"testing"
)

// TestTxnCountErrorsReportsEveryField is TestCountErrorsReportsEveryField
// for the transaction responses: every ErrorCode field, at every nesting
// level, is reported exactly once.
func TestTxnCountErrorsReportsEveryField(t *testing.T) {
	responses := []interface{ CountErrors(ErrorCounter) }{
		&AddPartitionsToTxnResponse{}, &AddOffsetsToTxnResponse{}, &EndTxnResponse{},
		&TxnOffsetCommitResponse{}, &DescribeTransactionsResponse{}, &ListTransactionsResponse{},
		&WriteTxnMarkersResponse{},
	}
	for _, r := range responses {
		var next ErrorCode
		want := fillErrorCodes(reflect.ValueOf(r).Elem(), &next)
		if len(want) == 0 {
			t.Errorf("%T: no ErrorCode field found", r)
			continue
		}
		var got errorTally
		r.CountErrors(&got)
		slices.Sort(got)
		slices.Sort(want)
		if !reflect.DeepEqual([]ErrorCode(got), want) {
			t.Errorf("%T: CountErrors reported %v, want %v", r, got, want)
		}
	}
}
