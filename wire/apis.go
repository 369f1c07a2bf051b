package wire

import "strconv"

// APIKey identifies a Kafka API.
type APIKey int16

// API keys kiggy knows (docs/design/kafka-protocol.md §2.1).
const (
	KeyProduce                      APIKey = 0
	KeyFetch                        APIKey = 1
	KeyListOffsets                  APIKey = 2
	KeyMetadata                     APIKey = 3
	KeyOffsetCommit                 APIKey = 8
	KeyOffsetFetch                  APIKey = 9
	KeyFindCoordinator              APIKey = 10
	KeyJoinGroup                    APIKey = 11
	KeyHeartbeat                    APIKey = 12
	KeyLeaveGroup                   APIKey = 13
	KeySyncGroup                    APIKey = 14
	KeyDescribeGroups               APIKey = 15
	KeyListGroups                   APIKey = 16
	KeySaslHandshake                APIKey = 17
	KeyAPIVersions                  APIKey = 18
	KeyCreateTopics                 APIKey = 19
	KeyDeleteTopics                 APIKey = 20
	KeyDeleteRecords                APIKey = 21
	KeyInitProducerID               APIKey = 22
	KeyOffsetForLeaderEpoch         APIKey = 23
	KeyAddPartitionsToTxn           APIKey = 24
	KeyAddOffsetsToTxn              APIKey = 25
	KeyEndTxn                       APIKey = 26
	KeyWriteTxnMarkers              APIKey = 27
	KeyTxnOffsetCommit              APIKey = 28
	KeyDescribeAcls                 APIKey = 29
	KeyCreateAcls                   APIKey = 30
	KeyDeleteAcls                   APIKey = 31
	KeyDescribeConfigs              APIKey = 32
	KeyAlterConfigs                 APIKey = 33
	KeyDescribeLogDirs              APIKey = 35
	KeySaslAuthenticate             APIKey = 36
	KeyCreatePartitions             APIKey = 37
	KeyDeleteGroups                 APIKey = 42
	KeyElectLeaders                 APIKey = 43
	KeyIncrementalAlterConfigs      APIKey = 44
	KeyAlterPartitionReassignments  APIKey = 45
	KeyListPartitionReassignments   APIKey = 46
	KeyOffsetDelete                 APIKey = 47
	KeyDescribeClientQuotas         APIKey = 48
	KeyAlterClientQuotas            APIKey = 49
	KeyDescribeUserScramCredentials APIKey = 50
	KeyAlterUserScramCredentials    APIKey = 51
	KeyDescribeCluster              APIKey = 60
	KeyDescribeProducers            APIKey = 61
	KeyDescribeTransactions         APIKey = 65
	KeyListTransactions             APIKey = 66
	KeyConsumerGroupHeartbeat       APIKey = 68
	KeyConsumerGroupDescribe        APIKey = 69
	KeyDescribeTopicPartitions      APIKey = 75
)

// APIRange is one row of the ApiVersions table: the versions of an API whose
// codecs wire implements, and the first flexible version (KIP-482).
type APIRange struct {
	Key APIKey
	// Min and Max bound the versions kiggy decodes and encodes.
	Min, Max int16
	// FlexibleFrom is the first flexible version; from it on the request
	// header is v2 and the response header v1 (ApiVersions: always v0).
	FlexibleFrom int16
}

// APIs is the declarative table of every API wire has codecs for, sorted by
// key. Each codec file adds its row here, with the file's own xxxFlexible
// constant as FlexibleFrom (the one source of that version; the codec checks
// version >= xxxFlexible); the gateway advertises the subset
// it has handlers for. A row must only be added once its codec is complete
// and oracle-tested for every version in [Min, Max].
var APIs = []APIRange{
	{KeyProduce, 0, produceMaxVersion, produceFlexible}, // v0–2 advertised but not decodable (KAFKA-18659), see produce.go
	{KeyFetch, 4, fetchMax, fetchFlexible},              // v13+ names topics by id
	{KeyListOffsets, 1, 10, listOffsetsFlexible},
	{KeyMetadata, 0, 13, metadataFlexible},
	{KeyOffsetCommit, 2, offsetCommitTopicIDs, offsetCommitFlexible},
	{KeyOffsetFetch, 1, offsetFetchTopicIDs, offsetFetchFlexible},
	{KeyFindCoordinator, 0, 6, findCoordinatorFlexible},
	{KeyJoinGroup, 0, 9, joinGroupFlexible},
	{KeyHeartbeat, 0, 4, heartbeatFlexible},
	{KeyLeaveGroup, 0, 5, leaveGroupFlexible},
	{KeySyncGroup, 0, 5, syncGroupFlexible},
	{KeyDescribeGroups, 0, 5, describeGroupsFlexible},
	{KeyListGroups, 0, 5, listGroupsFlexible},
	{KeySaslHandshake, 0, 1, saslHandshakeFlexible},
	{KeyAPIVersions, 0, 4, apiVersionsFlexible},
	{KeyCreateTopics, 2, 7, createTopicsFlexible},
	{KeyDeleteTopics, 1, 6, deleteTopicsFlexible},
	{KeyDeleteRecords, deleteRecordsMin, deleteRecordsMax, deleteRecordsFlexible},
	{KeyInitProducerID, 0, 5, initProducerIDFlexible},
	{KeyOffsetForLeaderEpoch, 2, 4, offsetForLeaderEpochFlexible},
	{KeyAddPartitionsToTxn, AddPartitionsToTxnMinVersion, AddPartitionsToTxnMaxVersion, AddPartitionsToTxnFlexible},
	{KeyAddOffsetsToTxn, AddOffsetsToTxnMinVersion, AddOffsetsToTxnMaxVersion, AddOffsetsToTxnFlexible},
	{KeyEndTxn, EndTxnMinVersion, EndTxnMaxVersion, EndTxnFlexible},
	{KeyWriteTxnMarkers, WriteTxnMarkersMinVersion, WriteTxnMarkersMaxVersion, WriteTxnMarkersFlexible}, // instance to instance; advertised once bridge has a handler
	{KeyTxnOffsetCommit, TxnOffsetCommitMinVersion, TxnOffsetCommitMaxVersion, TxnOffsetCommitFlexible},
	{KeyDescribeAcls, aclsMin, aclsMax, aclsFlexible},
	{KeyCreateAcls, aclsMin, aclsMax, aclsFlexible},
	{KeyDeleteAcls, aclsMin, aclsMax, aclsFlexible},
	{KeyDescribeConfigs, 1, 4, describeConfigsFlexible},
	{KeyAlterConfigs, 0, 2, alterConfigsFlexible},
	{KeyDescribeLogDirs, describeLogDirsMin, describeLogDirsMax, describeLogDirsFlexible},
	{KeySaslAuthenticate, 0, 2, saslAuthenticateFlexible},
	{KeyCreatePartitions, 0, 3, createPartitionsFlexible},
	{KeyDeleteGroups, 0, 3, deleteGroupsFlexible},
	{KeyElectLeaders, electLeadersMin, electLeadersMax, electLeadersFlexible},
	{KeyIncrementalAlterConfigs, 0, 1, incrementalAlterConfigsFlexible},
	{KeyAlterPartitionReassignments, alterReassignmentsMin, alterReassignmentsMax, reassignmentsFlexible},
	{KeyListPartitionReassignments, listReassignmentsMin, listReassignmentsMax, reassignmentsFlexible},
	{KeyOffsetDelete, offsetDeleteMin, offsetDeleteMax, offsetDeleteFlexible},
	{KeyDescribeClientQuotas, 0, 1, describeClientQuotasFlexible},
	{KeyAlterClientQuotas, 0, 1, alterClientQuotasFlexible},
	{KeyDescribeUserScramCredentials, 0, 0, scramCredentialsFlexible},
	{KeyAlterUserScramCredentials, 0, 0, scramCredentialsFlexible},
	{KeyDescribeCluster, 0, 2, describeClusterFlexible},
	{KeyDescribeProducers, 0, 0, describeProducersFlexible},
	{KeyDescribeTransactions, DescribeTransactionsMinVersion, DescribeTransactionsMaxVersion, DescribeTransactionsFlexible},
	{KeyListTransactions, ListTransactionsMinVersion, ListTransactionsMaxVersion, ListTransactionsFlexible},
	{KeyConsumerGroupHeartbeat, 0, 1, consumerGroupHeartbeatFlexible},
	{KeyConsumerGroupDescribe, 0, 1, consumerGroupDescribeFlexible},
	{KeyDescribeTopicPartitions, describeTopicPartitionsMin, describeTopicPartitionsMax, describeTopicPartitionsFlexible},
}

// MaxAPIKey bounds the API keys wire's lookup array (and the gateway's
// per-key tables) index: every key in APIs is below it.
const MaxAPIKey = 128

var apiIndex = func() (idx [MaxAPIKey]int16) {
	for i := range idx {
		idx[i] = -1
	}
	return idx
}()

func init() {
	for i, a := range APIs {
		if a.Key >= 0 && a.Key < MaxAPIKey {
			apiIndex[a.Key] = int16(i)
		}
	}
}

// LookupAPI returns the table row for key.
func LookupAPI(key APIKey) (APIRange, bool) {
	if key < 0 || key >= MaxAPIKey || apiIndex[key] < 0 {
		return APIRange{}, false
	}
	return APIs[apiIndex[key]], true
}

// Flexible reports whether version v of key uses flexible encodings.
// Unknown keys are reported non-flexible.
func Flexible(key APIKey, v int16) bool {
	a, ok := LookupAPI(key)
	return ok && v >= a.FlexibleFrom
}

var apiNames = map[APIKey]string{
	KeyProduce: "Produce", KeyFetch: "Fetch", KeyListOffsets: "ListOffsets", KeyMetadata: "Metadata",
	KeyOffsetCommit: "OffsetCommit", KeyOffsetFetch: "OffsetFetch", KeyFindCoordinator: "FindCoordinator",
	KeyJoinGroup: "JoinGroup", KeyHeartbeat: "Heartbeat", KeyLeaveGroup: "LeaveGroup", KeySyncGroup: "SyncGroup",
	KeyDescribeGroups: "DescribeGroups", KeyListGroups: "ListGroups", KeySaslHandshake: "SaslHandshake",
	KeyAPIVersions: "ApiVersions", KeyCreateTopics: "CreateTopics", KeyDeleteTopics: "DeleteTopics",
	KeyInitProducerID: "InitProducerId", KeyOffsetForLeaderEpoch: "OffsetForLeaderEpoch",
	KeyDescribeAcls: "DescribeAcls", KeyCreateAcls: "CreateAcls", KeyDeleteAcls: "DeleteAcls",
	KeyDescribeConfigs: "DescribeConfigs", KeyAlterConfigs: "AlterConfigs", KeyDescribeLogDirs: "DescribeLogDirs", KeySaslAuthenticate: "SaslAuthenticate",
	KeyCreatePartitions: "CreatePartitions", KeyDeleteGroups: "DeleteGroups", KeyElectLeaders: "ElectLeaders", KeyIncrementalAlterConfigs: "IncrementalAlterConfigs",
	KeyAlterPartitionReassignments: "AlterPartitionReassignments", KeyListPartitionReassignments: "ListPartitionReassignments",
	KeyOffsetDelete:                 "OffsetDelete",
	KeyDescribeClientQuotas:         "DescribeClientQuotas",
	KeyAlterClientQuotas:            "AlterClientQuotas",
	KeyDescribeUserScramCredentials: "DescribeUserScramCredentials",
	KeyAlterUserScramCredentials:    "AlterUserScramCredentials",
	KeyDeleteRecords:                "DeleteRecords",
	KeyDescribeCluster:              "DescribeCluster",
	KeyDescribeProducers:            "DescribeProducers",
	KeyAddPartitionsToTxn:           "AddPartitionsToTxn",
	KeyAddOffsetsToTxn:              "AddOffsetsToTxn",
	KeyEndTxn:                       "EndTxn",
	KeyWriteTxnMarkers:              "WriteTxnMarkers",
	KeyTxnOffsetCommit:              "TxnOffsetCommit",
	KeyDescribeTransactions:         "DescribeTransactions",
	KeyListTransactions:             "ListTransactions",
	KeyConsumerGroupHeartbeat:       "ConsumerGroupHeartbeat",
	KeyConsumerGroupDescribe:        "ConsumerGroupDescribe",
	KeyDescribeTopicPartitions:      "DescribeTopicPartitions",
}

// String returns Kafka's name for the API, e.g. "Produce", or "API_<n>".
func (k APIKey) String() string {
	if n, ok := apiNames[k]; ok {
		return n
	}
	return "API_" + strconv.Itoa(int(k))
}
