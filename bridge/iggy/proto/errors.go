package proto

// Code is an Iggy error code (core/common/src/error/iggy_error.rs), carried in
// a reply's status field, a result-section entry, or mapped from an Eviction
// reason (§5).
type Code uint32

// Error codes kiggy meets (§5).
const (
	CodeOK                    Code = 0
	CodeError                 Code = 1
	CodeInvalidCommand        Code = 3
	CodeInvalidFormat         Code = 4
	CodeFeatureUnavailable    Code = 5
	CodeInvalidIdentifier     Code = 6
	CodeResourceNotFound      Code = 20
	CodeStaleClient           Code = 30
	CodeUnauthenticated       Code = 40
	CodeUnauthorized          Code = 41
	CodeInvalidCredentials    Code = 42
	CodeInvalidUsername       Code = 43
	CodeInvalidPassword       Code = 44
	CodePATAlreadyExists      Code = 51
	CodeInvalidPAT            Code = 53
	CodeTransientNotCommitted Code = 57
	CodeTransientNotAccepted  Code = 58
	CodeRequestAlreadyApplied Code = 59
	// 0.12 (iggy_common 0.11.1-edge.4 iggy_error.rs).
	CodeRequestTooOld                  Code = 85    // "outcome unknown, resending may duplicate the write"
	CodeHistoryUnavailable             Code = 87    // the partition was deleted, or recreated under the same id
	CodeLifecycleBusy                  Code = 88    // "Retry as a new request."
	CodeNotPrimary                     Code = 89    // "Request not accepted by a backup replica; retry on the primary of its group"
	CodeOperationUncertain             Code = 14006 // the outcome of the operation is not known
	CodeStreamIDNotFound               Code = 1009
	CodeStreamNameNotFound             Code = 1010
	CodeStreamNameAlreadyExists        Code = 1012
	CodeInvalidStreamName              Code = 1013
	CodeInvalidTopicSize               Code = 1019
	CodeTooManyStreams                 Code = 1020
	CodeTopicIDNotFound                Code = 2010
	CodeTopicNameNotFound              Code = 2011
	CodeTopicNameAlreadyExists         Code = 2013
	CodeInvalidTopicName               Code = 2014
	CodeTooManyPartitions              Code = 2015
	CodeInvalidPartitionsCount         Code = 2019
	CodeTooManyTopics                  Code = 2021
	CodePartitionNotFound              Code = 3007
	CodeNoPartitions                   Code = 3008
	CodePartitionIDSpaceExhausted      Code = 3013
	CodeConsumerOffsetNotFound         Code = 3021
	CodeTooManyConsumerOffsets         Code = 3024
	CodeTooBigUserHeaders              Code = 4017
	CodeTooBigMessagePayload           Code = 4022
	CodeInvalidMessageChecksum         Code = 4027
	CodeInvalidBatchChecksum           Code = 4039
	CodeUnsupportedOptionKey           Code = 4041
	CodeInvalidOptionValue             Code = 4042
	CodeOptionsBlockTooLarge           Code = 4043
	CodeInvalidOffset                  Code = 4100
	CodeConsumerGroupIDNotFound        Code = 5000
	CodeConsumerGroupNameNotFound      Code = 5003
	CodeConsumerGroupNameAlreadyExists Code = 5004
	CodeConsumerGroupMemberNotFound    Code = 5006
	CodeConsumerGroupPartitionNotOwned Code = 5009
	CodeIncompatibleProtocolVersion    Code = 14003
)

var codeNames = map[Code]string{
	CodeError:                          "Error",
	CodeInvalidCommand:                 "InvalidCommand",
	CodeInvalidFormat:                  "InvalidFormat",
	CodeFeatureUnavailable:             "FeatureUnavailable",
	CodeInvalidIdentifier:              "InvalidIdentifier",
	CodeResourceNotFound:               "ResourceNotFound",
	CodeStaleClient:                    "StaleClient",
	CodeUnauthenticated:                "Unauthenticated",
	CodeUnauthorized:                   "Unauthorized",
	CodeInvalidCredentials:             "InvalidCredentials",
	CodeInvalidUsername:                "InvalidUsername",
	CodeInvalidPassword:                "InvalidPassword",
	CodePATAlreadyExists:               "PersonalAccessTokenAlreadyExists",
	CodeInvalidPAT:                     "InvalidPersonalAccessToken",
	CodeTransientNotCommitted:          "TransientNotCommitted",
	CodeTransientNotAccepted:           "TransientNotAccepted",
	CodeRequestAlreadyApplied:          "RequestAlreadyApplied",
	CodeRequestTooOld:                  "RequestTooOld",
	CodeHistoryUnavailable:             "HistoryUnavailable",
	CodeLifecycleBusy:                  "LifecycleBusy",
	CodeNotPrimary:                     "NotPrimary",
	CodeOperationUncertain:             "OperationUncertain",
	CodeStreamIDNotFound:               "StreamIdNotFound",
	CodeStreamNameNotFound:             "StreamNameNotFound",
	CodeStreamNameAlreadyExists:        "StreamNameAlreadyExists",
	CodeInvalidStreamName:              "InvalidStreamName",
	CodeInvalidTopicSize:               "InvalidTopicSize",
	CodeTooManyStreams:                 "TooManyStreams",
	CodeTopicIDNotFound:                "TopicIdNotFound",
	CodeTopicNameNotFound:              "TopicNameNotFound",
	CodeTopicNameAlreadyExists:         "TopicNameAlreadyExists",
	CodeInvalidTopicName:               "InvalidTopicName",
	CodeTooManyPartitions:              "TooManyPartitions",
	CodeInvalidPartitionsCount:         "InvalidPartitionsCount",
	CodeTooManyTopics:                  "TooManyTopics",
	CodePartitionNotFound:              "PartitionNotFound",
	CodeNoPartitions:                   "NoPartitions",
	CodePartitionIDSpaceExhausted:      "PartitionIdSpaceExhausted",
	CodeConsumerOffsetNotFound:         "ConsumerOffsetNotFound",
	CodeTooManyConsumerOffsets:         "TooManyConsumerOffsets",
	CodeTooBigUserHeaders:              "TooBigUserHeaders",
	CodeTooBigMessagePayload:           "TooBigMessagePayload",
	CodeInvalidMessageChecksum:         "InvalidMessageChecksum",
	CodeInvalidBatchChecksum:           "InvalidBatchChecksum",
	CodeUnsupportedOptionKey:           "UnsupportedOptionKey",
	CodeInvalidOptionValue:             "InvalidOptionValue",
	CodeOptionsBlockTooLarge:           "OptionsBlockTooLarge",
	CodeInvalidOffset:                  "InvalidOffset",
	CodeConsumerGroupIDNotFound:        "ConsumerGroupIdNotFound",
	CodeConsumerGroupNameNotFound:      "ConsumerGroupNameNotFound",
	CodeConsumerGroupNameAlreadyExists: "ConsumerGroupNameAlreadyExists",
	CodeConsumerGroupMemberNotFound:    "ConsumerGroupMemberNotFound",
	CodeConsumerGroupPartitionNotOwned: "ConsumerGroupPartitionNotOwned",
	CodeIncompatibleProtocolVersion:    "IncompatibleProtocolVersion",
}

// String returns the code's IggyError name, or "code N" for one kiggy does
// not know.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "code " + itoa(uint32(c))
}

// Transient reports whether the code asks the client to replay (57) or
// retry (58) the request (§1.8).
func (c Code) Transient() bool {
	return c == CodeTransientNotCommitted || c == CodeTransientNotAccepted
}

// Eviction reasons (§1.6, header.rs EvictionReason).
const (
	EvictNoSession              uint8 = 1
	EvictClientReleaseTooLow    uint8 = 2
	EvictClientReleaseTooHigh   uint8 = 3
	EvictInvalidOperation       uint8 = 4
	EvictInvalidBody            uint8 = 5
	EvictInvalidBodySize        uint8 = 6
	EvictSessionTooLow          uint8 = 7
	EvictSessionReleaseMismatch uint8 = 8
	EvictInvalidCredentials     uint8 = 9
	EvictInvalidToken           uint8 = 10
	EvictUserInactive           uint8 = 11
	EvictSessionError           uint8 = 12
	EvictStaleClient            uint8 = 13
	EvictIncompatibleProtocol   uint8 = 14
	EvictMalformedLogin         uint8 = 15
)

var reasonNames = [...]string{
	EvictNoSession:              "NoSession",
	EvictClientReleaseTooLow:    "ClientReleaseTooLow",
	EvictClientReleaseTooHigh:   "ClientReleaseTooHigh",
	EvictInvalidOperation:       "InvalidRequestOperation",
	EvictInvalidBody:            "InvalidRequestBody",
	EvictInvalidBodySize:        "InvalidRequestBodySize",
	EvictSessionTooLow:          "SessionTooLow",
	EvictSessionReleaseMismatch: "SessionReleaseMismatch",
	EvictInvalidCredentials:     "InvalidCredentials",
	EvictInvalidToken:           "InvalidToken",
	EvictUserInactive:           "UserInactive",
	EvictSessionError:           "SessionError",
	EvictStaleClient:            "StaleClient",
	EvictIncompatibleProtocol:   "IncompatibleProtocol",
	EvictMalformedLogin:         "MalformedLogin",
}

// ReasonName names an eviction reason.
func ReasonName(r uint8) string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return "reason " + itoa(uint32(r))
}

// ReasonCode maps an eviction reason to the error code the SDKs report (§1.6).
func ReasonCode(r uint8) Code {
	switch r {
	case EvictNoSession, EvictSessionTooLow, EvictSessionReleaseMismatch, EvictUserInactive, EvictSessionError:
		return CodeUnauthenticated
	case EvictClientReleaseTooLow, EvictClientReleaseTooHigh, EvictInvalidOperation, EvictInvalidBody, EvictInvalidBodySize:
		return CodeInvalidCommand
	case EvictInvalidCredentials:
		return CodeInvalidCredentials
	case EvictInvalidToken:
		return CodeInvalidPAT
	case EvictStaleClient:
		return CodeStaleClient
	case EvictIncompatibleProtocol:
		return CodeIncompatibleProtocolVersion
	case EvictMalformedLogin:
		return CodeInvalidFormat
	}
	return CodeError
}
