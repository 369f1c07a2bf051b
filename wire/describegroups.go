package wire

// DescribeGroups (key 15), versions 0–5, flexible from 5 (docs/design/kafka-protocol.md
// §2.1, §2.4). v6 (KIP-1043: ErrorMessage, GROUP_ID_NOT_FOUND) is not served.

// describeGroupsFlexible is the first flexible version: "flexibleVersions": "5+".
const describeGroupsFlexible int16 = 5

// DescribeGroupsRequest is a DescribeGroups request, v0–5. Strings alias the
// frame: valid until the frame is released.
type DescribeGroupsRequest struct {
	// Groups are the group ids to describe.
	Groups []string
	// IncludeAuthorizedOperations asks for AuthorizedOperations (v3+).
	IncludeAuthorizedOperations bool
}

// Decode parses a DescribeGroups request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *DescribeGroupsRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 5 {
		return ErrUnsupportedVersion
	}
	flex := version >= describeGroupsFlexible
	rd := NewReader(body)
	r.Groups = strs(&rd, flex, false, r.Groups)
	r.IncludeAuthorizedOperations = false
	if version >= 3 {
		r.IncludeAuthorizedOperations = rd.Bool()
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// Group states as DescribeGroups and ListGroups report them.
const (
	GroupStateEmpty               = "Empty"
	GroupStatePreparingRebalance  = "PreparingRebalance"
	GroupStateCompletingRebalance = "CompletingRebalance"
	GroupStateStable              = "Stable"
	GroupStateDead                = "Dead"
)

// AuthorizedOperationsOmitted is the AuthorizedOperations value meaning "not
// computed" (INT32 min; "default": "-2147483648").
const AuthorizedOperationsOmitted int32 = -2147483648

// DescribeGroupsResponse is a DescribeGroups response, v0–5.
type DescribeGroupsResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v1+).
	ThrottleMillis int32
	// Groups describe each requested group.
	Groups []DescribeGroupsResponseGroup
}

// DescribeGroupsResponseGroup describes one group.
type DescribeGroupsResponseGroup struct {
	// ErrorCode is the group's error.
	ErrorCode ErrorCode
	// Group is the group id.
	Group string
	// State is one of the GroupState* constants; "Dead" for an unknown
	// group (with error 0, before v6).
	State string
	// ProtocolType is the group's protocol type, e.g. "consumer".
	ProtocolType string
	// Protocol is the chosen protocol (assignor), or "".
	Protocol string
	// Members are the group's members.
	Members []DescribeGroupsResponseGroupMember
	// AuthorizedOperations is a bit set of ACL operations (v3+), or
	// AuthorizedOperationsOmitted.
	AuthorizedOperations int32
}

// DescribeGroupsResponseGroupMember describes one member.
type DescribeGroupsResponseGroupMember struct {
	// MemberID is the member id.
	MemberID string
	// InstanceID is the static member id (v4+).
	InstanceID NullString
	// ClientID is the member's client id.
	ClientID string
	// ClientHost is the member's host.
	ClientHost string
	// ProtocolMetadata is the member's metadata for the chosen protocol.
	ProtocolMetadata []byte
	// MemberAssignment is the member's current assignment.
	MemberAssignment []byte
}

// AppendTo appends the response body at the given version to dst.
func (r *DescribeGroupsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= describeGroupsFlexible
	if version >= 1 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendArrayLen(dst, flex, len(r.Groups))
	for i := range r.Groups {
		g := &r.Groups[i]
		dst = AppendInt16(dst, int16(g.ErrorCode))
		// ErrorMessage: "versions": "6+" — not served.
		dst = AppendStr(dst, flex, g.Group)
		dst = AppendStr(dst, flex, g.State)
		dst = AppendStr(dst, flex, g.ProtocolType)
		dst = AppendStr(dst, flex, g.Protocol)
		dst = AppendArrayLen(dst, flex, len(g.Members))
		for j := range g.Members {
			m := &g.Members[j]
			dst = AppendStr(dst, flex, m.MemberID)
			if version >= 4 {
				dst = appendNullString(dst, flex, m.InstanceID)
			}
			dst = AppendStr(dst, flex, m.ClientID)
			dst = AppendStr(dst, flex, m.ClientHost)
			dst = AppendByteSlice(dst, flex, m.ProtocolMetadata)
			dst = AppendByteSlice(dst, flex, m.MemberAssignment)
			dst = AppendEmptyTags(dst, flex)
		}
		if version >= 3 {
			dst = AppendInt32(dst, g.AuthorizedOperations)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *DescribeGroupsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Groups {
		countError(c, r.Groups[i].ErrorCode)
	}
}
