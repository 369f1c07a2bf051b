package wire

// LeaveGroup (key 13), versions 0–5, flexible from 4 (docs/design/kafka-protocol.md
// §2.1, §2.4, classic group protocol). v3 (KIP-345) batches members: the request's
// single MemberID becomes Members, and the response gains per-member codes.

// leaveGroupFlexible is the first flexible version: "flexibleVersions": "4+".
const leaveGroupFlexible int16 = 4

// LeaveGroupRequest is a LeaveGroup request, v0–5. Strings alias the frame:
// valid until the frame is released.
type LeaveGroupRequest struct {
	// Group is the group id.
	Group string
	// MemberID is the leaving member (v0–2; "" from v3).
	MemberID string
	// Members are the leaving members (v3+; empty before).
	Members []LeaveGroupRequestMember
}

// LeaveGroupRequestMember is one leaving member (v3+).
type LeaveGroupRequestMember struct {
	// MemberID is the member id.
	MemberID string
	// InstanceID is the static member id, or null.
	InstanceID NullString
	// Reason is why the member leaves (v5+; null when absent).
	Reason NullString
}

// Decode parses a LeaveGroup request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is released.
// On error r's contents are unspecified.
func (r *LeaveGroupRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 5 {
		return ErrUnsupportedVersion
	}
	flex := version >= leaveGroupFlexible
	rd := NewReader(body)
	r.Group = rd.Str(flex)
	r.MemberID = ""
	r.Members = r.Members[:0]
	if version <= 2 { // MemberId: "versions": "0-2"
		r.MemberID = rd.Str(flex)
	} else { // Members: "versions": "3+"
		mmin := 2 + 2
		if flex {
			mmin = 1 + 1 + 1
		}
		if version >= 5 {
			mmin++
		}
		r.Members = resize(r.Members, arrayLen(&rd, flex, mmin))
		for i := range r.Members {
			m := &r.Members[i]
			m.MemberID = rd.Str(flex)
			m.InstanceID = nullStr(&rd, flex)
			m.Reason = NullString{}
			if version >= 5 {
				m.Reason = nullStr(&rd, flex)
			}
			if flex {
				rd.SkipTags()
			}
		}
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// LeaveGroupResponse is a LeaveGroup response, v0–5.
type LeaveGroupResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v1+).
	ThrottleMillis int32
	// ErrorCode is the request-level error.
	ErrorCode ErrorCode
	// Members answer each leaving member (v3+).
	Members []LeaveGroupResponseMember
}

// LeaveGroupResponseMember answers one leaving member (v3+).
type LeaveGroupResponseMember struct {
	// MemberID is the member id.
	MemberID string
	// InstanceID is the static member id, or null.
	InstanceID NullString
	// ErrorCode is the member's error.
	ErrorCode ErrorCode
}

// AppendTo appends the response body at the given version to dst.
func (r *LeaveGroupResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= leaveGroupFlexible
	if version >= 1 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendInt16(dst, int16(r.ErrorCode))
	if version >= 3 {
		dst = AppendArrayLen(dst, flex, len(r.Members))
		for i := range r.Members {
			m := &r.Members[i]
			dst = AppendStr(dst, flex, m.MemberID)
			dst = appendNullString(dst, flex, m.InstanceID)
			dst = AppendInt16(dst, int16(m.ErrorCode))
			dst = AppendEmptyTags(dst, flex)
		}
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *LeaveGroupResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Members {
		countError(c, r.Members[i].ErrorCode)
	}
}
