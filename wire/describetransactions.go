package wire

// DescribeTransactions (key 65), version 0 only, flexible (KIP-664;
// DescribeTransactionsRequest.json and DescribeTransactionsResponse.json,
// "validVersions": "0", "flexibleVersions": "0+"). It describes the state of
// transactional ids: what `kafka-transactions --describe` prints.

const (
	// DescribeTransactionsMinVersion is the lowest DescribeTransactions
	// version wire decodes.
	DescribeTransactionsMinVersion int16 = 0
	// DescribeTransactionsMaxVersion is the highest DescribeTransactions
	// version wire decodes.
	DescribeTransactionsMaxVersion int16 = 0
	// DescribeTransactionsFlexible is the first flexible version:
	// "flexibleVersions": "0+".
	DescribeTransactionsFlexible int16 = 0
)

// DescribeTransactionsRequest is the body of a DescribeTransactions request.
// Strings alias the frame: valid until the frame is released.
type DescribeTransactionsRequest struct {
	// TransactionalIDs are the transactional ids to describe; "If empty,
	// then no results will be returned."
	TransactionalIDs []string
}

// Decode parses a DescribeTransactions request body of the given version
// into r, reusing the capacity of r's slice. Strings alias body: they are
// valid until the frame is released. On error r's contents are unspecified.
func (r *DescribeTransactionsRequest) Decode(body []byte, version int16) error {
	if version < DescribeTransactionsMinVersion || version > DescribeTransactionsMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= DescribeTransactionsFlexible
	rd := NewReader(body)
	r.TransactionalIDs = strs(&rd, flex, false, r.TransactionalIDs)
	endStruct(&rd, flex)
	return rd.Complete()
}

// AppendTo appends r encoded at version (a client's view; used by tests).
func (r *DescribeTransactionsRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= DescribeTransactionsFlexible
	dst = AppendArrayLen(dst, flex, len(r.TransactionalIDs))
	for _, id := range r.TransactionalIDs {
		dst = AppendStr(dst, flex, id)
	}
	return AppendEmptyTags(dst, flex)
}

// DescribeTransactionsResponse is the body of a DescribeTransactions
// response.
type DescribeTransactionsResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// TransactionStates holds one entry per requested transactional id.
	TransactionStates []DescribeTransactionsState
}

// DescribeTransactionsState describes one transactional id (Kafka:
// TransactionState).
type DescribeTransactionsState struct {
	// ErrorCode is the transactional id's result.
	ErrorCode ErrorCode
	// TransactionalID is the transactional id.
	TransactionalID string
	// State (Kafka: TransactionState) is the transaction's state, e.g.
	// "Ongoing", "PrepareCommit", "CompleteAbort" or "Empty".
	State string
	// TimeoutMillis (Kafka: TransactionTimeoutMs) is the transaction
	// timeout.
	TimeoutMillis int32
	// StartTimeMillis (Kafka: TransactionStartTimeMs) is when the
	// transaction started (ms since the epoch), -1 when none is open.
	StartTimeMillis int64
	// ProducerID is the producer id of the transactional id.
	ProducerID int64
	// ProducerEpoch is the producer's epoch.
	ProducerEpoch int16
	// Topics are the partitions in the current transaction (if active).
	Topics []DescribeTransactionsTopic
}

// DescribeTransactionsTopic is one topic of a transaction (Kafka:
// TopicData).
type DescribeTransactionsTopic struct {
	// Topic is the topic name.
	Topic string
	// Partitions are the partition indexes in the transaction.
	Partitions []int32
}

// AppendTo appends the response body for the given version to dst. It does
// not allocate when dst has room.
func (r *DescribeTransactionsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= DescribeTransactionsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.TransactionStates))
	for i := range r.TransactionStates {
		s := &r.TransactionStates[i]
		dst = AppendInt16(dst, int16(s.ErrorCode))
		dst = AppendStr(dst, flex, s.TransactionalID)
		dst = AppendStr(dst, flex, s.State)
		dst = AppendInt32(dst, s.TimeoutMillis)
		dst = AppendInt64(dst, s.StartTimeMillis)
		dst = AppendInt64(dst, s.ProducerID)
		dst = AppendInt16(dst, s.ProducerEpoch)
		dst = AppendArrayLen(dst, flex, len(s.Topics))
		for j := range s.Topics {
			t := &s.Topics[j]
			dst = AppendStr(dst, flex, t.Topic)
			dst = AppendArrayLen(dst, flex, len(t.Partitions))
			for _, p := range t.Partitions {
				dst = AppendInt32(dst, p)
			}
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *DescribeTransactionsResponse) CountErrors(c ErrorCounter) {
	for i := range r.TransactionStates {
		countError(c, r.TransactionStates[i].ErrorCode)
	}
}
