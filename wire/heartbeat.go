package wire

// Heartbeat (key 12), versions 0–4, flexible from 4 (docs/design/kafka-protocol.md §2.1, §2.4,
// classic group protocol).

// heartbeatFlexible is the first flexible version: "flexibleVersions": "4+".
const heartbeatFlexible int16 = 4

// HeartbeatRequest is a Heartbeat request, v0–4. Strings alias the frame:
// valid until the frame is released.
type HeartbeatRequest struct {
	// Group is the group id.
	Group string
	// Generation is the member's generation id.
	Generation int32
	// MemberID is the member id.
	MemberID string
	// InstanceID is the static member id (v3+; null when absent).
	InstanceID NullString
}

// Decode parses a Heartbeat request body of the given version into r.
// Strings alias body: valid until the frame is released. On error r's
// contents are unspecified.
func (r *HeartbeatRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 4 {
		return ErrUnsupportedVersion
	}
	flex := version >= heartbeatFlexible
	rd := NewReader(body)
	r.Group = rd.Str(flex)
	r.Generation = rd.Int32()
	r.MemberID = rd.Str(flex)
	r.InstanceID = NullString{}
	if version >= 3 {
		r.InstanceID = nullStr(&rd, flex)
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// HeartbeatResponse is a Heartbeat response, v0–4.
type HeartbeatResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v1+).
	ThrottleMillis int32
	// ErrorCode is 0, or e.g. RebalanceInProgress to make the member re-join.
	ErrorCode ErrorCode
}

// AppendTo appends the response body at the given version to dst.
func (r *HeartbeatResponse) AppendTo(dst []byte, version int16) []byte {
	if version >= 1 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendInt16(dst, int16(r.ErrorCode))
	return AppendEmptyTags(dst, version >= heartbeatFlexible)
}

// CountErrors reports r's error codes to c.
func (r *HeartbeatResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
