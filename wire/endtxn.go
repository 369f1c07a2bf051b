package wire

// EndTxn (key 26), versions 0–5, flexible from 3 (EndTxnRequest.json,
// EndTxnResponse.json, "validVersions": "0-5", "flexibleVersions": "3+").
// A transactional producer commits or aborts its transaction with it. The
// request's fields are the same in every version: v1 is the same as v0, v2
// adds PRODUCER_FENCED, v3 is flexible, v4 adds TRANSACTION_ABORTABLE
// (KIP-890), v5 bumps the epoch on every transaction (KIP-890 part 2) and its
// response carries the producer id and epoch.

const (
	// EndTxnMinVersion is the lowest EndTxn version wire decodes.
	EndTxnMinVersion int16 = 0
	// EndTxnMaxVersion is the highest EndTxn version wire decodes.
	EndTxnMaxVersion int16 = 5
	// EndTxnFlexible is the first flexible version: "flexibleVersions": "3+".
	EndTxnFlexible int16 = 3
)

// EndTxnRequest is an EndTxn request body, v0–5. TransactionalID aliases
// the frame: valid until the frame is released.
type EndTxnRequest struct {
	// TransactionalID is the id of the transaction to end.
	TransactionalID string
	// ProducerID is the producer's id.
	ProducerID int64
	// ProducerEpoch is the producer's current epoch.
	ProducerEpoch int16
	// Committed is true to commit the transaction, false to abort it.
	Committed bool
}

// Decode parses an EndTxn request body of the given version into r.
// TransactionalID aliases body: it is valid until the frame is released.
func (r *EndTxnRequest) Decode(body []byte, version int16) error {
	if version < EndTxnMinVersion || version > EndTxnMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= EndTxnFlexible
	rd := NewReader(body)
	r.TransactionalID = rd.Str(flex)
	r.ProducerID = rd.Int64()
	r.ProducerEpoch = rd.Int16()
	r.Committed = rd.Bool()
	endStruct(&rd, flex)
	return rd.Complete()
}

// AppendTo appends r encoded at version (a client's view; used by tests).
func (r *EndTxnRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= EndTxnFlexible
	dst = AppendStr(dst, flex, r.TransactionalID)
	dst = AppendInt64(dst, r.ProducerID)
	dst = AppendInt16(dst, r.ProducerEpoch)
	dst = AppendBool(dst, r.Committed)
	return AppendEmptyTags(dst, flex)
}

// EndTxnResponse is an EndTxn response body, v0–5.
type EndTxnResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// ErrorCode is the request's error.
	ErrorCode ErrorCode
	// ProducerID and ProducerEpoch (v5+; "default": "-1") are the
	// producer's id and the epoch bumped by ending the transaction. They
	// are not written before v5.
	ProducerID    int64
	ProducerEpoch int16
}

// AppendTo appends r's body encoded at version. It does not allocate when
// dst has room.
func (r *EndTxnResponse) AppendTo(dst []byte, version int16) []byte {
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendInt16(dst, int16(r.ErrorCode))
	if version >= 5 { // ProducerId, ProducerEpoch: "versions": "5+"
		dst = AppendInt64(dst, r.ProducerID)
		dst = AppendInt16(dst, r.ProducerEpoch)
	}
	return AppendEmptyTags(dst, version >= EndTxnFlexible)
}

// CountErrors reports r's error codes to c.
func (r *EndTxnResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
