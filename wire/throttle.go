package wire

import "encoding/binary"

// throttleFirst is, per API key, the first response version whose body
// begins with throttle_time_ms (the response JSON schemas: ThrottleTimeMs
// is the body's first field from that version on), or -1 where it never
// does (Produce and ApiVersions carry it later in the body; OffsetDelete
// after its error code; the SASL, WriteTxnMarkers responses not at all).
var throttleFirst = func() (t [MaxAPIKey]int16) {
	for i := range t {
		t[i] = -1
	}
	for k, v := range map[APIKey]int16{
		KeyFetch: 1, KeyListOffsets: 2, KeyMetadata: 3, KeyOffsetCommit: 3, KeyOffsetFetch: 3,
		KeyFindCoordinator: 1, KeyJoinGroup: 2, KeyHeartbeat: 1, KeyLeaveGroup: 1, KeySyncGroup: 1,
		KeyDescribeGroups: 1, KeyListGroups: 1, KeyCreateTopics: 2, KeyDeleteTopics: 1,
		KeyDeleteRecords: 0, KeyInitProducerID: 0, KeyOffsetForLeaderEpoch: 2,
		KeyAddPartitionsToTxn: 0, KeyAddOffsetsToTxn: 0, KeyEndTxn: 0, KeyTxnOffsetCommit: 0,
		KeyDescribeAcls: 0, KeyCreateAcls: 0, KeyDeleteAcls: 0, KeyDescribeConfigs: 0,
		KeyAlterConfigs: 0, KeyCreatePartitions: 0, KeyDeleteGroups: 0,
		KeyIncrementalAlterConfigs: 0, KeyDescribeClientQuotas: 0, KeyAlterClientQuotas: 0,
		KeyDescribeUserScramCredentials: 0, KeyAlterUserScramCredentials: 0,
		KeyDescribeCluster: 0, KeyDescribeProducers: 0, KeyDescribeTransactions: 0,
		KeyListTransactions: 0, KeyConsumerGroupHeartbeat: 0, KeyConsumerGroupDescribe: 0,
		KeyDescribeTopicPartitions: 0, KeyDescribeLogDirs: 0, KeyElectLeaders: 0,
		KeyAlterPartitionReassignments: 0, KeyListPartitionReassignments: 0,
	} {
		t[k] = v
	}
	return t
}()

// PutThrottle raises body's throttle_time_ms to ms (a throttle its handler
// wrote already stays if longer), where body is a response body of key at
// version whose first field that is (throttleFirst), and reports whether
// it could. A quota throttle is reported in every response that has the
// field there; the others (see throttleFirst) go out with what their
// handler wrote.
func PutThrottle(body []byte, key APIKey, version int16, ms int32) bool {
	if key < 0 || key >= MaxAPIKey || len(body) < 4 {
		return false
	}
	if first := throttleFirst[key]; first < 0 || version < first {
		return false
	}
	if int32(binary.BigEndian.Uint32(body)) < ms {
		binary.BigEndian.PutUint32(body, uint32(ms))
	}
	return true
}
