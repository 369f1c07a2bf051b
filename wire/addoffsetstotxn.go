package wire

// AddOffsetsToTxn (key 25), versions 0–4, flexible from 3
// (AddOffsetsToTxnRequest.json, AddOffsetsToTxnResponse.json,
// "validVersions": "0-4", "flexibleVersions": "3+"). A transactional
// producer adds a group's offsets partition to its transaction before
// TxnOffsetCommit. The fields are the same in every version: v1 is the same
// as v0, v2 adds PRODUCER_FENCED, v3 is flexible, v4 adds
// TRANSACTION_ABORTABLE (KIP-890).

const (
	// AddOffsetsToTxnMinVersion is the lowest AddOffsetsToTxn version wire
	// decodes.
	AddOffsetsToTxnMinVersion int16 = 0
	// AddOffsetsToTxnMaxVersion is the highest AddOffsetsToTxn version wire
	// decodes.
	AddOffsetsToTxnMaxVersion int16 = 4
	// AddOffsetsToTxnFlexible is the first flexible version:
	// "flexibleVersions": "3+".
	AddOffsetsToTxnFlexible int16 = 3
)

// AddOffsetsToTxnRequest is an AddOffsetsToTxn request body, v0–4. Strings
// alias the frame: valid until the frame is released.
type AddOffsetsToTxnRequest struct {
	// TransactionalID is the id of the transaction.
	TransactionalID string
	// ProducerID is the producer's id.
	ProducerID int64
	// ProducerEpoch is the producer's current epoch.
	ProducerEpoch int16
	// Group (Kafka: GroupId) is the group whose offsets the transaction
	// will commit.
	Group string
}

// Decode parses an AddOffsetsToTxn request body of the given version into
// r. Strings alias body: they are valid until the frame is released.
func (r *AddOffsetsToTxnRequest) Decode(body []byte, version int16) error {
	if version < AddOffsetsToTxnMinVersion || version > AddOffsetsToTxnMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= AddOffsetsToTxnFlexible
	rd := NewReader(body)
	r.TransactionalID = rd.Str(flex)
	r.ProducerID = rd.Int64()
	r.ProducerEpoch = rd.Int16()
	r.Group = rd.Str(flex)
	endStruct(&rd, flex)
	return rd.Complete()
}

// AppendTo appends r encoded at version (a client's view; used by tests).
func (r *AddOffsetsToTxnRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= AddOffsetsToTxnFlexible
	dst = AppendStr(dst, flex, r.TransactionalID)
	dst = AppendInt64(dst, r.ProducerID)
	dst = AppendInt16(dst, r.ProducerEpoch)
	dst = AppendStr(dst, flex, r.Group)
	return AppendEmptyTags(dst, flex)
}

// AddOffsetsToTxnResponse is an AddOffsetsToTxn response body, v0–4.
type AddOffsetsToTxnResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// ErrorCode is the request's error.
	ErrorCode ErrorCode
}

// AppendTo appends r's body encoded at version. It does not allocate when
// dst has room.
func (r *AddOffsetsToTxnResponse) AppendTo(dst []byte, version int16) []byte {
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendInt16(dst, int16(r.ErrorCode))
	return AppendEmptyTags(dst, version >= AddOffsetsToTxnFlexible)
}

// CountErrors reports r's error codes to c.
func (r *AddOffsetsToTxnResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
