package wire

// ListGroups (key 16), versions 0–5, flexible from 3 (docs/design/kafka-protocol.md
// §2.1, §2.4). v4 adds the state filter (KIP-518), v5 the type filter (KIP-848).

// listGroupsFlexible is the first flexible version: "flexibleVersions": "3+".
const listGroupsFlexible int16 = 3

// ListGroupsRequest is a ListGroups request, v0–5. Strings alias the frame:
// valid until the frame is released.
type ListGroupsRequest struct {
	// StatesFilter keeps groups in these states (v4+); empty = all.
	StatesFilter []string
	// TypesFilter keeps groups of these types (v5+); empty = all.
	TypesFilter []string
}

// Decode parses a ListGroups request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *ListGroupsRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 5 {
		return ErrUnsupportedVersion
	}
	flex := version >= listGroupsFlexible
	rd := NewReader(body)
	r.StatesFilter = r.StatesFilter[:0]
	if version >= 4 {
		r.StatesFilter = strs(&rd, flex, false, r.StatesFilter)
	}
	r.TypesFilter = r.TypesFilter[:0]
	if version >= 5 {
		r.TypesFilter = strs(&rd, flex, false, r.TypesFilter)
	}
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// ListGroupsResponse is a ListGroups response, v0–5.
type ListGroupsResponse struct {
	// ThrottleMillis is the client throttle in milliseconds (v1+).
	ThrottleMillis int32
	// ErrorCode is the request's error.
	ErrorCode ErrorCode
	// Groups are the listed groups.
	Groups []ListGroupsResponseGroup
}

// ListGroupsResponseGroup is one listed group.
type ListGroupsResponseGroup struct {
	// Group is the group id.
	Group string
	// ProtocolType is the group's protocol type, e.g. "consumer".
	ProtocolType string
	// GroupState is the group's state (v4+), a GroupState* constant.
	GroupState string
	// GroupType is the group's type (v5+): "classic" or "consumer".
	GroupType string
}

// AppendTo appends the response body at the given version to dst.
func (r *ListGroupsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= listGroupsFlexible
	if version >= 1 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendArrayLen(dst, flex, len(r.Groups))
	for i := range r.Groups {
		g := &r.Groups[i]
		dst = AppendStr(dst, flex, g.Group)
		dst = AppendStr(dst, flex, g.ProtocolType)
		if version >= 4 {
			dst = AppendStr(dst, flex, g.GroupState)
		}
		if version >= 5 {
			dst = AppendStr(dst, flex, g.GroupType)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *ListGroupsResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
