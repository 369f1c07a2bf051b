package wire

import (
	"reflect"
	"slices"
	"testing"
)

// errorTally is an ErrorCounter that remembers what it was told.
type errorTally []ErrorCode

func (t *errorTally) CountError(code ErrorCode) { *t = append(*t, code) }

// fillErrorCodes sets every ErrorCode field reachable from v, giving each
// slice two elements, and returns the codes it set in walk order. Codes are
// distinct so a field counted twice or not at all shows.
func fillErrorCodes(v reflect.Value, next *ErrorCode) []ErrorCode {
	var set []ErrorCode
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			set = append(set, fillErrorCodes(v.Field(i), next)...)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return nil
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			set = append(set, fillErrorCodes(v.Index(i), next)...)
		}
	case reflect.Int16:
		if v.Type() == reflect.TypeFor[ErrorCode]() {
			*next++
			v.SetInt(int64(*next))
			set = append(set, *next)
		}
	}
	return set
}

// TestCountErrorsReportsEveryField fills every ErrorCode field of each
// response type, at every nesting level, and checks CountErrors reports each
// exactly once: a field added to a response without being counted fails here.
func TestCountErrorsReportsEveryField(t *testing.T) {
	responses := []interface{ CountErrors(ErrorCounter) }{
		&APIVersionsResponse{}, &MetadataResponse{},
		&InitProducerIDResponse{}, &ListOffsetsResponse{}, &OffsetForLeaderEpochResponse{},
		&FindCoordinatorResponse{}, &JoinGroupResponse{}, &SyncGroupResponse{},
		&HeartbeatResponse{}, &LeaveGroupResponse{}, &OffsetCommitResponse{},
		&OffsetFetchResponse{}, &DescribeGroupsResponse{}, &ListGroupsResponse{}, &DeleteGroupsResponse{}, &OffsetDeleteResponse{}, &DeleteRecordsResponse{},
		&CreateTopicsResponse{}, &DeleteTopicsResponse{}, &CreatePartitionsResponse{},
		&DescribeConfigsResponse{}, &AlterConfigsResponse{}, &IncrementalAlterConfigsResponse{},
		&DescribeClusterResponse{}, &DescribeProducersResponse{}, &DescribeTopicPartitionsResponse{},
		&DescribeAclsResponse{}, &CreateAclsResponse{}, &DeleteAclsResponse{},
		&SaslHandshakeResponse{}, &SaslAuthenticateResponse{},
		&DescribeUserScramCredentialsResponse{}, &AlterUserScramCredentialsResponse{}, &DescribeClientQuotasResponse{},
		&ConsumerGroupHeartbeatResponse{}, &ConsumerGroupDescribeResponse{},
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

// TestCountErrorsSkipsNone checks a response without errors reports nothing
// and that NONE elements among errors are skipped.
func TestCountErrorsSkipsNone(t *testing.T) {
	r := &ListOffsetsResponse{Topics: []ListOffsetsResponseTopic{{Partitions: []ListOffsetsResponseTopicPartition{
		{ErrorCode: NoError}, {ErrorCode: CorruptMessage}, {ErrorCode: NoError},
	}}}}
	var got errorTally
	r.CountErrors(&got)
	if !reflect.DeepEqual([]ErrorCode(got), []ErrorCode{CorruptMessage}) {
		t.Fatalf("got %v, want [CORRUPT_MESSAGE]", got)
	}
	got = got[:0]
	(&JoinGroupResponse{}).CountErrors(&got)
	if len(got) != 0 {
		t.Fatalf("an error-free JoinGroup reported %v", got)
	}
}

// TestCountErrorsAllocs keeps counting allocation-free with a pointer counter.
func TestCountErrorsAllocs(t *testing.T) {
	r := &MetadataResponse{Topics: []MetadataResponseTopic{{ErrorCode: UnknownTopicOrPartition}}}
	var n countOnly
	if a := testing.AllocsPerRun(100, func() { r.CountErrors(&n) }); a != 0 {
		t.Fatalf("CountErrors allocated %v times", a)
	}
	if n == 0 {
		t.Fatal("nothing counted")
	}
}

type countOnly int

func (n *countOnly) CountError(ErrorCode) { *n++ }
