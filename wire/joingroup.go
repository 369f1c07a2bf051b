package wire

// JoinGroup (key 11), versions 0–9, flexible from 6 (docs/design/kafka-protocol.md §2.1, §2.4,
// classic group protocol). Protocol metadata is opaque to the coordinator
// and passed through as bytes.

// joinGroupFlexible is the first flexible version: "flexibleVersions": "6+".
const joinGroupFlexible int16 = 6

// JoinGroupRequest is a JoinGroup request, v0–9. Strings and bytes alias
// the frame: valid until the frame is released.
type JoinGroupRequest struct {
	// Group is the group id.
	Group string
	// SessionTimeoutMillis is the member's session timeout.
	SessionTimeoutMillis int32
	// RebalanceTimeoutMillis is how long a rebalance may wait for the
	// member (v1+; -1 when absent, and Kafka then uses the session timeout).
	RebalanceTimeoutMillis int32
	// MemberID is the member id, "" on a first join.
	MemberID string
	// InstanceID is the static member id (v5+; null when absent).
	InstanceID NullString
	// ProtocolType is the group's protocol type, "consumer" for consumers.
	ProtocolType string
	// Protocols are the member's supported protocols (assignors), in
	// preference order.
	Protocols []JoinGroupRequestProtocol
	// Reason is why the member joins (v8+; null when absent).
	Reason NullString
}

// JoinGroupRequestProtocol is one protocol a member supports.
type JoinGroupRequestProtocol struct {
	// Name is the protocol name, e.g. "range" or "cooperative-sticky".
	Name string
	// Metadata is the protocol's opaque metadata (for consumers a
	// ConsumerProtocolSubscription).
	Metadata []byte
}

// Decode parses a JoinGroup request body of the given version into r,
// reusing r's slices. Strings and bytes alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *JoinGroupRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 9 {
		return ErrUnsupportedVersion
	}
	flex := version >= joinGroupFlexible
	rd := NewReader(body)
	r.Group = rd.Str(flex)
	r.SessionTimeoutMillis = rd.Int32()
	r.RebalanceTimeoutMillis = -1
	if version >= 1 {
		r.RebalanceTimeoutMillis = rd.Int32()
	}
	r.MemberID = rd.Str(flex)
	r.InstanceID = NullString{}
	if version >= 5 {
		r.InstanceID = nullStr(&rd, flex)
	}
	r.ProtocolType = rd.Str(flex)
	// Smallest protocol: empty name and metadata (+ tags when flexible).
	pmin := 2 + 4
	if flex {
		pmin = 3
	}
	r.Protocols = resize(r.Protocols, arrayLen(&rd, flex, pmin))
	for i := range r.Protocols {
		p := &r.Protocols[i]
		p.Name = rd.Str(flex)
		p.Metadata = rd.ByteSlice(flex)
		if flex {
			rd.SkipTags()
		}
	}
	r.Reason = NullString{}
	if version >= 8 {
		r.Reason = nullStr(&rd, flex)
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// JoinGroupResponse is a JoinGroup response, v0–9.
type JoinGroupResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v2+).
	ThrottleMillis int32
	// ErrorCode is the join's error.
	ErrorCode ErrorCode
	// Generation is the new generation id (-1 on error).
	Generation int32
	// ProtocolType is the group's protocol type (v7+).
	ProtocolType NullString
	// Protocol is the chosen protocol. Nullable from v7; before, null is
	// written as "".
	Protocol NullString
	// LeaderID is the leader's member id.
	LeaderID string
	// SkipAssignment tells a static leader to skip assigning (v9+).
	SkipAssignment bool
	// MemberID is the member's (possibly newly assigned) id.
	MemberID string
	// Members lists every member with its metadata; only for the leader.
	Members []JoinGroupResponseMember
}

// JoinGroupResponseMember is one member, as sent to the leader.
type JoinGroupResponseMember struct {
	// MemberID is the member id.
	MemberID string
	// InstanceID is the static member id (v5+).
	InstanceID NullString
	// ProtocolMetadata is the member's metadata for the chosen protocol.
	ProtocolMetadata []byte
}

// AppendTo appends the response body at the given version to dst.
func (r *JoinGroupResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= joinGroupFlexible
	if version >= 2 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendInt32(dst, r.Generation)
	if version >= 7 {
		dst = appendNullString(dst, flex, r.ProtocolType)
		// ProtocolName: "nullableVersions": "7+".
		dst = appendNullString(dst, flex, r.Protocol)
	} else {
		dst = AppendStr(dst, flex, r.Protocol.S)
	}
	dst = AppendStr(dst, flex, r.LeaderID)
	if version >= 9 {
		dst = AppendBool(dst, r.SkipAssignment)
	}
	dst = AppendStr(dst, flex, r.MemberID)
	dst = AppendArrayLen(dst, flex, len(r.Members))
	for i := range r.Members {
		m := &r.Members[i]
		dst = AppendStr(dst, flex, m.MemberID)
		if version >= 5 {
			dst = appendNullString(dst, flex, m.InstanceID)
		}
		dst = AppendByteSlice(dst, flex, m.ProtocolMetadata)
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *JoinGroupResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
