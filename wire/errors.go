package wire

import "strconv"

// ErrorCode is a Kafka protocol error code, written straight into responses
// (docs/design/kafka-protocol.md §6).
type ErrorCode int16

// Kafka error codes a gateway returns or clients act on.
const (
	UnknownServerError               ErrorCode = -1
	NoError                          ErrorCode = 0 // Kafka: NONE
	OffsetOutOfRange                 ErrorCode = 1
	CorruptMessage                   ErrorCode = 2
	UnknownTopicOrPartition          ErrorCode = 3
	InvalidFetchSize                 ErrorCode = 4
	LeaderNotAvailable               ErrorCode = 5
	NotLeaderOrFollower              ErrorCode = 6
	RequestTimedOut                  ErrorCode = 7
	BrokerNotAvailable               ErrorCode = 8
	ReplicaNotAvailable              ErrorCode = 9
	MessageTooLarge                  ErrorCode = 10
	StaleControllerEpoch             ErrorCode = 11
	OffsetMetadataTooLarge           ErrorCode = 12
	NetworkException                 ErrorCode = 13
	CoordinatorLoadInProgress        ErrorCode = 14
	CoordinatorNotAvailable          ErrorCode = 15
	NotCoordinator                   ErrorCode = 16
	InvalidTopicException            ErrorCode = 17
	RecordListTooLarge               ErrorCode = 18
	NotEnoughReplicas                ErrorCode = 19
	NotEnoughReplicasAfterAppend     ErrorCode = 20
	InvalidRequiredAcks              ErrorCode = 21
	IllegalGeneration                ErrorCode = 22
	InconsistentGroupProtocol        ErrorCode = 23
	InvalidGroupID                   ErrorCode = 24
	UnknownMemberID                  ErrorCode = 25
	InvalidSessionTimeout            ErrorCode = 26
	RebalanceInProgress              ErrorCode = 27
	InvalidCommitOffsetSize          ErrorCode = 28
	TopicAuthorizationFailed         ErrorCode = 29
	GroupAuthorizationFailed         ErrorCode = 30
	ClusterAuthorizationFailed       ErrorCode = 31
	InvalidTimestamp                 ErrorCode = 32
	UnsupportedSaslMechanism         ErrorCode = 33
	IllegalSaslState                 ErrorCode = 34
	UnsupportedVersion               ErrorCode = 35
	TopicAlreadyExists               ErrorCode = 36
	InvalidPartitions                ErrorCode = 37
	InvalidReplicationFactor         ErrorCode = 38
	InvalidReplicaAssignment         ErrorCode = 39
	InvalidConfig                    ErrorCode = 40
	NotController                    ErrorCode = 41
	InvalidRequest                   ErrorCode = 42
	UnsupportedForMessageFormat      ErrorCode = 43
	PolicyViolation                  ErrorCode = 44
	OutOfOrderSequenceNumber         ErrorCode = 45
	DuplicateSequenceNumber          ErrorCode = 46
	InvalidProducerEpoch             ErrorCode = 47
	InvalidTxnState                  ErrorCode = 48
	InvalidProducerIDMapping         ErrorCode = 49
	InvalidTransactionTimeout        ErrorCode = 50
	ConcurrentTransactions           ErrorCode = 51
	TransactionCoordinatorFenced     ErrorCode = 52
	TransactionalIDAuthFailed        ErrorCode = 53
	SecurityDisabled                 ErrorCode = 54
	OperationNotAttempted            ErrorCode = 55
	KafkaStorageError                ErrorCode = 56
	LogDirNotFound                   ErrorCode = 57
	SaslAuthenticationFailed         ErrorCode = 58
	UnknownProducerID                ErrorCode = 59
	ReassignmentInProgress           ErrorCode = 60
	DelegationTokenAuthDisabled      ErrorCode = 61
	DelegationTokenNotFound          ErrorCode = 62
	DelegationTokenOwnerMismatch     ErrorCode = 63
	DelegationTokenRequestNotAllowed ErrorCode = 64
	DelegationTokenAuthFailed        ErrorCode = 65
	DelegationTokenExpired           ErrorCode = 66
	InvalidPrincipalType             ErrorCode = 67
	NonEmptyGroup                    ErrorCode = 68
	GroupIDNotFound                  ErrorCode = 69
	FetchSessionIDNotFound           ErrorCode = 70
	InvalidFetchSessionEpoch         ErrorCode = 71
	ListenerNotFound                 ErrorCode = 72
	TopicDeletionDisabled            ErrorCode = 73
	FencedLeaderEpoch                ErrorCode = 74
	UnknownLeaderEpoch               ErrorCode = 75
	UnsupportedCompressionType       ErrorCode = 76
	StaleBrokerEpoch                 ErrorCode = 77
	OffsetNotAvailable               ErrorCode = 78
	MemberIDRequired                 ErrorCode = 79
	PreferredLeaderNotAvailable      ErrorCode = 80
	GroupMaxSizeReached              ErrorCode = 81
	FencedInstanceID                 ErrorCode = 82
	EligibleLeadersNotAvailable      ErrorCode = 83
	ElectionNotNeeded                ErrorCode = 84
	NoReassignmentInProgress         ErrorCode = 85
	GroupSubscribedToTopic           ErrorCode = 86
	InvalidRecord                    ErrorCode = 87
	UnstableOffsetCommit             ErrorCode = 88
	ThrottlingQuotaExceeded          ErrorCode = 89
	ProducerFenced                   ErrorCode = 90
	ResourceNotFound                 ErrorCode = 91
	DuplicateResource                ErrorCode = 92
	UnacceptableCredential           ErrorCode = 93
	InconsistentVoterSet             ErrorCode = 94
	InvalidUpdateVersion             ErrorCode = 95
	FeatureUpdateFailed              ErrorCode = 96
	PrincipalDeserializationFailure  ErrorCode = 97
	SnapshotNotFound                 ErrorCode = 98
	PositionOutOfRange               ErrorCode = 99
	UnknownTopicID                   ErrorCode = 100
	DuplicateBrokerRegistration      ErrorCode = 101
	BrokerIDNotRegistered            ErrorCode = 102
	InconsistentTopicID              ErrorCode = 103
	InconsistentClusterID            ErrorCode = 104
	TransactionalIDNotFound          ErrorCode = 105
	FetchSessionTopicIDError         ErrorCode = 106
	IneligibleReplica                ErrorCode = 107
	NewLeaderElected                 ErrorCode = 108
	OffsetMovedToTieredStorage       ErrorCode = 109
	FencedMemberEpoch                ErrorCode = 110
	UnreleasedInstanceID             ErrorCode = 111
	UnsupportedAssignor              ErrorCode = 112
	StaleMemberEpoch                 ErrorCode = 113
	MismatchedEndpointType           ErrorCode = 114
	UnsupportedEndpointType          ErrorCode = 115
	UnknownControllerID              ErrorCode = 116
	UnknownSubscriptionID            ErrorCode = 117
	TelemetryTooLarge                ErrorCode = 118
	InvalidRegistration              ErrorCode = 119
	TransactionAbortable             ErrorCode = 120
	InvalidRecordState               ErrorCode = 121
	ShareSessionNotFound             ErrorCode = 122
	InvalidShareSessionEpoch         ErrorCode = 123
	FencedStateEpoch                 ErrorCode = 124
	InvalidVoterKey                  ErrorCode = 125
	DuplicateVoter                   ErrorCode = 126
	VoterNotFound                    ErrorCode = 127
	InvalidRegularExpression         ErrorCode = 128
	RebootstrapRequired              ErrorCode = 129
)

type codeInfo struct {
	name      string
	retriable bool
}

// codes: name and Java retriability (the exception extends
// RetriableException; docs/design/kafka-protocol.md §6, computed from Errors.java).
var codes = map[ErrorCode]codeInfo{
	UnknownServerError: {"UNKNOWN_SERVER_ERROR", false}, NoError: {"NONE", false},
	OffsetOutOfRange: {"OFFSET_OUT_OF_RANGE", false}, CorruptMessage: {"CORRUPT_MESSAGE", true},
	UnknownTopicOrPartition: {"UNKNOWN_TOPIC_OR_PARTITION", true}, InvalidFetchSize: {"INVALID_FETCH_SIZE", false},
	LeaderNotAvailable: {"LEADER_NOT_AVAILABLE", true}, NotLeaderOrFollower: {"NOT_LEADER_OR_FOLLOWER", true},
	RequestTimedOut: {"REQUEST_TIMED_OUT", true}, BrokerNotAvailable: {"BROKER_NOT_AVAILABLE", false},
	ReplicaNotAvailable: {"REPLICA_NOT_AVAILABLE", true}, MessageTooLarge: {"MESSAGE_TOO_LARGE", false},
	StaleControllerEpoch: {"STALE_CONTROLLER_EPOCH", false}, OffsetMetadataTooLarge: {"OFFSET_METADATA_TOO_LARGE", false},
	NetworkException: {"NETWORK_EXCEPTION", true}, CoordinatorLoadInProgress: {"COORDINATOR_LOAD_IN_PROGRESS", true},
	CoordinatorNotAvailable: {"COORDINATOR_NOT_AVAILABLE", true}, NotCoordinator: {"NOT_COORDINATOR", true},
	InvalidTopicException: {"INVALID_TOPIC_EXCEPTION", false}, RecordListTooLarge: {"RECORD_LIST_TOO_LARGE", false},
	NotEnoughReplicas: {"NOT_ENOUGH_REPLICAS", true}, NotEnoughReplicasAfterAppend: {"NOT_ENOUGH_REPLICAS_AFTER_APPEND", true},
	InvalidRequiredAcks: {"INVALID_REQUIRED_ACKS", false}, IllegalGeneration: {"ILLEGAL_GENERATION", false},
	InconsistentGroupProtocol: {"INCONSISTENT_GROUP_PROTOCOL", false}, InvalidGroupID: {"INVALID_GROUP_ID", false},
	UnknownMemberID: {"UNKNOWN_MEMBER_ID", false}, InvalidSessionTimeout: {"INVALID_SESSION_TIMEOUT", false},
	RebalanceInProgress: {"REBALANCE_IN_PROGRESS", false}, InvalidCommitOffsetSize: {"INVALID_COMMIT_OFFSET_SIZE", false},
	TopicAuthorizationFailed: {"TOPIC_AUTHORIZATION_FAILED", false}, GroupAuthorizationFailed: {"GROUP_AUTHORIZATION_FAILED", false},
	ClusterAuthorizationFailed: {"CLUSTER_AUTHORIZATION_FAILED", false}, InvalidTimestamp: {"INVALID_TIMESTAMP", false},
	UnsupportedSaslMechanism: {"UNSUPPORTED_SASL_MECHANISM", false}, IllegalSaslState: {"ILLEGAL_SASL_STATE", false},
	UnsupportedVersion: {"UNSUPPORTED_VERSION", false}, TopicAlreadyExists: {"TOPIC_ALREADY_EXISTS", false},
	InvalidPartitions: {"INVALID_PARTITIONS", false}, InvalidReplicationFactor: {"INVALID_REPLICATION_FACTOR", false},
	InvalidReplicaAssignment: {"INVALID_REPLICA_ASSIGNMENT", false}, InvalidConfig: {"INVALID_CONFIG", false},
	NotController: {"NOT_CONTROLLER", true}, InvalidRequest: {"INVALID_REQUEST", false},
	UnsupportedForMessageFormat: {"UNSUPPORTED_FOR_MESSAGE_FORMAT", false}, PolicyViolation: {"POLICY_VIOLATION", false},
	OutOfOrderSequenceNumber: {"OUT_OF_ORDER_SEQUENCE_NUMBER", false}, DuplicateSequenceNumber: {"DUPLICATE_SEQUENCE_NUMBER", false},
	InvalidProducerEpoch: {"INVALID_PRODUCER_EPOCH", false}, InvalidTxnState: {"INVALID_TXN_STATE", false},
	InvalidProducerIDMapping: {"INVALID_PRODUCER_ID_MAPPING", false}, InvalidTransactionTimeout: {"INVALID_TRANSACTION_TIMEOUT", false},
	ConcurrentTransactions: {"CONCURRENT_TRANSACTIONS", true}, TransactionCoordinatorFenced: {"TRANSACTION_COORDINATOR_FENCED", false},
	TransactionalIDAuthFailed: {"TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false}, SecurityDisabled: {"SECURITY_DISABLED", false},
	OperationNotAttempted: {"OPERATION_NOT_ATTEMPTED", false}, KafkaStorageError: {"KAFKA_STORAGE_ERROR", true},
	LogDirNotFound: {"LOG_DIR_NOT_FOUND", false}, SaslAuthenticationFailed: {"SASL_AUTHENTICATION_FAILED", false},
	UnknownProducerID: {"UNKNOWN_PRODUCER_ID", false}, ReassignmentInProgress: {"REASSIGNMENT_IN_PROGRESS", false},
	DelegationTokenAuthDisabled: {"DELEGATION_TOKEN_AUTH_DISABLED", false}, DelegationTokenNotFound: {"DELEGATION_TOKEN_NOT_FOUND", false},
	DelegationTokenOwnerMismatch: {"DELEGATION_TOKEN_OWNER_MISMATCH", false}, DelegationTokenRequestNotAllowed: {"DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", false},
	DelegationTokenAuthFailed: {"DELEGATION_TOKEN_AUTHORIZATION_FAILED", false}, DelegationTokenExpired: {"DELEGATION_TOKEN_EXPIRED", false},
	InvalidPrincipalType: {"INVALID_PRINCIPAL_TYPE", false}, NonEmptyGroup: {"NON_EMPTY_GROUP", false},
	GroupIDNotFound: {"GROUP_ID_NOT_FOUND", false}, FetchSessionIDNotFound: {"FETCH_SESSION_ID_NOT_FOUND", true},
	InvalidFetchSessionEpoch: {"INVALID_FETCH_SESSION_EPOCH", true}, ListenerNotFound: {"LISTENER_NOT_FOUND", true},
	TopicDeletionDisabled: {"TOPIC_DELETION_DISABLED", false}, FencedLeaderEpoch: {"FENCED_LEADER_EPOCH", true},
	UnknownLeaderEpoch: {"UNKNOWN_LEADER_EPOCH", true}, UnsupportedCompressionType: {"UNSUPPORTED_COMPRESSION_TYPE", false},
	StaleBrokerEpoch: {"STALE_BROKER_EPOCH", false}, OffsetNotAvailable: {"OFFSET_NOT_AVAILABLE", true},
	MemberIDRequired: {"MEMBER_ID_REQUIRED", false}, PreferredLeaderNotAvailable: {"PREFERRED_LEADER_NOT_AVAILABLE", true},
	GroupMaxSizeReached: {"GROUP_MAX_SIZE_REACHED", false}, FencedInstanceID: {"FENCED_INSTANCE_ID", false},
	EligibleLeadersNotAvailable: {"ELIGIBLE_LEADERS_NOT_AVAILABLE", true}, ElectionNotNeeded: {"ELECTION_NOT_NEEDED", true},
	NoReassignmentInProgress: {"NO_REASSIGNMENT_IN_PROGRESS", false}, GroupSubscribedToTopic: {"GROUP_SUBSCRIBED_TO_TOPIC", false},
	InvalidRecord: {"INVALID_RECORD", false}, UnstableOffsetCommit: {"UNSTABLE_OFFSET_COMMIT", true},
	ThrottlingQuotaExceeded: {"THROTTLING_QUOTA_EXCEEDED", true}, ProducerFenced: {"PRODUCER_FENCED", false},
	ResourceNotFound: {"RESOURCE_NOT_FOUND", false}, DuplicateResource: {"DUPLICATE_RESOURCE", false},
	UnacceptableCredential: {"UNACCEPTABLE_CREDENTIAL", false}, InconsistentVoterSet: {"INCONSISTENT_VOTER_SET", false},
	InvalidUpdateVersion: {"INVALID_UPDATE_VERSION", false}, FeatureUpdateFailed: {"FEATURE_UPDATE_FAILED", false},
	PrincipalDeserializationFailure: {"PRINCIPAL_DESERIALIZATION_FAILURE", false}, SnapshotNotFound: {"SNAPSHOT_NOT_FOUND", false},
	PositionOutOfRange: {"POSITION_OUT_OF_RANGE", false}, UnknownTopicID: {"UNKNOWN_TOPIC_ID", true},
	DuplicateBrokerRegistration: {"DUPLICATE_BROKER_REGISTRATION", false}, BrokerIDNotRegistered: {"BROKER_ID_NOT_REGISTERED", false},
	InconsistentTopicID: {"INCONSISTENT_TOPIC_ID", true}, InconsistentClusterID: {"INCONSISTENT_CLUSTER_ID", false},
	TransactionalIDNotFound: {"TRANSACTIONAL_ID_NOT_FOUND", false}, FetchSessionTopicIDError: {"FETCH_SESSION_TOPIC_ID_ERROR", true},
	IneligibleReplica: {"INELIGIBLE_REPLICA", false}, NewLeaderElected: {"NEW_LEADER_ELECTED", false},
	OffsetMovedToTieredStorage: {"OFFSET_MOVED_TO_TIERED_STORAGE", false}, FencedMemberEpoch: {"FENCED_MEMBER_EPOCH", false},
	UnreleasedInstanceID: {"UNRELEASED_INSTANCE_ID", false}, UnsupportedAssignor: {"UNSUPPORTED_ASSIGNOR", false},
	StaleMemberEpoch: {"STALE_MEMBER_EPOCH", false}, MismatchedEndpointType: {"MISMATCHED_ENDPOINT_TYPE", false},
	UnsupportedEndpointType: {"UNSUPPORTED_ENDPOINT_TYPE", false}, UnknownControllerID: {"UNKNOWN_CONTROLLER_ID", false},
	UnknownSubscriptionID: {"UNKNOWN_SUBSCRIPTION_ID", false}, TelemetryTooLarge: {"TELEMETRY_TOO_LARGE", false},
	InvalidRegistration: {"INVALID_REGISTRATION", false}, TransactionAbortable: {"TRANSACTION_ABORTABLE", false},
	InvalidRecordState: {"INVALID_RECORD_STATE", false}, ShareSessionNotFound: {"SHARE_SESSION_NOT_FOUND", true},
	InvalidShareSessionEpoch: {"INVALID_SHARE_SESSION_EPOCH", true}, FencedStateEpoch: {"FENCED_STATE_EPOCH", false},
	InvalidVoterKey: {"INVALID_VOTER_KEY", false}, DuplicateVoter: {"DUPLICATE_VOTER", false},
	VoterNotFound: {"VOTER_NOT_FOUND", false}, InvalidRegularExpression: {"INVALID_REGULAR_EXPRESSION", false},
	RebootstrapRequired: {"REBOOTSTRAP_REQUIRED", false},
}

// String returns Kafka's name for the code, e.g. "UNKNOWN_TOPIC_OR_PARTITION".
func (c ErrorCode) String() string {
	if i, ok := codes[c]; ok {
		return i.name
	}
	return "ERROR_CODE_" + strconv.Itoa(int(c))
}

// Retriable reports whether the Java client retries the code automatically.
func (c ErrorCode) Retriable() bool { return codes[c].retriable }

// NullString is a nullable string field. The zero value is null.
type NullString struct {
	S     string
	Valid bool
}

// NullStringOf returns a non-null NullString holding s.
func NullStringOf(s string) NullString { return NullString{S: s, Valid: true} }
