package wire

// ListTransactions (key 66), versions 0–2, flexible (KIP-664;
// ListTransactionsRequest.json and ListTransactionsResponse.json,
// "flexibleVersions": "0+"). It lists a coordinator's transactional ids:
// what `kafka-transactions --list` prints. "Version 1: adds DurationFilter to
// list transactions older than specified duration" (KIP-994); "Version 2:
// adds TransactionalIdPattern to list transactions with the same pattern"
// (KIP-1152). The response is the same in every version ("Version 1 is the
// same as version 0"; v2 may return INVALID_REGULAR_EXPRESSION).

const (
	// ListTransactionsMinVersion is the lowest ListTransactions version
	// wire decodes.
	ListTransactionsMinVersion int16 = 0
	// ListTransactionsMaxVersion is the highest ListTransactions version
	// wire decodes.
	ListTransactionsMaxVersion int16 = 2
	// ListTransactionsFlexible is the first flexible version:
	// "flexibleVersions": "0+".
	ListTransactionsFlexible int16 = 0
)

// ListTransactionsRequest is the body of a ListTransactions request, v0–2.
// Strings alias the frame: valid until the frame is released.
type ListTransactionsRequest struct {
	// StateFilters keeps transactions in these states; empty = all.
	StateFilters []string
	// ProducerIDFilters keeps transactions of these producer ids; empty =
	// all.
	ProducerIDFilters []int64
	// DurationFilterMillis (Kafka: DurationFilter, v1+; "default": -1)
	// keeps transactions running longer than this; negative = all, and -1
	// before v1.
	DurationFilterMillis int64
	// TransactionalIDPattern (v2+; nullable, "default": "null") keeps
	// transactional ids matching this regular expression (re2 syntax);
	// null or empty = all, and null before v2.
	TransactionalIDPattern NullString
}

// Decode parses a ListTransactions request body of the given version into
// r, reusing the capacity of r's slices. Strings alias body: they are valid
// until the frame is released. On error r's contents are unspecified.
func (r *ListTransactionsRequest) Decode(body []byte, version int16) error {
	if version < ListTransactionsMinVersion || version > ListTransactionsMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= ListTransactionsFlexible
	rd := NewReader(body)
	r.StateFilters = strs(&rd, flex, false, r.StateFilters)
	r.ProducerIDFilters = int64s(&rd, flex, r.ProducerIDFilters)
	r.DurationFilterMillis = -1
	if version >= 1 { // DurationFilter: "versions": "1+"
		r.DurationFilterMillis = rd.Int64()
	}
	r.TransactionalIDPattern = NullString{}
	if version >= 2 { // TransactionalIdPattern: "versions": "2+"
		r.TransactionalIDPattern = nullStr(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// int64s reads a non-nullable []INT64 into s's storage.
func int64s(rd *Reader, flex bool, s []int64) []int64 {
	s = resize(s, arrayLen(rd, flex, 8))
	for i := range s {
		s[i] = rd.Int64()
	}
	return s
}

// AppendTo appends r encoded at version (a client's view; used by tests).
func (r *ListTransactionsRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= ListTransactionsFlexible
	dst = AppendArrayLen(dst, flex, len(r.StateFilters))
	for _, s := range r.StateFilters {
		dst = AppendStr(dst, flex, s)
	}
	dst = AppendArrayLen(dst, flex, len(r.ProducerIDFilters))
	for _, id := range r.ProducerIDFilters {
		dst = AppendInt64(dst, id)
	}
	if version >= 1 {
		dst = AppendInt64(dst, r.DurationFilterMillis)
	}
	if version >= 2 {
		dst = AppendNullableStr(dst, flex, r.TransactionalIDPattern.S, r.TransactionalIDPattern.Valid)
	}
	return AppendEmptyTags(dst, flex)
}

// ListTransactionsResponse is the body of a ListTransactions response, v0–2.
type ListTransactionsResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// ErrorCode is the request's error.
	ErrorCode ErrorCode
	// UnknownStateFilters are the requested state filters the coordinator
	// does not know.
	UnknownStateFilters []string
	// TransactionStates are the listed transactions.
	TransactionStates []ListTransactionsState
}

// ListTransactionsState is one listed transaction (Kafka:
// TransactionState).
type ListTransactionsState struct {
	// TransactionalID is the transactional id.
	TransactionalID string
	// ProducerID is its producer id.
	ProducerID int64
	// TransactionState is the transaction's current state, e.g. "Ongoing".
	TransactionState string
}

// AppendTo appends the response body for the given version to dst. It does
// not allocate when dst has room.
func (r *ListTransactionsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= ListTransactionsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendArrayLen(dst, flex, len(r.UnknownStateFilters))
	for _, s := range r.UnknownStateFilters {
		dst = AppendStr(dst, flex, s)
	}
	dst = AppendArrayLen(dst, flex, len(r.TransactionStates))
	for i := range r.TransactionStates {
		s := &r.TransactionStates[i]
		dst = AppendStr(dst, flex, s.TransactionalID)
		dst = AppendInt64(dst, s.ProducerID)
		dst = AppendStr(dst, flex, s.TransactionState)
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *ListTransactionsResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
