package wire

// SyncGroup (key 14), versions 0–5, flexible from 4 (docs/design/kafka-protocol.md §2.1, §2.4,
// classic group protocol). Assignments are opaque bytes.

// syncGroupFlexible is the first flexible version: "flexibleVersions": "4+".
const syncGroupFlexible int16 = 4

// SyncGroupRequest is a SyncGroup request, v0–5. Strings and bytes alias
// the frame: valid until the frame is released.
type SyncGroupRequest struct {
	// Group is the group id.
	Group string
	// Generation is the member's generation id.
	Generation int32
	// MemberID is the member id.
	MemberID string
	// InstanceID is the static member id (v3+; null when absent).
	InstanceID NullString
	// ProtocolType is the group's protocol type (v5+; null when absent).
	ProtocolType NullString
	// Protocol is the chosen protocol (v5+; null when absent).
	Protocol NullString
	// GroupAssignment holds the leader's assignments; empty from followers.
	GroupAssignment []SyncGroupRequestGroupAssignment
}

// SyncGroupRequestGroupAssignment is the leader's assignment for one member.
type SyncGroupRequestGroupAssignment struct {
	// MemberID is the member id.
	MemberID string
	// MemberAssignment is the opaque assignment (for consumers a
	// ConsumerProtocolAssignment).
	MemberAssignment []byte
}

// Decode parses a SyncGroup request body of the given version into r,
// reusing r's slices. Strings and bytes alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *SyncGroupRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 5 {
		return ErrUnsupportedVersion
	}
	flex := version >= syncGroupFlexible
	rd := NewReader(body)
	r.Group = rd.Str(flex)
	r.Generation = rd.Int32()
	r.MemberID = rd.Str(flex)
	r.InstanceID = NullString{}
	if version >= 3 {
		r.InstanceID = nullStr(&rd, flex)
	}
	r.ProtocolType, r.Protocol = NullString{}, NullString{}
	if version >= 5 {
		r.ProtocolType = nullStr(&rd, flex)
		r.Protocol = nullStr(&rd, flex)
	}
	amin := 2 + 4
	if flex {
		amin = 3
	}
	r.GroupAssignment = resize(r.GroupAssignment, arrayLen(&rd, flex, amin))
	for i := range r.GroupAssignment {
		a := &r.GroupAssignment[i]
		a.MemberID = rd.Str(flex)
		a.MemberAssignment = rd.ByteSlice(flex)
		if flex {
			rd.SkipTags()
		}
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// SyncGroupResponse is a SyncGroup response, v0–5.
type SyncGroupResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v1+).
	ThrottleMillis int32
	// ErrorCode is the sync's error.
	ErrorCode ErrorCode
	// ProtocolType is the group's protocol type (v5+); the Java client
	// checks a non-null value against its own.
	ProtocolType NullString
	// Protocol is the chosen protocol (v5+), checked like ProtocolType.
	Protocol NullString
	// MemberAssignment is this member's assignment.
	MemberAssignment []byte
}

// AppendTo appends the response body at the given version to dst.
func (r *SyncGroupResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= syncGroupFlexible
	if version >= 1 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendInt16(dst, int16(r.ErrorCode))
	if version >= 5 {
		dst = appendNullString(dst, flex, r.ProtocolType)
		dst = appendNullString(dst, flex, r.Protocol)
	}
	dst = AppendByteSlice(dst, flex, r.MemberAssignment)
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *SyncGroupResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
