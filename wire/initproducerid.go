package wire

// InitProducerId (key 22), versions 0–5, flexible from v2 (docs/design/kafka-protocol.md
// §2.1, §2.4; InitProducerIdRequest.json, InitProducerIdResponse.json). v3 adds the
// producer's current id and epoch (KIP-360 epoch bumps); v4 and v5 change only
// which errors may be returned. v6 (KIP-939) is not stable and not supported.

const (
	initProducerIDMinVersion = 0
	initProducerIDMaxVersion = 5
	// initProducerIDFlexible is the first flexible version: "flexibleVersions": "2+".
	initProducerIDFlexible int16 = 2
)

// InitProducerIDRequest is an InitProducerId request body.
type InitProducerIDRequest struct {
	// TransactionalID is null for idempotent, non-transactional producers,
	// which send this request to any broker. It is a view into the frame,
	// valid until the frame is released.
	TransactionalID          NullString
	TransactionTimeoutMillis int32
	// ProducerID and ProducerEpoch (v3+) are the producer's current id and
	// epoch, or -1 for a new producer; Decode reports -1 before v3.
	ProducerID    int64
	ProducerEpoch int16
}

// Decode parses an InitProducerId request body of the given version.
// TransactionalID aliases body: it is valid until the frame is released.
func (r *InitProducerIDRequest) Decode(body []byte, version int16) error {
	if version < initProducerIDMinVersion || version > initProducerIDMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= initProducerIDFlexible
	rd := NewReader(body)
	s, ok := rd.NullableStr(flex)
	r.TransactionalID = NullString{S: s, Valid: ok}
	r.TransactionTimeoutMillis = rd.Int32()
	r.ProducerID, r.ProducerEpoch = -1, -1 // schema defaults
	if version >= 3 {
		r.ProducerID = rd.Int64()
		r.ProducerEpoch = rd.Int16()
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// AppendTo appends r encoded at version (a client's view; used by tests).
func (r *InitProducerIDRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= initProducerIDFlexible
	dst = AppendNullableStr(dst, flex, r.TransactionalID.S, r.TransactionalID.Valid)
	dst = AppendInt32(dst, r.TransactionTimeoutMillis)
	if version >= 3 {
		dst = AppendInt64(dst, r.ProducerID)
		dst = AppendInt16(dst, r.ProducerEpoch)
	}
	return AppendEmptyTags(dst, flex)
}

// InitProducerIDResponse is an InitProducerId response body.
type InitProducerIDResponse struct {
	ThrottleMillis int32
	ErrorCode      ErrorCode
	// ProducerID and ProducerEpoch are the allocated id and epoch, or -1
	// with an error.
	ProducerID    int64
	ProducerEpoch int16
}

// AppendTo appends r's body encoded at version. It does not allocate when
// dst has room.
func (r *InitProducerIDResponse) AppendTo(dst []byte, version int16) []byte {
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendInt64(dst, r.ProducerID)
	dst = AppendInt16(dst, r.ProducerEpoch)
	return AppendEmptyTags(dst, version >= initProducerIDFlexible)
}

// CountErrors reports r's error codes to c.
func (r *InitProducerIDResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
