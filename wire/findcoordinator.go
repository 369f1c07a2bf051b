package wire

// FindCoordinator (key 10), versions 0–6, flexible from 3 (docs/design/kafka-protocol.md
// §2.1, §2.4). v4 (KIP-699) batches keys: the request carries CoordinatorKeys
// instead of CoordinatorKey and the response one Coordinators entry per key
// instead of the top-level node fields.

// findCoordinatorFlexible is the first flexible version: "flexibleVersions": "3+".
const findCoordinatorFlexible int16 = 3

// Coordinator key types (FindCoordinatorRequest.json KeyType).
const (
	// CoordinatorTypeGroup asks for a consumer group's coordinator.
	CoordinatorTypeGroup int8 = 0
	// CoordinatorTypeTransaction asks for a transactional id's coordinator.
	CoordinatorTypeTransaction int8 = 1
	// CoordinatorTypeShare asks for a share group's coordinator (v6+).
	CoordinatorTypeShare int8 = 2
)

// FindCoordinatorRequest is a FindCoordinator request, v0–6. Strings alias
// the frame: valid until the frame is released.
type FindCoordinatorRequest struct {
	// CoordinatorKey is the group or transactional id (v0–3; "" from v4).
	CoordinatorKey string
	// CoordinatorType is a CoordinatorType* constant (v1+; group when absent).
	CoordinatorType int8
	// CoordinatorKeys are the batched keys (v4+; empty before).
	CoordinatorKeys []string
}

// Decode parses a FindCoordinator request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *FindCoordinatorRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 6 {
		return ErrUnsupportedVersion
	}
	flex := version >= findCoordinatorFlexible
	rd := NewReader(body)
	r.CoordinatorKey = ""
	if version <= 3 { // Key: "versions": "0-3"
		r.CoordinatorKey = rd.Str(flex)
	}
	r.CoordinatorType = CoordinatorTypeGroup
	if version >= 1 {
		r.CoordinatorType = rd.Int8()
	}
	r.CoordinatorKeys = r.CoordinatorKeys[:0]
	if version >= 4 { // CoordinatorKeys: "versions": "4+"
		r.CoordinatorKeys = strs(&rd, flex, false, r.CoordinatorKeys)
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// FindCoordinatorResponse is a FindCoordinator response, v0–6.
type FindCoordinatorResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v1+).
	ThrottleMillis int32
	// ErrorCode is the lookup's error (v0–3).
	ErrorCode ErrorCode
	// ErrorMessage details ErrorCode (v1–3).
	ErrorMessage NullString
	// NodeID is the coordinator's node id (v0–3).
	NodeID int32
	// Host is the coordinator's host (v0–3).
	Host string
	// Port is the coordinator's port (v0–3).
	Port int32
	// Coordinators answer each requested key (v4+).
	Coordinators []FindCoordinatorResponseCoordinator
}

// FindCoordinatorResponseCoordinator answers one key (v4+).
type FindCoordinatorResponseCoordinator struct {
	// Key is the requested key.
	Key string
	// NodeID is the coordinator's node id.
	NodeID int32
	// Host is the coordinator's host.
	Host string
	// Port is the coordinator's port.
	Port int32
	// ErrorCode is the key's error.
	ErrorCode ErrorCode
	// ErrorMessage details ErrorCode.
	ErrorMessage NullString
}

// AppendTo appends the response body at the given version to dst.
func (r *FindCoordinatorResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= findCoordinatorFlexible
	if version >= 1 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	if version <= 3 {
		dst = AppendInt16(dst, int16(r.ErrorCode))
		if version >= 1 {
			dst = appendNullString(dst, flex, r.ErrorMessage)
		}
		dst = AppendInt32(dst, r.NodeID)
		dst = AppendStr(dst, flex, r.Host)
		dst = AppendInt32(dst, r.Port)
	} else {
		dst = AppendArrayLen(dst, flex, len(r.Coordinators))
		for i := range r.Coordinators {
			c := &r.Coordinators[i]
			dst = AppendStr(dst, flex, c.Key)
			dst = AppendInt32(dst, c.NodeID)
			dst = AppendStr(dst, flex, c.Host)
			dst = AppendInt32(dst, c.Port)
			dst = AppendInt16(dst, int16(c.ErrorCode))
			dst = appendNullString(dst, flex, c.ErrorMessage)
			dst = AppendEmptyTags(dst, flex)
		}
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *FindCoordinatorResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Coordinators {
		countError(c, r.Coordinators[i].ErrorCode)
	}
}
